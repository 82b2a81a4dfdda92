"""Reading files at a ref: a file's bytes, size and mode, tree entries, blobs by id,
every path of a tree, and whether git tracks a path on disk.

Each read names the commit it reads (``ref``), never the working tree: the coordinator
reads the trusted base tree (programs, configuration, ``[paths]``) and the head tree's
paths, whatever is checked out. Raises :class:`RepositoryError` for an unknown ref, or
when git fails where the method says so.

Runtime layer (runs subprocesses). Source: docs/architecture.md "The shape"; issue "The
change under review is untrusted".
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from council.errors import RepositoryError
from workers.git.git_objects import Blobs, TreeEntry
from workers.git.refs import RefReading


class FilesAtRef(RefReading):
    """The files of a commit's tree, read by ref and path (or by object id)."""

    def read_file(self, ref: str, path: str) -> bytes | None:
        """The bytes of ``path`` at ``ref``, or None when no file is at that path.

        A directory is not a file (None). Raises :class:`RepositoryError` for an
        unknown ref.
        """
        sha = self.resolve(ref)
        done = self._git("cat-file", "blob", f"{sha}:{path}")
        return done.stdout if done.returncode == 0 else None

    def file_size(self, ref: str, path: str) -> int | None:
        """The size in bytes of the file at ``path`` in ``ref``'s tree, read without
        reading the file; None when no file is there. Raises :class:`RepositoryError`
        for an unknown ref."""
        sha = self.resolve(ref)
        done = self._git("cat-file", "-s", f"{sha}:{path}")
        text = done.stdout.decode().strip()
        return int(text) if done.returncode == 0 and text.isdigit() else None

    def tree_mode(self, ref: str, path: str) -> str | None:
        """The git mode of ``path`` in the tree of ``ref`` (``100755`` an executable
        file, ``100644`` a file, ``120000`` a symbolic link, ``040000`` a directory,
        ``160000`` a submodule), or None when nothing is at that path (or ``path`` is
        empty). Raises :class:`RepositoryError` for an unknown ref."""
        if not path:
            return None
        sha = self.resolve(ref)
        done = self._git("ls-tree", "-z", "--full-tree", sha, "--", path)
        if done.returncode != 0:
            return None
        for entry in done.stdout.split(b"\0"):
            meta, _, name = entry.partition(b"\t")
            if name.decode("utf-8", errors="surrogateescape") == path:
                return meta.split(b" ", 1)[0].decode("ascii", errors="replace")
        return None

    def entries_at(self, ref: str, paths: Sequence[str]) -> dict[str, TreeEntry]:
        """The tree entries of ``ref`` at exactly ``paths`` (files, links, submodules; a
        path with nothing there, or a directory, is left out), read with one ``git
        ls-tree`` per 200 paths. Raises :class:`RepositoryError` for an unknown ref or
        when git fails."""
        sha = self.resolve(ref)
        wanted = set(paths)
        found: dict[str, TreeEntry] = {}
        ordered = list(dict.fromkeys(paths))
        for start in range(0, len(ordered), 200):
            chunk = ordered[start : start + 200]
            raw = self._must("ls-tree", "-z", "-l", "--full-tree", sha, "--", *chunk)
            for record in raw.split(b"\0"):
                if not record:
                    continue
                entry = TreeEntry.read(record)
                if entry.path in wanted and entry.kind != "tree":
                    found[entry.path] = entry
        return found

    def blobs(self, objects: Sequence[str]) -> dict[str, bytes]:
        """The bytes of each blob in ``objects`` (by object id), read by one ``git
        cat-file --batch``. Raises :class:`RepositoryError` when one cannot be read."""
        out: dict[str, bytes] = {}
        if not objects:
            return out
        with self._reading(["cat-file", "--batch"], stdin=subprocess.PIPE) as batch:
            reader = Blobs(batch)
            for obj in dict.fromkeys(objects):
                reader.open(obj)
                out[obj] = reader.read()
        return out

    def tree_paths(self, ref: str, cap: int = 1_000_000) -> frozenset[str] | None:
        """Every file path of ``ref``'s tree (``git ls-tree -r``), or None when the tree
        holds more than ``cap`` paths or cannot be listed (then no path is called
        invented). The listing is read as a stream, and git is stopped at the
        ``cap + 1``-th path: a tree object reused at every level, listing millions of
        paths, is never read whole."""
        names: set[str] = set()
        try:
            for entry in self._tree_entries(self.resolve(ref), with_trees=False):
                if len(names) >= cap:
                    return None
                names.add(entry.path)
        except RepositoryError:
            return None
        return frozenset(names)

    def tracked(self, path: Path, head: str = "HEAD") -> str | None:
        """The path of ``path`` from the repository's top when git tracks it here, else None.

        Tracked: in the index (what a checkout wrote) or in the tree of ``head``, the
        file itself or any directory on its way as a symbolic link (a committed
        ``.council-state -> elsewhere`` tracks what lies beyond it). ``path`` is looked
        at as given and with its links resolved. A path outside the repository is never
        tracked. Why: a file the change committed is the change's, not ours to trust.
        """
        tops = {self.path.absolute(), self.path.resolve()}
        for candidate in dict.fromkeys([Path(os.path.abspath(path)), path.resolve()]):
            for top in tops:
                if not candidate.is_relative_to(top) or candidate == top:
                    continue
                parts = candidate.relative_to(top).parts
                prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
                if self._tracks(prefixes, head):
                    return "/".join(parts)
        return None

    def _tracks(self, prefixes: list[str], head: str) -> bool:
        """Whether git tracks ``prefixes[-1]``, or a link at one of the others."""
        wanted = set(prefixes)
        specs = [f":(literal){p}" for p in prefixes]
        listed = self._git("ls-files", "-z", "--stage", "--full-name", "--", *specs)
        rows = [row.partition(b"\t") for row in listed.stdout.split(b"\0") if row]
        for meta, _, name in rows:
            if os.fsdecode(name) == prefixes[-1] or (
                os.fsdecode(name) in wanted and meta.startswith(b"120000")
            ):
                return True
        sha = self._git("rev-parse", "--verify", "--quiet", f"{head}^{{commit}}")
        if sha.returncode != 0:
            return False
        tree = self._git(
            "ls-tree", "-z", "--full-tree", sha.stdout.decode().strip(), "--", *prefixes
        )
        for row in tree.stdout.split(b"\0"):
            meta, _, name = row.partition(b"\t")
            if os.fsdecode(name) == prefixes[-1] and not meta.startswith(b"040000"):
                return True
            if os.fsdecode(name) in wanted and meta.startswith(b"120000"):
                return True
        return False
