"""Whether an analyzer's result is on the change: the ``sarif`` backend's ``scope = "lines"``.

A result is on the change when its region meets an added line, lies within the diff hunk
around one, or starts in a Python statement holding one; a result kept for the hunk or
the statement is filed out to the added line it is about. Why three rules: an analyzer
marks where a statement starts, not the line that makes it wrong, and a change must not
take a result out of the gate by editing a continuation line; a result far from every
edit stays out, so an edited file's old problems do not flood the review. Pure.

Source: docs/architecture.md "Reports, the CLI and the gate".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Spans = tuple[tuple[int, int], ...]
"""A file's statement spans: (first, last) lines, inclusive
(:func:`~reviewers.programs.statements.statement_spans`)."""

StatementLines = Mapping[int, tuple[int, int]]
"""A file's line → the innermost statement span covering it
(:func:`~reviewers.programs.statements.statement_lines`)."""


def line_number(value: Any) -> int | None:
    """A SARIF line number (an int from 1, not a bool), or None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


HUNK_CONTEXT_LINES = 3
"""Lines of context either side of an added line that still count as its edit: git's
default (``-U3``), so a window is the new-side range of the diff hunk around it."""


def edit_windows(lines: frozenset[int]) -> tuple[tuple[int, int], ...]:
    """The new-side line ranges (first, last; inclusive) of the hunks around ``lines``.

    Each added line with :data:`HUNK_CONTEXT_LINES` either side, overlapping or adjacent
    ranges merged, as ``git diff`` merges hunks. Ascending; empty for no lines.
    """
    windows: list[tuple[int, int]] = []
    for line in sorted(lines):
        first, last = max(1, line - HUNK_CONTEXT_LINES), line + HUNK_CONTEXT_LINES
        if windows and first <= windows[-1][1] + 1:
            windows[-1] = (windows[-1][0], last)
        else:
            windows.append((first, last))
    return tuple(windows)


def touches(
    place: tuple[str, Mapping[str, Any]],
    added: Mapping[str, frozenset[int]],
    windows: Mapping[str, tuple[tuple[int, int], ...]] | None = None,
) -> bool:
    """Whether a located result's region is on the change's edit of its file.

    True when the region (``startLine`` to ``endLine``) meets an added line, or lies wholly in
    one of the file's :func:`edit_windows` (``windows``: path → ranges; without it only meeting
    counts). The hunk, because an analyzer marks where a statement starts, not the line that
    makes it wrong (bandit marks the first two lines of a four-line ``subprocess.call(…,
    shell=True)``); farther results stay out, so an edited file's old problems do not flood the
    review. Also True when the file has no entry in ``added`` or the region no ``startLine``.
    Source: docs/architecture.md "Reports, the CLI and the gate".
    """
    path, region = place
    lines = added.get(path)
    start = line_number(region.get("startLine"))
    if lines is None or start is None:
        return True
    end = line_number(region.get("endLine"))
    end = end if end is not None and end >= start else start
    if any(first <= start and end <= last for first, last in (windows or {}).get(path, ())):
        return True
    if end - start < len(lines):
        return any(n in lines for n in range(start, end + 1))
    return any(start <= n <= end for n in lines)


def reach_edit(region: Mapping[str, Any], lines: frozenset[int]) -> dict[str, Any]:
    """``region`` (a region :func:`touches` kept for lying in an edit's hunk) stretched
    to the nearest of the file's added ``lines``: its ``startLine``/``endLine`` moved
    out to that line, the rest as it was (columns dropped, they no longer apply).

    Why: the finding must name the line the change wrote, or the report's filter
    (``added``, docs/architecture.md "Reports, the CLI and the gate") would list it as
    touching no added line and never let it gate, the very drop the hunk rule undoes.
    """
    start = line_number(region.get("startLine")) or 1
    end = line_number(region.get("endLine"))
    end = end if end is not None and end >= start else start
    nearest = min(lines, key=lambda n: (min(abs(n - start), abs(n - end)), n))
    out = {k: v for k, v in region.items() if k not in ("startColumn", "endColumn")}
    out["startLine"], out["endLine"] = min(start, nearest), max(end, nearest)
    return out


def statement_edit(
    place: tuple[str, Mapping[str, Any]],
    added: Mapping[str, frozenset[int]],
    statements: StatementLines,
) -> frozenset[int]:
    """The added lines of the statement a result's region starts in (empty: none).

    Why: a region ending before the edited line of its own statement (bandit marks the
    first two lines of a call; the change wrote ``shell=True`` six lines down) is about
    what the change wrote, however long the statement. ``statements`` are the file's
    (empty for a file that is not Python or does not parse, and then only the hunk rule
    applies).
    """
    path, region = place
    start = line_number(region.get("startLine"))
    span = statements.get(start) if start is not None else None
    if span is None:
        return frozenset()
    return frozenset(n for n in added.get(path, ()) if span[0] <= n <= span[1])


def statement_lines(spans: Sequence[tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """Each line a statement of ``spans`` covers → the innermost (shortest) one covering
    it. Why a table: a file's results are looked up one by one, and a scan of every span
    for each would be quadratic. Statements do not nest (a compound one spans its header
    only) except a body on its header's last line, so the table holds about one entry
    per line of the statements."""
    table: dict[int, tuple[int, int]] = {}
    for span in sorted(spans, key=lambda span: span[1] - span[0], reverse=True):
        for line in range(span[0], span[1] + 1):
            table[line] = span
    return table
