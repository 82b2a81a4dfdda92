"""Supervising a started reviewer program: what it produced (:class:`Ran`), under our clocks.

The prompt is fed to its stdin, stdout and stderr are read on threads within their caps
(bytes), the journal file is followed, and the clocks are checked every ``POLL_MS``:
the backstop, the idle clock, a cancellation and a full storage (a sandboxed program's,
:mod:`reviewers.sandbox.storage`) stop it. Celery's time limits do not
apply in a threads pool, so these clocks are the real ones (docs/architecture.md "Worker
pool"). The soft deadline (``answer_ms``) does not apply: a plain program has no channel
on which to be asked to wrap up. Never raises for a fault of the program.

Source: docs/identity-and-clocks.md "Clocks", docs/harvest.md §7.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess  # nosec B404
import threading
import time
from dataclasses import dataclass
from typing import IO, cast

from council.asks.paused import Paused
from council.model.backend_result import Stop
from reviewers.base import ReviewRequest
from reviewers.models.activity import Activity
from reviewers.programs.journal_file import JournalFollower
from reviewers.programs.process_group import KILL_GRACE_MS, kill_group
from reviewers.sandbox.storage import Storage

POLL_MS = 100
"""How often the clocks are checked and the journal file is read, in milliseconds."""

STDOUT_CAP_BYTES = 20 * 1024 * 1024
"""Most stdout kept, in bytes: past it the first half and the LAST half are kept (a
reviewer's final answer comes last), the middle is dropped, and that is noted."""

STDERR_TAIL_BYTES = 4096
"""How much of the end of stderr is kept for a failure message, in bytes."""

STDERR_TAIL_LINES = 10
"""How many of the last stderr lines a failure message quotes."""


@dataclass(frozen=True)
class Ran:
    """What running a program produced.

    ``failure``: why it could not be started (verbatim; everything else is then empty).
    ``stdout`` holds at most :data:`STDOUT_CAP_BYTES` (``stdout_capped``: more was printed);
    ``status`` is the exit status (negative: killed by that signal; None when stopped);
    ``stderr_tail`` the last :data:`STDERR_TAIL_BYTES`; ``journal_entries`` the journal lines
    forwarded; ``notes`` sentences about dropped output or journal lines; ``duration_ms`` from
    the start to the program's end. ``asked``: the question it put through ``council ask
    --question`` that the worker accepted (:mod:`reviewers.sandbox.ask_desk`), else None.
    """

    stdout: bytes = b""
    stdout_capped: bool = False
    status: int | None = None
    stop: Stop | None = None
    failure: str | None = None
    stderr_tail: bytes = b""
    journal_entries: int = 0
    journal_lost: int = 0
    """Journal lines not recorded: over the line cap, or refused by the store. What they
    held is unknown, so the reviewer is heard in part (``journal-over-cap``)."""
    notes: tuple[str, ...] = ()
    duration_ms: int = 0
    asked: Paused | None = None
    storage_bytes: int | None = None

    @property
    def answer(self) -> str:
        """The stdout decoded as UTF-8, invalid bytes replaced."""
        return self.stdout.decode("utf-8", errors="replace")

    def exit_reason(self) -> str:
        """One phrase for a failure: 'exited with status 3: <last lines of stderr>'."""
        status = self.status if self.status is not None else 0
        if status < 0:
            try:
                name = signal.Signals(-status).name
            except ValueError:
                name = f"signal {-status}"
            text = f"was killed by {name}"
        else:
            text = f"exited with status {status}"
        said = self.stderr_tail.decode("utf-8", errors="replace").strip()
        lines = said.splitlines()
        if not lines:
            return text + " and printed nothing on stderr"
        hint = READ_ONLY_HINT if "Read-only file system" in said else ""
        return text + ": " + "\n".join(lines[-STDERR_TAIL_LINES:]) + hint


READ_ONLY_HINT = (
    "\n(the code is read-only in the sandbox: turn the program's cache off or point it at "
    "$TMPDIR, e.g. ruff --no-cache)"
)
"""Added to a failure whose stderr says the program tried to write the read-only tree."""


class _Capture:
    """Reads one pipe to its end on a thread.

    Up to ``cap`` bytes are kept whole. Past it, with ``tail`` only the last ``cap``
    bytes are kept; without, the first ``cap // 2`` and the last ``cap // 2`` (so a long
    investigation log does not push out the answer printed at the end).
    """

    def __init__(self, stream: IO[bytes], cap: int, tail: bool, activity: Activity | None):
        self._stream, self._cap, self._tail, self._activity = stream, cap, tail, activity
        self.head = bytearray()
        self.rest = bytearray()
        self.capped = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @property
    def data(self) -> bytes:
        """What was kept, in order (head, then the tail when the middle was dropped)."""
        return bytes(self.head + self.rest)

    def _run(self) -> None:
        read1 = getattr(self._stream, "read1", self._stream.read)
        half = self._cap // 2
        while True:
            try:
                chunk: bytes = read1(65536)
            except (OSError, ValueError):
                return
            if not chunk:
                return
            if self._activity is not None:
                self._activity.touch()
            if self._tail:
                self.rest += chunk
                if len(self.rest) > self._cap:
                    self.capped = True
                    del self.rest[: len(self.rest) - self._cap]
                continue
            if len(self.head) + len(self.rest) + len(chunk) <= self._cap:
                self.head += chunk
                continue
            if len(self.head) < half:
                take = half - len(self.head)
                self.head += chunk[:take]
                chunk = chunk[take:]
            elif len(self.head) > half:
                self.rest = self.head[half:] + self.rest
                del self.head[half:]
            self.rest += chunk
            if len(self.rest) > self._cap - half:
                self.capped = True
                del self.rest[: len(self.rest) - (self._cap - half)]


def _feed(stream: IO[bytes], data: bytes) -> None:
    """Write the prompt to stdin and close it; a program that stops reading is fine."""
    # A program that closed stdin or exited does not want the rest: not a fault.
    with contextlib.suppress(OSError, ValueError):
        stream.write(data)
        stream.flush()
    with contextlib.suppress(OSError):
        stream.close()


def supervise(
    proc: subprocess.Popen[bytes],
    request: ReviewRequest,
    follower: JournalFollower,
    started: float,
    storage: Storage | None = None,
) -> Ran:
    """Watch the started ``proc`` until it exits or a clock stops it, then stop its group.

    ``started`` is the ``time.monotonic()`` of the run's start (the clocks count from it,
    retries included). ``storage``: a sandboxed program's, counted at each poll; full is
    the ``disk`` stop, and so is a program that ended with it full. Stdout, stderr and the
    journal lines read so far are kept on a stop (on ``disk``, the journal's complete
    lines); a note says what was dropped or left open. Never raises for the program's fault.
    """
    # All three streams were opened as pipes, so none of them is None.
    stdin, stdout, stderr = (cast("IO[bytes]", s) for s in (proc.stdin, proc.stdout, proc.stderr))
    clocks = request.participant.clocks
    activity = Activity()
    out = _Capture(stdout, STDOUT_CAP_BYTES, tail=False, activity=activity)
    err = _Capture(stderr, STDERR_TAIL_BYTES, tail=True, activity=None)
    feeder = threading.Thread(
        target=_feed, args=(stdin, request.prompt.encode("utf-8")), daemon=True
    )
    feeder.start()
    stop: Stop | None = None
    heard = request.heard()
    while proc.poll() is None:
        if follower.poll():
            activity.touch()
        if (now_heard := request.heard()) != heard:  # a `council record` straight to Redis
            heard = now_heard
            activity.touch()
        elapsed_ms = int((time.monotonic() - started) * 1000)
        if request.cancel.is_set():
            stop = Stop(limit="cancelled")
        elif storage is not None and storage.full():
            stop = _disk(storage)
        elif elapsed_ms >= clocks.backstop_ms:
            stop = Stop(limit="wall-clock", budget_ms=clocks.backstop_ms)
        elif activity.since_ms() >= clocks.idle_ms:
            stop = Stop(limit="idle", budget_ms=clocks.idle_ms)
        if stop is not None:
            break
        wait_ms = min(
            POLL_MS,
            clocks.backstop_ms - elapsed_ms,
            clocks.idle_ms - activity.since_ms(),
        )
        request.cancel.wait(max(wait_ms, 1) / 1000)
    kill_group(proc)
    duration_ms = int((time.monotonic() - started) * 1000)
    notes: list[str] = []
    if storage is not None:
        if not storage.ended(KILL_GRACE_MS):
            notes.append("the sandbox's processes outlived its bubblewrap by over a second")
        if stop is None and storage.full():
            stop = _disk(storage)
    for capture, stream, name in ((out, stdout, "stdout"), (err, stderr, "stderr")):
        capture.thread.join(KILL_GRACE_MS / 1000)
        if capture.thread.is_alive():
            notes.append(f"{name} stayed open after the program's process group ended")
        else:
            stream.close()
    feeder.join(KILL_GRACE_MS / 1000)
    follower.finish(cut=stop is not None and stop.limit == "disk")
    notes.extend(follower.notes)
    if stop is not None and stop.limit == "disk":
        notes.append(
            f"the program filled its storage (its journal, scripts/, HOME, TMPDIR, /tmp and "
            f"/dev/shm hold {stop.budget_bytes} bytes at most, in memory): it was stopped, "
            f"its journal's {follower.forwarded} complete entries kept"
        )
    if out.capped:
        notes.append(
            f"stdout was over {STDOUT_CAP_BYTES} bytes: its first and last "
            f"{STDOUT_CAP_BYTES // 2} bytes were read, the middle was dropped"
        )
    return Ran(
        stdout=bytes(out.data),
        stdout_capped=out.capped,
        status=None if stop is not None else proc.returncode,
        stop=stop,
        stderr_tail=bytes(err.data),
        journal_entries=follower.forwarded,
        journal_lost=follower.dropped + follower.refused,
        notes=tuple(notes),
        duration_ms=duration_ms,
        storage_bytes=storage.peak_bytes if storage is not None else None,
    )


def _disk(storage: Storage) -> Stop:
    return Stop(limit="disk", budget_bytes=storage.cap_bytes)
