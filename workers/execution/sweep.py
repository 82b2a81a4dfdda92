"""The sweep: every worker, every few seconds, makes sure every run settles or expires.

Workers sweep, not the waiting CLI: re-running a lost participant needs a live worker
anyway, and a sweep there does not depend on a CLI still waiting (a CI job killed, a laptop
closed). Each :attr:`Settings.sweep_interval_s` one worker wins the lock (``SET
council:sweep NX PX``), so the cost does not grow with the fleet. A sweep sends lapsed
leases' participants again (:mod:`workers.execution.leases`), settles runs opened and never
dispatched for :attr:`Settings.abandon_after_s` (``abandoned``), and runs past their
deadline plus :attr:`Settings.watchdog_slack_ms` as the CLI's watchdog would. After a Redis
outage or refusal (``OOM``, ``READONLY``, ``MISCONF``: nobody could beat) it waits one lease
length of health before it believes a lapse. Lapses, deadlines and the abandon clock are
compared on Redis's clock (``TIME``), never on this host's.

Source: docs/celery.md §1.14.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis
import structlog

from council.model.backend_result import Stop
from council.model.participant import Participant, working
from workers.app.services import Runtime
from workers.execution.leases import BEAT_S, LEASE_MS, parse
from workers.execution.outage_retry import held_back, note_refusal
from workers.settling.settle import JudgeDispatch, RunNotFound, settle_run
from workers.stores import server_ms
from workers.stores.run_inputs import entry_field

log = structlog.get_logger("council.sweep")

SLOW_S = 1.0
"""A sweep's first round trip slower than this (seconds) counts as an outage (a paused
or struggling Redis, during which nobody could beat)."""

BATCH = 200
"""Most leases or runs handled per kind in one sweep."""

Resend = Callable[[str, str, str], "str | None"]
"""Sends a participant's review again: (run id, participant id, backend) → the new task's
id (None when unknown)."""


@dataclass
class Swept:
    """What one sweep did."""

    redispatched: int = 0
    abandoned: int = 0
    overdue: int = 0


class Sweeper:
    """One worker's sweeps: :meth:`sweep` once, or :meth:`start` the thread."""

    def __init__(self, rt: Runtime, resend: Resend, dispatch_judge: JudgeDispatch) -> None:
        self.rt, self.resend, self.dispatch_judge = rt, resend, dispatch_judge
        self._healthy_since = time.monotonic()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the sweeping thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="council-sweep", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(self.rt.settings.sweep_interval_s)
            try:
                self.sweep()
            except redis.RedisError as exc:
                if not held_back(exc):
                    log.exception("sweep_crashed")
                    continue
                note_refusal(exc)
                self._healthy_since = time.monotonic()
                log.warning("sweep_failed", error=str(exc) or type(exc).__name__)
            except Exception:  # the sweep must go on; say what happened
                log.exception("sweep_crashed")

    def sweep(self) -> Swept | None:
        """Sweep once if this worker wins the period's lock; what it did, else None."""
        rt = self.rt
        before = time.monotonic()
        period_ms = max(1, int(rt.settings.sweep_interval_s * 1000 * 0.75))
        won = rt.client.set(rt.keys.sweep_lock(), b"1", nx=True, px=period_ms)
        if time.monotonic() - before > SLOW_S:
            self._healthy_since = time.monotonic()
        if not won:
            return None
        swept = Swept()
        healthy_for = time.monotonic() - self._healthy_since
        if healthy_for >= LEASE_MS / 1000 + BEAT_S:
            swept.redispatched = self._lapsed()
        swept.abandoned = self._abandoned()
        swept.overdue = self._overdue()
        return swept

    def _lapsed(self) -> int:
        rt, k = self.rt, self.rt.keys
        now = server_ms(rt.client)
        lapsed = rt.client.zrangebyscore(k.leases(), "-inf", now, start=0, num=BATCH)
        sent = 0
        for raw in lapsed:
            lease = parse(raw)
            if lease is None:
                rt.client.zrem(k.leases(), raw)
                continue
            run_id, pid, attempt = lease
            pipe = rt.client.pipeline(transaction=False)
            pipe.hget(k.run(run_id), "status")
            pipe.get(k.run_attempts(run_id, pid))
            pipe.exists(k.run_outcome(run_id, pid))
            pipe.hget(k.run(run_id), entry_field(pid))
            status, latest, stored, entry = pipe.execute()
            if not rt.client.zrem(k.leases(), raw):
                continue  # another sweep took it
            participant = Participant.model_validate_json(entry) if entry is not None else None
            if participant is None and status is not None:
                log.warning(
                    "lease_without_participant",
                    run_id=run_id,
                    participant=pid,
                    lost_attempt=attempt,
                    why="the run holds no entry for it (opened by a CLI of an older "
                    "protocol?); not sent again: drain open runs before upgrading",
                )
            live = "judging" if participant is not None and participant.role == "judge" else "open"
            if (
                participant is None
                or stored
                or status is None
                or status.decode() != live
                or int(latest or 0) != attempt
                or participant.role == "judge"  # the judge has no lease (docs)
            ):
                continue
            task_id = self.resend(run_id, pid, participant.backend)
            record = rt.runs.record(run_id)
            log.warning(
                "participant_redispatched",
                run_id=run_id,
                session=record.session if record is not None else None,
                participant=pid,
                task_id=task_id,
                attempt=attempt + 1,  # the one the new task is about to start
                lost_attempt=attempt,
            )
            sent += 1
        return sent

    def _abandoned(self) -> int:
        rt, k = self.rt, self.rt.keys
        cutoff = server_ms(rt.client) - rt.settings.abandon_after_s * 1000
        found = rt.client.zrangebyscore(k.runs_undispatched(), "-inf", cutoff, start=0, num=BATCH)
        settled = 0
        for raw in found:
            run_id = raw.decode()
            if rt.runs.status(run_id) == "open":
                log.warning("run_abandoned", run_id=run_id)
                try:
                    settle_run(rt, run_id, event="abandoned", lost=Stop(limit="cancelled"))
                    settled += 1
                except RunNotFound:
                    pass
            rt.client.zrem(k.runs_undispatched(), raw)
        return settled

    def _overdue(self) -> int:
        rt, k = self.rt, self.rt.keys
        cutoff = server_ms(rt.client) - rt.settings.watchdog_slack_ms
        found = rt.client.zrangebyscore(k.runs_open(), "-inf", cutoff, start=0, num=BATCH)
        settled = 0
        for raw in found:
            run_id = raw.decode()
            if rt.runs.status(run_id) not in ("open", "judging"):
                rt.client.zrem(k.runs_open(), raw)
                continue
            log.warning("sweep_watchdog_fired", run_id=run_id)
            try:
                report = settle_run(
                    rt,
                    run_id,
                    lost=Stop(limit="worker-lost"),
                    dispatch_judge=self.dispatch_judge,
                    deadline_passed=True,
                )
            except RunNotFound:
                rt.client.zrem(k.runs_open(), raw)
                continue
            settled += report.status != "judging"
        return settled


def settle_if_heard(rt: Runtime, run_id: str, dispatch_judge: JudgeDispatch) -> None:
    """Settle an ``open`` run once every reviewer has a stored outcome (a re-dispatched
    participant was the last: the chord waits on the lost task's message), a ``judging``
    one once its judge's is stored (a Redis restart forgot the settling that followed it:
    :mod:`workers.execution.keeping`). Idempotent."""
    status = rt.runs.status(run_id)
    if status == "judging":
        record = rt.runs.record(run_id)
        if record is not None and record.judge and rt.runs.outcome(run_id, record.judge):
            settle_run(rt, run_id, dispatch_judge=dispatch_judge)
        return
    if status != "open":
        return
    everyone = working(rt.runs.participants(run_id))  # a sliced one is heard by its slices
    reviewers = [p.id for p in everyone if p.role != "judge"]
    if len(rt.runs.outcomes_many(run_id, reviewers)) == len(reviewers):
        settle_run(rt, run_id, dispatch_judge=dispatch_judge)


_sweeper: Sweeper | None = None
_lock = threading.Lock()


def start(rt: Runtime, resend: Resend, dispatch_judge: JudgeDispatch) -> Sweeper:
    """Start this process's sweeper (once)."""
    global _sweeper
    with _lock:
        if _sweeper is None:
            _sweeper = Sweeper(rt, resend, dispatch_judge)
            _sweeper.start()
        return _sweeper
