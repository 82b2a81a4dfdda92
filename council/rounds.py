"""Incremental rounds: what an earlier round of the session already reported, and which
of the last round's findings the new commits made outdated.

A session is one change under review over its life (a pull request pushed to again and
again); each push is a round (architecture.md "State in Redis", sessions). Two questions
come up on every round after the first:

* **seen** — this round raised a finding whose content fingerprint
  (:func:`council.fingerprint.fingerprint`) an earlier round already reported. It is
  shown (it still gates: the code still has it) but not posted to the code host again.
* **outdated** — a finding of the last reviewed round whose code the new commits edited
  or removed. It is listed, so the reader learns the council's earlier remark may no
  longer apply, instead of it silently vanishing.

``change`` is the *interdiff*: the diff from the head the last round read to this round's
head. Its OLD side is the code the earlier findings were anchored on, so an earlier
new-side anchor is compared with the old side of the interdiff's hunks (the coordinates
match exactly; comparing with the new side would be off by every line inserted above).
Pure: the runtime reads the session and computes the interdiff. Source: architecture.md
"State in Redis" (sessions, incremental rounds); harvest.md §2 (anchors), §5 (sameness).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from council.diff import Change, ChangedFile
from council.findings import ChangeAnchor, FileAnchor, Finding, LineAnchor
from council.fingerprint import fingerprint
from council.report.model import CouncilReport


def mark_round(
    report: CouncilReport,
    earlier_findings: Iterable[Finding],
    earlier_fingerprints: Collection[str],
    change: Change,
) -> CouncilReport:
    """The report with ``seen`` and ``outdated`` filled for this round of its session.

    * ``seen``: ids of this round's findings whose fingerprint is in
      ``earlier_fingerprints`` (every fingerprint an earlier round reported), in filing
      order. A finding without an id cannot be keyed and is never marked.
    * ``outdated``: those of ``earlier_findings`` (the last reviewed round's findings)
      that this round did not raise again (a finding raised again is current, and
      ``seen`` already says so) and whose anchor ``change`` touches
      (:func:`touched`). When several earlier findings share a fingerprint, the one
      filed last is kept. In filing order.

    Any earlier ``seen`` or ``outdated`` is replaced, so marking twice with the same
    inputs gives the same report. Never raises.
    """
    current = {fingerprint(f) for f in report.findings}
    own = {f.id for f in report.findings if f.id is not None}
    seen = tuple(
        f.id for f in report.findings if f.id is not None and fingerprint(f) in earlier_fingerprints
    )
    latest: dict[str, Finding] = {}
    for finding in sorted(earlier_findings, key=lambda f: f.id or 0):
        if finding.id is not None and finding.id in own:
            continue
        latest[fingerprint(finding)] = finding
    outdated = tuple(
        sorted(
            (f for value, f in latest.items() if value not in current and touched(change, f)),
            key=lambda f: f.id or 0,
        )
    )
    return report.model_copy(update={"seen": seen, "outdated": outdated})


def touched(change: Change, finding: Finding) -> bool:
    """Whether the interdiff ``change`` edited or removed the code ``finding`` names.

    * a change anchor: never (the change as a whole is still under review);
    * a file anchor, or a new-side line anchor, whose file the interdiff deletes or
      renames away: the code it named is gone;
    * a new-side line anchor whose lines (``start_line`` to ``line``) meet the old side
      of a hunk of its file: that code was edited (a pure insertion between two lines
      covers no old line, and touches nothing);
    * an old-side line anchor names code of the BASE that the earlier change removed;
      later commits do not edit the base, so it is touched only when the interdiff
      adds a file at that path again (the removal was undone).

    Never raises.
    """
    anchor = finding.anchor
    if isinstance(anchor, ChangeAnchor):
        return False
    if isinstance(anchor, LineAnchor) and anchor.side == "old":
        return any(f.status == "added" and f.path == anchor.path for f in change.files)
    changed = _old_side(change, anchor.path)
    if changed is None:
        return False
    if changed.status == "deleted" or changed.path != anchor.path:
        return True
    if isinstance(anchor, FileAnchor):
        return False
    first = anchor.start_line if anchor.start_line is not None else anchor.line
    low, high = min(first, anchor.line), max(first, anchor.line)
    for hunk in changed.hunks:
        lines = hunk.lines("old")
        if lines and lines[0] <= high and low <= lines[-1]:
            return True
    return False


def _old_side(change: Change, path: str) -> ChangedFile | None:
    """The file of ``change`` whose old side is ``path`` (None: the interdiff left it)."""
    for changed in change.files:
        if changed.side_path("old") == path:
            return changed
    return None
