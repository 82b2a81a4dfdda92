"""Packing the head tree: the commit's files as a capped, reproducible tar.gz, for
workers that never read a clone.

Built from ``git ls-tree`` and ``git cat-file`` rather than ``git archive``, which obeys
the tree's own (untrusted) ``export-ignore``/``export-subst`` attributes. Capped on the
unpacked and the packed size while it is built, and a link leading out of the tree is
refused before any file is read: the worker would refuse to unpack it
(:func:`workers.git.tree_unpacking.unpack_tree`). Raises :class:`ChangeTooLarge` and
:class:`RepositoryError`.

Runtime layer (runs subprocesses). Source: docs/architecture.md "State in Redis" (tree
archive); issue "The change under review is untrusted".
"""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import tarfile
import threading
from collections import OrderedDict

from council.errors import ChangeTooLarge, RepositoryError
from workers.git.files_at_ref import FilesAtRef
from workers.git.git_objects import Blobs, CheckedBlob
from workers.git.tree_unpacking import (
    DEFAULT_MAX_UNPACKED_TREE_BYTES,
    LINK_TARGET_MAX_BYTES,
    UNPACKED_TREE_KNOB,
    check_links,
    link_refused,
    tar_bytes,
)

TREE_KNOB = "COUNCIL_MAX_TREE_BYTES"
"""The setting that raises the packed-tree cap (named in :class:`ChangeTooLarge`)."""

COMPRESS_LEVEL = 1
"""gzip's level: the fastest (about 3× faster than 6, about 20% larger); the tree is
packed on every round, read once per worker."""

PACKED_KEPT = 2
"""Packed trees a process keeps (by repository, commit and caps): the rounds of one head
in one process (a console, a bench) pack it once."""

_packed: OrderedDict[tuple[str, str, int, int], bytes] = OrderedDict()
_packed_lock = threading.Lock()


class TreePacking(FilesAtRef):
    """The head commit's tree packed as tar.gz (:meth:`archive`)."""

    def archive(
        self,
        head_sha: str,
        cap_bytes: int,
        *,
        max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_TREE_BYTES,
    ) -> bytes:
        """The head commit's tree as tar.gz bytes, at most ``cap_bytes`` long.

        Built from ``git ls-tree`` and ``git cat-file``, not ``git archive``, which obeys the
        tree's own ``export-ignore``/``export-subst``: a change could hide a file from the
        analyzers. Every entry is in it (a submodule as an empty directory), and the same commit
        packs to the same bytes. Raises :class:`ChangeTooLarge` past ``max_unpacked_bytes`` (as
        :func:`tar_bytes` counts, link targets included, summed from the listing before any file
        is read) or ``cap_bytes`` (the packed bytes, as they grow); :class:`RepositoryError` when
        git fails or, before any file is read, for a link that is absolute, leads out of the tree
        (:class:`~workers.git.tree_unpacking.LinkResolver`), loops or is over
        :data:`~workers.git.tree_unpacking.LINK_TARGET_MAX_BYTES`: workers would refuse the tree,
        so the check fails closed. Source: docs/architecture.md "State in Redis"; issue "The
        change under review is untrusted". A process keeps the last :data:`PACKED_KEPT`
        packed trees (a commit id names its tree and time, so the same bytes).
        """
        sha = self.resolve(head_sha)
        key = (str(self.path), sha, cap_bytes, max_unpacked_bytes)
        with _packed_lock:
            if key in _packed:
                _packed.move_to_end(key)
                return _packed[key]
        packed = self._pack(sha, cap_bytes, max_unpacked_bytes)
        with _packed_lock:
            _packed[key] = packed
            while len(_packed) > PACKED_KEPT:
                _packed.popitem(last=False)
        return packed

    def _pack(self, sha: str, cap_bytes: int, max_unpacked_bytes: int) -> bytes:
        """:meth:`archive` of the commit ``sha``, built anew."""
        total = 0
        link_objects: dict[str, str] = {}
        for entry in self._tree_entries(sha):
            total += tar_bytes(entry.size if entry.kind == "blob" else 0)
            if total > max_unpacked_bytes:
                raise ChangeTooLarge(
                    "unpacked head tree",
                    total,
                    max_unpacked_bytes,
                    UNPACKED_TREE_KNOB,
                    at_least=True,
                )
            if entry.mode == "120000":
                if entry.size > LINK_TARGET_MAX_BYTES:
                    raise link_refused(
                        entry.path,
                        f"its target is {entry.size} bytes, longer than any path "
                        f"({LINK_TARGET_MAX_BYTES} bytes)",
                    )
                link_objects[entry.path] = entry.obj
        read = self.blobs(list(link_objects.values()))
        links = {path: os.fsdecode(read[obj]) for path, obj in link_objects.items()}
        check_links(links)
        mtime = int(self._must("show", "-s", "--format=%ct", sha).decode().strip() or 0)
        packed = io.BytesIO()

        def check() -> None:
            if packed.tell() > cap_bytes:
                raise ChangeTooLarge("packed head tree", packed.tell(), cap_bytes, TREE_KNOB)

        with (
            self._reading(["cat-file", "--batch"], stdin=subprocess.PIPE) as batch,
            gzip.GzipFile(fileobj=packed, mode="wb", compresslevel=COMPRESS_LEVEL, mtime=0) as gz,
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            blobs = Blobs(batch)
            for entry in self._tree_entries(sha):
                info = tarfile.TarInfo(entry.path)
                info.mtime, info.uname, info.gname = mtime, "", ""
                if entry.kind in ("tree", "commit"):
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(info)
                elif entry.mode == "120000":
                    target = links.get(entry.path)
                    if target is None:  # the tree changed under us: fail closed
                        raise RepositoryError(
                            f"the link {entry.path!r} of the head tree was not listed",
                            "Run the review again",
                        )
                    info.type, info.mode, info.linkname = tarfile.SYMTYPE, 0o777, target
                    tar.addfile(info)
                else:
                    info.size = blobs.open(entry.obj)
                    info.mode = 0o755 if entry.mode == "100755" else 0o644
                    tar.addfile(info, CheckedBlob(blobs, check))
                check()
        check()
        return packed.getvalue()
