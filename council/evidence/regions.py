"""Code regions: the fenced code blocks of a text, found by CommonMark's fence rules.

The matcher compares bytes, so which bytes a block holds is decided with nothing guessed
or rewritten: a fence line is at most 3 spaces (a tab counts four), a run of 3+ backticks
or tildes, then the info string (no backtick in a backtick fence's); it closes on the
opener's character, as many or more, with no info string; trailing spaces, tabs and CR
never matter; a fence left open runs to the end; no container is parsed and fences never
nest. Lines split on LF only; the content is the lines between, each stripped of up to the
opener's indentation. At most :data:`MAX_REGIONS` are read, the rest counted and left in
the prose. One pass. Source: docs/evidence-and-asks.md §1 ("What counts as a block").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

MAX_REGIONS = 64
"""Most regions one text has read; the rest are counted as dropped."""

_FENCE_LINE = re.compile(r"^( {0,3})(`{3,}+|~{3,}+)([^\n]*+)", re.MULTILINE)
"""A line that may open a fence: its indentation (spaces), its run of fence characters,
and the rest of the line. ``^`` follows LF only, so no other line break starts a line."""

_FENCE_SPACE = " \t\r"
"""What a fence line may end with, and what an info string is trimmed of."""


@lru_cache(maxsize=256)
def _closing_line(char: str, length: int) -> re.Pattern[str]:
    """The closing fence of a block opened by ``length`` times ``char``: at most 3 spaces,
    at least as many of the same character, then only spaces, tabs and CR to the LF.
    (Possessive quantifiers: no backtracking, so a search is linear in the text.)"""
    return re.compile(rf"^ {{0,3}}{re.escape(char)}{{{length},}}+[ \t\r]*+$", re.MULTILINE)


@lru_cache(maxsize=4)
def _indentation(spaces: int) -> re.Pattern[str]:
    """One to ``spaces`` spaces at the start of a line."""
    return re.compile(rf"^ {{1,{spaces}}}", re.MULTILINE)


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


def code_regions(text: str, max_regions: int = MAX_REGIONS) -> Regions:
    """Every fenced code block of ``text``: the first ``max_regions`` read, the rest counted.

    Why: a block is evidence only as the exact program it shows, so the fence rules are
    applied to the letter (module docstring). Linear in ``len(text)``: regular
    expressions without backtracking find each opening line and then its closing line
    (Python never loops over the lines between), and each block read is sliced and
    de-indented once. Never raises.
    """
    read: list[CodeRegion] = []
    dropped = 0
    size = len(text)
    at = 0
    while (line := _FENCE_LINE.search(text, at)) is not None:
        indent, run, rest = line.group(1, 2, 3)
        if run[0] == "`" and "`" in rest:
            at = line.end()  # a backtick info string may not hold a backtick: not a fence
            continue
        closing = _closing_line(run[0], len(run)).search(text, line.end())
        if len(read) < max_regions:
            raw = text[line.end() + 1 : size if closing is None else closing.start()]
            if raw.endswith("\n"):
                raw = raw[:-1]  # the LF ending the last content line belongs to what follows
            if indent:
                raw = _indentation(len(indent)).sub("", raw)
            read.append(
                CodeRegion(
                    position=len(read) + 1,
                    start=line.start(),
                    end=size if closing is None else min(closing.end() + 1, size),
                    info=rest.strip(_FENCE_SPACE),
                    content=raw,
                    closed=closing is not None,
                )
            )
        else:
            dropped += 1
        if closing is None:
            break  # an unclosed fence runs to the end of the text
        at = closing.end()
    return Regions(read=tuple(read), dropped=dropped)
