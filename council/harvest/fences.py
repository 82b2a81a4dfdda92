"""Closed Markdown fences in an answer: where each one's whole content lies.

A model that forgot the ``{"findings": ...}`` wrapper often still fences a bare array,
and one that answered with the wrong object often fences it; both count only as a
fence's WHOLE content, and only for a CLOSED fence (an unclosed one may have been cut).

Fence lines follow the reading of docs/evidence-and-asks.md §1, simplified to what the harvest
needs: lines split on LF only; an opening fence is three or more backticks or tildes after
at most three spaces (a backtick fence's info string holds no backtick); the closing fence
uses the same character, at least as many of it, and nothing after it but spaces, tabs
or CR.

Source: docs/harvest.md §3.4 ("a fence's whole content means a CLOSED fence's content").
"""

from __future__ import annotations

import re

_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})([^\n]*)$", re.MULTILINE)
"""A line that may open or close a fence: its run of fence characters, then the rest."""


def fence_contents(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` offsets of every closed fence's content, in text order.

    ``start`` is just after the opening line's LF, ``end`` the start of the closing
    line (so the content keeps its own line breaks; callers strip it). Why: only a
    fence's WHOLE content may be a bare array or a lone object (docs/harvest.md §3.4). Linear
    in the text; never raises.
    """
    spans: list[tuple[int, int]] = []
    opened: tuple[str, int, int] | None = None
    for line in _FENCE_LINE.finditer(text):
        run, rest = line.group(1), line.group(2)
        if opened is None:
            if run[0] == "`" and "`" in rest:
                continue  # inline code such as ```x```, not a fence
            opened = (run[0], len(run), line.end() + 1)
        elif run[0] == opened[0] and len(run) >= opened[1] and not rest.strip(" \t\r"):
            spans.append((min(opened[2], line.start()), line.start()))
            opened = None
    return spans
