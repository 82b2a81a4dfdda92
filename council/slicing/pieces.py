"""Cutting a change into pieces that fit a room of tokens: whole files, else hunks.

A piece is git's own text for one file or part of it: the file's header (``diff --git``,
``---``, ``+++``) then whole hunks. A file over the room is cut between hunks; a hunk over
it between lines, each part a hunk of its own with its ``@@`` line counted again; a single
line over it (a minified bundle) cannot be cut and is skipped, with the reason. Every line
of every hunk is then in exactly one piece or named in one :class:`Skipped`
(docs/architecture.md "Slices"). Memory stays within a few copies of the change.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from council.change.diff import Change, ChangedFile, anchor_map, parse_diff
from council.change.quoted_paths import shown
from council.slicing.tokens import estimate

_HUNK_HEAD = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$", re.DOTALL)
"""A hunk's ``@@`` line: old start, old length, new start, new length, its context."""


@dataclass(frozen=True)
class Piece:
    """One file, or ``part`` of ``parts`` of it, as a slice shows it.

    ``file`` is the file as this piece shows it (its hunks only), ``cost`` its tokens in a
    prompt (diff text, anchor line, notes).
    """

    file: ChangedFile
    cost: int
    part: int = 1
    parts: int = 1

    @property
    def path(self) -> str:
        """The file's path (new side; old for a deleted file)."""
        return self.file.path


@dataclass(frozen=True)
class Skipped:
    """A line of the change no prompt can show (alone over the room): where, and why."""

    path: str
    reason: str


def piece_cost(file: ChangedFile, bytes_per_token: float) -> int:
    """Tokens ``file`` adds to a prompt: its diff text, its anchor line, its note, and a
    few for the list and section marks around them."""
    anchor = anchor_map(Change(files=(file,)))[0]
    return (
        estimate(file.patch, bytes_per_token)
        + estimate(anchor, bytes_per_token)
        + (estimate(file.note, bytes_per_token) if file.note else 0)
        + (estimate(shown(file.path), bytes_per_token) + 8 if file.binary else 0)
        + 4
    )


def cut_change(
    change: Change, room: int, bytes_per_token: float
) -> tuple[list[Piece], list[Skipped]]:
    """Every file of ``change`` as pieces of at most ``room`` tokens each, in diff order,
    and the lines skipped (each alone over ``room``); ``room`` >= 1."""
    pieces: list[Piece] = []
    skipped: list[Skipped] = []
    for file in change.files:
        cost = piece_cost(file, bytes_per_token)
        if cost <= room:
            pieces.append(Piece(file, cost))
            continue
        parts, lost = _cut_file(file, room, bytes_per_token)
        skipped.extend(lost)
        pieces.extend(
            Piece(p.file, p.cost, part=i, parts=len(parts)) for i, p in enumerate(parts, start=1)
        )
    return pieces, skipped


def _cut_file(
    file: ChangedFile, room: int, bytes_per_token: float
) -> tuple[list[Piece], list[Skipped]]:
    """``file`` (over ``room``) as consecutive runs of its hunks, each under ``room``."""
    header, hunks = _sections(file.patch)
    units: list[str] = []
    lost: list[Skipped] = []
    for hunk in hunks:
        if _cost(header, [hunk], bytes_per_token) <= room:
            units.append(hunk)
        else:
            cut, skipped = _cut_hunk(header, hunk, file.path, room, bytes_per_token)
            units.extend(cut)
            lost.extend(skipped)
    if not hunks and _cost(header, [], bytes_per_token) > room:
        lost.append(Skipped(file.path, f"its diff header alone is over {room} tokens"))
    pieces: list[Piece] = []
    run: list[str] = []
    held = 0  # the tokens of run's hunks
    for unit in units:
        size = estimate(unit, bytes_per_token)
        if run and _cost(header, [], bytes_per_token, hunks_more=len(run) + 1) + held + size > room:
            pieces.append(_piece(header, run, bytes_per_token))
            run, held = [], 0
        run.append(unit)
        held += size
    if run:
        pieces.append(_piece(header, run, bytes_per_token))
    return pieces, lost


def _cost(header: str, hunks: Sequence[str], bytes_per_token: float, *, hunks_more: int = 0) -> int:
    """A piece's cost before it is parsed, never below :func:`piece_cost`'s: its text, and
    for its anchor line three times the header's first line (it names the path twice) and
    48 bytes a hunk (two ranges; ``hunks_more`` counted besides ``hunks``' own, their text
    not), and a few tokens of marks."""
    first = header.split("\n", 1)[0]
    bound = 3 * len(first) + 48 * (len(hunks) + hunks_more) + 64
    text = estimate(header, bytes_per_token) + sum(estimate(h, bytes_per_token) for h in hunks)
    return text + math.ceil(bound / bytes_per_token) + 4


def _piece(header: str, hunks: Sequence[str], bytes_per_token: float) -> Piece:
    """The piece showing ``hunks`` under ``header``, read back as a file of its own."""
    text = header + "".join(hunks)
    files = parse_diff(text).files
    file = files[0] if files else ChangedFile(path="", patch=text)
    cost = max(piece_cost(file, bytes_per_token), _cost(header, hunks, bytes_per_token))
    return Piece(file, cost)


def _sections(patch: str) -> tuple[str, list[str]]:
    """A file's diff text as its header (up to the first ``@@`` line) and its hunks."""
    header: list[str] = []
    hunks: list[list[str]] = []
    for line in _lines(patch):
        if line.startswith("@@"):
            hunks.append([line])
        elif hunks:
            hunks[-1].append(line)
        else:
            header.append(line)
    return "".join(header), ["".join(h) for h in hunks]


def _lines(text: str) -> Iterator[str]:
    """``text``'s lines, each with its ``\\n`` (split at ``\\n`` only), lazily."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


def _cut_hunk(
    header: str, hunk: str, path: str, room: int, bytes_per_token: float
) -> tuple[list[str], list[Skipped]]:
    """A hunk over ``room`` as smaller hunks of its lines, each with its own ``@@`` line
    (starts and lengths counted again); a line alone over ``room`` is skipped, named."""
    lines = list(_lines(hunk))
    head = _HUNK_HEAD.match(lines[0].rstrip("\n"))
    if head is None:
        return [], [Skipped(path, f"a hunk over {room} tokens whose @@ line could not be read")]
    old_at, new_at = int(head.group(1)), int(head.group(3))
    context = head.group(5)
    cut: list[str] = []
    lost: list[Skipped] = []
    run: list[str] = []
    run_old, run_new = old_at, new_at  # where the current run starts, each side
    limit = room - _MARKER_TOKENS
    used = _cost(header, [lines[0]], bytes_per_token)

    def close() -> None:
        if run:
            cut.append(_hunk_text(run, run_old, run_new, context))

    for index, line in enumerate(lines[1:], start=1):
        size = estimate(line, bytes_per_token)
        if line.startswith("\\"):  # "\ No newline at end of file": with its line
            if run:
                run.append(line)
                used += size
            continue
        if used + size > limit and run:
            close()
            run = []
            used = _cost(header, [lines[0]], bytes_per_token)
        if used + size > limit:  # alone over the room: cannot be shown
            chars = len(line.rstrip("\n")) - 1  # without its +, - or space
            lost.append(
                Skipped(
                    path,
                    f"line {index} of its hunk {_short(lines[0])} holds {chars} "
                    f"characters (about {size} tokens), over the {room} tokens a slice "
                    "has for the diff",
                )
            )
        else:
            if not run:
                run_old, run_new = old_at, new_at
            run.append(line)
            used += size
        if line.startswith((" ", "-")) or line == "\n":
            old_at += 1
        if line.startswith((" ", "+")) or line == "\n":
            new_at += 1
    close()
    return cut, lost


_MARKER_TOKENS = 24
"""Tokens a part of a hunk keeps free: its ``\\ No newline`` mark, its @@ line's new
numbers."""


def _hunk_text(lines: Sequence[str], old_at: int, new_at: int, context: str) -> str:
    """Lines of a hunk as a hunk of their own, its ``@@`` line counted from them."""
    old = sum(1 for ln in lines if ln.startswith((" ", "-")) or ln == "\n")
    new = sum(1 for ln in lines if ln.startswith((" ", "+")) or ln == "\n")
    old_start = old_at if old else max(old_at - 1, 0)
    new_start = new_at if new else max(new_at - 1, 0)
    body = "".join(lines)
    if not body.endswith("\n"):
        body += "\n"
    return f"@@ -{old_start},{old} +{new_start},{new} @@{context.rstrip(chr(10))}\n{body}"


def _short(head: str) -> str:
    """A hunk's ``@@`` line for a reason: its numbers only, JSON-quoted."""
    numbers = head.split("@@")[1].strip() if head.count("@@") >= 2 else head[:40]
    return shown(f"@@ {numbers} @@")
