"""Code regions: the fenced code blocks of a text, found by CommonMark's fence rules.

A reviewer that ran a script shows it in a fenced block; before anything is compared
the matcher must know exactly which bytes the block holds, so the rules are CommonMark's
fences with nothing guessed and nothing rewritten:

* a fence line is at most 3 SPACES, then a run of 3+ backticks or 3+ tildes, then the
  rest of the line (the info string); a tab before the run counts as four spaces, so it
  is no fence, and no container is parsed (a line starting with ``>``, or ``- ```sh``,
  is never a fence line; inside a list item up to 3 spaces still make one);
* a backtick fence's info string holds no backtick (``` ``` run`x` ``` is prose);
* the closing fence uses the opener's character, at least as many of it, and has no
  info string; trailing spaces, tabs and CR never stop a line from being a fence line,
  so a CR LF text's ````` ```\\r ````` closes its block; a line that does not close is
  content, fences never nest;
* a fence left open runs to the end of the text;
* lines split on LF only (a CR, a form feed, U+2028 are bytes of their line); the content
  is the lines between the fences, each with up to the opening fence's indentation (in
  spaces) removed, joined by LF; the LF ending the last content line is not content.

At most :data:`MAX_REGIONS` regions are read; the others are only counted (and stay in
the prose). One pass over the text: linear in its size.

Source: docs/evidence-and-asks.md §1 ("Code regions").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_REGIONS = 64
"""Most regions one text has read; the rest are counted as dropped."""

_FENCE_LINE = re.compile(r"^( {0,3})(`{3,}|~{3,})([^\n]*)", re.MULTILINE)
"""A line that may open or close a fence: its indentation (spaces), its run of fence
characters, and the rest of the line. ``^`` follows LF only, so no other line break
starts a line."""

_FENCE_SPACE = " \t\r"
"""What a fence line may end with, and what an info string is trimmed of."""


@dataclass(frozen=True)
class CodeRegion:
    """One fenced block: where it sits in the text, its info string, its content.

    ``start`` and ``end`` are offsets (in characters of the text) of the block's whole
    lines: from the start of the opening fence line through the end of the closing fence
    line, its LF included (to the end of the text when the block is unclosed or the
    closing line has no LF), so ``text[:start] + text[end:]`` cuts the block out.
    """

    position: int
    """Which region of the text this is, counted from 1."""

    start: int
    end: int
    info: str
    """The info string, trimmed of spaces, tabs and CR (``python title="x"``; ``""``)."""

    content: str
    """The program the block shows, exactly (see the module docstring)."""

    closed: bool
    """False when the fence was never closed and the block runs to the end of the text."""


@dataclass(frozen=True)
class Regions:
    """The regions read from one text (at most :data:`MAX_REGIONS`, in text order) and
    how many more there were (``dropped``: counted, never read)."""

    read: tuple[CodeRegion, ...] = ()
    dropped: int = 0


@dataclass
class _Open:
    """A fence opened and not yet closed."""

    char: str
    length: int
    indent: int
    start: int
    content_start: int
    info: str


def code_regions(text: str, max_regions: int = MAX_REGIONS) -> Regions:
    """Every fenced code block of ``text``: the first ``max_regions`` read, the rest counted.

    Why: a block is evidence only as the exact program it shows, so the fence rules are
    applied to the letter (module docstring). Linear in ``len(text)``: one regular
    expression pass finds the candidate fence lines, and each block's content is sliced
    (and de-indented) once. Never raises.
    """
    read: list[CodeRegion] = []
    dropped = 0
    opened: _Open | None = None
    for line in _FENCE_LINE.finditer(text):
        indent, run, rest = line.group(1), line.group(2), line.group(3)
        if opened is None:
            if run[0] == "`" and "`" in rest:
                continue  # a backtick info string may not hold a backtick: not a fence
            opened = _Open(
                char=run[0],
                length=len(run),
                indent=len(indent),
                start=line.start(),
                content_start=min(line.end() + 1, len(text)),
                info=rest.strip(_FENCE_SPACE),
            )
            continue
        if run[0] != opened.char or len(run) < opened.length or rest.strip(_FENCE_SPACE):
            continue  # content of the open block
        end = min(line.end() + 1, len(text))
        if len(read) < max_regions:
            read.append(_region(text, opened, len(read) + 1, line.start(), end, closed=True))
        else:
            dropped += 1
        opened = None
    if opened is not None:
        if len(read) < max_regions:
            read.append(_region(text, opened, len(read) + 1, len(text), len(text), closed=False))
        else:
            dropped += 1
    return Regions(read=tuple(read), dropped=dropped)


def _region(
    text: str, opened: _Open, position: int, content_end: int, end: int, *, closed: bool
) -> CodeRegion:
    """The region of ``opened``, whose content lines end at offset ``content_end``."""
    raw = text[opened.content_start : content_end]
    if raw.endswith("\n"):
        raw = raw[:-1]  # the LF ending the last content line belongs to what follows
    content = _dedented(raw, opened.indent) if opened.indent else raw
    return CodeRegion(
        position=position,
        start=opened.start,
        end=end,
        info=opened.info,
        content=content,
        closed=closed,
    )


def _dedented(raw: str, indent: int) -> str:
    """``raw`` with up to ``indent`` leading spaces removed from each LF-separated line."""
    pad = " " * indent
    lines = raw.split("\n")
    for index, line in enumerate(lines):
        # A line with fewer spaces than the fence loses the spaces it has (CommonMark).
        lines[index] = line[indent:] if line.startswith(pad) else line.lstrip(" ")
    return "\n".join(lines)
