"""What a sandboxed reviewer program writes, held in memory under one cap and watched.

A reviewer program writes its journal, its ``scripts/`` requests and its scratch files
(``HOME``, ``TMPDIR``) in :data:`STORE`, a directory of its sandbox's ``/tmp``, one
in-memory file system of a size; ``/dev/shm`` is a second one. Their sizes add up to the
worker's cap (:func:`split`), so nothing the program writes reaches the worker's disk,
and the kernel refuses the byte past the cap ("no space"), a deleted file still held
open included. The worker opens both from outside before the program runs (bwrap's
``--info-fd`` names the sandbox's first process, ``--block-fd`` holds the program until
then) through ``/proc/PID/root`` and keeps the descriptors: it follows the journal and
serves the desk through them (never through a path the program could turn into a link),
counts their bytes at each poll (:meth:`Storage.full` is the ``disk`` stop), reads what
is left once the program has ended, and frees the memory by closing them once every
process of the sandbox is gone. The one reason: docs/security.md "Sandbox" (a run wrote
4 GB to a worker's /tmp; in Kubernetes that evicts the pod).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess  # nosec B404
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from reviewers.sandbox.bubblewrap import Box, Bubblewrap, SandboxError
from reviewers.sandbox.script_desk import SCRIPTS_DIR

STORE = Path("/tmp/council")
"""Where the program's files are, in its sandbox's ``/tmp``: ``journal.jsonl``,
``scripts/``, ``home/`` (``HOME``) and ``tmp/`` (``TMPDIR``)."""

JOURNAL_NAME = "journal.jsonl"
"""The journal file's name at the root of the program's storage (``$COUNCIL_JOURNAL``)."""

SHM_SHARE = 8
"""``/dev/shm`` gets one eighth of the cap, the rest holds the program's files."""

SETUP_MS = 10_000
"""How long bwrap may take to set the sandbox up before the run fails, in ms."""

INFO_MAX_BYTES = 65_536
"""The most of bwrap's ``--info-fd`` JSON read, in bytes."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def split(cap_bytes: int) -> tuple[int, int]:
    """``(files_bytes, shm_bytes)``: the sizes of the two in-memory file systems that hold
    at most ``cap_bytes`` together (``/dev/shm`` one :data:`SHM_SHARE`-th of it)."""
    shm = cap_bytes // SHM_SHARE
    return cap_bytes - shm, shm


@dataclass
class Storage:
    """The descriptors the worker holds on a running program's storage.

    ``root``: the files' file system (the journal and ``scripts/`` at its root); ``desk``:
    its ``scripts/`` directory as first made; ``shm``: ``/dev/shm``; ``pidfd``: the
    sandbox's first process, whose end means every process of it ended (it is init of
    the sandbox's pid namespace). ``cap_bytes``: the sizes added; ``peak_bytes``: the
    most bytes counted in use at any :meth:`used_bytes`.
    """

    root: int
    desk_fd: int
    shm: int
    pidfd: int
    cap_bytes: int
    peak_bytes: int = 0
    keep_open: bool = False
    """Set when a thread may still use the descriptors (a desk that did not stop): they are
    then never closed, so their numbers cannot be reused for another folder under it."""

    @property
    def journal(self) -> Path:
        """The journal file, reached through the held descriptor (not a path the
        program controls); open it without following a link."""
        return Path(f"/proc/self/fd/{self.root}") / JOURNAL_NAME

    @property
    def desk(self) -> Path:
        """The ``scripts/`` directory the worker made, even if the program renamed it."""
        return Path(f"/proc/self/fd/{self.desk_fd}")

    def used_bytes(self) -> int:
        """Bytes in use in both file systems now (deleted files still held included)."""
        used = 0
        for fd in (self.root, self.shm):
            with contextlib.suppress(OSError):
                info = os.fstatvfs(fd)
                used += (info.f_blocks - info.f_bfree) * info.f_frsize
        self.peak_bytes = max(self.peak_bytes, used)
        return used

    def full(self) -> bool:
        """Whether either file system has no block left: the program reached the cap."""
        self.used_bytes()
        for fd in (self.root, self.shm):
            with contextlib.suppress(OSError):
                if os.fstatvfs(fd).f_bavail == 0:
                    return True
        return False

    def ended(self, wait_ms: int) -> bool:
        """Whether every process of the sandbox has ended, waiting up to ``wait_ms``."""
        poller = select.poll()
        poller.register(self.pidfd, select.POLLIN)
        return bool(poller.poll(wait_ms))

    def close(self) -> None:
        """Let go of the storage: once the sandbox has ended, its memory is freed (unless
        :attr:`keep_open`)."""
        if self.keep_open:
            return
        for fd in (self.desk_fd, self.root, self.shm, self.pidfd):
            with contextlib.suppress(OSError):
                os.close(fd)


def start_held(
    bwrap: Bubblewrap, box: Box, argv: Sequence[str], env: Mapping[str, str]
) -> tuple[subprocess.Popen[bytes], Storage]:
    """Start ``argv`` in ``box`` as :meth:`Bubblewrap.start` does, holding its storage.

    ``box`` must be ``temp_in_memory`` with a ``store`` and both sizes set
    (``limits.tmp_bytes`` for the store, ``limits.shm_bytes``). The program starts only
    once the worker holds both file systems and has made ``scripts/`` and an empty journal
    in the first. Raises :class:`SandboxError` (the sandbox could not be set up: bwrap's
    own words; nothing of it is left running) and ``OSError`` (bwrap cannot be started).
    """
    files_bytes, shm_bytes = box.limits.tmp_bytes, box.limits.shm_bytes
    store, sized = box.store, files_bytes is not None and shm_bytes is not None
    if not box.temp_in_memory or store is None or Path("/tmp") not in store.parents or not sized:
        raise SandboxError("a held storage needs a store in the in-memory /tmp, both sizes set")
    info_r, info_w = os.pipe()
    block_r, block_w = os.pipe()
    try:
        line = bwrap.command(
            box, argv, env.get("PATH", os.defpath), info_fd=info_w, block_fd=block_r
        )
        # bwrap with our argv, never a shell; the program is the caller's.
        proc = subprocess.Popen(  # nosec B603
            line,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            start_new_session=True,
            pass_fds=(info_w, block_r),
        )
    except BaseException:
        for fd in (info_r, info_w, block_r, block_w):
            os.close(fd)
        raise
    os.close(info_w)
    os.close(block_r)
    deadline = time.monotonic() + SETUP_MS / 1000
    try:
        storage = _hold(proc, info_r, box, (files_bytes or 0, shm_bytes or 0), deadline)
    except SandboxError as error:
        os.close(block_w)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        said = err.decode("utf-8", errors="replace").strip().splitlines()[-3:]
        raise SandboxError(
            f"{error}" + (f"; bubblewrap said: {' '.join(said)}" if said else "")
        ) from None
    finally:
        os.close(info_r)
    os.write(block_w, b"1")
    os.close(block_w)
    return proc, storage


def _hold(
    proc: subprocess.Popen[bytes],
    info_r: int,
    box: Box,
    sizes: tuple[int, int],
    deadline: float,
) -> Storage:
    """Open the sandbox's two file systems, make ``scripts/`` and the journal, and return
    them held. Raises :class:`SandboxError` saying what did not appear."""
    pid = _child_pid(info_r, deadline)
    store = box.store or STORE
    hosts = {_device(Path("/tmp")), _device(Path("/dev/shm")), os.stat("/").st_dev}
    tmp = _open_sized(proc, f"/proc/{pid}/root/tmp", sizes[0], hosts, deadline)
    fds = [tmp]
    try:
        root = os.open(store.relative_to("/tmp"), _DIR_FLAGS, dir_fd=tmp)
        fds.append(root)
        hosts.add(os.fstat(root).st_dev)
        shm = _open_sized(proc, f"/proc/{pid}/root/dev/shm", sizes[1], hosts, deadline)
        fds.append(shm)
        os.mkdir(SCRIPTS_DIR, 0o700, dir_fd=root)
        desk = os.open(SCRIPTS_DIR, _DIR_FLAGS, dir_fd=root)
        fds.append(desk)
        os.close(os.open(JOURNAL_NAME, _NEW_FILE, 0o600, dir_fd=root))
        pidfd = os.pidfd_open(pid)
    except OSError as error:
        for fd in fds:
            os.close(fd)
        raise SandboxError(f"the sandbox's storage could not be prepared: {error}") from None
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    os.close(tmp)
    return Storage(root=root, desk_fd=desk, shm=shm, pidfd=pidfd, cap_bytes=sum(sizes))


def _device(path: Path) -> int:
    """The host's device of ``path`` (-1 when it has none there)."""
    try:
        return os.stat(path).st_dev
    except OSError:
        return -1


def _child_pid(info_r: int, deadline: float) -> int:
    """The sandbox's first process, from bwrap's ``--info-fd`` JSON (read to its end)."""
    data = b""
    poller = select.poll()
    poller.register(info_r, select.POLLIN)
    while True:
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms <= 0 or not poller.poll(left_ms):
            raise SandboxError(f"bubblewrap did not name its sandbox within {SETUP_MS} ms")
        chunk = os.read(info_r, 4096)
        if not chunk:
            break
        data += chunk
        if len(data) > INFO_MAX_BYTES:
            raise SandboxError("bubblewrap's --info-fd said too much")
    try:
        pid = json.loads(data)["child-pid"]
    except (ValueError, KeyError, TypeError):
        raise SandboxError("bubblewrap ended before its sandbox was made") from None
    if not isinstance(pid, int) or pid <= 0:
        raise SandboxError(f"bubblewrap named no sandbox process ({pid!r})")
    return pid


def _open_sized(
    proc: subprocess.Popen[bytes], path: str, size: int, not_devs: set[int], deadline: float
) -> int:
    """A descriptor of the directory ``path`` once it is a file system of ``size`` bytes
    that is none of ``not_devs`` (the sandbox mounts it while bwrap sets up; before, the
    path is the host's or missing). Raises :class:`SandboxError` past ``deadline`` or
    when bwrap ended."""
    last = "it was never there"
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            fd = os.open(path, _DIR_FLAGS)
        except OSError as error:
            fd, last = -1, f"opening it failed: {error.strerror}"
        if fd >= 0:
            try:
                info = os.fstatvfs(fd)
                sized = info.f_blocks == -(-size // info.f_frsize)
                ours = sized and os.fstat(fd).st_dev not in not_devs
            except OSError:
                ours = False
            if ours:
                return fd
            os.close(fd)
            last = "it was another file system (the host's, or not the size asked)"
        time.sleep(0.002)
    if proc.poll() is not None:
        raise SandboxError("bubblewrap ended before its sandbox was made")
    raise SandboxError(
        f"the sandbox's in-memory storage did not appear within {SETUP_MS} ms at {path} "
        f"({last}); the worker must be able to open its sandbox's /proc/PID/root (a /proc "
        f"mounted with hidepid, or a policy denying ptrace reads, forbids it)"
    )
