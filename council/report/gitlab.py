"""The GitLab Code Quality artifact: what a merge request's Code Quality widget reads.

A JSON array of Code Climate issues, the subset GitLab documents::

    [{"description": "issue (blocking): pool leaks on timeout",
      "check_name": "council/issue",
      "fingerprint": "<64 hex>[:n]",
      "severity": "critical",
      "location": {"path": "src/pool.py", "lines": {"begin": 12}}}]

GitLab compares the artifact of the merge request with the target branch's by
``fingerprint`` and shows only the first entry of a fingerprint, so the fingerprint is
unique per occurrence (:func:`council.fingerprint.occurrence_fingerprints`) and stable
when lines move. Every entry needs a path and a line: a file-anchored finding is placed
at line 1 of its file, and a finding about the change as a whole at path ``.`` line 1,
its description saying so. Suppressed findings are left out (the Markdown and JSON
reports list them); off-diff and seen findings are kept. Outdated findings of earlier
rounds are not written; findings carried from earlier rounds (still open, not reviewed
again by a ``--since-last`` round) are, after this round's. Source: GitLab "Code Quality
report format"; harvest.md §2.
"""

from __future__ import annotations

import json
from typing import Any

from council.findings import ChangeAnchor, FileAnchor, Finding
from council.fingerprint import occurrence_fingerprints
from council.report.markdown import DECORATIONS, OFF_DIFF_REASONS
from council.report.model import CouncilReport

SEVERITIES: dict[str | None, str] = {
    "critical": "critical",
    "medium": "major",
    "minor": "minor",
    None: "info",
}
"""Code Quality severity for each council severity (``blocker`` is never used)."""

CHANGE_PATH = "."
"""Where a finding about the change as a whole is placed: the repository root."""

DESCRIPTION_CHARS = 1_000
"""The longest description written, in characters; the widget shows one line."""


def render_gitlab_codequality(report: CouncilReport) -> str:
    """The report as a GitLab Code Quality JSON array: one entry per line, newline-terminated.

    One entry per open finding that is not suppressed: this round's in filing order,
    then those carried from earlier rounds. The
    description is ``label (decoration): subject``, plus what the widget could not say
    otherwise: the whole change, the whole file, the old side of the diff, a line not
    in the diff. ``check_name`` is ``council/<label>``; the full discussion goes in
    ``content.body`` (Code Climate's field for it). An empty report is ``[]``. Never
    raises. One entry per line (not an indented tree) keeps 30,000 findings fast to
    write and the artifact easy to grep. Source: GitLab "Code Quality report format".
    """
    findings = report.open_findings
    prints = occurrence_fingerprints(findings)
    entries: list[dict[str, Any]] = []
    for finding, print_ in zip(findings, prints, strict=True):
        if finding.id is not None and finding.id in report.suppressed:
            continue
        entries.append(_entry(report, finding, print_))
    if not entries:
        return "[]\n"
    lines = ",\n".join(json.dumps(entry, ensure_ascii=False) for entry in entries)
    return f"[\n{lines}\n]\n"


def _entry(report: CouncilReport, finding: Finding, print_: str) -> dict[str, Any]:
    path, line, where = _place(finding)
    miss = report.off_diff.get(finding.id) if finding.id is not None else None
    if miss is not None:
        where.append(f"not on a changed line: {OFF_DIFF_REASONS.get(miss, miss)}")
    decoration = DECORATIONS.get(finding.severity)
    label = f"{finding.label} ({decoration})" if decoration else finding.label
    description = f"{label}: {' '.join(finding.subject.split())}"
    if where:
        description += f" [{'; '.join(where)}]"
    if len(description) > DESCRIPTION_CHARS:
        description = description[: DESCRIPTION_CHARS - 1] + "…"
    entry: dict[str, Any] = {
        "description": description,
        "check_name": f"council/{finding.label}",
        "fingerprint": print_,
        "severity": SEVERITIES[finding.severity],
        "location": {"path": path, "lines": {"begin": line}},
    }
    if finding.discussion.strip():
        entry["content"] = {"body": finding.discussion}
    return entry


def _place(finding: Finding) -> tuple[str, int, list[str]]:
    """The path and line an entry is shown at, and what the description must add."""
    anchor = finding.anchor
    if isinstance(anchor, ChangeAnchor) or not anchor.path:
        return CHANGE_PATH, 1, ["the change as a whole"]
    if isinstance(anchor, FileAnchor):
        return anchor.path, 1, ["the whole file"]
    first = anchor.start_line if anchor.start_line is not None else anchor.line
    where = [f"old side, line {first}"] if anchor.side == "old" else []
    return anchor.path, min(first, anchor.line), where
