"""What of a change the judge is shown when the whole is over its budget: the pieces the
filed findings point at, the most severe finding first, each finding a fair share.

The anchored files are cut into pieces of at most a share of the room (the room over the
number of places findings point at, never under :data:`SHARE_FLOOR` tokens), so the piece
holding one finding's line never crowds out another's. Then, in rounds: each finding in
turn (highest severity first, then in filing order) the piece holding its line, then the
one holding its range's first line; then the rest of the anchored files, a piece of each
in turn (the most severe finding's file first), nearest its finding's piece first. A
range counts only the pieces holding its two ends: its numbers are never walked, so time
and memory follow the change's size, never an anchor's. Source: docs/architecture.md
"Slices".
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Literal

from council.change.diff import Change
from council.model.findings import Finding, LineAnchor, anchor_path, severity_rank
from council.slicing.pieces import Piece, cut_change

SHARE_FLOOR = 512
"""The fewest tokens a finding's share of the judge's room is cut to (so many findings
do not cut the change into crumbs); past room over this many places, the most severe
findings' pieces come first."""

Side = Literal["new", "old"]


def pointed_at(
    change: Change, filed: Sequence[Finding], room: int, bytes_per_token: float
) -> list[Piece]:
    """The pieces of ``change`` to show the judge within ``room`` tokens, in diff order
    (see the module's docstring); a piece that does not fit is passed over for a
    smaller one."""
    paths = {p for f in change.files for p in (f.path, f.old_path) if p is not None}
    ranked = sorted(range(len(filed)), key=lambda i: (-severity_rank(filed[i].severity), i))
    pointing = [filed[i] for i in ranked if anchor_path(filed[i].anchor) in paths]
    if not pointing or room <= 0:
        return []
    places = {_place(f) for f in pointing}
    share = max(room // len(places), min(room, SHARE_FLOOR))
    anchored = {p for f in pointing if (p := anchor_path(f.anchor)) is not None}
    pieces, _ = cut_change(
        Change(files=tuple(f for f in change.files if {f.path, f.old_path} & anchored)),
        share,
        bytes_per_token,
    )
    where = _Where(pieces)
    chosen: set[int] = set()
    used = 0

    def take(index: int) -> None:
        nonlocal used
        if index not in chosen and used + pieces[index].cost <= room:
            chosen.add(index)
            used += pieces[index].cost

    wants = [where.ends(f) for f in pointing]
    for turn in (0, 1):
        for want in wants:
            if len(want) > turn:
                take(want[turn])
    queues: list[list[int]] = []
    seen: set[str] = set()
    for finding, want in zip(pointing, wants, strict=True):
        path = anchor_path(finding.anchor)
        if path is None or path in seen:
            continue
        seen.add(path)
        indexes = where.of_file.get(path, [])
        if not indexes:
            continue
        centre = want[0] if want else indexes[0]
        queues.append(_nearest_last(indexes, centre))
    while queues:
        for queue in queues:
            take(queue.pop())
        queues = [q for q in queues if q]
    return [pieces[i] for i in sorted(chosen)]


def _nearest_last(indexes: Sequence[int], centre: int) -> list[int]:
    """``indexes`` farthest from ``centre`` first (ties: the later first), so that popping
    from the end takes the nearest next."""
    return sorted(indexes, key=lambda i: (abs(i - centre), i), reverse=True)


def _place(finding: Finding) -> tuple[object, ...]:
    """Where a finding points, for counting the shares: its path, side and line."""
    anchor = finding.anchor
    if isinstance(anchor, LineAnchor):
        return (anchor.path, anchor.side, anchor.line)
    return (anchor_path(anchor),)


class _Where:
    """Which piece holds a line of a file, found by bisection over the pieces' ranges."""

    def __init__(self, pieces: Sequence[Piece]) -> None:
        self.of_file: dict[str, list[int]] = {}
        self._spans: dict[tuple[str, Side], list[tuple[int, int, int]]] = {}
        for index, piece in enumerate(pieces):
            for name in dict.fromkeys((piece.path, piece.file.old_path)):
                if name is not None:
                    self.of_file.setdefault(name, []).append(index)
            for side in ("new", "old"):
                path = piece.file.side_path(side)
                if path is None:
                    continue
                spans = self._spans.setdefault((path, side), [])
                spans.extend((first, last, index) for first, last in piece.file.ranges(side))
        for spans in self._spans.values():
            spans.sort()
        self._firsts = {key: [first for first, _, _ in spans] for key, spans in self._spans.items()}

    def holding(self, path: str, side: Side, line: int) -> int | None:
        """The piece holding ``line`` of ``path`` on ``side``, if one does."""
        spans = self._spans.get((path, side), [])
        at = bisect_right(self._firsts.get((path, side), []), line) - 1
        if at >= 0 and spans[at][0] <= line <= spans[at][1]:
            return spans[at][2]
        return None

    def ends(self, finding: Finding) -> list[int]:
        """The pieces a finding points at: the one holding its line, then the one holding
        its range's first line (none for a file anchor or a line no piece holds)."""
        anchor = finding.anchor
        if not isinstance(anchor, LineAnchor):
            return []
        out: list[int] = []
        for line in (anchor.line, anchor.start_line):
            if line is None:
                continue
            index = self.holding(anchor.path, anchor.side, line)
            if index is not None and index not in out:
                out.append(index)
        return out
