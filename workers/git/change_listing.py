"""The list of the change's files (``git diff --raw -z``), read as a stream under a cap
on its entries and on each path, and what it says about submodules.

A repository of a few KiB can list a million files: one tree object reused at every
level (4 identical subtrees, 10 levels deep: 4^10 paths). Read whole, that listing
alone took 21 s and 1.3 GB before any other cap was reached; read here, git is stopped
once the cap is passed, and the sizes and the diff are never asked for.

Runtime layer (pure bytes, fed from git's pipe). Source: docs/architecture.md "The
shape"; issue "The change under review is untrusted" (every size read has a cap).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass

from council.errors import ChangeTooLarge, RepositoryError
from workers.git.git_objects import Blobs

DEFAULT_MAX_CHANGED_FILES = 100_000
"""The most files the change may list, unless ``COUNCIL_MAX_CHANGED_FILES``."""

CHANGED_FILES_KNOB = "COUNCIL_MAX_CHANGED_FILES"
"""The setting that raises the cap on the change's files (named in :class:`ChangeTooLarge`)."""

PATH_MAX_BYTES = 4096
"""The longest path of the listing, in bytes (Linux's ``PATH_MAX``): no worker could
unpack a longer one. So one record of the listing is at most about 8.3 KiB (two paths
and ~100 bytes of modes and object ids), and the whole listing read is at most that
times the cap on files."""

TREE_OBJECT_MAX_BYTES = 32 * 1024 * 1024
"""The largest single tree object (one directory's listing) read to count the change,
in bytes (32 MiB: about a million entries with short names)."""

GITLINK = "160000"
"""The git mode of a submodule (a "gitlink": a commit of another repository)."""

SUBMODULES_SHOWN = 20
"""At most this many submodules are named in the note about them."""


@dataclass(frozen=True)
class ChangedEntry:
    """One record of ``git diff --raw -z --no-abbrev``: both sides' git modes and object
    ids (zeros for a missing side), the status letter (``A``, ``D``, ``M``, ``R``, ``C``,
    ``T``), and the path (the new one; the old one for a deletion) with ``old_path``
    (None for an addition)."""

    old_mode: str
    new_mode: str
    old: str
    new: str
    status: str
    path: str
    old_path: str | None


class ChangeListing:
    """Streamed ``git diff --raw -z`` bytes, parsed into :class:`ChangedEntry` records.

    :meth:`feed` takes git's chunks; past ``max_files`` records it raises
    :class:`ChangeTooLarge` (``list of the change's files``, unit ``files``, at least the
    count), and a field (a path) longer than :data:`PATH_MAX_BYTES` raises
    :class:`RepositoryError` naming its start, even before its end was read: the caller
    stops git then. What is held is bounded by the cap times a record's largest size.
    """

    def __init__(self, max_files: int) -> None:
        self.max_files = max_files
        self.entries: list[ChangedEntry] = []
        self._fields: list[bytes] = []
        self._rest = b""

    def feed(self, chunk: bytes) -> None:
        """Take the next bytes git wrote."""
        *whole, self._rest = (self._rest + chunk).split(b"\0")
        for field in whole:
            self._field(field)
        if len(self._rest) > PATH_MAX_BYTES:
            self._field(self._rest)

    def finish(self) -> list[ChangedEntry]:
        """The records, once git is done."""
        if self._rest:
            self._field(self._rest)
            self._rest = b""
        return self.entries

    def _field(self, field: bytes) -> None:
        if len(field) > PATH_MAX_BYTES:
            start = os.fsdecode(field[:80])
            raise RepositoryError(
                f"the change names a path longer than {PATH_MAX_BYTES} bytes (starting "
                f"{json.dumps(start, ensure_ascii=False)}): no worker could unpack it",
                "Remove or rename that file in the change",
            )
        self._fields.append(field)
        meta = self._fields[0]
        if not meta.startswith(b":"):
            raise RepositoryError(
                "git diff --raw wrote a record council cannot read",
                "Check that the repository is intact (`git fsck`) and readable",
            )
        parts = meta[1:].decode("ascii", "replace").split()
        status = parts[4][:1] if len(parts) >= 5 else "?"
        if len(self._fields) < (3 if status in ("R", "C") else 2):
            return
        names = [os.fsdecode(n) for n in self._fields[1:]]
        self._fields = []
        if len(self.entries) >= self.max_files:
            raise ChangeTooLarge(
                "list of the change's files",
                len(self.entries) + 1,
                self.max_files,
                CHANGED_FILES_KNOB,
                at_least=True,
                unit="files",
            )
        path = names[0] if status == "D" else names[-1]
        self.entries.append(
            ChangedEntry(
                old_mode=parts[0],
                new_mode=parts[1],
                old=parts[2],
                new=parts[3],
                status=status,
                path=path,
                old_path=None if status == "A" else names[0],
            )
        )


_TREE = "40000"
"""A subtree's mode as a tree object writes it (no leading zero)."""


class ChangeCounter:
    """Count the entries two trees differ by, reading tree objects one at a time from a
    ``git cat-file --batch`` process (:class:`~workers.git.git_objects.Blobs`), as git's
    own tree diff walks them: a subtree whose object id is the same on both sides is
    skipped, one present on one side only is walked whole.

    Why: git queues a whole tree diff before it writes a byte of it (a listing of a
    million files took git 3.5 s and 370 MB before the first), so the listing's cap
    alone cannot stop it early. This walk stops past ``cap`` entries (files and folders
    that differ), and reads each distinct tree object once (a tree reused at every level
    costs one read per level). Raises :class:`ChangeTooLarge` (``change``, unit ``files
    and folders``, knob :data:`CHANGED_FILES_KNOB`) past the cap, and
    :class:`RepositoryError` for a tree object over :data:`TREE_OBJECT_MAX_BYTES` or
    an unreadable one.
    """

    def __init__(self, blobs: Blobs, cap: int) -> None:
        self._blobs, self.cap = blobs, cap
        self._trees: dict[str, dict[bytes, tuple[str, str]]] = {}
        self.count = 0

    def walk(self, old_tree: str | None, new_tree: str | None) -> int:
        """The entries ``old_tree`` and ``new_tree`` (object ids; None: no tree) differ
        by, each path (a file or a folder) once, at most ``cap``."""
        stack = [(old_tree, new_tree)]
        while stack:
            old, new = stack.pop()
            if old == new:
                continue
            left, right = self._entries(old), self._entries(new)
            for name in left.keys() | right.keys():
                a, b = left.get(name), right.get(name)
                if a == b:
                    continue
                self._add()
                old_sub = a[1] if a is not None and a[0] == _TREE else None
                new_sub = b[1] if b is not None and b[0] == _TREE else None
                if old_sub is not None or new_sub is not None:
                    stack.append((old_sub, new_sub))
        return self.count

    def _add(self) -> None:
        self.count += 1
        if self.count > self.cap:
            raise ChangeTooLarge(
                "change",
                self.count,
                self.cap,
                CHANGED_FILES_KNOB,
                at_least=True,
                unit="files and folders",
            )

    def _entries(self, tree: str | None) -> dict[bytes, tuple[str, str]]:
        """A tree object's entries: name → (mode, object id); {} for None."""
        if tree is None:
            return {}
        known = self._trees.get(tree)
        if known is not None:
            return known
        size = self._blobs.open(tree)
        if size > TREE_OBJECT_MAX_BYTES:
            raise RepositoryError(
                f"the change's tree object {tree} is {size} bytes, over the "
                f"{TREE_OBJECT_MAX_BYTES} bytes council reads of one directory's listing",
                "Split that directory of the change into smaller ones",
            )
        raw = self._blobs.read()
        width = len(tree) // 2
        entries: dict[bytes, tuple[str, str]] = {}
        at = 0
        while at < len(raw):
            space = raw.find(b" ", at)
            nul = raw.find(b"\0", space + 1)
            if space < 0 or nul < 0 or nul + 1 + width > len(raw):
                raise RepositoryError(
                    f"the tree object {tree} cannot be read (malformed)",
                    "Check that the repository is intact (`git fsck`)",
                )
            mode = raw[at:space].decode("ascii", "replace")
            entries[raw[space + 1 : nul]] = (mode, raw[nul + 1 : nul + 1 + width].hex())
            at = nul + 1 + width
        self._trees[tree] = entries
        return entries


def submodule_notes(entries: Sequence[ChangedEntry]) -> list[str]:
    """The run's note naming each submodule the change adds, moves or points at another
    commit (path JSON-quoted, and the commit), else none: council reviews the tree of
    this repository only, so a submodule's code was not reviewed, whatever it holds.
    Source: issue "The change under review is untrusted" (no silent loss)."""
    named = [
        f"{json.dumps(e.path, ensure_ascii=False)} at {e.new}"
        for e in entries
        if e.new_mode == GITLINK and e.status != "D"
    ]
    if not named:
        return []
    more = f" and {len(named) - SUBMODULES_SHOWN} more" if len(named) > SUBMODULES_SHOWN else ""
    return [
        f"the change adds or moves the submodule(s) {', '.join(named[:SUBMODULES_SHOWN])}"
        f"{more}; their content was not reviewed (council reviews this repository's tree "
        f"only: review the submodule's commit in its own repository)"
    ]
