"""Unpacked run trees on a worker: the pinned head tree once per run per worker.

A worker never reads a repository's working directory: it unpacks the run's ``git archive``
from Redis once, however many of the run's reviewers it serves (a lock per run), and writes
a command reviewer's relative programs and ``args`` files beside it from the BASE tree; a
program reviewer that reads the base's analyzer configuration gets a copy with it laid over
(:meth:`TreeCache.overlaid`, :mod:`workers.coordinator.config_overlay`). Each run gets a
private directory (``mkdtemp``, mode 0700) rather than a well-known ``/tmp/council-trees``:
another user of the machine can neither read a run's tree nor plant a directory or link
where the worker will write. Source: docs/architecture.md "State in Redis" (tree archive).
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from workers.git.tree_unpacking import DEFAULT_MAX_UNPACKED_TREE_BYTES, link_trouble, unpack_tree

KEEP_RUNS = 8
"""Unpacked runs kept per worker; older ones are removed when a new one arrives."""

RUN_PREFIX = "council-run-"
"""What the name of a run's private directory starts with (the run id and random
characters follow)."""


class TreeCache:
    """Private directories of unpacked run trees under one root (``root``, default the
    system temp directory), one per run, created on first use.

    ``max_unpacked_bytes`` caps each tree unpacked (``COUNCIL_MAX_UNPACKED_TREE_BYTES``;
    see :func:`~workers.git.tree_unpacking.unpack_tree`, which raises ``RepositoryError`` over it).
    """

    def __init__(
        self, root: Path | None = None, max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_TREE_BYTES
    ) -> None:
        self._root = root
        self._runs: dict[str, Path] = {}
        self._max_unpacked_bytes = max_unpacked_bytes
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._order: list[str] = []
        self._plain: set[tuple[str, str]] = set()

    def _lock_for(self, run_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(run_id, threading.Lock())

    def run_dir(self, run_id: str) -> Path:
        """The run's private directory (0700), made on first use. Raises ``OSError``."""
        with self._guard:
            found = self._runs.get(run_id)
            if found is not None and found.is_dir():
                return found
            root = self._root or Path(tempfile.gettempdir())
            root.mkdir(parents=True, exist_ok=True)
            made = Path(tempfile.mkdtemp(prefix=f"{RUN_PREFIX}{run_id}-", dir=root))
            self._runs[run_id] = made
        self._remember(run_id)
        return made

    def tree(self, run_id: str, fetch: Callable[[], bytes | None]) -> Path | None:
        """The unpacked head tree of a run (None when the run stored no tree).

        Unpacked into a fresh directory, then renamed into place (atomic), so a thread
        never sees half a tree.
        """
        with self._lock_for(run_id):
            dest = self.run_dir(run_id) / "tree"
            if dest.is_dir():
                return dest
            archive = fetch()
            if archive is None:
                return None
            staging = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".unpacking-"))
            try:
                unpack_tree(archive, staging, max_bytes=self._max_unpacked_bytes)
                os.rename(staging, dest)
            except OSError:
                if not dest.is_dir():
                    raise
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            return dest

    def overlaid(
        self, run_id: str, name: str, tree: Path, fetch: Callable[[], Mapping[str, bytes]]
    ) -> Path:
        """``tree`` (the run's unpacked tree) with the files ``fetch`` returns laid over
        it, as the run's directory ``name`` (built once per run; ``tree`` itself when
        ``fetch`` returns nothing).

        ``fetch`` maps ``"<kind>:<path>"`` to bytes: kind ``644``/``755`` writes the
        file, ``link`` makes a symbolic link to the bytes (one leaving the tree, by its
        text or through the links of the tree it is laid over, is left out), ``-``
        removes what is at the path (see :mod:`workers.coordinator.config_overlay`); a key of
        another shape, or a path leaving the tree, is skipped. The copy is made
        of hard links (no file's bytes are copied), and every laid file replaces its
        link, so ``tree`` is never written through: a directory or link on a laid
        path's way becomes a directory of the copy. Built in a staging directory, then
        renamed into place. Raises ``OSError`` when it cannot be written.
        """
        key = (run_id, name)
        with self._lock_for(run_id):
            dest = self.run_dir(run_id) / name
            if dest.is_dir():
                return dest
            if key in self._plain:
                return tree
            files = fetch()
            if not files:
                self._plain.add(key)
                return tree
            staging = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".overlaying-"))
            try:
                copy = staging / "tree"
                shutil.copytree(tree, copy, symlinks=True, copy_function=os.link)
                for field, blob in sorted(files.items()):
                    kind, _, path = field.partition(":")
                    _lay(copy, kind, path, blob)
                os.rename(copy, dest)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            return dest

    def program(self, run_id: str, participant: str, blob: bytes) -> Path:
        """Write a base-tree program for a participant and make it executable.

        The bytes carry no mode: the coordinator sends only programs that were executable
        where it read them (git mode 100755, or a file beside ``--roster`` with an execute
        permission) and refuses the others, so the mode set here restores theirs.
        """
        return self._write(self.run_dir(run_id) / "programs" / participant, blob, 0o755)

    def arg_files(
        self, run_id: str, participant: str, files: Mapping[str, bytes]
    ) -> dict[int, Path]:
        """Write the base-tree files a participant's ``args`` name; index → path.

        ``files`` maps ``"<index>:<mode>:<path>"`` (mode ``755`` or ``644``, the path as
        the roster wrote it; see :func:`workers.coordinator.program_args.base_arg_files`) to the
        bytes.
        Each is written under the run's directory with the file's own name, so a program
        that looks at the name or the extension (an interpreter, ``ruff``) still sees it.
        A key of another shape is skipped. Raises ``OSError`` when a file cannot be written.
        """
        out: dict[int, Path] = {}
        for key, blob in files.items():
            index, mode, name = [*key.split(":", 2), "", ""][:3]
            if not index.isdigit() or mode not in ("755", "644") or not name:
                continue
            base = posixpath.basename(name.rstrip("/")) or "file"
            folder = self.run_dir(run_id) / "args" / participant / index
            out[int(index)] = self._write(folder / base, blob, int(mode, 8))
        return out

    @staticmethod
    def _write(path: Path, blob: bytes, mode: int) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, staging = tempfile.mkstemp(dir=path.parent, prefix=".program-")
        with os.fdopen(fd, "wb") as out:
            out.write(blob)
        os.chmod(staging, mode)
        os.replace(staging, path)
        return path

    def _remember(self, run_id: str) -> None:
        with self._guard:
            if run_id in self._order:
                return
            self._order.append(run_id)
            while len(self._order) > KEEP_RUNS:
                old = self._order.pop(0)
                gone = self._runs.pop(old, None)
                if gone is not None:
                    shutil.rmtree(gone, ignore_errors=True)
                self._locks.pop(old, None)
                self._plain = {k for k in self._plain if k[0] != old}


def _stays_in(root: Path, place: Path) -> bool:
    """Whether ``place`` stays under ``root`` once the links already on disk are
    followed (the head tree's, unpacked: ``d -> .`` makes ``d/d/..`` the parent of
    ``d``'s folder, which the text of a laid link does not show)."""
    return Path(os.path.realpath(place)).is_relative_to(Path(os.path.realpath(root)))


def _lay(root: Path, kind: str, path: str, blob: bytes) -> None:
    """Lay one overlay file at ``path`` under ``root`` (see :meth:`TreeCache.overlaid`):
    whatever is there is removed first; to write, a file or link on the way is replaced
    by a directory (the base had one there); to remove, a link on the way means no file
    of the tree is at ``path`` (nothing is done). A bad kind or a path leaving ``root``
    is skipped. Raises ``OSError``."""
    parts = posixpath.normpath(path).split("/") if path else []
    if kind not in ("644", "755", "link", "-") or not parts or {"", ".", ".."} & set(parts):
        return
    here = root
    for part in parts[:-1]:
        here = here / part
        if here.is_symlink() or (here.exists() and not here.is_dir()):
            if kind == "-":
                return  # a link on the way: no file of the head's tree is at ``path``
            here.unlink()
        if not here.exists():
            if kind == "-":
                return
            here.mkdir()
    target = here / parts[-1]
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)
    if kind == "-":
        return
    if kind == "link":
        link = os.fsdecode(blob)
        if link_trouble(path, link) is None and _stays_in(root, here / link):
            os.symlink(link, target)
        return
    TreeCache._write(target, blob, 0o755 if kind == "755" else 0o644)
