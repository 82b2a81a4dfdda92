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
from collections.abc import Callable, Collection, Mapping, Sequence
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

INDENTED_SUFFIXES = (".py", ".pyi", ".pyw")
"""Files whose indentation is meaning (Python): their blocks' hashes read it
(:meth:`FileCode.block`), so moving ``y = escape(y)`` into an ``if`` above a dismissed
``eval(y)`` takes the dismissal out of force; elsewhere re-indenting keeps a decision."""


def python_script(lines: Sequence[str]) -> bool:
    """Whether a file's first line is a ``#!`` naming Python (a script with no suffix)."""
    return bool(lines) and lines[0].startswith("#!") and "python" in lines[0]


BLOCK_MAX_LINES = 200
"""The most lines a block hash reads (:meth:`FileCode.block`): the outermost block holding
a window that is no longer than this. When even the innermost one is longer, or the
window is at the top level, its block is the window and the :data:`BLOCK_ABOVE_LINES`
lines above it."""

BLOCK_ABOVE_LINES = 20
"""Lines above a top-level window (or one whose innermost block is over
:data:`BLOCK_MAX_LINES`) that its block hash reads: the guard of top-level code comes
before it. The whole file was read once, and every later commit to the file (a comment
appended at its end) took a person's decision on module-level code out of force."""

AddedLines = Mapping[str, Collection[int]]
"""A repository path → the numbers of the lines the pull request added there
(:func:`council.change.diff.added_lines`): what :func:`stamp` counts identical windows
with, the untouched ones first."""


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
    added: Collection[int] = ()
    """Numbers of the lines the pull request added (from 1): a window holding one counts
    after every untouched identical window (:meth:`code`)."""
    indented: bool = False
    """Whether indentation is meaning in this file (:data:`INDENTED_SUFFIXES`): its
    :meth:`block` hashes each line's nesting level within the block too."""
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
        self._added = frozenset(self.added)
        self._blocks: dict[tuple[int, int], str] = {}

    def __len__(self) -> int:
        return len(self._norm)

    def _header_at(self, first: int, depth: int | None) -> int:
        """The index of the header of a window starting at index ``first`` whose least
        indentation is ``depth`` (None: every line blank): the nearest non-blank line
        above indented less (any non-blank line above, for a blank window); -1: none."""
        above = self._previous[first]
        while above >= 0 and depth is not None and (self._indent[above] or 0) >= depth:
            above = self._parent[above]
        return above

    def _header(self, first: int, depth: int | None) -> str:
        above = self._header_at(first, depth)
        return self._norm[above] if above >= 0 else ""

    def _trim(self, start: int, end: int) -> tuple[int, int] | None:
        """Indexes of the first and last line of lines ``start`` to ``end`` (from 1, either
        order) without the blank ones at either end; None when not inside the file."""
        low, high = min(start, end), max(start, end)
        if low < 1 or high > len(self._norm):
            return None
        first, last = low - 1, high - 1
        while first < last and not self._norm[first]:
            first += 1
        while last > first and not self._norm[last]:
            last -= 1
        return first, last

    def _extent(self, header: int) -> int:
        """The index of the last non-blank line of the block ``header`` opens: the lines
        below it indented more, up to the first non-blank one indented no more."""
        depth = self._indent[header] or 0
        last = header
        for at in range(header + 1, len(self._norm)):
            indent = self._indent[at]
            if indent is None:
                continue
            if indent <= depth:
                break
            last = at
        return last

    def _is_added(self, at: int, span: int) -> bool:
        return any(n in self._added for n in range(at + 1, at + span + 2))

    def block(self, start: int, end: int) -> str | None:
        """The hash of the block holding lines ``start`` to ``end``: the outermost block
        (its header and the lines below it indented more) holding them that is at most
        :data:`BLOCK_MAX_LINES` long, or the window and the :data:`BLOCK_ABOVE_LINES`
        lines above it when it is at the top level or its innermost block is longer.
        What a decision keeps besides the code hash: a line added or removed in that block
        (a guard deleted above the dismissed call) changes it. None when the window is not
        inside the file. Never raises."""
        trimmed = self._trim(start, end)
        if trimmed is None:
            return None
        first, last = trimmed
        depths = [d for d in self._indent[first : last + 1] if d is not None]
        header = self._header_at(first, min(depths) if depths else None)
        chosen = -1
        while header >= 0 and self._extent(header) - header < BLOCK_MAX_LINES:
            chosen = header
            header = self._parent[header]
        # at the top level: the window, its own statement's lines below it (a call's
        # arguments), and the lines above it where its guard would be
        below = min(self._extent(first), first + BLOCK_MAX_LINES)
        span = (
            (chosen, self._extent(chosen))
            if chosen >= 0
            else (max(0, first - BLOCK_ABOVE_LINES), max(last, below))
        )
        if span not in self._blocks:
            lines = self._norm[span[0] : span[1] + 1]
            kind = "block"
            if self.indented:  # a guard moved into an `if` changes what the block does
                lines = [
                    f"{level}:{n}" if level is not None else n
                    for level, n in zip(self._levels(*span), lines, strict=True)
                ]
                kind = "indented-block"
            text = json.dumps([OCCURRENCE_VERSION, kind, lines], ensure_ascii=False)
            digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
            self._blocks[span] = digest[:HASH_HEX]
        return self._blocks[span]

    def _levels(self, first: int, last: int) -> list[int | None]:
        """Each line's nesting level in the file, for lines ``first`` to ``last``: how
        many lines enclose it (its header, the header's header, …), wherever they are,
        so an ``if`` far above a top-level window still counts; None for a blank line.
        Levels, not columns: a formatter's 4 spaces made 2 keep them, a line moved into
        an ``if`` does not."""
        levels: list[int | None] = []
        for at in range(first, last + 1):
            if self._indent[at] is None:
                levels.append(None)
                continue
            level, up = 0, self._parent[at]
            while up >= 0:
                level, up = level + 1, self._parent[up]
            levels.append(level)
        return levels

    def _key(self, first: int, last: int) -> tuple[tuple[str, ...], str]:
        content = tuple(self._norm[first : last + 1])
        depths = [d for d in self._indent[first : last + 1] if d is not None]
        return content, self._header(first, min(depths) if depths else None)

    def code(self, start: int, end: int) -> str | None:
        """The code hash of lines ``start`` to ``end`` (from 1, inclusive, in either
        order): ``<32 hex>:<index>``, the index counting from 1 the identical windows
        the pull request left untouched from the top, then those holding an added line
        (:attr:`added`) from the top, so a copy added above a decided-on window never
        takes its index; None when the window is not inside the file. Blank lines at
        either end of the window are left out (they hold no code, and an analyzer's
        range may or may not reach over them: bandit's did, one commit to the next).
        Never raises."""
        trimmed = self._trim(start, end)
        if trimmed is None:
            return None
        first, last = trimmed
        key = self._key(first, last)
        starts = self._windows.get(key)
        if starts is None:
            span = last - first
            starts = sorted(
                (
                    at
                    for at in self._starts.get(key[0][0], ())
                    if at + span < len(self._norm) and self._key(at, at + span) == key
                ),
                key=lambda at: (self._is_added(at, span), at),
            )
            self._windows[key] = starts
        index = starts.index(first) + 1
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


def stamp(
    findings: Sequence[Finding],
    read: CodeReader,
    added: AddedLines | None = None,
    *,
    blocks_only: bool = False,
) -> list[Finding]:
    """``findings`` with each new-side line anchor (their own and their members') given
    its ``code`` and ``block`` (:meth:`FileCode.block`) at the head tree ``read`` reads,
    replacing any they had; None where the code cannot be read (no such file, lines past
    its end). ``added``: the pull request's added lines, which count last among
    identical windows. ``blocks_only``: keep each anchor's code, set its block only (a
    carried finding keeps the code it was filed with; its block is read at this head).
    Other anchors are left as they are. Each file is read once. Never raises (a reader
    that raises is the caller's fault)."""
    files: dict[str, FileCode | None] = {}

    def file_of(path: str) -> FileCode | None:
        if path not in files:
            lines = read(path)
            new = (added or {}).get(path, ())
            files[path] = None
            if lines is not None:
                indented = path.endswith(INDENTED_SUFFIXES) or python_script(lines)
                files[path] = FileCode(lines, new, indented)
        return files[path]

    def anchored(anchor: object) -> object:
        if not isinstance(anchor, LineAnchor) or anchor.side != "new":
            return anchor
        code = file_of(anchor.path)
        first = anchor.start_line or anchor.line
        value = anchor.code
        if not blocks_only:
            value = code.code(first, anchor.line) if code is not None else None
        block = code.block(first, anchor.line) if code is not None and value else None
        if (value, block) == (anchor.code, anchor.block):
            return anchor
        return anchor.model_copy(update={"code": value, "block": block})

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
