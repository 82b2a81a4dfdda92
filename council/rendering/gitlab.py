"""GitLab's outputs: the Code Quality artifact and the merge request's diff discussions.

Beside :func:`render_gitlab_discussions` (the threads ``council publish gitlab`` posts),
the Code Quality artifact a merge request's widget reads: Code Climate issues, as GitLab
documents them::

    [{"description": "issue (blocking): pool leaks on timeout", "check_name": "council/issue",
      "fingerprint": "<64 hex>[:n]", "severity": "critical",
      "location": {"path": "src/pool.py", "lines": {"begin": 12}}}]

GitLab shows only the first entry of a fingerprint, so it is unique per occurrence
(:func:`council.model.fingerprint.occurrence_fingerprints`).
Source: GitLab "Code Quality report format"; docs/harvest.md §2.
"""

from __future__ import annotations

import json
from typing import Any

from council.change.diff import Change, ChangedFile, Hunk, landing
from council.change.secret_masks import MASK
from council.model.findings import ChangeAnchor, FileAnchor, Finding, LineAnchor, severity_rank
from council.model.fingerprint import occurrence_fingerprints
from council.model.report import CouncilReport
from council.rendering.agreement import agreement_text, tellings_plain
from council.rendering.escape import for_forge, no_controls, no_controls_json, no_quick_actions
from council.rendering.finding_sections import OFF_DIFF_REASONS
from council.rendering.finding_text import gating_ids, label_text
from council.rendering.github_review import MAX_COMMENTS, Post, comment_body, posted_only

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
    """The report as a GitLab Code Quality JSON array, one entry per line, newline-terminated.

    One entry per open finding not suppressed: this round's in filing order, then the carried.
    ``description``: ``label (decoration): subject`` (``blocking`` only for a finding that
    gates: :func:`~council.rendering.finding_text.label_text`), plus what the widget cannot say (the
    whole change, the whole file, the old side, a line not in the diff); ``check_name``:
    ``council/<label>``; the discussion in ``content.body``. Texts pass
    :func:`~council.rendering.escape.no_controls`; the path keeps its characters, as JSON
    escapes. ``[]`` when empty; never raises. One entry a line keeps 30,000 findings fast to
    write and the artifact easy to grep. Source: docs/architecture.md "Reports, the CLI and
    the gate"; GitLab "Code Quality report format".
    """
    findings = report.open_findings
    prints = occurrence_fingerprints(findings)
    gating = gating_ids(report)
    entries: list[dict[str, Any]] = []
    for finding, print_ in zip(findings, prints, strict=True):
        if finding.id is not None and finding.id in report.suppressed:
            continue
        entries.append(_entry(report, finding, print_, finding.id in gating))
    if not entries:
        return "[]\n"
    lines = ",\n".join(no_controls_json(json.dumps(entry, ensure_ascii=False)) for entry in entries)
    return f"[\n{lines}\n]\n"


def _entry(report: CouncilReport, finding: Finding, print_: str, gates: bool) -> dict[str, Any]:
    path, line, where = _place(finding)
    miss = report.off_diff.get(finding.id) if finding.id is not None else None
    if miss is not None:
        where.append(f"not on a changed line: {OFF_DIFF_REASONS.get(miss, miss)}")
    description = f"{label_text(finding, gates)}: {' '.join(finding.subject.split())}"
    agreed = agreement_text(finding)
    if finding.raised_by and agreed:
        where.append(f"raised by {', '.join(finding.raised_by)} ({agreed})")
    if where:
        description += f" [{'; '.join(where)}]"
    description = no_controls(description, one_line=True)
    if len(description) > DESCRIPTION_CHARS:
        description = description[: DESCRIPTION_CHARS - 1] + "…"
    entry: dict[str, Any] = {
        "description": description,
        "check_name": f"council/{finding.label}",
        "fingerprint": print_,
        "severity": SEVERITIES[finding.severity],
        "location": {"path": path, "lines": {"begin": line}},
    }
    body = "\n\n".join(t for t in (finding.discussion.strip(), tellings_plain(finding)) if t)
    if body:
        entry["content"] = {"body": no_controls(body)}
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


def gitlab_safe(text: str) -> str:
    """Markdown as it may be posted in a GitLab note: no mention notifies anyone, no
    control or bidirectional character is left raw, no line runs as a quick action
    (:func:`~council.rendering.escape.for_forge`,
    :func:`~council.rendering.escape.no_quick_actions`). Idempotent."""
    return no_quick_actions(for_forge(text))


def render_gitlab_discussions(
    report: CouncilReport, change: Change | None, post: Post = "leading"
) -> str:
    """The merge request's diff threads as JSON text (2-space indent, newline-terminated)::

        {"run_id", "head", "discussions": [{"finding": 12, "body": <Markdown>,
         "position": {"old_path", "new_path", "new_line"?, "old_line"?}}]}

    A thread per finding that would be a GitHub line comment, at most
    :data:`~council.rendering.github_review.MAX_COMMENTS`, the most severe first. GitLab places
    one by its line's kind (added: ``new_line``; removed: ``old_line``; context: both), which
    only ``change`` tells: without it, no threads; for a run waiting on a person none
    either (its findings are in the summary note; the threads, marked with the run id,
    come once it settles, as GitLab keeps a thread posted). A range sits on its last line
    and says so. Bodies: :func:`~council.rendering.github_review.comment_body` made safe by
    :func:`gitlab_safe`. Never raises. ``post``: as for the GitHub review (``leading``:
    threads on the leading findings only, the rest in the summary note).
    """
    placed: list[tuple[Finding, dict[str, Any]]] = []
    seen, gating = frozenset(report.seen), gating_ids(report)
    waiting = report.status == "waiting"
    for finding in (() if waiting else report.findings):
        thread = _thread(report, finding, seen, change, finding.id in gating)
        if thread is not None:
            placed.append((finding, thread))
    placed, _ = posted_only(report, placed, post)
    ranked = sorted(range(len(placed)), key=lambda i: (-severity_rank(placed[i][0].severity), i))
    chosen = sorted(ranked[:MAX_COMMENTS])
    document = {
        "run_id": report.run_id,
        "head": report.head,
        "discussions": [placed[i][1] for i in chosen],
    }
    return no_controls_json(json.dumps(document, indent=2, ensure_ascii=False)) + "\n"


def _thread(
    report: CouncilReport,
    finding: Finding,
    seen: frozenset[int],
    change: Change | None,
    gates: bool,
) -> dict[str, Any] | None:
    anchor = finding.anchor
    ident = finding.id
    if change is None or not isinstance(anchor, LineAnchor) or ident is None:
        return None
    if ident in report.off_diff or ident in report.suppressed or ident in seen:
        return None
    if landing(change, anchor) is not None:
        return None
    changed = next((f for f in change.files if f.side_path(anchor.side) == anchor.path), None)
    if changed is None or MASK in changed.path or MASK in (changed.old_path or ""):
        return None  # a path holding a masked secret is no file of the merge request's
    position = _position(changed, anchor.side, anchor.line)
    if position is None:
        return None
    body = comment_body(finding, gates)
    if anchor.start_line is not None and anchor.start_line < anchor.line:
        body = f"*Lines {anchor.start_line}–{anchor.line} ({anchor.side} side):*\n\n{body}"
    return {"finding": ident, "body": gitlab_safe(body), "position": position}


def _position(changed: ChangedFile, side: str, line: int) -> dict[str, Any] | None:
    """GitLab's text position of one line of a file's diff, or None when no hunk shows it."""
    new_path = changed.side_path("new") or changed.path
    old_path = changed.side_path("old") or new_path
    position: dict[str, Any] = {"old_path": old_path, "new_path": new_path}
    for hunk in changed.hunks:
        if side == "new" and line in hunk.added:
            return {**position, "new_line": line}
        if side == "old" and line in hunk.removed:
            return {**position, "old_line": line}
        other = _context_partner(hunk, side, line)
        if other is not None:
            old, new = (line, other) if side == "old" else (other, line)
            return {**position, "old_line": old, "new_line": new}
    return None


def _context_partner(hunk: Hunk, side: str, line: int) -> int | None:
    """For an unchanged line of the hunk on ``side``, its number on the other side."""
    if line not in hunk.lines(side):  # type: ignore[arg-type]
        return None
    added, removed = frozenset(hunk.added), frozenset(hunk.removed)
    old, new = hunk.old_start, hunk.new_start
    old_end, new_end = old + hunk.old_length, new + hunk.new_length
    while old < old_end or new < new_end:
        if new < new_end and new in added:
            new += 1
        elif old < old_end and old in removed:
            old += 1
        else:
            if (side == "new" and new == line) or (side == "old" and old == line):
                return old if side == "new" else new
            old, new = old + 1, new + 1
    return None
