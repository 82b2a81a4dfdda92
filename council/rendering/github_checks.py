"""The GitHub check run: ONE check named ``council`` on the head, findings as annotations.

The body of ``POST /repos/{owner}/{repo}/check-runs``, with every annotation::

    {"name": "council", "head_sha", "external_id": <run id>, "status": "completed",
     "conclusion": "success" | "failure" | "cancelled" | "timed_out", "output": {"title",
     "summary", "text", "annotations": [{"path", "start_line", "end_line", "title",
     "message", "annotation_level": "failure" | "warning" | "notice"}]}}

GitHub takes :data:`ANNOTATIONS_PER_REQUEST` a request, the rest in updates; a finding on
no line of a head file is in ``text``, never away. Source: GitHub REST "Create a check run",
"Update a check run"; docs/architecture.md "Reports, the CLI and the gate".
"""

from __future__ import annotations

import json
from typing import Any

from council.change.diff import Change
from council.change.secret_masks import MASK
from council.model.findings import FileAnchor, Finding, LineAnchor, severity_rank
from council.model.report import CouncilReport
from council.rendering.escape import for_forge, no_controls, no_controls_json
from council.rendering.finding_text import gating_ids, label_text
from council.rendering.github_review import fit_body
from council.rendering.markdown import render_markdown
from council.round.gate import exit_code, gate_summary

CHECK_NAME = "council"
"""The check run's name (one per head: GitHub shows the latest of a name)."""

ANNOTATIONS_PER_REQUEST = 50
"""GitHub's limit on the annotations of one create or update request."""

MAX_ANNOTATIONS = 500
"""Annotations written at most (ten requests); the most severe first, the rest are in
the text. More would take minutes of paced requests and bury the diff."""

TEXT_CHARS = 65_535
"""GitHub's limit on a check run's summary and on its text."""

TITLE_CHARS = 255
"""GitHub's limit on an annotation's title."""

MESSAGE_BYTES = 64 * 1024
"""GitHub's limit on an annotation's message (64 KB)."""

LEVELS: dict[str | None, str] = {
    "critical": "failure",
    "medium": "warning",
    "minor": "notice",
    None: "notice",
}
"""The annotation level of each council severity."""

_CUT_MESSAGE = "\n… (cut: the whole discussion is in the council report)"


def render_github_checks(
    report: CouncilReport,
    *,
    change: Change | None = None,
) -> str:
    """The check run as JSON text (see :func:`render_github_checks_with_cuts`)."""
    text, _ = render_github_checks_with_cuts(report, change=change)
    return text


def render_github_checks_with_cuts(
    report: CouncilReport,
    *,
    change: Change | None = None,
) -> tuple[str, list[str]]:
    """The check run as JSON text (2-space indent, newline-terminated), and the cuts made.

    ``conclusion`` follows :func:`council.round.gate.exit_code` exactly (0 ``success``; 1, 3
    and 4 ``failure``, or ``cancelled`` / ``timed_out`` for a run that was), so a
    required check and the CI gate never disagree: it passes only when the gate does.
    ``title`` is the gate's verdict in one line, ``summary`` the verdict and what was
    annotated, ``text`` the Markdown report. A run waiting on a person (its run id is the
    check's ``external_id`` again once it settles, and GitHub keeps every annotation an
    update adds) gets none: they come with the settled run. Pass ``change`` when at hand:
    a whole-file anchor on a deleted file is then kept out of the annotations. The gate
    policy is the report's own (``report.gate``).
    """
    code = exit_code(report)
    gating = gating_ids(report)
    waiting = report.status == "waiting"
    placed = [
        (finding, note)
        for finding in (() if waiting else report.open_findings)
        if (note := _annotation(report, finding, change, finding.id in gating)) is not None
    ]
    ranked = sorted(range(len(placed)), key=lambda i: (-severity_rank(placed[i][0].severity), i))
    chosen = sorted(ranked[:MAX_ANNOTATIONS])
    annotations = [placed[i][1] for i in chosen]
    verdict = gate_summary(report).removeprefix("gate: ")
    title = {0: "passed", 1: "gate tripped", 3: "incomplete", 4: "waiting on a person"}.get(
        code, "done"
    )
    annotated = (
        f"The run waits on a person: its {len(report.open_findings)} open finding(s) are "
        "annotated once it settles (an update cannot take an annotation back); the report "
        "below lists every one."
        if waiting
        else f"{len(annotations)} of {len(report.open_findings)} open finding(s) are "
        "annotated on the diff; the report below lists every one."
    )
    summary = [f"**Council review: {title}** — {verdict}.", "", annotated]
    cuts: list[str] = []
    if len(placed) > len(chosen):
        cuts.append(
            f"github-checks: {len(chosen)} of the {len(placed)} findings on files of the "
            f"head are annotations (at most {MAX_ANNOTATIONS}); the rest are in the text"
        )
        summary += ["", f"*{len(placed) - len(chosen)} more are in the report only.*"]
    markdown = for_forge(render_markdown(report))
    text = fit_body(markdown, TEXT_CHARS)
    if text != markdown:
        cuts.append("github-checks: the text was cut to GitHub's limit of 65,535 characters")
    run: dict[str, Any] = {"name": CHECK_NAME}
    if report.head:
        run["head_sha"] = report.head
    run["external_id"] = report.run_id
    run["status"] = "completed"
    run["conclusion"] = _conclusion(report, code)
    run["output"] = {
        "title": f"Council review: {title}"[:TITLE_CHARS],
        "summary": fit_body(for_forge("\n".join(summary)), TEXT_CHARS),
        "text": text,
        "annotations": annotations,
    }
    return no_controls_json(json.dumps(run, indent=2, ensure_ascii=False)) + "\n", cuts


def _conclusion(report: CouncilReport, code: int) -> str:
    if code == 0:
        return "success"
    if code == 3 and report.status == "cancelled":
        return "cancelled"
    if code == 3 and report.status == "timeout":
        return "timed_out"
    return "failure"


def _annotation(
    report: CouncilReport, finding: Finding, change: Change | None, gates: bool
) -> dict[str, Any] | None:
    """The annotation for a finding (``gates``: the gate trips on it, and its title says
    "blocking"), or None when no line of the head can hold it."""
    ident = finding.id
    if ident is not None and ident in report.suppressed:
        return None
    anchor = finding.anchor
    miss = report.off_diff.get(ident) if ident is not None else None
    if isinstance(anchor, LineAnchor):
        if anchor.side != "new" or not anchor.path or miss in ("file-absent", "range-inverted"):
            return None
        start = anchor.start_line if anchor.start_line is not None else anchor.line
        path, first, last = anchor.path, min(start, anchor.line), anchor.line
    elif isinstance(anchor, FileAnchor):
        head_path = _head_path(anchor.path, change) if miss != "file-absent" else None
        if not head_path:
            return None
        path, first, last = head_path, 1, 1
    else:
        return None
    if MASK in path:  # a path holding a masked secret names no file of the head
        return None
    label = label_text(finding, gates)
    heading = no_controls(f"{label}: {' '.join(finding.subject.split())}", one_line=True)
    where = " (about the whole file)" if isinstance(anchor, FileAnchor) else ""
    message = (finding.discussion.strip() or finding.subject.strip() or heading) + where
    message = no_controls(message)
    if ident is not None:
        message += f"\n\ncouncil finding {ident}"
    return {
        "path": path,
        "start_line": first,
        "end_line": last,
        "annotation_level": LEVELS[finding.severity],
        "title": heading if len(heading) <= TITLE_CHARS else heading[: TITLE_CHARS - 1] + "…",
        "message": _fit_message(message),
    }


def _head_path(path: str, change: Change | None) -> str | None:
    """The path the head knows a file by (a renamed file's new one); None when the head
    has no such file (deleted). ``path`` itself when the change does not say."""
    if change is None:
        return path
    for changed in change.files:
        if path in (changed.path, changed.old_path):
            return changed.side_path("new")
    return path


def _fit_message(message: str) -> str:
    data = message.encode("utf-8", "replace")
    if len(data) <= MESSAGE_BYTES:
        return message
    room = MESSAGE_BYTES - len(_CUT_MESSAGE.encode("utf-8"))
    return data[:room].decode("utf-8", "ignore") + _CUT_MESSAGE
