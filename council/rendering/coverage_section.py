"""The Markdown report's coverage section: per prompt reviewer, the files (and slices) it
saw and failed; then the files skipped on purpose and those a cap left out, each with why.
Pure. Source: docs/guide.md "What is skipped, and coverage".
"""

from __future__ import annotations

from collections.abc import Sequence

from council.model.coverage import Coverage, SkippedFile
from council.rendering.escape import cell, code

FILES_SHOWN = 50
"""Rows a table of skipped or cut files shows; the rest are counted (the JSON has all)."""


def coverage_section(coverage: Coverage | None) -> str:
    """``### Coverage`` with its tables, or "" when the report has no coverage."""
    if coverage is None:
        return ""
    lines = ["### Coverage", ""]
    if coverage.reviewers:
        lines += ["| reviewer | files seen | files failed | slices seen / failed |"]
        lines += ["|---|--:|--:|--:|"]
        for r in coverage.reviewers:
            name = cell(r.id) + (" (optional)" if r.optional else "")
            slices = f"{r.slices - r.slices_failed} / {r.slices_failed}"
            lines.append(f"| {name} | {len(r.seen)} | {len(r.failed)} | {slices} |")
        lines.append("")
    else:
        lines += [
            f"{len(coverage.meant)} file(s) sent; no reviewer read the change in a prompt.",
            "",
        ]
    for r in coverage.reviewers:
        lines += _files(f"Not shown in full to {code(r.id)}", r.skipped)
    cut = [f for f in coverage.unreviewed if f.reason != "unreadable"]
    unreadable = [f for f in coverage.unreviewed if f.reason == "unreadable"]
    lines += _files("Not reviewed, left out by a cap", cut)
    lines += _files("Not reviewed, no reviewer can read it", unreadable)
    lines += _files("Skipped on purpose, not sent", coverage.skipped)
    unseen = coverage.unseen()
    if unseen:
        lines += [f"**No reviewer saw:** {', '.join(code(p) for p in unseen[:FILES_SHOWN])}", ""]
    return "\n".join(lines).rstrip()


def _files(title: str, files: Sequence[SkippedFile]) -> list[str]:
    if not files:
        return []
    lines = [f"**{title}** ({len(files)}):", "", "| file | why |", "|---|---|"]
    lines += [f"| {cell(code(f.path))} | {cell(f.why)} |" for f in files[:FILES_SHOWN]]
    if len(files) > FILES_SHOWN:
        lines.append(f"| … | {len(files) - FILES_SHOWN} more (the JSON report lists them) |")
    return [*lines, ""]
