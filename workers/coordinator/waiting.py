"""Waiting for a dispatched run to settle: progress, cancel, timeout, the watchdog.

The waiting CLI reads the run in Redis, never a task's result (docs/architecture.md "The
shape": wait, with a watchdog for a chord that never fires). It rides out a short Redis
outage (:class:`_Outage`), says once when no worker took any of the run's tasks, and past
the run's deadline settles it from the journals (:func:`~workers.settling.settle.settle_run`
with ``deadline_passed``), a task no worker started failing naming its queue.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis
import structlog

from council.errors import StoreUnavailable
from council.model.backend_result import Stop
from council.model.report import CouncilReport, RunStatus
from workers.app.celery_config import queue_for
from workers.app.logging import redact_text, redact_url
from workers.app.services import Runtime
from workers.execution.outage_retry import held_back, refused
from workers.settling.settle import JudgeDispatch, settle_run, unfiled_report
from workers.stores import server_ms
from workers.stores.run_record import Progress, RunRecord

log = structlog.get_logger("council.coordinator")  # the name its events always had

POLL_S = 0.01
"""Seconds between polls of the run's status while waiting (one HGET each), with
``COUNCIL_WAIT_POLL=1``."""

WAKE_FALLBACK_S = 5.0
"""Seconds the distributed waiter blocks on the run's wake list (BLPOP) before it reads
the run anyway: a wake lost (a worker that died between its write and its push) costs at
most this."""

COALESCE_S = 0.05
"""Seconds the distributed waiter lets a burst of writes settle after a wake before it
reads (five reviewers starting at once are one read, not five); embedded, a read is an
in-process call and the waiter reads at once."""

STOP_CHECK_S = 0.1
"""Seconds between two looks at ``stop_requested`` while the waiter blocks (a Ctrl-C
pushes the wake list, so the waiter does not sit out its BLPOP)."""

PROGRESS_S = 0.25
"""Seconds between progress reads while waiting."""

CANCEL_GRACE_MS = 5_000
"""Milliseconds a cancelled run waits for reviewers to stop before it is settled."""

REDIS_OUTAGE_S = 30.0
"""Seconds the waiting CLI keeps retrying an unreachable Redis before it gives up (exit 3).

A restart or failover of a few seconds is ridden out; the run goes on on the workers
meanwhile."""

OUTAGE_PAUSE_S = (0.25, 4.0)
"""The first and the longest pause between reads of an unreachable Redis (doubling)."""

NO_WORKER_HINT_S = 30.0
"""Seconds with every participant still ``pending`` (no worker started any of the run's
tasks) before the waiting CLI says so, once, in distributed mode."""


def say(text: str) -> None:
    """Write one ``council: …`` line to stderr (the waiting CLI's notices)."""
    sys.stderr.write(f"council: {text}\n")
    sys.stderr.flush()


def _shown(states: dict[str, Progress], counts: dict[str, int]) -> dict[str, Progress]:
    """The progress shown: a running participant's ``findings`` is the count its journal
    recorded so far."""
    return {
        p: (s.model_copy(update={"findings": counts.get(p, 0)}) if s.state == "running" else s)
        for p, s in states.items()
    }


def _mono_ms() -> int:
    """This host's monotonic clock, in ms: for durations only, never compared with another
    host's clock (docs/identity-and-clocks.md)."""
    return int(time.monotonic() * 1000)


class WritesRefused(Exception):
    """Redis answered reads but refused the waiter's writes for :data:`REDIS_OUTAGE_S`:
    the run cannot be filed; the message says what Redis refused, for how long."""


@dataclass
class _Outage:
    """Rides out a short Redis outage while waiting: bounded backoff, said once per outage.

    ``budget_s``: seconds an outage may last before it is given up on; ``since``: when
    (``time.monotonic()``) the outage in progress began, None while Redis answers;
    ``pause``: the seconds of the next pause.
    """

    url: str
    """The Redis URL, its password masked."""
    run_id: str
    notify: Callable[[str], None]
    budget_s: float = REDIS_OUTAGE_S
    since: float | None = None
    pause: float = OUTAGE_PAUSE_S[0]
    refusing: str | None = None
    """The refusal in progress (``OOM``, ``READONLY``, ``MISCONF``), None when the outage
    is Redis not answering: reads go on answering while Redis refuses writes, so a read
    does not end a refusal; only the write the waiter retries does (the wait ends)."""

    def failed(self, exc: redis.RedisError) -> None:
        """Redis did not answer: pause (doubling, bounded), or give up once the outage has
        lasted ``budget_s``, raising :class:`StoreUnavailable` (exit 3)."""
        now = time.monotonic()
        reason = redact_text(str(exc)) or type(exc).__name__
        code = refused(exc)
        self.refusing = code or None
        if self.since is None:
            self.since, self.pause = now, OUTAGE_PAUSE_S[0]
            log.warning(
                "redis_refused" if code else "redis_unreachable", run_id=self.run_id, error=reason
            )
            what = f"refuses writes ({code}: {reason})" if code else f"is unreachable ({reason})"
            self.notify(
                f"Redis at {self.url} {what}; retrying for up to "
                f"{self.budget_s:g} s (the reviews go on on the workers)"
            )
        lasted = now - self.since
        if lasted >= self.budget_s:
            if code:
                raise WritesRefused(
                    f"Redis at {self.url} refused writes ({code}: {reason}) for "
                    f"{lasted:.0f} s"
                ) from exc
            did = "it did not answer"
            raise StoreUnavailable(
                self.url,
                f"{did} for {lasted:.0f} s while this CLI waited for run "
                f"{self.run_id} (last error: {reason})",
                f"The run may still settle on the workers once Redis is back: see "
                f"`council show {self.run_id}`. Start redis-server there or fix "
                f"COUNCIL_REDIS_URL (or --redis), then run the review again if it did not.",
            ) from exc
        time.sleep(min(self.pause, self.budget_s - lasted))
        self.pause = min(2 * self.pause, OUTAGE_PAUSE_S[1])

    def answered(self) -> None:
        """Redis answered a read: an outage in progress is over (said once), unless it
        is a refusal of writes (:attr:`refusing`)."""
        if self.since is not None and self.refusing is None:
            lasted = time.monotonic() - self.since
            self.since = None
            log.info("redis_reachable", run_id=self.run_id, outage_s=round(lasted, 1))
            self.notify(f"Redis at {self.url} answers again (after {lasted:.1f} s); waiting on")


@dataclass
class Waiter:
    """Waits for a run to settle, showing progress; cancels, times out, or finalizes.

    * ``timeout_ms``: the user's ``--timeout`` (None: no limit); on it the run is
      cancelled for the reviewers and settled as ``timeout``.
    * The watchdog: past ``record.deadline_ms`` (the longest backstop plus slack) the run
      is settled from the journals, as the chord never fired; a participant no worker
      ever started then fails naming its queue (:func:`~workers.settling.hearing.never_started`).
    * ``stop_requested``: polled; true after Ctrl-C or SIGTERM → settled ``cancelled``.
    * A Redis outage (connection refused, timeouts) is ridden out for up to
      :data:`REDIS_OUTAGE_S`, said once through ``notify``; past it
      :class:`StoreUnavailable` is raised, naming the URL without its password.
    * In distributed mode, when no participant has started after :data:`NO_WORKER_HINT_S`,
      ``notify`` says once which queues the tasks wait on.
    """

    rt: Runtime
    record: RunRecord
    on_progress: Callable[[dict[str, Progress]], None]
    stop_requested: Callable[[], bool]
    timeout_ms: int | None = None
    dispatch_judge: JudgeDispatch | None = None
    notify: Callable[[str], None] = say
    """Where one-line notices go (default: stderr, ``council: …``)."""
    poll: bool | None = None
    """Poll the run every :data:`POLL_S` instead of blocking on its wake list (None:
    poll when ``COUNCIL_WAIT_POLL`` is set, else block)."""

    def wait(self) -> CouncilReport:
        """Block until the run is settled; return its report.

        The waiter is woken by Redis: every write of the run's progress, outcomes or
        state pushes its wake list (``run:{id}:wake``), on which the waiter blocks
        (BLPOP) for at most :data:`WAKE_FALLBACK_S`; each wake costs two commands (the
        BLPOP and one script reading status, progress and counts). Embedded, the same on
        the in-process fakeredis, whose BLPOP sleeps until a write. With ``poll``, it
        polls every :data:`POLL_S`.

        Raises :class:`StoreUnavailable` (exit 3) when Redis stays unreachable for
        :data:`REDIS_OUTAGE_S`. When it answers reads but refuses the writes that settle
        the run for as long, the report is :func:`~workers.settling.settle.unfiled_report`
        (``open``: exit 3), never a wait to the end of time.
        """
        poll = self.poll
        if poll is None:
            poll = self.rt.settings.wait_poll
        try:
            return self._wait_polling() if poll else self._wait_woken()
        except WritesRefused as exc:
            log.error("run_unfiled", run_id=self.record.run_id, error=str(exc))
            self.notify(
                f"{exc}: run {self.record.run_id} cannot be filed; its report is made "
                "from what Redis holds, by reads only, and is not kept (exit 3)"
            )
            return unfiled_report(self.rt, self.record.run_id, str(exc))

    def _wait_woken(self) -> CouncilReport:
        """:meth:`wait`, woken by the run's wake list."""
        run_id = self.record.run_id
        started = _mono_ms()
        deadline = self._deadline_at(started)
        hinted = False
        outage = _Outage(self._redis_shown(), run_id, self.notify, REDIS_OUTAGE_S)
        done = threading.Event()
        watcher = threading.Thread(target=self._watch_stop, args=(done,), daemon=True)
        watcher.start()
        try:
            while True:
                try:
                    status, states, counts = self.rt.runs.wait_read(run_id)
                    outage.answered()
                    progress = _shown(states, counts)
                    if status not in ("open", "judging"):
                        report = self.rt.runs.report(run_id)
                        if report is not None:
                            self.on_progress(progress)
                            return report
                    self.on_progress(progress)
                    now = _mono_ms()
                    if not hinted and now - started >= NO_WORKER_HINT_S * 1000:
                        hinted = self._hint_no_worker(progress)
                    if self.stop_requested():
                        return self._halt("cancelled", Stop(limit="cancelled"))
                    if self.timeout_ms is not None and now - started >= self.timeout_ms:
                        return self._halt(
                            "timeout", Stop(limit="cancelled", budget_ms=self.timeout_ms)
                        )
                    if now >= deadline:
                        report = self._watchdog()
                        if report.status != "judging":
                            return report
                        deadline = now + (self.record.deadline_ms - self.record.created_ms)
                        continue
                    waits_ms = [WAKE_FALLBACK_S * 1000, deadline - now]
                    if self.timeout_ms is not None:
                        waits_ms.append(started + self.timeout_ms - now)
                    if not hinted:
                        waits_ms.append(started + NO_WORKER_HINT_S * 1000 - now)
                    woken = self.rt.runs.wait_wake(run_id, max(min(waits_ms), 10) / 1000)
                    if woken and self.rt.mode == "distributed":
                        time.sleep(COALESCE_S)
                except redis.RedisError as exc:
                    if not held_back(exc):
                        raise
                    outage.failed(exc)
        finally:
            done.set()

    def _watch_stop(self, done: threading.Event) -> None:
        """Push the run's wake list once ``stop_requested`` turns true (Ctrl-C), so the
        blocked waiter sees it at once; ends with the wait."""
        while not done.wait(STOP_CHECK_S):
            if self.stop_requested():
                with contextlib.suppress(redis.RedisError):
                    self.rt.runs.poke(self.record.run_id)
                return

    def _wait_polling(self) -> CouncilReport:
        """:meth:`wait`, polling the run every :data:`POLL_S`."""
        run_id = self.record.run_id
        started = _mono_ms()
        deadline = self._deadline_at(started)
        shown_at = 0.0
        hinted = False
        outage = _Outage(self._redis_shown(), run_id, self.notify, REDIS_OUTAGE_S)
        while True:
            try:
                status = self.rt.runs.status(run_id)
                outage.answered()
                if status not in ("open", "judging"):
                    report = self.rt.runs.report(run_id)
                    if report is not None:
                        self.on_progress(self.rt.runs.progress(run_id))
                        return report
                if time.monotonic() - shown_at >= PROGRESS_S:
                    progress = self._progress()
                    self.on_progress(progress)
                    shown_at = time.monotonic()
                    if not hinted and _mono_ms() - started >= NO_WORKER_HINT_S * 1000:
                        hinted = self._hint_no_worker(progress)
                    continue  # reading the progress takes a while: look at the status first
                now = _mono_ms()
                if self.stop_requested():
                    return self._halt("cancelled", Stop(limit="cancelled"))
                if self.timeout_ms is not None and now - started >= self.timeout_ms:
                    return self._halt("timeout", Stop(limit="cancelled", budget_ms=self.timeout_ms))
                if now >= deadline:
                    report = self._watchdog()
                    if report.status != "judging":
                        return report
                    deadline = now + (self.record.deadline_ms - self.record.created_ms)
            except redis.RedisError as exc:
                if not held_back(exc):
                    raise
                outage.failed(exc)
                continue
            time.sleep(POLL_S)

    def _watchdog(self) -> CouncilReport:
        """The run's deadline passed: settle it from the journals, as its chord never
        fired (a lost worker's reviewer stops ``worker-lost``; one no worker started fails
        naming its queue). A report still ``judging`` means the judge was sent now, and
        the caller waits one more round length for it."""
        log.warning("watchdog_fired", run_id=self.record.run_id)
        return settle_run(
            self.rt,
            self.record.run_id,
            lost=Stop(limit="worker-lost"),
            dispatch_judge=self.dispatch_judge,
            deadline_passed=True,
        )

    def _deadline_at(self, started: int) -> int:
        """The watchdog's deadline on this host's monotonic clock (``started``: its ms
        now): the time left on Redis's clock (the run's score in the open runs less
        Redis's ``TIME``), never this host's wall clock against the one that opened the
        run; the run's whole length when Redis cannot tell."""
        span = max(0, self.record.deadline_ms - self.record.created_ms)
        try:
            score = self.rt.client.zscore(self.rt.keys.runs_open(), self.record.run_id)
            if score is None:
                return started + span
            return started + max(0, int(score) - server_ms(self.rt.client))
        except redis.RedisError:
            return started + span

    def _redis_shown(self) -> str:
        """The Redis URL for people: its password masked."""
        url = self.rt.settings.redis_url_value()
        return redact_url(url) if url else "the council's Redis"

    def _hint_no_worker(self, progress: dict[str, Progress]) -> bool:
        """Say once (distributed mode) that no worker has started any task of the run yet,
        naming the queues they wait on; True when said, or when there is nothing to say
        ever (embedded mode), so it is not asked again."""
        if self.rt.mode != "distributed":
            return True
        if not progress:
            return False
        if any(s.state != "pending" for s in progress.values()):
            return True  # a worker took a task: nothing to say, ever
        queues = sorted(
            {queue_for(p.backend) for p in self.rt.runs.participants(self.record.run_id)}
        )
        left_s = max(0, (self._deadline_at(0)) // 1000)
        self.notify(
            f"no worker has started any task of run {self.record.run_id} after "
            f"{NO_WORKER_HINT_S:g} s; they wait on the Celery queue(s) {', '.join(queues)}. "
            f"Is a `council worker` running on this Redis and consuming them (see README, "
            f"Distributed mode)? Otherwise the run settles at its deadline, in {left_s} s, "
            f"with those reviewers failed."
        )
        return True

    def _progress(self) -> dict[str, Progress]:
        """Participant id → its progress, a running one's ``findings`` the count its
        journal recorded so far."""
        states = self.rt.runs.progress(self.record.run_id)
        counts = self.rt.journals.recorded_counts(self.record.run_id)
        return _shown(states, counts)

    def _halt(self, status: str, stop: Stop) -> CouncilReport:
        """Cancel the reviewers, give them :data:`CANCEL_GRACE_MS` to stop, settle with
        what is kept (``cancelled``, or ``timeout`` for ``--timeout``)."""
        run_id = self.record.run_id
        forced: RunStatus = "cancelled" if status == "cancelled" else "timeout"
        self.rt.runs.cancel(run_id, forced, stop.budget_ms)
        grace_end = _mono_ms() + CANCEL_GRACE_MS
        while _mono_ms() < grace_end:
            if self.rt.runs.status(run_id) not in ("open", "judging"):
                break
            progress = self.rt.runs.progress(run_id)
            if all(s.state not in ("pending", "running") for s in progress.values()):
                break
            time.sleep(POLL_S)
        return settle_run(self.rt, run_id, forced=forced, lost=stop)
