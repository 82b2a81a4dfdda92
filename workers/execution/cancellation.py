"""Cancellation on a worker: one watcher thread per process, however many reviews it runs.

A cancelled run (Ctrl-C or SIGTERM in CI, ``--timeout``) sets ``run:{id}:cancel``, and every
review of it on this worker must stop as ``cancelled``. One thread polls the flags of all
the runs this process serves in one pipelined round trip and sets each review's event: a
worker holding hundreds of reviews must not spend a thread and a round trip per review per
poll. A Redis outage is logged once per watching task (``cancel_check_failed``, with the ids
captured when it started watching: the thread has no task context) and once on recovery
(``cancel_check_recovered``, with ``failed_polls`` and ``outage_ms``), never per poll.
Source: docs/architecture.md "Observability".
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import structlog

log = structlog.get_logger("council.cancel")

POLL_S = 0.5
"""Seconds between polls of the cancel flags of the runs being served."""

CancelCheck = Callable[[Sequence[str]], Sequence[bool]]
"""Given run ids, whether each is cancelled (one pipelined Redis round trip)."""


@dataclass(eq=False)
class _Watcher:
    """One block of :meth:`CancelWatch.watching`: its event and the log context of the
    task that opened it (``run_id``, ``session``, ``participant``, ``task_id``, ...)."""

    event: threading.Event
    context: dict[str, object] = field(default_factory=dict)
    warned: bool = False
    """Whether this watcher was told of the current outage."""


@dataclass
class _Outage:
    """The current run of failed polls: when it began (monotonic s) and how many."""

    since: float
    polls: int = 0


class CancelWatch:
    """Tracks the cancel events of the reviews running in this process."""

    def __init__(self, check: CancelCheck, poll_s: float = POLL_S) -> None:
        self._check, self._poll_s = check, poll_s
        self._lock = threading.Lock()
        self._events: dict[str, list[_Watcher]] = {}
        self._thread: threading.Thread | None = None
        self._outage: _Outage | None = None

    @contextmanager
    def watching(self, run_id: str) -> Iterator[threading.Event]:
        """An event set when ``run_id`` is cancelled, for the length of the block."""
        watcher = _Watcher(threading.Event(), dict(structlog.contextvars.get_contextvars()))
        watcher.context.setdefault("run_id", run_id)
        with self._lock:
            self._events.setdefault(run_id, []).append(watcher)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="cancel-watch", daemon=True)
                self._thread.start()
        try:
            yield watcher.event
        finally:
            with self._lock:
                waiting = self._events.get(run_id)
                if waiting is not None:
                    if watcher in waiting:
                        waiting.remove(watcher)
                    if not waiting:
                        del self._events[run_id]

    def _run(self) -> None:
        """Poll until no review is watched, then end (the next :meth:`watching` starts a
        new thread): a process that stopped reviewing, an embedded council that ended,
        keeps no thread behind."""
        while True:
            threading.Event().wait(self._poll_s)
            with self._lock:
                runs = list(self._events)
                if not runs:
                    self._thread = None
                    return
            try:
                flags = self._check(runs)
            except Exception as error:
                self._failed(error)
                continue
            self._recovered()
            with self._lock:
                for run_id, cancelled in zip(runs, flags, strict=True):
                    if cancelled:
                        for watcher in self._events.get(run_id, ()):
                            watcher.event.set()

    def _watchers(self) -> list[_Watcher]:
        with self._lock:
            return [w for watchers in self._events.values() for w in watchers]

    def _failed(self, error: Exception) -> None:
        """A poll failed: tell each watcher not yet told of this outage, once."""
        if self._outage is None:
            self._outage = _Outage(since=time.monotonic())
        self._outage.polls += 1
        for watcher in self._watchers():
            if not watcher.warned:
                watcher.warned = True
                log.warning(
                    "cancel_check_failed",
                    **watcher.context,
                    error_type=type(error).__name__,
                    error=str(error),
                    poll_s=self._poll_s,
                )

    def _recovered(self) -> None:
        """A poll succeeded: end the outage, telling the watchers that were told of it."""
        outage, self._outage = self._outage, None
        if outage is None:
            return
        outage_ms = round((time.monotonic() - outage.since) * 1000)
        for watcher in self._watchers():
            if watcher.warned:
                watcher.warned = False
                log.info(
                    "cancel_check_recovered",
                    **watcher.context,
                    failed_polls=outage.polls,
                    outage_ms=outage_ms,
                )
