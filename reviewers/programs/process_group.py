"""A reviewer program's process group: started in its own session, dying with the
worker, stopped with everything it started.

A reviewer program runs in its own process group (its own session), so a stop kills
everything it started, grandchildren included: a reviewer that shells out to a model CLI
must not leave that CLI running after we gave up on it; and a worker that dies takes its
programs with it. Times in milliseconds. Starting raises ``OSError``; stopping never
raises for a group already gone.

Source: docs/identity-and-clocks.md "Clocks", docs/celery.md §1.14 (orphans).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import subprocess  # nosec B404
import sys
import time
from collections.abc import Callable
from pathlib import Path

KILL_GRACE_MS = 1000
"""Time between SIGTERM and SIGKILL to a stopped program's process group, in ms."""

BUSY_RETRY_MS = (10, 20, 50, 100, 200, 500, 1000)
"""Waits, in ms, before each new try to start a program the kernel calls busy (ETXTBSY).

Why: a program file written by this process (a base-tree program, see
``workers.execution.unpacked_trees``) stays open for writing in any child another thread
forked in the instant before the write's descriptor closed, until that child execs.
Starting the program then fails with "Text file busy" though nothing is wrong with it;
the window is a few milliseconds (golang/go#22315 describes the same race)."""

PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal a process gets when its parent dies (Linux)."""

_PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
"""libc's prctl, looked up once here, not in a forked child (no dlsym after fork)."""


def _die_with_worker(parent: int) -> Callable[[], None] | None:
    """The child's preexec: SIGKILL this program when the worker dies (Linux), for a
    program run unconfined (a sandboxed one gets the same from bwrap's
    ``--die-with-parent``, see :mod:`reviewers.sandbox.bubblewrap`).

    Why: a worker SIGKILLed (OOM, a lost host's kill) cannot stop its reviewer programs;
    reparented to PID 1 they would run on past their backstop, recording into an attempt
    nobody will file. ``PR_SET_PDEATHSIG`` fires on the death of the THREAD that forked
    the child, not only the process: the review thread that starts a program is the one
    that supervises it until it ends (:func:`~reviewers.programs.supervision.supervise`),
    so it outlives the program unless the whole worker dies, which is exactly when the
    program must die too. A worker dead between the fork and the prctl is caught by
    comparing the parent pid. Only async-signal-safe work happens in the child (one prctl
    call, getppid, _exit).
    """
    prctl = _PRCTL
    if prctl is None:
        return None

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


def start_program(
    argv: list[str], workdir: Path | None, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """Start the program in its own session with piped stdio; raises ``OSError``.

    A start refused as "Text file busy" is tried again after each wait of
    :data:`BUSY_RETRY_MS` (about 1.9 s in all) before the error is raised.
    """
    for wait_ms in (*BUSY_RETRY_MS, None):
        try:
            # Running the roster's program is this module's job; argv, never a shell.
            return subprocess.Popen(  # nosec B603
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=workdir,
                env=env,
                start_new_session=True,
                preexec_fn=_die_with_worker(os.getpid()),  # see its docstring
            )
        except OSError as error:
            if error.errno != errno.ETXTBSY or wait_ms is None:
                raise
            time.sleep(wait_ms / 1000)
    raise AssertionError("unreachable: the last try raises or returns")


def _group_alive(pgid: int) -> bool:
    """Whether a process group still has a running (not zombie) member."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # members exist that we may not signal
    return _running_member(pgid)


def _running_member(pgid: int) -> bool:
    """Whether /proc lists a member of the group that is not a zombie (True without /proc).

    Why: an orphaned grandchild whose new parent never reaps it (PID 1 in many containers)
    stays a zombie in the group; signals to the group still "succeed", and waiting for it
    would always cost the whole grace.
    """
    if not os.path.isdir("/proc"):
        return True
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(os.path.join(entry.path, "stat"), encoding="utf-8") as handle:
                    fields = handle.read().rsplit(")", 1)[-1].split()
            except OSError:
                continue  # exited while we looked
            if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
                return True
    return False


def _signal_group(pgid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def kill_group(proc: subprocess.Popen[bytes], grace_ms: int = KILL_GRACE_MS) -> None:
    """Stop a program and everything in its process group: SIGTERM, then SIGKILL.

    Why: a stopped reviewer must not leave children (a model CLI, a language server)
    running and holding our pipes. ``grace_ms`` is how long the group gets to exit on
    SIGTERM. The leader is reaped before returning. Never raises for a group already gone.
    """
    pgid = proc.pid
    if _group_alive(pgid):
        _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace_ms / 1000
        while time.monotonic() < deadline:
            if proc.poll() is not None and not _group_alive(pgid):
                break
            time.sleep(0.02)
        else:
            _signal_group(pgid, signal.SIGKILL)
    proc.wait()
