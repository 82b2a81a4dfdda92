"""One participant's review on a worker: load by ids, run the backend, settle, store.

The body of the ``council.review_participant`` task. It never raises for a reviewer
fault (the backend reports a failure or a stop) nor for a fault of its own while running
a review: anything unexpected becomes a ``failed`` outcome, so the chord always counts N
results (celery.md §0 item 3). Idempotent under redelivery: a stored outcome is returned
as it is; otherwise a new attempt runs and folds every attempt's journal.
"""

from __future__ import annotations

import os
import threading
import time

import structlog

from council.diff import added_lines, parse_diff
from council.findings import Read
from council.harvest import JournalCaps
from council.outcome import ParticipantOutcome, settle_outcome
from council.participant import Participant
from council.reviewers import key_env, reviewer_for
from council.reviewers.base import ReviewRequest, ReviewResult
from workers.runtime import Runtime
from workers.stores.ratelimit import RedisRateLimiter
from workers.stores.runs import PROTOCOL, Progress, RunRecord

log = structlog.get_logger("council.review")


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch."""
    return int(time.time() * 1000)


class RedisJournal:
    """The JournalSink of one attempt: appends go straight to Redis."""

    def __init__(self, rt: Runtime, run_id: str, participant: str, attempt: int) -> None:
        self._rt, self._run, self._p, self._attempt = rt, run_id, participant, attempt

    def append(self, raw: str) -> str:
        """Store one raw entry; return the reply sentence (never raises)."""
        reply = self._rt.journals.append(self._run, self._p, self._attempt, raw)
        log.info("journal_appended", stored=reply == "Recorded.")
        return reply


def _failed(participant: str, role: str, reason: str) -> ParticipantOutcome:
    return settle_outcome(participant, role, ReviewResult(failure=reason), [])  # type: ignore[arg-type]


def review(rt: Runtime, run_id: str, participant_id: str, protocol: int) -> ParticipantOutcome:
    """Run one participant's review of a run, or return its stored outcome."""
    if protocol != PROTOCOL:
        return _failed(
            participant_id,
            "reviewer",
            f"this worker speaks council protocol {PROTOCOL}, the task was sent with "
            f"protocol {protocol}; run workers of the same council version as the CLI",
        )
    stored = rt.runs.outcome(run_id, participant_id)
    if stored is not None:
        log.info("review_already_settled", status=stored.status)
        return stored
    record = rt.runs.record(run_id)
    participant = rt.runs.participant(run_id, participant_id)
    prompt = rt.runs.prompt(run_id, participant_id)
    if record is None or participant is None or prompt is None:
        return _failed(
            participant_id,
            "reviewer",
            f"run {run_id} or its participant {participant_id} is not in Redis (expired, "
            f"or another Redis than the coordinator's); check COUNCIL_REDIS_URL",
        )
    attempt = rt.journals.next_attempt(run_id, participant_id)
    structlog.contextvars.bind_contextvars(
        run_id=run_id, session=record.session, participant=participant_id, attempt=attempt
    )
    started = now_ms()
    rt.runs.set_progress(
        run_id,
        participant_id,
        Progress(state="running", started_ms=started, updated_ms=started, attempt=attempt),
    )
    result = _run_backend(rt, record, participant, prompt, attempt)
    read = Read(witness=record.witness) if record.witness else Read(unpinned="no tree pinned")
    outcome = settle_outcome(
        participant_id,
        participant.role,
        result,
        rt.journals.read_all(run_id, participant_id),
        read=read,
        caps=JournalCaps(rt.settings.journal_max_entries, rt.settings.journal_max_entry_bytes),
        attempts=attempt,
    )
    if not rt.runs.put_outcome(run_id, outcome, result.answer):
        kept = rt.runs.outcome(run_id, participant_id)
        if kept is not None:
            outcome = kept
    rt.runs.set_progress(
        run_id,
        participant_id,
        Progress(
            state=outcome.status,
            started_ms=started,
            updated_ms=now_ms(),
            findings=len(outcome.harvest.findings),
            attempt=attempt,
        ),
    )
    log.info(
        "review_finished",
        status=outcome.status,
        backend=participant.backend,
        model=participant.model,
        duration_ms=outcome.duration_ms,
        findings=len(outcome.harvest.findings),
        warnings=sorted({w.code for w in outcome.harvest.warnings}),
        stopped=outcome.stop.limit if outcome.stop else None,
        failure=outcome.failure,
    )
    return outcome


def _log_event(event: str, **fields: object) -> None:
    """A backend's event (a tool call, a retry) as a log line with the task's context."""
    log.info(event, **fields)


def _secrets(participant: Participant) -> dict[str, str]:
    """The API key a model participant names, read from THIS worker's environment.

    The one read of the environment below the edge, on purpose: keys live on the workers
    (never in the roster, a message or Redis), and each participant names its variable.
    """
    name = key_env(participant)
    value = os.environ.get(name) if name else None
    return {name: value} if name and value else {}


def _run_backend(
    rt: Runtime, record: RunRecord, participant: Participant, prompt: str, attempt: int
) -> ReviewResult:
    """Unpack what the backend needs, run it with a cancel watcher, never raise."""
    started = time.monotonic()
    with rt.cancels.watching(record.run_id) as cancel:
        return _ask(rt, record, participant, prompt, attempt, cancel, started)


def _ask(
    rt: Runtime,
    record: RunRecord,
    participant: Participant,
    prompt: str,
    attempt: int,
    cancel: threading.Event,
    started: float,
) -> ReviewResult:
    run_id, witness = record.run_id, record.witness
    try:
        workdir = rt.trees.tree(run_id, lambda: rt.runs.tree(run_id)) if witness else None
        blob = rt.runs.program(run_id, participant.id)
        program = rt.trees.program(run_id, participant.id, blob) if blob is not None else None
        request = ReviewRequest(
            participant=participant,
            prompt=prompt,
            journal=RedisJournal(rt, run_id, participant.id, attempt),
            workdir=workdir,
            program=program,
            env={
                "COUNCIL_RUN": run_id,
                "COUNCIL_PARTICIPANT": participant.id,
                "COUNCIL_ATTEMPT": str(attempt),
            },
            cancel=cancel,
            changed_paths=record.changed_paths,
            changed_lines=added_lines(parse_diff(rt.runs.change(run_id))),
            secrets=_secrets(participant),
            rate_limiter=(
                RedisRateLimiter(
                    rt.client,
                    rt.keys,
                    record.limits,
                    window_ms=rt.settings.ratelimit_window_ms,
                )
                if record.limits
                else None
            ),
            witness=witness,
            events=_log_event,
        )
        result = reviewer_for(participant).review(request)
    except Exception as exc:
        log.exception("review_crashed")
        result = ReviewResult(
            failure=f"the worker could not run this review: {type(exc).__name__}: {exc}",
            duration_ms=int((time.monotonic() - started) * 1000),
        )
    return result
