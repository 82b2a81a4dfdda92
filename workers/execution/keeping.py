"""Keeping what a worker stored until its run's filing is durable: Redis may forget its
last second.

Under ``appendfsync everysec`` a host crash loses up to about a second of writes: an
outcome a worker stored a moment earlier, the chord's count of its task, the filing
itself. The worker that stored an outcome still holds it, so every distributed worker
process keeps each outcome it stored (:func:`keep`) until its run is seen past the
participant's state (``open`` for a reviewer, ``judging`` for the judge) and the Redis
server (``INFO server`` ``run_id``: a restart changes it) stays the same for
:data:`DURABLE_S` more, or the visibility timeout passes. One thread per process
(:class:`Keeper`) checks each :data:`CHECK_S`; a run seen filed is not read again
(:func:`_confirming`): only a new server could have lost its filing. When Redis
restarted since an outcome was stored, the keeper stores it again if Redis no longer
holds it (``SET NX``: a kept one wins, ending the attempt's lease so no sweep sends the
reviewer again), and settles the run once every reviewer (or the judge) is heard: the
chord's count may be lost with the rest. Entries recorded before the fold are kept by
the attempt's journal sink (:meth:`~workers.execution.journal_sink.RedisJournal.reconcile`).

Source: docs/celery.md §1.16.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis
import structlog

from workers.app.services import Runtime
from workers.execution.outage_retry import held_back, note_refusal
from workers.stores import server_id
from workers.stores.run_progress import Settled

log = structlog.get_logger("council.worker")

CHECK_S = 1.0
"""Seconds between two checks of the kept outcomes."""

DURABLE_S = 3.0
"""Seconds a run must be seen filed on one Redis server before what was kept for it is
let go: ``appendfsync everysec`` writes to disk within about two seconds."""

Settle = Callable[[str], None]
"""Settles a run (by id) whose participants are all heard; given by the tasks module."""


@dataclass
class _Kept:
    """One stored outcome this process keeps."""

    run_id: str
    done: Settled
    lease: str
    live: str
    server: str
    """Redis's ``run_id`` when it was stored, as this keeper last knew it."""
    until: float
    filed_at: float | None = None
    filed_on: str = ""


class Keeper:
    """One process's kept outcomes: :meth:`keep` each, :meth:`check` once, or
    :meth:`start` the thread."""

    def __init__(self, rt: Runtime, settle: Settle) -> None:
        self.rt, self.settle = rt, settle
        self._kept: dict[tuple[str, str], _Kept] = {}
        self._lock = threading.Lock()
        self._server = ""
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the checking thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="council-keep", daemon=True)
            self._thread.start()

    def keep(self, run_id: str, done: Settled, lease: str, live: str) -> None:
        """Keep ``done`` (stored a moment ago; ``lease`` its attempt's lease member,
        ``live`` the run's state while it is needed) until the run's filing is durable."""
        pid = done.outcome.participant
        until = time.monotonic() + self.rt.settings.visibility_timeout_s
        with self._lock:
            self._kept[(run_id, pid)] = _Kept(run_id, done, lease, live, self._server, until)

    @property
    def kept(self) -> int:
        """How many outcomes this process keeps."""
        with self._lock:
            return len(self._kept)

    def _run(self) -> None:
        while True:
            time.sleep(CHECK_S)
            try:
                self.check()
            except redis.RedisError as exc:
                if not held_back(exc):
                    log.exception("keep_check_crashed")
                note_refusal(exc)
            except Exception:  # the keeping must go on; say what happened
                log.exception("keep_check_crashed")

    def check(self) -> None:
        """Check every kept outcome once (see the module's docstring)."""
        server = server_id(self.rt.client)
        with self._lock:
            items = list(self._kept.values())
            if not self._server:  # the first check: what was kept so far was kept on this one
                for item in items:
                    item.server = item.server or server
            elif server != self._server:
                log.warning("redis_restarted", kept=len(items))
            self._server = server
        runs: dict[str, list[_Kept]] = {}
        for item in items:
            runs.setdefault(item.run_id, []).append(item)
        for run_id, kept in runs.items():
            try:
                self._check_run(run_id, kept, server)
            except redis.RedisError:
                raise  # Redis is away: the next check tries every run again
            except Exception:  # one run's trouble must not stop the others' keeping
                log.exception("keep_check_crashed", run_id=run_id)

    def _check_run(self, run_id: str, items: list[_Kept], server: str) -> None:
        rt, now = self.rt, time.monotonic()
        unread = []
        for item in items:
            if not _confirming(item, server, now):
                unread.append(item)
            elif now - (item.filed_at or now) >= DURABLE_S:  # on disk by now
                self._drop(run_id, item.done.outcome.participant)
        if not unread:
            return  # no read: only a restart (a new server) could undo the filing meanwhile
        items = unread
        status = rt.runs.status(run_id)
        restarted = False
        for item in items:
            pid = item.done.outcome.participant
            if status is None or now > item.until:
                self._drop(run_id, pid)  # the run expired (or Redis forgot it whole)
                continue
            if status != item.live:
                item.filed_at, item.filed_on = now, server  # seen filed on this server
                continue
            item.filed_at = None
            if item.server == server:
                continue
            restarted = True
            if rt.runs.outcome(run_id, pid) is None:
                rt.runs.put_outcomes(run_id, [item.done], [item.lease])
                log.warning("outcome_restored", run_id=run_id, participant=pid)
        if restarted:
            self.settle(run_id)

    def _drop(self, run_id: str, participant: str) -> None:
        with self._lock:
            self._kept.pop((run_id, participant), None)


def _confirming(item: _Kept, server: str, now: float) -> bool:
    """Whether ``item``'s run was seen filed on ``server``, the server this check found
    (``now`` and the times: ``time.monotonic()``). Its status need not be read again: a
    filing is undone only by a Redis that lost it, which is a new server (``run_id``),
    read at every check; :data:`DURABLE_S` after the sighting it is let go (one read a
    run, not one each :data:`CHECK_S`)."""
    return (
        item.filed_at is not None
        and item.filed_on == server
        and now <= item.until
    )


_keeper: Keeper | None = None
_lock = threading.Lock()


def start(rt: Runtime, settle: Settle) -> Keeper:
    """Start this process's keeper (once)."""
    global _keeper
    with _lock:
        if _keeper is None:
            _keeper = Keeper(rt, settle)
            _keeper.start()
        return _keeper


def keep(run_id: str, done: Settled, lease: str, live: str) -> None:
    """Keep a stored outcome until its run's filing is durable; nothing where no keeper
    runs (embedded mode: Redis is this process's own)."""
    if _keeper is not None:
        _keeper.keep(run_id, done, lease, live)
