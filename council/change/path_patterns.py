"""Path patterns: the globs of a roster's ``[paths] include``/``exclude``.

They read like ``.gitignore`` patterns, the syntax people already know for "these files":
``*``, ``?`` and ``[abc]``/``[!abc]`` match within one segment, never ``/``; ``**`` as a
whole segment matches any number of segments, none included (``src/**/*.py`` matches
``src/a.py`` and ``src/x/y/a.py``); a pattern without ``/`` matches at any depth, one with
``/`` is anchored at the root (a leading ``/`` is ignored); a pattern that matches a
directory matches everything inside it. Case-sensitive, as git paths are.
Source: docs/architecture.md "Layers" (diff model), the roster's ``[paths]`` table.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache


@dataclass(frozen=True)
class PathPattern:
    """One compiled path pattern.

    Build with :meth:`PathPattern.of`; ask with :meth:`matches`. Compiling never fails:
    a malformed character class (``[abc``) is read as literal text.
    """

    text: str
    """The pattern as the roster gave it."""
    regex: re.Pattern[str] = field(repr=False, compare=False)
    """The compiled full-match expression."""

    @classmethod
    def of(cls, text: str) -> PathPattern:
        """Compile ``text`` (cached: the same pattern compiles once per process)."""
        return _compile(text)

    def matches(self, path: str) -> bool:
        """Whether ``path`` (repository-relative, ``/``-separated) is selected."""
        return self.regex.fullmatch(path) is not None


_NOTHING = re.compile(r"(?!)")
"""Matches no path: what a blank pattern selects."""


@lru_cache(maxsize=256)
def _compile(text: str) -> PathPattern:
    body = text.strip()
    anchored = "/" in body.rstrip("/")
    segments = [s for s in body.strip("/").split("/") if s != ""]
    if not segments:
        return PathPattern(text=text, regex=_NOTHING)
    if not anchored:
        segments.insert(0, "**")
    try:
        regex = re.compile(_join(segments, classes=True), re.DOTALL)
    except re.error:  # a class such as [z-a]: read the brackets as literal text
        regex = re.compile(_join(segments, classes=False), re.DOTALL)
    return PathPattern(text=text, regex=regex)


def _join(segments: list[str], *, classes: bool) -> str:
    """The full-match regex of a pattern's segments (a directory match included)."""
    parts: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
        else:
            parts.append(_segment(segment, classes=classes) + ("" if last else "/"))
    return "".join(parts) + "(?:/.*)?"


def _segment(segment: str, *, classes: bool) -> str:
    """The regex of one path segment (no ``/`` inside)."""
    out: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and classes and (end := _class_end(segment, i)) != -1:
            inner = segment[i + 1 : end]
            negate = inner[:1] in ("!", "^")
            if negate:
                inner = inner[1:]
            escaped = inner.replace("\\", "\\\\").replace("[", "\\[")
            out.append(("[^/" if negate else "[") + escaped + "]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _class_end(segment: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start``, or -1 (then literal).

    A ``]`` right after ``[`` or ``[!`` belongs to the set, as in fnmatch.
    """
    first = start + 1
    if segment[first : first + 1] in ("!", "^"):
        first += 1
    return segment.find("]", first + 1)


def matches_any(path: str, patterns: Sequence[str]) -> bool:
    """Whether any of ``patterns`` selects ``path``; False for no patterns."""
    return any(PathPattern.of(p).matches(path) for p in patterns)


def first_match(path: str, patterns: Sequence[str]) -> str | None:
    """The first of ``patterns`` that selects ``path`` (as the roster wrote it), or None:
    what a report names as the reason a file was left out."""
    return next((p for p in patterns if PathPattern.of(p).matches(path)), None)
