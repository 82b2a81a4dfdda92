"""The head tree as a tar archive: what an entry costs, which links may be packed, and
unpacking an archive safely on a worker.

A worker never reads a clone: the coordinator packs the head tree
(:meth:`workers.repository.Repository.archive`) and the worker unpacks it here. The
archive travels through Redis, so it is checked member by member before anything is
written: no absolute path, no ``..``, no device file or pipe, no link leading out of the
tree, and the unpacked size capped (counted as :func:`tar_bytes` counts, before
extraction). Extraction then runs with tarfile's ``data`` filter as a second guard.

Runtime layer (writes files). Source: docs/architecture.md "State in Redis" (tree
archive); issue "The change under review is untrusted".
"""

from __future__ import annotations

import gzip
import io
import posixpath
import re
import tarfile
import zlib
from pathlib import Path, PurePosixPath

from council.errors import RepositoryError

UNPACKED_TREE_KNOB = "COUNCIL_MAX_UNPACKED_TREE_BYTES"
"""The setting that raises the unpacked-tree cap (named in :class:`ChangeTooLarge`)."""

DEFAULT_MAX_UNPACKED_TREE_BYTES = 512 * 1024 * 1024
"""The largest unpacked head tree, in bytes (512 MiB), unless
``COUNCIL_MAX_UNPACKED_TREE_BYTES``; counted as :func:`tar_bytes` counts."""

TAR_BLOCK = 512
"""Bytes of one tar block: every entry has a header block, content is padded to blocks."""

_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def tar_bytes(size: int) -> int:
    """The bytes one tree entry takes in a tar stream: a header block, and its ``size``
    bytes of content padded to whole blocks (0 for a directory or a link). What the
    unpacked-tree cap counts, so a tree of a million empty files counts too."""
    return TAR_BLOCK + -(-size // TAR_BLOCK) * TAR_BLOCK


def link_trouble(name: str, target: str) -> str | None:
    """Why a symbolic link at ``name`` to ``target`` would leave the tree, or None."""
    if target.startswith("/") or PurePosixPath(target).is_absolute():
        return f"it points to the absolute path {target!r}"
    if _escapes(posixpath.join(posixpath.dirname(name), target)):
        return f"its target {target!r} leads outside the tree"
    return None


def check_link(name: str, target: str) -> None:
    """Refuse, at packing time, a link of the head tree that leaves the tree."""
    why = link_trouble(name, target)
    if why is not None:
        raise RepositoryError(
            f"the head tree holds a symbolic link {name!r} that council will not unpack: "
            f"{why}. Workers refuse a tree whose links lead out of it, so every reviewer "
            f"would fail",
            f"Remove the link {name!r} from the change, or make it a relative link to a "
            f"file inside the repository (a link already on the base branch must be fixed "
            f"there first)",
        )


def _refuse(name: str, why: str, fix: str | None = None) -> RepositoryError:
    """The error for an archive member that must not be unpacked."""
    return RepositoryError(
        f"the tree archive holds an unsafe member {name!r} ({why})",
        fix
        or "Rebuild the run's tree with `council review`: a tree archive must come from "
        "the head commit's tree",
    )


def _escapes(path: str) -> bool:
    """Whether a relative POSIX path climbs above where it starts."""
    normal = posixpath.normpath(path)
    return normal == ".." or normal.startswith("../")


_LINK_FIX = (
    "A link in the reviewed tree may not lead out of it: remove the link from the change, "
    "or make it a relative link to a file inside the repository"
)


def _check_member(member: tarfile.TarInfo) -> None:
    """Refuse absolute names, ``..``, device files and links leaving the tree."""
    name = member.name
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        raise _refuse(name, "absolute path")
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        raise _refuse(name, "'..' in its path")
    if member.ischr() or member.isblk() or member.isfifo() or member.isdev():
        raise _refuse(name, "device file or pipe")
    if member.issym():
        why = link_trouble(name, member.linkname)
        if why is not None:
            raise _refuse(name, f"a symbolic link, and {why}", _LINK_FIX)
    if member.islnk():
        target = member.linkname
        if target.startswith("/") or PurePosixPath(target).is_absolute():
            raise _refuse(name, f"a hard link to the absolute path {target!r}")
        if _escapes(target):
            raise _refuse(name, f"a hard link whose target {target!r} is outside the tree")


def unpack_tree(archive: bytes, dest: Path, *, max_bytes: int | None = None) -> None:
    """Extract a tar.gz tree archive into ``dest`` (created when missing), safely.

    Every member is checked before anything is written: an absolute path, a ``..``
    component, a device file or pipe, or a link pointing outside ``dest`` refuses the
    whole archive (the message names the member and why). ``max_bytes`` (when given)
    caps the unpacked size, counted as :func:`tar_bytes` counts (content padded to tar
    blocks, plus a header block per entry), while the members are listed: a small
    archive of zeros is refused once the count passes the cap, before it is unpacked.
    Extraction then runs with tarfile's ``data`` filter as a second guard. Raises
    :class:`RepositoryError` for an unsafe, oversized or unreadable archive. Why: the
    archive travels through Redis, and a worker must never write outside its tree.
    """
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            total = 0
            while (member := tar.next()) is not None:
                _check_member(member)
                total += tar_bytes(member.size if member.isfile() else 0)
                if max_bytes is not None and total > max_bytes:
                    raise RepositoryError(
                        f"the tree archive unpacks to at least {total} bytes, over the cap "
                        f"of {max_bytes} bytes",
                        f"Narrow the change, or raise the cap with {UNPACKED_TREE_KNOB} on "
                        f"the workers (and on the CLI, which checks it too)",
                    )
            dest.mkdir(parents=True, exist_ok=True)
            tar.extractall(dest, filter="data")
    except tarfile.FilterError as exc:
        raise _refuse(getattr(exc.tarinfo, "name", "?"), str(exc)) from None
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise RepositoryError(
            f"the tree archive cannot be read ({exc})",
            "Rebuild the run's tree with `council review`",
        ) from None
