"""The files a sandboxed reviewer program and its worker exchange through the desk.

``council run-script`` and ``council ask --question`` hand their requests to the worker
through ``scripts/`` beside ``$COUNCIL_JOURNAL`` (:mod:`reviewers.sandbox.script_desk`,
:mod:`reviewers.sandbox.ask_desk`). That directory is bound read-write into the sandbox,
so the program controls it: a request may be a link to a worker's file, a FIFO that never
ends, a sparse file of gigabytes, and a reply's name may already be a link. So the worker
reads a request only as a regular file opened without following a link (``O_NOFOLLOW``,
``O_NONBLOCK``, then ``fstat``), of at most :data:`REQUEST_MAX_BYTES`; writes a reply as a
fresh file (``O_EXCL``) renamed into place (a rename replaces a link, never writes through
one); and at every poll :func:`sweep` removes anything else, holding the rest under
:data:`DESK_MAX_BYTES` together.

Source: issue "The change under review is untrusted" (every size read has a cap);
docs/evidence-and-asks.md §1 (the desk).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REQUEST_MAX_BYTES = 1024 * 1024
"""The largest request the worker reads (1 MiB: a script's program is at most
:data:`~council.evidence.SCRIPT_MAX_BYTES`, a question far less)."""

DESK_MAX_BYTES = 16 * 1024 * 1024
"""The most bytes the desk directory's files may hold together (16 MiB); past it the
newest are removed at the next sweep."""

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class Unreadable(Exception):
    """A request the worker will not read (the message says why, in a few words)."""


def read_request(path: Path, max_bytes: int = REQUEST_MAX_BYTES) -> Any:
    """The JSON value of the request file ``path``.

    Raises :class:`Unreadable` when it is a link (not followed), not a regular file, over
    ``max_bytes`` bytes, not UTF-8 or not JSON. Never blocks (a FIFO is refused).
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise Unreadable("a symbolic link (not followed)") from None
        raise Unreadable(
            f"cannot be opened ({errno.errorcode.get(error.errno or 0, '?')})"
        ) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable("not a regular file")
        if info.st_size > max_bytes:
            raise Unreadable(f"{info.st_size} bytes, over the cap of {max_bytes}")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise Unreadable(f"over the cap of {max_bytes} bytes")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise Unreadable("not UTF-8 JSON") from None


def write_reply(path: Path, value: Any) -> None:
    """Write ``value`` as JSON to ``path`` whole: into a fresh file of a random name
    beside it (created, never opened through a link), then renamed over ``path`` (which
    replaces whatever entry is there, a link included, without following it). Raises
    ``OSError``."""
    staging = path.with_name(f".{path.name}.{secrets.token_hex(8)}.part")
    fd = os.open(staging, _CREATE_FLAGS, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(value, out, ensure_ascii=False)
        os.replace(staging, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staging)
        raise


def sweep(
    folder: Path,
    ours: Sequence[str],
    max_bytes: int = REQUEST_MAX_BYTES,
    budget_bytes: int = DESK_MAX_BYTES,
    requests: Sequence[str] = (),
) -> int:
    """Remove the entries of ``folder`` the worker would never read, so the directory
    cannot grow on the worker's disk: anything but a regular file (a link is removed,
    never followed; a directory is removed whole without following links inside), a
    regular file over ``max_bytes``, one whose name ends in none of ``ours`` (nor
    ``.part``, a request being written), and, oldest kept first, every file once the
    kept ones pass ``budget_bytes`` together. A regular file whose name ends in one of
    ``requests`` is left whatever its size, outside the budget: the desk reads it within
    the poll and answers it, refusing it when over the cap (removed here, it would get no
    reply, and the program would wait for one). Returns how many entries were removed.
    Never raises."""
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    kept: list[tuple[float, str, int, str]] = []
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        regular = stat.S_ISREG(info.st_mode)
        if regular and requests and entry.name.endswith(tuple(requests)):
            continue
        named = entry.name.endswith((*ours, ".part"))
        if regular and named and info.st_size <= max_bytes:
            kept.append((info.st_mtime, entry.name, info.st_size, entry.path))
            continue
        removed += _remove(entry.path, stat.S_ISDIR(info.st_mode))
    total = 0
    for _, _, size, path in sorted(kept):
        total += size
        if total > budget_bytes:
            removed += _remove(path, False)
    return removed


def _remove(path: str, directory: bool) -> int:
    """Remove one entry (a directory whole, links inside not followed); 1 when gone."""
    try:
        if directory:
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except OSError:
        return 0
    return 1
