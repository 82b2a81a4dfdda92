"""Reading git objects: one entry of a tree listing, and a ``git cat-file --batch``
process that hands out one object's bytes at a time.

Runtime layer (reads a subprocess's pipes). Source: docs/architecture.md "State in
Redis" (tree archive).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from council.errors import RepositoryError


@dataclass(frozen=True)
class TreeEntry:
    """One entry of ``git ls-tree -r -l``: git ``mode`` (``100644``, ``100755``,
    ``120000`` a link, ``040000`` a directory, ``160000`` a submodule), ``kind`` (blob,
    tree, commit), object id, size in bytes (0 for a tree or a submodule) and the path
    from the tree's root (undecodable bytes kept as surrogates)."""

    mode: str
    kind: str
    obj: str
    size: int
    path: str

    @classmethod
    def read(cls, raw: bytes) -> TreeEntry:
        """One NUL-terminated record of ``git ls-tree -r -z -l`` (the NUL removed)."""
        meta, _, name = raw.partition(b"\t")
        mode, kind, obj, size = meta.decode("ascii", "replace").split()
        return cls(mode, kind, obj, int(size) if size.isdigit() else 0, os.fsdecode(name))


class Blobs:
    """A ``git cat-file --batch`` process: one object's bytes at a time, by id."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self._in, self._out = proc.stdin, proc.stdout
        self._left = 0
        self._newline = False

    def open(self, obj: str) -> int:
        """Ask for the object ``obj``; its size in bytes (then :meth:`read` its bytes).
        Raises :class:`RepositoryError` when the object is not in the repository."""
        self._in.write(obj.encode("ascii") + b"\n")
        self._in.flush()
        line = self._out.readline(4096).decode("ascii", "replace").split()
        if len(line) != 3 or not line[2].isdigit():
            raise RepositoryError(
                f"the object {obj} of the head tree cannot be read ({' '.join(line)})",
                "Check that the head commit's objects are present (`git fsck`)",
            )
        self._left = int(line[2])
        self._newline = True
        self._end()
        return self._left

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes of the object asked for last (all that is left: -1)."""
        want = self._left if size < 0 else min(size, self._left)
        data = self._out.read(want) if want else b""
        self._left -= len(data)
        self._end()
        return data

    def _end(self) -> None:
        """Past an object's last byte, read the newline git writes after it (once)."""
        if self._left == 0 and self._newline:
            self._out.read(1)
            self._newline = False


class CheckedBlob:
    """A file object over the blob being read, calling ``check`` before each read (the
    packed-size cap is checked while one large file is added)."""

    def __init__(self, blobs: Blobs, check: Callable[[], None]) -> None:
        self._blobs, self._check = blobs, check

    def read(self, size: int = -1) -> bytes:
        self._check()
        return self._blobs.read(size)
