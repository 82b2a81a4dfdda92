"""Packing pieces into slices, and the section that tells a slice what it is.

Pieces are grouped by directory (related code travels together), groups in the order the
diff first names them; a group that fits a slice is not split across two. The section
(:func:`slice_section`) says "slice k of n", lists what the other slices hold and what no
slice shows, as JSON-quoted paths in a list, never in git's header form, so neither a
reviewer nor a parser can read it as diff. Source: docs/architecture.md "Slices".
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from council.change.diff import Change
from council.change.quoted_paths import shown
from council.slicing.pieces import Piece, Skipped
from council.slicing.tokens import estimate


@dataclass(frozen=True)
class Slice:
    """The pieces one task shows, in order; ``cost`` their tokens."""

    pieces: tuple[Piece, ...]
    cost: int

    def change(self, notes: Sequence[str] = ()) -> Change:
        """The slice as a change of its own (what its prompt's anchors and diff show)."""
        return Change(files=tuple(p.file for p in self.pieces), notes=tuple(notes))


def pack(pieces: Sequence[Piece], room: int) -> list[Slice]:
    """``pieces`` (each at most ``room`` tokens) in slices of at most ``room`` tokens,
    grouped by directory. At least one slice (empty when there are no pieces)."""
    groups: dict[str, list[Piece]] = {}
    for piece in pieces:
        groups.setdefault(posixpath.dirname(piece.path), []).append(piece)
    slices: list[Slice] = []
    current: list[Piece] = []
    used = 0
    for group in groups.values():
        size = sum(p.cost for p in group)
        if current and used + size > room and size <= room:  # keep the directory whole
            slices.append(Slice(tuple(current), used))
            current, used = [], 0
        for piece in group:
            if current and used + piece.cost > room:
                slices.append(Slice(tuple(current), used))
                current, used = [], 0
            current.append(piece)
            used += piece.cost
    if current or not slices:
        slices.append(Slice(tuple(current), used))
    return slices


SECTION_HEAD = "## This slice"
"""The title of a slice's section in its prompt."""


def holders(slices: Sequence[Slice]) -> dict[str, tuple[int, ...]]:
    """Each file of ``slices`` → the numbers (from 1) of the slices showing it, in the
    order the slices first show the files."""
    found: dict[str, list[int]] = {}
    for number, s in enumerate(slices, start=1):
        for piece in s.pieces:
            at = found.setdefault(piece.path, [])
            if not at or at[-1] != number:
                at.append(number)
    return {path: tuple(at) for path, at in found.items()}


def slice_section(
    slices: Sequence[Slice],
    index: int,
    held: dict[str, tuple[int, ...]],
    skipped: Sequence[Skipped],
    room: int,
    bytes_per_token: float,
) -> str:
    """The section of slice ``index`` (from 0) of ``slices``, at most ``room`` tokens:
    which slice it is, its files shown in part, then as many of the other slices' files
    (``held``: :func:`holders`) and of the skipped lines as fit, each list ending with how
    many were left out. Lists only as far as the room goes: time in the room, not the
    change's size."""
    own = slices[index]
    count = len(slices)
    mine = {p.path for p in own.pieces}
    partial = [p for p in own.pieces if p.parts > 1]
    head = (
        f"{SECTION_HEAD}\n\nThe change is too large for one prompt, so it is reviewed in "
        f"{count} slices, each by its own task of yours: this is slice {index + 1} of "
        f"{count}, showing {len(mine)} file(s). Review what this slice shows and anchor "
        "your findings on it; the other slices are reviewed on their own. The lists below "
        "are JSON-quoted paths, not diff."
    )
    lines = [head]
    if partial:
        lines.append(
            "Shown here in part (a file too large for one prompt, cut between hunks): "
            + ", ".join(f"{shown(p.path)} part {p.part} of {p.parts}" for p in partial[:20])
            + (f" and {len(partial) - 20} more" if len(partial) > 20 else "")
            + "."
        )
    text = "\n\n".join(lines)
    left = room - estimate(text, bytes_per_token) - 64  # the two lists' titles and tails
    alone = sum(1 for path in mine if held.get(path) == (index + 1,))
    others = len(held) - alone
    if others:
        elsewhere = (
            f"{shown(path)} (slice {', '.join(str(n) for n in at if n != index + 1)})"
            for path, at in held.items()
            if at != (index + 1,)
        )
        listed, left = _listed(elsewhere, others, left // 2 if skipped else left, bytes_per_token)
        text += "\n\nThe other slices hold:\n" + listed
    if skipped:
        lost = (f"{shown(s.path)}: {s.reason}" for s in skipped)
        gone, _ = _listed(lost, len(skipped), left, bytes_per_token)
        text += "\n\nShown in no slice (too large for any prompt of yours):\n" + gone
    return text


def _listed(items: Iterator[str], total: int, room: int, bytes_per_token: float) -> tuple[str, int]:
    """The first of ``total`` ``items`` as list lines (``- item``) within ``room`` tokens,
    then how many did not fit (``- … and N more``); the room left."""
    out: list[str] = []
    for n, item in enumerate(items):
        line = f"- {item}"
        cost = estimate(line, bytes_per_token) + 1
        if cost > room - 8:  # the tail's tokens
            out.append(f"- … and {total - n} more")
            return "\n".join(out), room
        out.append(line)
        room -= cost
    return "\n".join(out), room
