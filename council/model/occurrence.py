"""Occurrences: which piece of code a finding is about, named by the code itself.

A rule (bandit's B602, a model's "shell injection") is raised at many places; a person's
dismissal or a baseline entry is a decision about ONE of them. The place a finding names is
its anchor, but line numbers move with every edit above them, so an occurrence is named
the way GitHub code scanning's ``partialFingerprints.primaryLocationLineHash`` follows an
alert across commits: by a hash of the anchored code. :func:`code_hash` reads the anchored
lines (blank ones at either end left out) with every whitespace character removed
(reindenting, reformatting and trailing spaces do not change it), a little context (the
*header* of the block that holds them: the nearest line above indented less than they
are, such as ``def run(cmd):``; ``""`` at the top level) and an index among identical
windows (the same lines under the same header), so the value survives lines moving
(alone or with their block) and whitespace changes, while identical code elsewhere is
another occurrence: under another header it hashes differently, under the same one it
takes the next index.

The domain never reads files: :func:`stamp` is handed a reader (``path`` → the head tree's
lines, None when it holds no such file) by the runtime, which reads where the tree is.
Only new-side line anchors are stamped: the base is not in the tree, a file anchor's
occurrence is its file and a change anchor's the change (:mod:`council.model.fingerprint`).
Source: docs/identity-and-clocks.md "Occurrences"; issue 20.
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from council.model.findings import Finding, LineAnchor

CodeReader = Callable[[str], Sequence[str] | None]
"""What :func:`stamp` reads code with: a repository path → the lines of that file in the
head tree the reviewers read (without their line endings; secrets masked), or None when
the tree holds no readable file there."""

OCCURRENCE_VERSION = "o1"
"""Version of the code-hash recipe; part of the hashed text, so a new recipe never
collides with an old value."""

HASH_HEX = 32
"""Hex digits of the code hash kept (128 bits), before ``:index``."""


QUOTES = frozenset("\"'`")
"""Characters that open and close a string literal in most languages."""


def normalized(line: str) -> str:
    """A line with its whitespace removed outside string literals (``str.isspace``), and
    kept as it is inside them: what the hash reads of it. Why not all of it: inside a
    string whitespace is meaning (``"rm -rf /tmp"`` and ``"rm -rf / tmp"`` are two
    commands), and a decision must not cover the other one. The quotes are read per line,
    with backslash escapes; a line they mislead (an apostrophe in a comment) keeps more of
    its whitespace, so it fails closed: another hash, a fresh decision."""
    out: list[str] = []
    quote: str | None = None
    escaped = False
    for char in line:
        if quote is None:
            if char.isspace():
                continue
            if char in QUOTES:
                quote = char
        elif escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == quote:
            quote = None
        out.append(char)
    return "".join(out)


def _indent(line: str) -> int:
    """Columns of leading whitespace, a tab counting to the next multiple of 8."""
    stripped = line.lstrip()
    return len(line[: len(line) - len(stripped)].expandtabs(8))


@dataclass
class FileCode:
    """One file's lines, read once, answering :meth:`code` for any window of them.

    Built in O(lines): each line's normalized text, its indentation and its *parent* (the
    nearest non-blank line above indented less), so a window's header is found by
    following parents (at most the nesting depth), and the identical windows of a
    window are found by their first line's text. Windows already indexed are cached,
    so 500 findings on identical lines of one file cost one pass over those lines.
    """

    lines: Sequence[str]
    _norm: list[str] = field(init=False, repr=False)
    _indent: list[int | None] = field(init=False, repr=False)
    _parent: list[int] = field(init=False, repr=False)
    _previous: list[int] = field(init=False, repr=False)
    _starts: dict[str, list[int]] = field(init=False, repr=False)
    _windows: dict[tuple[tuple[str, ...], str], list[int]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        lines = [line.removesuffix("\r") for line in self.lines]
        self._norm = [normalized(line) for line in lines]
        self._indent = [
            _indent(line) if norm else None for line, norm in zip(lines, self._norm, strict=True)
        ]
        self._parent, self._previous = [], []
        stack: list[int] = []
        last = -1
        self._starts = {}
        for at, norm in enumerate(self._norm):
            self._previous.append(last)
            self._starts.setdefault(norm, []).append(at)
            depth = self._indent[at]
            if depth is None:
                self._parent.append(-1)
                continue
            while stack and (self._indent[stack[-1]] or 0) >= depth:
                stack.pop()
            self._parent.append(stack[-1] if stack else -1)
            stack.append(at)
            last = at
        self._windows = {}

    def __len__(self) -> int:
        return len(self._norm)

    def _header(self, first: int, depth: int | None) -> str:
        """The header of a window starting at index ``first`` whose least indentation is
        ``depth`` (None: every line blank): the nearest non-blank line above indented
        less (any non-blank line above, for a blank window); ``""`` when none is."""
        above = self._previous[first]
        while above >= 0 and depth is not None and (self._indent[above] or 0) >= depth:
            above = self._parent[above]
        return self._norm[above] if above >= 0 else ""

    def _key(self, first: int, last: int) -> tuple[tuple[str, ...], str]:
        content = tuple(self._norm[first : last + 1])
        depths = [d for d in self._indent[first : last + 1] if d is not None]
        return content, self._header(first, min(depths) if depths else None)

    def code(self, start: int, end: int) -> str | None:
        """The code hash of lines ``start`` to ``end`` (from 1, inclusive, in either
        order): ``<32 hex>:<index>``, the index counting from 1 the identical windows at
        or above it; None when the window is not inside the file. Blank lines at either
        end of the window are left out (they hold no code, and an analyzer's range may or
        may not reach over them: bandit's did, one commit to the next). Never raises."""
        low, high = min(start, end), max(start, end)
        if low < 1 or high > len(self._norm):
            return None
        first, last = low - 1, high - 1
        while first < last and not self._norm[first]:
            first += 1
        while last > first and not self._norm[last]:
            last -= 1
        key = self._key(first, last)
        starts = self._windows.get(key)
        if starts is None:
            span = last - first
            starts = [
                at
                for at in self._starts.get(key[0][0], ())
                if at + span < len(self._norm) and self._key(at, at + span) == key
            ]
            self._windows[key] = starts
        index = bisect_left(starts, first) + 1
        text = json.dumps([OCCURRENCE_VERSION, list(key[0]), key[1]], ensure_ascii=False)
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_HEX]
        return f"{digest}:{index}"


def file_lines(text: str) -> list[str]:
    """The lines of a file's text as :class:`FileCode` reads them: split at ``\\n``,
    without the empty piece after a final newline."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def code_hash(lines: Sequence[str], start: int, end: int) -> str | None:
    """The code hash of one window of a file (see :class:`FileCode`); for many windows
    of one file, build a :class:`FileCode` once. Never raises."""
    return FileCode(lines).code(start, end)


def stamp(findings: Sequence[Finding], read: CodeReader) -> list[Finding]:
    """``findings`` with each new-side line anchor (their own and their members') given
    its ``code`` at the head tree ``read`` reads, replacing any it had; None where the
    code cannot be read (no such file, lines past its end). Other anchors are left as
    they are. Each file is read once. Never raises (a reader that raises is the
    caller's fault)."""
    files: dict[str, FileCode | None] = {}

    def code_of(anchor: LineAnchor) -> str | None:
        if anchor.path not in files:
            lines = read(anchor.path)
            files[anchor.path] = FileCode(lines) if lines is not None else None
        code = files[anchor.path]
        if code is None:
            return None
        return code.code(anchor.start_line or anchor.line, anchor.line)

    def anchored(anchor: object) -> object:
        if not isinstance(anchor, LineAnchor) or anchor.side != "new":
            return anchor
        value = code_of(anchor)
        return anchor if value == anchor.code else anchor.model_copy(update={"code": value})

    out: list[Finding] = []
    for finding in findings:
        update: dict[str, object] = {}
        anchor = anchored(finding.anchor)
        if anchor is not finding.anchor:
            update["anchor"] = anchor
        if finding.members:
            members = tuple(
                m if (a := anchored(m.anchor)) is m.anchor else m.model_copy(update={"anchor": a})
                for m in finding.members
            )
            if any(new is not old for new, old in zip(members, finding.members, strict=True)):
                update["members"] = members
        out.append(finding.model_copy(update=update) if update else finding)
    return out
