"""The diff model: what changed, file by file and hunk by hunk, read from ``git diff``.

A review comment on a line in no hunk cannot be posted, so the council must know which
anchors the diff can carry, and show reviewers where they may anchor
(:func:`parse_diff`, :func:`filter_paths`, :func:`landing`, :func:`render_for_prompt`).
Pure: text in, frozen models out; running git lives in ``workers/git/diff_reading.py``.
Never raises on odd input: a file whose diff cannot be read is a :class:`ChangedFile` with
a ``note`` (and the hunks that could be read); text before the first file header goes to
:attr:`Change.notes`. Source: docs/architecture.md "Layers" (diff model, prompts),
docs/harvest.md §2 (anchors).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from itertools import pairwise
from typing import Literal

from pydantic import BaseModel, ConfigDict
from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

from council.change.diff_header import FileHeader, Status
from council.change.path_patterns import matches_any
from council.change.quoted_paths import shown
from council.model.findings import Anchor, ChangeAnchor, FileAnchor

LandingMiss = Literal["file-absent", "line-absent", "range-crosses-hunks", "range-inverted"]
"""Why an anchor does not land on the diff (a stable code; see :func:`landing`)."""

_GIT_HEADER = "diff --git "
"""The line that starts every file of ``git diff`` output."""

_GIT_HEADER_BYTES = re.compile(rb"^diff --git ", re.MULTILINE)
"""Where a file starts in the undecoded bytes (after a newline, or at the start)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Hunk(_Frozen):
    """One ``@@ -old_start,old_length +new_start,new_length @@`` block of a file's diff.

    The hunk covers old-side lines ``old_start .. old_start+old_length-1`` and new-side
    lines ``new_start .. new_start+new_length-1`` (context lines included); a length of
    0 covers nothing on that side. ``added`` lists the new-side numbers of ``+`` lines,
    ``removed`` the old-side numbers of ``-`` lines. Lines count from 1.
    """

    old_start: int
    old_length: int
    new_start: int
    new_length: int
    added: tuple[int, ...] = ()
    removed: tuple[int, ...] = ()

    def lines(self, side: Literal["new", "old"]) -> range:
        """The line numbers of one side this hunk covers (empty when its length is 0)."""
        if side == "new":
            return range(self.new_start, self.new_start + self.new_length)
        return range(self.old_start, self.old_start + self.old_length)


class ChangedFile(_Frozen):
    """One file of the change.

    ``path`` is the new-side path (the old path for a deleted file); ``old_path`` the
    old-side path (None for an added file; equal to ``path`` unless renamed). A binary
    file has no hunks. ``old_mode``/``new_mode`` are git modes (``100755``) when the
    diff states them. ``note`` says what could not be read, when something could not
    (the file is still listed: no silent loss). ``patch`` is the file's exact section of
    the diff text, so a filtered change can still show its diff.
    """

    path: str
    old_path: str | None = None
    status: Status = "modified"
    binary: bool = False
    hunks: tuple[Hunk, ...] = ()
    old_mode: str | None = None
    new_mode: str | None = None
    note: str | None = None
    patch: str = ""

    @property
    def added(self) -> int:
        """Number of added lines."""
        return sum(len(h.added) for h in self.hunks)

    @property
    def removed(self) -> int:
        """Number of removed lines."""
        return sum(len(h.removed) for h in self.hunks)

    def side_path(self, side: Literal["new", "old"]) -> str | None:
        """The file's path on one side of the diff, or None when it is absent there."""
        if side == "new":
            return None if self.status == "deleted" else self.path
        return self.old_path

    def ranges(self, side: Literal["new", "old"]) -> tuple[tuple[int, int], ...]:
        """The line ranges (first, last; inclusive) the hunks cover on one side."""
        out: list[tuple[int, int]] = []
        for hunk in self.hunks:
            covered = hunk.lines(side)
            if not covered:
                continue
            first, last = covered[0], covered[-1]
            if out and first <= out[-1][1] + 1:
                out[-1] = (out[-1][0], max(last, out[-1][1]))
            else:
                out.append((first, last))
        return tuple(out)


class Change(_Frozen):
    """The change under review: its files in diff order, and notes about the reading.

    ``notes`` holds change-level remarks (text before the first file header that was not
    read). :attr:`total_bytes` is the size the caps apply to.
    """

    files: tuple[ChangedFile, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def total_bytes(self) -> int:
        """Size of the files' diff text in UTF-8 bytes (what ``max_diff_bytes`` caps)."""
        return sum(len(f.patch.encode("utf-8", "surrogatepass")) for f in self.files)

    @property
    def text(self) -> str:
        """The diff text of the files in the change, in order."""
        return "".join(f.patch for f in self.files)

    @property
    def paths(self) -> tuple[str, ...]:
        """Every file's :attr:`ChangedFile.path`, in diff order."""
        return tuple(f.path for f in self.files)


def _split_lines(text: str) -> list[str]:
    """Lines of ``text`` split at ``\\n`` only, newline kept (a form feed is content)."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def _chunks(lines: list[str]) -> Iterator[list[str]]:
    """The lines before the first file header, then each file's lines, in order."""
    current: list[str] = []
    for line in lines:
        if line.startswith(_GIT_HEADER):
            yield current
            current = []
        current.append(line)
    yield current


def parse_diff(text: str) -> Change:
    """Read the text of ``git diff`` into a :class:`Change`.

    Handles added, deleted, renamed (``-M``) and mode-only changes, binary files, quoted
    and unquoted paths with spaces or non-ASCII characters, and missing final newlines.
    An empty text is an empty change. Never raises: what cannot be read is reported in a
    file's ``note`` or in :attr:`Change.notes`. Source: docs/architecture.md "Layers".
    """
    chunks = _chunks(_split_lines(text))
    preamble = next(chunks)
    notes: list[str] = []
    if any(line.strip() for line in preamble):
        notes.append(f"{len(preamble)} line(s) before the first 'diff --git' header were not read")
    files = tuple(_read_file(chunk) for chunk in chunks)
    return Change(files=files, notes=tuple(notes))


def decode_diff(raw: bytes) -> tuple[str, tuple[str, ...]]:
    """Decode ``git diff`` bytes as UTF-8, and name the files that were not UTF-8.

    Returns ``(text, non_utf8_paths)``: bytes that are not UTF-8 become U+FFFD
    replacement characters, file by file, and each such file's path is listed (in diff
    order) so the prompt can say so. Why: a diff is bytes; reviewers read text; a Latin-1
    file must not stop the review, nor be silently garbled.
    """
    parts: list[str] = []
    bad: list[str] = []
    for index, chunk in enumerate(_byte_chunks(raw)):
        try:
            parts.append(chunk.decode("utf-8"))
        except UnicodeDecodeError:
            decoded = chunk.decode("utf-8", "replace")
            parts.append(decoded)
            if index > 0:
                bad.extend(f.path for f in parse_diff(decoded).files)
    return "".join(parts), tuple(bad)


def _byte_chunks(raw: bytes) -> list[bytes]:
    """``raw`` cut before every ``diff --git`` line (the first piece is the preamble)."""
    starts = [m.start() for m in _GIT_HEADER_BYTES.finditer(raw)]
    if not starts:
        return [raw]
    return [raw[: starts[0]], *(raw[a:b] for a, b in pairwise([*starts, len(raw)]))]


def _read_file(lines: list[str]) -> ChangedFile:
    """One file's chunk of the diff (its first line is the ``diff --git`` header)."""
    header = FileHeader()
    body_at = len(lines)
    for index, line in enumerate(lines[1:], start=1):
        if line.startswith("@@"):
            body_at = index
            break
        if line.rstrip("\r\n") == "GIT binary patch":
            header.binary = True
            break
        header.read(line)
    notes: list[str] = []
    names = header.names(lines[0][len(_GIT_HEADER) :])
    if names is None:
        raw = lines[0][len(_GIT_HEADER) :].rstrip("\r\n")
        names = (raw, raw)
        notes.append("its file name could not be read from the diff header")
    old, new = names
    hunks = _read_hunks(lines[body_at:], notes)
    status = header.status
    if status == "modified" and old != new:
        status = "renamed"
    return ChangedFile(
        path=old if status == "deleted" else new,
        old_path=None if status == "added" else old,
        status=status,
        binary=header.binary,
        hunks=hunks,
        old_mode=header.old_mode,
        new_mode=header.new_mode,
        note="; ".join(notes) or None,
        patch="".join(lines),
    )


def _read_hunks(lines: list[str], notes: list[str]) -> tuple[Hunk, ...]:
    """The hunks of one file's body, each read on its own with unidiff.

    A hunk unidiff cannot read (cut off, miscounted) is left out and named in ``notes``;
    the other hunks of the file are kept.
    """
    groups: list[list[str]] = []
    for line in lines:
        if line.startswith("@@") or not groups:
            groups.append([])
        groups[-1].append(line)
    hunks: list[Hunk] = []
    for group in groups:
        if not group[0].startswith("@@"):
            continue
        try:
            patch = PatchSet(["--- a/f\n", "+++ b/f\n", *group])
            if len(patch) != 1 or len(patch[0]) != 1:
                raise UnidiffParseError("not one hunk")
            parsed = patch[0][0]
        except (UnidiffParseError, ValueError, TypeError) as exc:
            header = group[0].rstrip("\r\n")
            notes.append(f"hunk {header!r} could not be read ({exc})")
            continue
        hunks.append(
            Hunk(
                old_start=parsed.source_start,
                old_length=parsed.source_length,
                new_start=parsed.target_start,
                new_length=parsed.target_length,
                added=tuple(n for ln in parsed if ln.is_added and (n := ln.target_line_no)),
                removed=tuple(n for ln in parsed if ln.is_removed and (n := ln.source_line_no)),
            )
        )
    return tuple(hunks)


def read_change(
    raw: bytes, include: Sequence[str], exclude: Sequence[str]
) -> tuple[Change, list[str], tuple[str, ...]]:
    """``git diff`` bytes → the change reviewers see: decoded, parsed, filtered.

    Returns ``(change, excluded paths, non-UTF-8 paths)``: :func:`decode_diff`, then
    :func:`parse_diff`, then :func:`filter_paths` with the roster's ``[paths]``. One
    function so every caller (a round, an interdiff) reads a diff the same way.
    """
    text, non_utf8 = decode_diff(raw)
    change, excluded = filter_paths(parse_diff(text), include, exclude)
    return change, excluded, non_utf8


def filter_paths(
    change: Change, include: Sequence[str], exclude: Sequence[str]
) -> tuple[Change, list[str]]:
    """Keep the files the roster's ``[paths]`` patterns select; name the ones left out.

    A file is kept when ``include`` is empty or one of its patterns selects the file's
    path or old path, and no ``exclude`` pattern selects either (exclude wins). Patterns
    are read by :mod:`council.change.path_patterns` (``src/**/*.py``, ``docs/**``, ``*.lock``).
    Returns ``(kept change, excluded paths in diff order)``; the kept change's
    :attr:`Change.total_bytes` counts only its files, so the diff cap applies after
    filtering. Why: generated files and lock files drown a review.
    """
    kept: list[ChangedFile] = []
    excluded: list[str] = []
    for changed in change.files:
        if selects(changed, include, exclude):
            kept.append(changed)
        else:
            excluded.append(changed.path)
    return change.model_copy(update={"files": tuple(kept)}), excluded


def selects(changed: ChangedFile, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether the roster's ``[paths]`` keep one file of the change (see
    :func:`filter_paths`): ``include`` empty or selecting its path or old path, and no
    ``exclude`` pattern selecting the path it has after the change (its old path for a
    deleted file). Why one function: the diff is cut to the kept
    files while it is read (:meth:`workers.git.repository.Repository.diff`), with the same rule."""
    names = [changed.path]
    if changed.old_path is not None and changed.old_path != changed.path:
        names.append(changed.old_path)
    wanted = not include or any(matches_any(n, include) for n in names)
    # Exclusion reads the side that exists after the change: a file renamed OUT of an
    # excluded path (poetry.lock → src/deps.py) is new code and is reviewed; one renamed
    # into it, or deleted from it, is left out. The old path never hides the new file.
    kept = changed.old_path if changed.status == "deleted" else changed.path
    return wanted and not matches_any(kept or changed.path, exclude)


def added_lines(change: Change) -> dict[str, frozenset[int]]:
    """Each file's new-side path → the numbers of its added lines (``+`` lines).

    A deleted file is left out (it has no new side); a file with no added line (a pure
    deletion of lines, a rename or mode change alone, a binary file) maps to an empty
    set. Why: an analyzer run over the whole tree reports old lines too, and a backend
    keeps only what the change wrote.
    """
    out: dict[str, frozenset[int]] = {}
    for changed in change.files:
        path = changed.side_path("new")
        if path is not None:
            lines = frozenset(n for hunk in changed.hunks for n in hunk.added)
            out[path] = out.get(path, frozenset()) | lines
    return out


def landing(change: Change, anchor: Anchor) -> LandingMiss | None:
    """Whether a finding's anchor lands on the diff: None when it does, else why not.

    * a change anchor always lands; a file anchor lands when the file is in the change
      (by its new or old path);
    * a line anchor is checked on its side: ``range-inverted`` when ``start_line`` is
      after ``line``; ``file-absent`` when no file of the change has that path on that
      side (an added file has no old side, a deleted one no new side);
      ``line-absent`` when neither end of the range is inside a hunk on that side;
      ``range-crosses-hunks`` when the two ends are not inside the same hunk.

    Why: a code host accepts a line comment only on lines its diff shows, and a range
    only within one hunk; a finding that does not land is shown at file level instead.
    Source: docs/harvest.md §2 (anchors).
    """
    if isinstance(anchor, ChangeAnchor):
        return None
    if isinstance(anchor, FileAnchor):
        found = any(anchor.path in (f.path, f.old_path) for f in change.files)
        return None if found else "file-absent"
    first = anchor.start_line if anchor.start_line is not None else anchor.line
    if first > anchor.line:
        return "range-inverted"
    candidates = [f for f in change.files if f.side_path(anchor.side) == anchor.path]
    if not candidates:
        return "file-absent"
    hunks = [h for f in candidates for h in f.hunks]
    start = _hunk_holding(hunks, anchor.side, first)
    end = _hunk_holding(hunks, anchor.side, anchor.line)
    if start is None and end is None:
        return "line-absent"
    if start is None or start is not end:
        return "range-crosses-hunks"
    return None


def _hunk_holding(hunks: Sequence[Hunk], side: Literal["new", "old"], line: int) -> Hunk | None:
    """The hunk whose lines on ``side`` include ``line``, or None."""
    for hunk in hunks:
        if line in hunk.lines(side):
            return hunk
    return None


def _spans(side: str, ranges: Sequence[tuple[int, int]]) -> str:
    """``new lines 10-24, 40-41, 7`` (``new line 7`` for one line) from inclusive ranges."""
    word = "line" if len(ranges) == 1 and ranges[0][0] == ranges[0][1] else "lines"
    return f"{side} {word} " + ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def anchor_map(change: Change) -> list[str]:
    """One line per file saying where a finding on it may anchor, in diff order.

    Shapes: ``"src/app.py": new lines 10-24, 40-41; old lines 12-20`` (old ranges only
    when lines were removed), ``"src/old.py" (deleted): old lines 1-30``, ``"b.py"
    (renamed from "a.py"): new lines 3-9; old lines 3-8 of "a.py"``, ``"logo.png"
    (binary): the file as a whole``. Paths are JSON strings
    (:func:`council.change.quoted_paths.shown`): the change names its files, and a name holding
    a newline must not write lines of its own. Why: reviewers anchor better when told
    which lines the diff can carry.
    """
    out: list[str] = []
    for changed in change.files:
        label = shown(changed.path)
        if changed.status == "renamed":
            label += f" (renamed from {shown(changed.old_path or '')})"
        elif changed.status in ("added", "deleted"):
            label += f" ({changed.status})"
        if changed.binary:
            label += " (binary)"
        if changed.old_mode and changed.new_mode and changed.old_mode != changed.new_mode:
            label += f" (mode {changed.old_mode} -> {changed.new_mode})"
        parts: list[str] = []
        new_ranges = changed.ranges("new")
        old_ranges = changed.ranges("old")
        if changed.status != "deleted" and new_ranges:
            parts.append(_spans("new", new_ranges))
        if old_ranges and (changed.status == "deleted" or changed.removed):
            of = f" of {shown(changed.old_path or '')}" if changed.status == "renamed" else ""
            parts.append(_spans("old", old_ranges) + of)
        out.append(f"{label}: " + ("; ".join(parts) if parts else "the file as a whole"))
    return out


def render_for_prompt(change: Change) -> str:
    """The diff as reviewers are shown it: the anchor map, then the diff text.

    Deterministic: the same change renders to the same text. Source: docs/architecture.md
    "Layers" (prompts).
    """
    lines = anchor_map(change)
    head = "Where findings may anchor:\n" + "".join(f"- {line}\n" for line in lines)
    return head + "\n" + change.text
