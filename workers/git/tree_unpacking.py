"""Unpacking the head tree's tar archive on a worker, safely: what an entry costs, which
links may be packed (:mod:`workers.git.tree_packing` packs it on the coordinator).

A worker never reads a clone: the coordinator packs the head tree
(:meth:`workers.git.repository.Repository.archive`) and the worker unpacks it here. The
archive travels through Redis, so it is checked member by member before anything is
written: no absolute path, no ``..``, no device file or pipe, no link leading out of the
tree (followed through the tree's other links), and the unpacked size capped (counted as
:func:`tar_bytes` counts, before extraction). Extraction then runs with tarfile's
``data`` filter as a second guard.

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


LINK_MAX_HOPS = 40
"""The most links one path may pass through while a link is resolved (as Linux's
``MAXSYMLINKS``); a deeper chain is refused as if it looped."""

LINK_TARGET_MAX_BYTES = 4095
"""The longest link target packed or unpacked, in bytes (Linux's ``PATH_MAX`` less its
NUL): no system can make a longer link, so reading one further is never needed."""


def link_trouble(name: str, target: str) -> str | None:
    """Why a symbolic link at ``name`` to ``target`` would leave the tree, by its text
    alone (absolute, or climbing above the root by its ``..``), else None.

    Its text is not enough: ``a -> d/d/../..`` stays inside by its text, and leaves
    once ``d -> .`` is followed. A whole tree's links are checked with
    :class:`LinkResolver`."""
    if target.startswith("/") or PurePosixPath(target).is_absolute():
        return f"it points to the absolute path {target!r}"
    if len(target.encode("utf-8", "surrogateescape")) > LINK_TARGET_MAX_BYTES:
        return f"its target is longer than {LINK_TARGET_MAX_BYTES} bytes"
    if _escapes(posixpath.join(posixpath.dirname(name), target)):
        return f"its target {target!r} leads outside the tree"
    return None


class LinkResolver:
    """The symbolic links of one tree, each resolved against the tree's other links as
    the operating system would resolve it once unpacked.

    ``links`` maps each link's path from the tree's root (``a/b``, no leading ``./``)
    to its target. :meth:`trouble` follows, component by component, every link the
    target passes through (``..`` climbs from where the links led, not from the text),
    at most :data:`LINK_MAX_HOPS` deep; a resolution that climbs above the root, meets
    an absolute target, or loops is trouble. A path that is not in ``links`` is taken
    as a directory or file of the tree (a missing one cannot lead anywhere). Each link
    is resolved once (remembered), so a tree of N links costs about the length of its
    targets. Never raises. Source: docs/architecture.md "State in Redis" (tree archive);
    issue "The change under review is untrusted".
    """

    def __init__(self, links: dict[str, str]) -> None:
        self._links = links
        self._real: dict[str, tuple[str, ...] | str] = {}
        """Link path → where it leads (root-relative parts), or why it is refused."""
        self._open: set[str] = set()

    def trouble(self, name: str) -> str | None:
        """Why the link at ``name`` (a key of ``links``) would leave the tree, or None."""
        target = self._links[name]
        why = link_trouble(name, target)
        if why is not None:
            return why
        done = self._resolve(name, 0)
        if done == _LOOP:
            return (
                f"its target {target!r} loops through the tree's links (or passes more "
                f"than {LINK_MAX_HOPS} of them)"
            )
        if done == _OUT:
            return (
                f"its target {target!r} leads outside the tree once the tree's links are followed"
            )
        return None

    def _resolve(self, name: str, depth: int) -> tuple[str, ...] | str:
        """Where the link ``name`` leads (root-relative parts), or :data:`_OUT` /
        :data:`_LOOP`."""
        known = self._real.get(name)
        if known is not None:
            return known
        if depth >= LINK_MAX_HOPS or name in self._open:
            return _LOOP
        target = self._links[name]
        if link_trouble(name, target) is not None:
            self._real[name] = _OUT
            return _OUT
        self._open.add(name)
        try:
            start = tuple(p for p in name.split("/")[:-1] if p)
            done = self._walk(start, target.split("/"), depth + 1)
        finally:
            self._open.discard(name)
        self._real[name] = done
        return done

    def _walk(self, here: tuple[str, ...], parts: list[str], depth: int) -> tuple[str, ...] | str:
        """Where ``parts`` lead from the real directory ``here``, or :data:`_OUT` /
        :data:`_LOOP`."""
        for part in parts:
            if part in ("", "."):
                continue
            if part == "..":
                if not here:
                    return _OUT
                here = here[:-1]
                continue
            path = "/".join((*here, part))
            if path in self._links:
                done = self._resolve(path, depth)
                if isinstance(done, str):
                    return done
                here = done
            else:
                here = (*here, part)
        return here


_OUT = "out"
"""A link resolution that climbs above the tree's root (or meets an absolute target)."""
_LOOP = "loop"
"""A link resolution that loops, or passes more than :data:`LINK_MAX_HOPS` links."""


def check_links(links: dict[str, str]) -> None:
    """Refuse, at packing time, a tree one of whose links leaves it once the tree's
    other links are followed (:class:`LinkResolver`); ``links`` maps each link's path to
    its target. Raises :class:`RepositoryError` naming the first such link (in
    ``links``' order), its target and why."""
    resolver = LinkResolver(links)
    for name in links:
        why = resolver.trouble(name)
        if why is not None:
            raise link_refused(name, why)


def link_refused(name: str, why: str) -> RepositoryError:
    """The packing-time error for a link of the head tree that leaves it (``why``: a
    clause, as :func:`link_trouble` says it)."""
    return RepositoryError(
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


def _tree_path(name: str) -> str:
    """An archive member's name as a path from the tree's root (``./a/b/`` → ``a/b``)."""
    normal = posixpath.normpath(name.replace("\\", "/"))
    return "" if normal == "." else normal.lstrip("/")


def unpack_tree(archive: bytes, dest: Path, *, max_bytes: int | None = None) -> None:
    """Extract a tar.gz tree archive into ``dest`` (created when missing), safely.

    The archive travels through Redis, and a worker must never write outside its tree. Every
    member is checked before anything is written: an absolute path, a ``..``, a device or
    pipe, a repeated name, or a link leading outside ``dest`` (by its text, or through the
    archive's other links: :class:`LinkResolver`) refuses the whole archive, naming the
    member. ``max_bytes`` caps the unpacked size as :func:`tar_bytes` counts it, while the
    members are listed, so a small archive of zeros is refused before it is unpacked;
    tarfile's ``data`` filter is a second guard. Raises :class:`RepositoryError` for an
    unsafe, oversized or unreadable archive.
    """
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            total = 0
            seen: set[str] = set()
            links: dict[str, str] = {}
            while (member := tar.next()) is not None:
                _check_member(member)
                path = _tree_path(member.name)
                if path in seen:
                    raise _refuse(member.name, "a second member of the same name")
                seen.add(path)
                if member.issym():
                    links[path] = member.linkname
                total += tar_bytes(member.size if member.isfile() else 0)
                if max_bytes is not None and total > max_bytes:
                    raise RepositoryError(
                        f"the tree archive unpacks to at least {total} bytes, over the cap "
                        f"of {max_bytes} bytes",
                        f"Narrow the change, or raise the cap with {UNPACKED_TREE_KNOB} on "
                        f"the workers (and on the CLI, which checks it too)",
                    )
            resolver = LinkResolver(links)
            for path in links:
                why = resolver.trouble(path)
                if why is not None:
                    raise _refuse(path, f"a symbolic link, and {why}", _LINK_FIX)
            dest.mkdir(parents=True, exist_ok=True)
            tar.extractall(dest, filter="data")
    except tarfile.FilterError as exc:
        raise _refuse(getattr(exc.tarinfo, "name", "?"), str(exc)) from None
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise RepositoryError(
            f"the tree archive cannot be read ({exc})",
            "Rebuild the run's tree with `council review`",
        ) from None
