"""Stale decisions: a dismissal or baseline entry whose occurrence's block changed.

The code hash names the anchored lines and their block's header only, so deleting a
guard two lines above a dismissed ``open(path)`` kept the occurrence, and its decision.
A decision therefore keeps the hash of the block it was made in
(:attr:`council.model.findings.LineAnchor.block`); it carries to a finding at or above
the gate's ``fail_on`` only while the finding's block hashes the same. A decision that
kept no block (made before blocks were kept), or a finding whose code was not read (a
file over settling's read cap), carries only when the pull request's change leaves the
finding's file alone (one keyed by the claim has its
own, narrower rule: :func:`council.session.decisions.untouched`). Else the finding gates, with a
note asking for a fresh decision. Pure. Source: docs/identity-and-clocks.md
"Occurrences".
"""

from __future__ import annotations

from council.change.diff import Change
from council.model.findings import Finding, LineAnchor, severity_rank
from council.model.gate_choices import FailOn


def stale(
    finding: Finding, block: str | None, change: Change | None, fail_on: FailOn | None
) -> bool:
    """Whether a decision that kept ``block`` must not take ``finding`` out of the gate
    because the finding's block changed (or cannot be shown unchanged): the finding is
    at or above ``fail_on`` (None or ``never``: nothing gates, nothing is stale), is on a
    new-side line, and its block differs from ``block``; when ``block`` is None, or the
    finding's code was not read (a file over the settling's read cap, a head tree
    unread: nothing can show it unchanged), the pull request's ``change`` touches its
    file (no change given: the caller has none to show, and the decision stands as
    before). Never raises."""
    if fail_on is None or fail_on == "never":
        return False
    if severity_rank(finding.severity) < severity_rank(fail_on):
        return False
    anchor = finding.anchor
    if not isinstance(anchor, LineAnchor) or anchor.side != "new":
        return False
    if block is not None and anchor.code is not None:
        return anchor.block != block
    if change is None:
        return False
    return any(f.side_path("new") == anchor.path for f in change.files)


def stale_note(finding: Finding, what: str, *, kept_block: bool) -> str:
    """The note for a gating finding whose earlier decision (``what``: "#5, dismissed",
    "a baseline entry") did not carry because its block changed (or could not be read)."""
    unread = isinstance(finding.anchor, LineAnchor) and finding.anchor.code is None
    if unread:
        return (
            f"#{finding.id} is the occurrence of {what} ({finding.subject[:80]!r}), but its "
            "code was not read (its file is over the 4 MiB settling reads, or the head "
            "tree could not be read), so no decision can cover it while the change edits "
            "its file: it gates; keep the file under 4 MiB, leave it out with [paths], or "
            "set --fail-on above its severity"
        )
    why = (
        "the block that holds its code changed since then (a line added or removed, "
        "or in Python moved into or out of a nested block)"
        if kept_block
        else "the decision kept no record of the block that holds its code, and this "
        "change edits its file"
    )
    return (
        f"#{finding.id} is the occurrence of {what} ({finding.subject[:80]!r}), but its "
        f"earlier decision did not carry: {why} (a guard removed beside it changes what "
        "was decided on), so it is not suppressed and gates until a person decides on it "
        "afresh (dismiss it again, or write the baseline again)"
    )
