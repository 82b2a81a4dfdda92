"""Cancellation on a worker: one watcher thread per process, however many reviews it runs.

A cancelled run (Ctrl-C or SIGTERM in CI, ``--timeout``) sets ``run:{id}:cancel``; every
review of that run on this worker must stop as ``cancelled``. One thread polls the
cancel flags of all the runs this process serves, in one pipelined round trip, and sets
each review's event. Why one: a worker holding hundreds of reviews must not spend a
thread and a Redis round trip per review per poll.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import structlog

log = structlog.get_logger("council.cancel")

POLL_S = 0.5
"""Seconds between polls of the cancel flags of the runs being served."""

CancelCheck = Callable[[Sequence[str]], Sequence[bool]]
"""Given run ids, whether each is cancelled (one pipelined Redis round trip)."""


class CancelWatch:
    """Tracks the cancel events of the reviews running in this process."""

    def __init__(self, check: CancelCheck, poll_s: float = POLL_S) -> None:
        self._check, self._poll_s = check, poll_s
        self._lock = threading.Lock()
        self._events: dict[str, set[threading.Event]] = {}
        self._thread: threading.Thread | None = None

    @contextmanager
    def watching(self, run_id: str) -> Iterator[threading.Event]:
        """An event set when ``run_id`` is cancelled, for the length of the block."""
        event = threading.Event()
        with self._lock:
            self._events.setdefault(run_id, set()).add(event)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="cancel-watch", daemon=True)
                self._thread.start()
        try:
            yield event
        finally:
            with self._lock:
                waiting = self._events.get(run_id)
                if waiting is not None:
                    waiting.discard(event)
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
            except Exception:
                log.warning("cancel_check_failed", runs=len(runs))
                continue
            with self._lock:
                for run_id, cancelled in zip(runs, flags, strict=True):
                    if cancelled:
                        for event in self._events.get(run_id, ()):
                            event.set()
