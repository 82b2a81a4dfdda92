"""Many participants of one run reviewed at once in this process: ``council.review_batch``.

One Celery task and pool thread per model review, each with ~20 Redis round trips, made
Celery's bookkeeping and the GIL the bottleneck. A batch runs its reviews concurrently on the
process's stream loop (:func:`reviewers.models.stream_loop.stream_loop`) and batches its Redis
I/O (its round trips: docs/architecture.md "Worker pool"). Per participant the semantics are
:func:`workers.execution.participant_attempt.review`'s, with the same rules and request; a
missing entry or a crashing backend fails that participant only, never the batch. A reviewer
with only a sync ``review`` runs on the batch's own thread pool, not ``asyncio.to_thread``:
the loop's default executor serves the models' tool calls and journal appends, which long
sync reviews would starve. Source: docs/architecture.md "Worker pool", docs/celery.md §1.8.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import structlog

from council.asks.paused import Resumption
from council.change.secret_masks import Masker, masked_result
from council.model.backend_result import ReviewResult
from council.model.participant import Participant
from council.round.outcome import ParticipantOutcome
from reviewers import Reviewer, reviewer_for
from reviewers.base import ReviewRequest
from reviewers.models.stream_loop import stream_loop
from workers.app.clock import now_ms
from workers.app.metrics import observe_review
from workers.app.services import Runtime
from workers.execution.backend_request import (
    ASKING_BACKENDS,
    RunShare,
    build_request,
    run_share,
)
from workers.execution.journal_sink import RedisJournal, journal_for, reconcile
from workers.execution.keeping import keep
from workers.execution.leases import keeper
from workers.execution.outage_retry import patiently, refused_only, task_deadline
from workers.execution.participant_attempt import (
    crashed,
    finished_progress,
    fold_attempt,
    journal_lost,
    key_ttl_ms,
    log_finished,
    missing,
    moved_on,
    too_late,
    wrong_protocol,
)
from workers.stores.run_inputs import BatchInputs
from workers.stores.run_progress import Settled
from workers.stores.run_record import PROTOCOL, RunRecord

log = structlog.get_logger("council.review")

AsyncReview = Callable[[ReviewRequest], Awaitable[ReviewResult]]
"""A reviewer's ``areview`` method: the review as a coroutine on the stream loop."""


@dataclass(frozen=True)
class _Attempt:
    """One participant's attempt in the batch; ``started_ms`` is since the epoch."""

    participant: Participant
    attempt: int
    started_ms: int
    context: dict[str, object]
    """The structlog context of every line about it: run_id, session, participant, attempt."""


def review_batch(
    rt: Runtime, run_id: str, participant_ids: Sequence[str], protocol: int
) -> list[ParticipantOutcome]:
    """Review several participants of one run concurrently; their outcomes, in the order
    of ``participant_ids`` (a repeated id is reviewed once and listed once).

    Never raises for a participant's fault (a missing entry, a backend that raises): that
    participant gets a ``failed`` outcome. Raises what Redis raises when the batch's own
    reads or writes fail (the task fails; the chord's errback settles the run).
    """
    ids = list(dict.fromkeys(participant_ids))
    if protocol != PROTOCOL:
        return [wrong_protocol(pid, protocol) for pid in ids]
    inputs = rt.runs.batch_inputs(run_id, ids)
    record = inputs.record
    session = record.session if record is not None else None
    outcomes: dict[str, ParticipantOutcome] = {}
    runnable: list[Participant] = []
    for pid in ids:
        participant = inputs.participants.get(pid)
        stored = inputs.outcomes.get(pid)
        with structlog.contextvars.bound_contextvars(
            run_id=run_id, session=session, participant=pid
        ):
            if stored is not None:
                log.info("review_already_settled", status=stored.status)
                outcomes[pid] = stored
            elif record is None or participant is None or pid not in inputs.prompts:
                outcomes[pid] = missing(run_id, pid)
            elif inputs.status is not None and moved_on(inputs.status, participant.role):
                outcomes[pid] = too_late(pid, participant.role, inputs.status)
            else:
                runnable.append(participant)
    if record is not None and runnable:
        outcomes.update(_review_all(rt, record, inputs, runnable))
    return [outcomes[pid] for pid in ids]


SUBMIT_CHUNK = 32
"""Reviews handed to the stream loop per cross-thread call. Why chunks: every call wakes
the loop; one wake per review made the batch's thread and the loop trade the GIL 500
times while the first requests were being sent (py-spy, ``bench/concurrency.py``)."""


def _review_all(
    rt: Runtime, record: RunRecord, inputs: BatchInputs, people: list[Participant]
) -> dict[str, ParticipantOutcome]:
    """Start an attempt of each, run them all on the stream loop, settle as they finish."""
    run_id = record.run_id
    outcomes: dict[str, ParticipantOutcome] = {}
    pool = concurrent.futures.ThreadPoolExecutor(
        max_workers=len(people), thread_name_prefix="council-batch"
    )
    finished: queue.SimpleQueue[tuple[_Attempt, ReviewResult]] = queue.SimpleQueue()
    tasks: list[asyncio.Task[None]] = []
    loop = stream_loop()
    # The task's own fields (task_id ...): the stream loop's thread has none of them.
    task_context = {
        k: v for k, v in structlog.contextvars.get_contextvars().items() if k != "participants"
    }
    with rt.cancels.watching(run_id) as cancel:
        started_ms = now_ms()
        leases = keeper(rt.client, rt.keys)
        started = time.monotonic()
        until = task_deadline(started, rt.settings.visibility_timeout_s)
        attempts = patiently(
            "start_attempts",
            lambda: rt.runs.start_attempts(
                run_id,
                [p.id for p in people],
                started_ms,
                lease_ms=leases.lease_ms,
                ttl_ms=key_ttl_ms(rt, record),
            ),
            until=until,
            held=refused_only,  # an INCR whose reply was lost must not run twice
        )
        leases.hold(run_id, attempts, written=True)
        journals = {p.id: journal_for(rt, run_id, p, attempts[p.id]) for p in people}
        share: RunShare | ReviewResult
        resumptions: dict[str, Resumption] = {}
        try:
            share = run_share(rt, record, inputs.change, inputs.secrets)
            asking = [p.id for p in people if p.backend in ASKING_BACKENDS]
            resumptions = rt.runs.resumptions(run_id, asking) if asking else {}
        except Exception as exc:
            with structlog.contextvars.bound_contextvars(run_id=run_id, session=record.session):
                share = crashed(exc, started)
        try:
            chunk: list[tuple[_Attempt, Reviewer, ReviewRequest]] = []
            for number, p in enumerate(people, start=1):
                now = _Attempt(
                    participant=p,
                    attempt=attempts[p.id],
                    started_ms=started_ms,
                    context={
                        **task_context,
                        "run_id": run_id,
                        "session": record.session,
                        "participant": p.id,
                        "attempt": attempts[p.id],
                    },
                )
                ready = _prepare(
                    rt, share, inputs, now, cancel, started, journals[p.id], resumptions
                )
                if isinstance(ready, ReviewResult):
                    finished.put((now, ready))
                else:
                    chunk.append((now, reviewer_for(p), ready))
                if chunk and (len(chunk) == SUBMIT_CHUNK or number == len(people)):
                    loop.submit(_start_chunk(chunk, pool, started, finished, tasks))
                    chunk = []
            waiting = len(people)
            while waiting:
                group = [finished.get()]
                while True:
                    try:
                        group.append(finished.get_nowait())
                    except queue.Empty:
                        break
                waiting -= len(group)
                masker = share.masker if isinstance(share, RunShare) else Masker()
                ended = {now.participant.id: now.attempt for now, _ in group}
                settled_now = _settle_group(
                    rt, record, group, started, masker, journals, until, ended
                )
                outcomes.update(settled_now)
                leases.release(run_id, ended, written=True)
        finally:
            if len(outcomes) < len(people):  # the batch's own I/O failed: stop the rest
                for task in tasks:
                    loop.loop.call_soon_threadsafe(task.cancel)
                # The rest lapse: a sweep sends them again.
                leases.drop(run_id, attempts)
            pool.shutdown(wait=False, cancel_futures=True)
    return outcomes


def _prepare(
    rt: Runtime,
    share: RunShare | ReviewResult,
    inputs: BatchInputs,
    now: _Attempt,
    cancel: threading.Event,
    started: float,
    journal: RedisJournal,
    resumptions: dict[str, Resumption],
) -> ReviewRequest | ReviewResult:
    """One participant's request, built here; or the failed result that stands for it
    (``share`` is the run's share, or the failed result of building it; ``resumptions``
    the answered pauses of the batch's participants, read once)."""
    if isinstance(share, ReviewResult):
        return share
    p = now.participant
    with structlog.contextvars.bound_contextvars(**now.context):
        try:
            return build_request(
                rt,
                share,
                p,
                inputs.prompts[p.id],
                now.attempt,
                cancel,
                inputs.programs.get(p.id),
                inputs.arg_files.get(p.id),
                journal=journal,
                shared=inputs.shared.get(p.id, 0),
                resumptions=resumptions,
            )
        except Exception as exc:
            return crashed(exc, started)


async def _start_chunk(
    chunk: list[tuple[_Attempt, Reviewer, ReviewRequest]],
    pool: concurrent.futures.Executor,
    started: float,
    finished: queue.SimpleQueue[tuple[_Attempt, ReviewResult]],
    tasks: list[asyncio.Task[None]],
) -> None:
    """On the loop: start each review of ``chunk`` as a task that puts its result on
    ``finished`` (never raises: an exception is a failed result)."""

    async def one(now: _Attempt, reviewer: Reviewer, request: ReviewRequest) -> None:
        result = await _ask(reviewer, request, now.context, pool, started)
        finished.put((now, result))

    for now, reviewer, request in chunk:
        tasks.append(asyncio.get_running_loop().create_task(one(now, reviewer, request)))


async def _ask(
    reviewer: Reviewer,
    request: ReviewRequest,
    context: dict[str, object],
    pool: concurrent.futures.Executor,
    started: float,
) -> ReviewResult:
    """One review on the loop, with its participant's log context; never raises for the
    review's fault (an exception is a failed result)."""
    structlog.contextvars.bind_contextvars(**context)
    try:
        areview: AsyncReview | None = getattr(reviewer, "areview", None)
        if areview is not None:
            return await areview(request)
        call = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(pool, call.run, reviewer.review, request)
    except Exception as exc:
        return crashed(exc, started)


def _settle_group(
    rt: Runtime,
    record: RunRecord,
    group: list[tuple[_Attempt, ReviewResult]],
    started: float,
    masker: Masker,
    sinks: dict[str, RedisJournal],
    until: float,
    leases: dict[str, int],
) -> dict[str, ParticipantOutcome]:
    """Settle every finished review of ``group`` together: one read of their journals,
    the pure fold per participant (each result's secret values masked first), one write
    of their outcomes and progress. Each step rides out a Redis outage until ``until``
    (:func:`~workers.execution.participant_attempt.store_outcome`); the entries ``sinks`` held
    during one are stored first, and those Redis forgot stored again (one more round
    trip when they recorded any: :func:`~workers.execution.journal_sink.reconcile`); the
    attempts' ``leases`` (participant → attempt) end with the outcomes' write, and the outcomes
    this call stored are kept until the run's filing is durable
    (:func:`~workers.execution.keeping.keep`)."""
    run_id = record.run_id
    ids = [now.participant.id for now, _ in group]
    for pid in ids:
        sinks[pid].flush(until)
    reconcile(rt, run_id, [sinks[pid] for pid in ids], until)
    attempts = {now.participant.id: now.attempt for now, _ in group}
    journals = patiently(
        "journal_read", lambda: rt.journals.read_all_many(run_id, ids, attempts), until=until
    )
    settled: list[Settled] = []
    for now, result in group:
        p = now.participant
        result = masked_result(masker, result)
        result = journal_lost(result, journals[p.id], now.attempt, sinks[p.id].least)
        paused = result.paused
        if paused is not None:  # kept before the outcome that says it waits on it
            patiently(
                "pause_store",
                lambda: rt.runs.put_pause(run_id, p.id, paused),  # noqa: B023
                until=until,
            )
        with structlog.contextvars.bound_contextvars(**now.context):
            try:
                outcome = fold_attempt(rt, record, p, result, journals[p.id], now.attempt)
            except Exception as exc:
                result = crashed(exc, started)
                outcome = fold_attempt(rt, record, p, result, [], now.attempt)
        observe_review(p, outcome, result, record.prices)
        progress = finished_progress(outcome, now.started_ms, now.attempt)
        settled.append(Settled(outcome, result.answer, progress))
    ended = [rt.keys.lease_member(run_id, p, a) for p, a in leases.items()]
    kept = patiently(
        "outcome_store",
        lambda: rt.runs.put_outcomes(run_id, settled, ended, key_ttl_ms(rt, record)),
        until=until,
    )
    by_id = {now.participant.id: now for now, _ in group}
    for s in settled:  # stored by this call: kept until the run's filing is durable
        pid = s.outcome.participant
        if pid not in kept:
            member = rt.keys.lease_member(run_id, pid, by_id[pid].attempt)
            keep(run_id, s, member, "judging" if by_id[pid].participant.role == "judge" else "open")
    if kept:
        shown = {
            pid: finished_progress(outcome, by_id[pid].started_ms, by_id[pid].attempt)
            for pid, outcome in kept.items()
        }
        patiently("progress_store", lambda: rt.runs.set_progress_many(run_id, shown), until=until)
    final: dict[str, ParticipantOutcome] = {}
    for s in settled:
        pid = s.outcome.participant
        final[pid] = kept.get(pid, s.outcome)
        with structlog.contextvars.bound_contextvars(**by_id[pid].context):
            log_finished(final[pid], by_id[pid].participant)
    return final
