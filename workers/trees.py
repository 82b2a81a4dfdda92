"""Unpacked run trees on a worker: the pinned head tree once per run per worker.

A worker never reads a repository's working directory: it unpacks the run's ``git
archive`` from Redis into its own directory, once, however many of the run's reviewers it
serves (a lock per run keeps threads from unpacking twice). Programs a command reviewer
names by relative path are written beside it from the BASE tree, never from the head.
Source: architecture.md "State in Redis" (tree archive).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from workers.repository import DEFAULT_MAX_UNPACKED_TREE_BYTES, unpack_tree

KEEP_RUNS = 8
"""Unpacked runs kept per worker; older ones are removed when a new one arrives."""


class TreeCache:
    """Directories of unpacked run trees under one root.

    ``max_unpacked_bytes`` caps each tree unpacked (``COUNCIL_MAX_UNPACKED_TREE_BYTES``;
    see :func:`~workers.repository.unpack_tree`, which raises ``RepositoryError`` over it).
    """

    def __init__(
        self, root: Path | None = None, max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_TREE_BYTES
    ) -> None:
        self._root = (root or Path(tempfile.gettempdir())) / "council-trees"
        self._max_unpacked_bytes = max_unpacked_bytes
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._order: list[str] = []

    def _lock_for(self, run_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(run_id, threading.Lock())

    def tree(self, run_id: str, fetch: Callable[[], bytes | None]) -> Path | None:
        """The unpacked head tree of a run (None when the run stored no tree).

        Unpacked into a fresh directory, then renamed into place (atomic), so worker
        processes sharing one work directory never see half a tree nor clash.
        """
        dest = self._root / run_id / "tree"
        with self._lock_for(run_id):
            if dest.is_dir():
                return dest
            archive = fetch()
            if archive is None:
                return None
            dest.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".unpacking-"))
            try:
                unpack_tree(archive, staging, max_bytes=self._max_unpacked_bytes)
                os.rename(staging, dest)
            except OSError:
                if not dest.is_dir():
                    raise
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            self._remember(run_id)
            return dest

    def program(self, run_id: str, participant: str, blob: bytes) -> Path:
        """Write a base-tree program for a participant and make it executable.

        The bytes carry no mode: the coordinator sends only programs that were executable
        where it read them (git mode 100755, or a file beside ``--roster`` with an execute
        permission) and refuses the others, so the mode set here restores theirs.
        """
        path = self._root / run_id / "programs" / participant
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, staging = tempfile.mkstemp(dir=path.parent, prefix=".program-")
        with os.fdopen(fd, "wb") as out:
            out.write(blob)
        os.chmod(staging, 0o755)
        os.replace(staging, path)
        return path

    def _remember(self, run_id: str) -> None:
        with self._guard:
            if run_id in self._order:
                return
            self._order.append(run_id)
            while len(self._order) > KEEP_RUNS:
                old = self._order.pop(0)
                shutil.rmtree(self._root / old, ignore_errors=True)
                self._locks.pop(old, None)
