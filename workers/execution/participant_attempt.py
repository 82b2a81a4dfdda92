"""One participant's review on a worker: load by ids, run the backend, settle, store.

The body of the ``council.review_participant`` task. It never raises for a reviewer
fault (the backend reports a failure or a stop) nor for a fault of its own while running
a review: anything unexpected becomes a ``failed`` outcome, so the chord always counts N
results (docs/celery.md §0 item 3). Idempotent under redelivery: a stored outcome is returned
as it is; otherwise a new attempt runs and folds every attempt's journal.

The per-participant rules (:func:`wrong_protocol`, :func:`missing`, :func:`crashed`,
:func:`fold_attempt`, :func:`finished_progress`, :func:`log_finished`) are public because a
batch of participants (:mod:`workers.execution.batch`) applies the very same ones; the request a
backend gets is built by :mod:`workers.execution.backend_request` for both.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import structlog

from council.change.secret_masks import masked_result
from council.evidence import ScriptRow
from council.evidence.policy import runs_scripts
from council.harvest import JournalCaps
from council.model.backend_result import ReviewResult
from council.model.findings import Read
from council.model.participant import Participant
from council.roster.provider_rules import ProviderRefused
from council.round.lifecycle import allows
from council.round.outcome import (
    ParticipantOutcome,
    ReadingPolicy,
    harvest_outcome,
    heard_in_full,
)
from reviewers import reviewer_for
from workers.app.clock import now_ms
from workers.app.logging import redact_text
from workers.app.metrics import observe_review
from workers.app.services import Runtime
from workers.execution.backend_request import build_request, run_share
from workers.execution.journal_sink import RedisJournal, journal_for
from workers.execution.keeping import keep
from workers.execution.leases import keeper
from workers.execution.outage_retry import patiently, refused_only, task_deadline
from workers.stores.run_inputs import BatchInputs
from workers.stores.run_progress import Settled
from workers.stores.run_record import DETAIL_CHARS, PROTOCOL, Progress, RunRecord

log = structlog.get_logger("council.review")


def _failed(participant: str, role: str, reason: str) -> ParticipantOutcome:
    return harvest_outcome(participant, role, ReviewResult(failure=reason), [])  # type: ignore[arg-type]


def wrong_protocol(participant_id: str, protocol: int) -> ParticipantOutcome:
    """The failed outcome of a task sent with another council protocol than this worker's
    (not stored: a worker of the right version may still serve the participant)."""
    return _failed(
        participant_id,
        "reviewer",
        f"this worker speaks council protocol {PROTOCOL}, the task was sent with "
        f"protocol {protocol}; run workers of the same council version as the CLI",
    )


def missing(run_id: str, participant_id: str) -> ParticipantOutcome:
    """The failed outcome of a participant whose run, entry or prompt is not in Redis
    (logs ``review_inputs_missing``; not stored: nothing of the run may be left)."""
    log.warning("review_inputs_missing")
    return _failed(
        participant_id,
        "reviewer",
        f"run {run_id} or its participant {participant_id} is not in Redis (expired, "
        f"or another Redis than the coordinator's); check COUNCIL_REDIS_URL",
    )


def moved_on(status: str | None, role: str) -> bool:
    """Whether a participant's task came after its run stopped needing it: a reviewer's
    once the run is no longer ``open`` (its reviewers were filed, or it settled: a task
    redelivered after its worker was lost, say), the judge's once it is no longer
    ``judging`` (:mod:`council.round.lifecycle`: the event its outcome would be is refused).
    False for an unknown run (that is :func:`missing`)."""
    if status is None:
        return False
    return not allows(status, "judge_settled" if role == "judge" else "reviewer_settled")  # type: ignore[arg-type]


def too_late(participant_id: str, role: str, status: str) -> ParticipantOutcome:
    """The failed outcome of a task that came after its run ended (see :func:`moved_on`;
    logs ``review_skipped_run_ended``; not stored: the run is settled already)."""
    log.warning("review_skipped_run_ended", run_status=status)
    return _failed(
        participant_id,
        role,
        f"the run was already {status} when this task arrived (a redelivery after its "
        f"worker was lost, say); nothing was sent to the reviewer",
    )


def crashed(exc: Exception, started: float) -> ReviewResult:
    """The failed result of a review the worker could not run (logs ``review_crashed``
    with the traceback). ``started`` is the ``time.monotonic()`` of the attempt's start.
    A participant this worker refuses (:class:`~council.roster.provider_rules.ProviderRefused`:
    a provider or variable its registry does not hold) fails with the refusal, logged as
    ``review_refused``."""
    if isinstance(exc, ProviderRefused):
        log.warning("review_refused", reason=redact_text(str(exc)))
        return ReviewResult(
            failure=f"refused by this worker: {exc}",
            duration_ms=int((time.monotonic() - started) * 1000),
        )
    log.exception("review_crashed")
    return ReviewResult(
        failure=f"the worker could not run this review: {type(exc).__name__}: {exc}",
        duration_ms=int((time.monotonic() - started) * 1000),
    )


def fold_attempt(
    rt: Runtime,
    record: RunRecord,
    participant: Participant,
    result: ReviewResult,
    journals: Sequence[Sequence[bytes]],
    attempt: int,
) -> ParticipantOutcome:
    """Fold the attempt's result and every attempt's journal (``journals``, in attempt
    order) into the participant's outcome, with the settings' reading caps.

    The failure and the notes are free text from the reviewer (a program's stderr, a
    provider's message): secret shapes in them are masked (:func:`redact_text`) before
    they reach the report, which is posted on pull requests. A ``cancelled`` stop gets
    what cancelled the run (:meth:`RunStore.cancel_stop`: the ``--timeout``, say).
    """
    stop = result.stop
    if stop is not None and stop.limit == "cancelled" and stop.budget_ms is None:
        stop = rt.runs.cancel_stop(record.run_id) or stop  # the run's --timeout, say
    result = replace(
        result,
        failure=redact_text(result.failure) if result.failure is not None else None,
        notes=tuple(redact_text(note) for note in result.notes),
        stop=stop,
    )
    return harvest_outcome(
        participant.id,
        participant.role,
        result,
        journals,
        policy=reading_policy(rt, record),
        attempts=attempt,
        scripts=script_rows(rt, record.run_id, participant, attempt),
    )


def reading_policy(rt: Runtime, record: RunRecord) -> ReadingPolicy:
    """How ``record``'s answers and journals are read: the commit its reviewers read (or
    why none was pinned), the settings' reading caps, its ``[policy] unverified_scripts``.
    The one place it is built, for a worker's fold and the settling's alike."""
    settings = rt.settings
    return ReadingPolicy(
        read=Read(witness=record.witness) if record.witness else Read(unpinned="no tree pinned"),
        caps=JournalCaps(settings.journal_max_entries, settings.journal_max_entry_bytes),
        answer_max_entries=settings.answer_max_entries,
        unverified_scripts=record.unverified_scripts,
    )


def script_rows(
    rt: Runtime, run_id: str, participant: Participant, attempts: int
) -> list[tuple[ScriptRow, ...]] | None:
    """The script rows of attempts 1..``attempts`` (one Redis round trip), or None for a
    participant that can run no script (docs/evidence-and-asks.md §1)."""
    if not runs_scripts(participant):
        return None
    return [read.rows for read in rt.scripts.read_all(run_id, participant.id, attempts)]


def key_ttl_ms(rt: Runtime, record: RunRecord) -> int:
    """The TTL (ms) a key a worker creates for ``record``'s run gets as it is written: the
    run's opening TTL from now (until its deadline, plus the run retention), so settling
    need not expire it again (docs/architecture.md "State in Redis", "Retention")."""
    return rt.sessions.open_ttl_s(record, now_ms()) * 1000


def finished_progress(outcome: ParticipantOutcome, started_ms: int, attempt: int) -> Progress:
    """The progress shown once ``outcome`` is stored (times in ms since the epoch), with
    why it failed or stopped as its ``detail``."""
    why = outcome.failure or (f"stopped by {outcome.stop.describe()}" if outcome.stop else "")
    if len(why) > DETAIL_CHARS:
        why = why[: DETAIL_CHARS - 1] + "…"
    return Progress(
        state=outcome.status,
        started_ms=started_ms,
        updated_ms=now_ms(),
        findings=len(outcome.harvest.findings),
        attempt=attempt,
        detail=why,
    )


def log_finished(outcome: ParticipantOutcome, participant: Participant) -> None:
    """The ``review_finished`` line of one participant (with the bound context): at
    ``warning`` when it was not heard in full (it failed, was stopped by a clock, a
    cancel or a lost worker, or its answer was unreadable or cut off: the gate does not
    count it), so an operator's "trouble only" filter shows it; at ``info`` when it
    answered whole or asks a person."""
    heard = heard_in_full(outcome)
    trouble = outcome.status != "asking" and not heard
    (log.warning if trouble else log.info)(
        "review_finished",
        heard_in_full=heard,
        status=outcome.status,
        backend=participant.backend,
        model=participant.model,
        duration_ms=outcome.duration_ms,
        findings=len(outcome.harvest.findings),
        warnings=sorted({w.code for w in outcome.harvest.warnings}),
        stopped=outcome.stop.limit if outcome.stop else None,
        failure=outcome.failure,
    )


def review(rt: Runtime, run_id: str, participant_id: str, protocol: int) -> ParticipantOutcome:
    """Run one participant's review of a run, or return its stored outcome.

    Its Redis I/O is the batch's (:mod:`workers.execution.batch`), read once and passed
    along: one round trip reads everything the review needs
    (:meth:`RunStore.batch_inputs <workers.stores.run_inputs.RunInputs.batch_inputs>`), one
    starts the attempt (its number, its progress, its lease), one reads the journals and
    one stores the outcome with its progress, ending the lease.
    """
    if protocol != PROTOCOL:
        return wrong_protocol(participant_id, protocol)
    inputs = rt.runs.batch_inputs(run_id, [participant_id])
    stored = inputs.outcomes.get(participant_id)
    if stored is not None:
        log.info("review_already_settled", status=stored.status)
        return stored
    record = inputs.record
    participant = inputs.participants.get(participant_id)
    prompt = inputs.prompts.get(participant_id)
    if record is None or participant is None or prompt is None:
        return missing(run_id, participant_id)
    status = inputs.status
    if status is not None and moved_on(status, participant.role):
        return too_late(participant_id, participant.role, status)
    started = now_ms()
    leases = keeper(rt.client, rt.keys)
    attempt = patiently(
        "start_attempts",
        lambda: rt.runs.start_attempts(
            run_id,
            [participant_id],
            started,
            lease_ms=leases.lease_ms,
            ttl_ms=key_ttl_ms(rt, record),
        ),
        until=task_deadline(time.monotonic(), rt.settings.visibility_timeout_s),
        held=refused_only,  # an INCR whose reply was lost must not run twice
    )[participant_id]
    said = structlog.contextvars.get_contextvars().get("attempt")
    # Bound for the attempt only: an embedded worker's thread runs task after task with
    # no Celery signal to clear what a task bound (the next line is another task's).
    with structlog.contextvars.bound_contextvars(
        run_id=run_id, session=record.session, participant=participant_id, attempt=attempt
    ):
        if said is not None and said != attempt:  # another delivery of it took that number
            log.info("attempt_renumbered", announced=said)
        leases.hold(run_id, {participant_id: attempt}, written=True)
        try:
            now = _Now(participant, prompt, attempt, started)
            outcome = _attempt(rt, record, inputs, now)
        except BaseException:
            leases.drop(run_id, {participant_id: attempt})  # it lapses: a sweep sends it again
            raise
        leases.release(run_id, {participant_id: attempt}, written=True)
        return outcome


@dataclass(frozen=True)
class _Now:
    """The attempt being run: whose, with which prompt, its number, its start (ms)."""

    participant: Participant
    prompt: str
    attempt: int
    started_ms: int


def _attempt(rt: Runtime, record: RunRecord, inputs: BatchInputs, now: _Now) -> ParticipantOutcome:
    """Run attempt ``now`` (started: numbered, shown running, leased) and store its outcome."""
    until = task_deadline(time.monotonic(), rt.settings.visibility_timeout_s)
    journal = journal_for(rt, record.run_id, now.participant, now.attempt)
    result = _run_backend(rt, record, inputs, now, journal)
    return store_outcome(
        rt, record, now.participant, result, journal, now.attempt, now.started_ms, until
    )


def store_outcome(
    rt: Runtime,
    record: RunRecord,
    participant: Participant,
    result: ReviewResult,
    journal: RedisJournal,
    attempt: int,
    started_ms: int,
    until: float,
) -> ParticipantOutcome:
    """Fold a finished attempt and store its outcome, riding out a Redis outage.

    The entries held during an outage are stored first, and those Redis forgot (a restart
    that lost its last second) stored again (:meth:`RedisJournal.reconcile`); then every
    attempt's journal is
    read and folded (one round trip), and the outcome is stored (``SET NX``: a kept one
    wins) with its progress, and the attempt's lease ended, in one round trip; each step
    retried until Redis answers or ``until`` (a ``time.monotonic()`` value, see
    :func:`~workers.execution.outage_retry.task_deadline`) passes: a reviewer that finished while
    Redis restarted loses nothing it found. An outcome this call stored is kept in the
    process until the run's filing is durable (:func:`~workers.execution.keeping.keep`).
    Past ``until`` the outage error is raised (the message goes back to the queue, and
    another attempt folds this one's journal).
    """
    run_id, pid = record.run_id, participant.id
    journal.flush(until)
    journal.reconcile(until)
    paused = result.paused
    if paused is not None:  # kept before the outcome that says it waits on it
        patiently("pause_store", lambda: rt.runs.put_pause(run_id, pid, paused), until=until)
    journals = patiently(
        "journal_read",
        lambda: rt.journals.read_all_many(run_id, [pid], {pid: attempt}),
        until=until,
    )[pid]
    result = journal_lost(result, journals, attempt, journal.least)
    outcome = fold_attempt(rt, record, participant, result, journals, attempt)
    done = Settled(outcome, result.answer, finished_progress(outcome, started_ms, attempt))
    lease = rt.keys.lease_member(run_id, pid, attempt)
    kept = patiently(
        "outcome_store",
        lambda: rt.runs.put_outcomes(run_id, [done], [lease], key_ttl_ms(rt, record)),
        until=until,
    ).get(pid)
    observe_review(participant, outcome, result, record.prices)
    if kept is None:  # stored by this call: kept here until the run's filing is durable
        keep(run_id, done, lease, "judging" if participant.role == "judge" else "open")
    else:
        outcome = kept
        shown = finished_progress(kept, started_ms, attempt)
        patiently("progress_store", lambda: rt.runs.set_progress(run_id, pid, shown), until=until)
    log_finished(outcome, participant)
    return outcome


def journal_lost(
    result: ReviewResult, journals: Sequence[Sequence[bytes]], attempt: int, least: int
) -> ReviewResult:
    """``result`` heard in part (``journal-lost``) when the attempt's journal holds fewer
    entries than Redis said it kept (``least``): a failover to a replica that had not
    received them. The report is partial (exit 3) instead of missing their findings."""
    read = len(journals[attempt - 1]) if len(journals) >= attempt else 0
    if read >= least:
        return result
    log.error("journal_entries_lost", kept=least, left=read)
    note = (
        f"Redis lost {least - read} of the {least} journal entries this attempt had "
        "recorded (a failover to a replica that had not received them)"
    )
    return replace(result, broke_off="journal-lost", notes=(*result.notes, note))


def _run_backend(
    rt: Runtime, record: RunRecord, inputs: BatchInputs, now: _Now, journal: RedisJournal
) -> ReviewResult:
    """Unpack what the backend needs, run it with a cancel watcher, never raise."""
    started = time.monotonic()
    with rt.cancels.watching(record.run_id) as cancel:
        return _ask(rt, record, inputs, now, cancel, started, journal)


def _ask(
    rt: Runtime,
    record: RunRecord,
    inputs: BatchInputs,
    now: _Now,
    cancel: threading.Event,
    started: float,
    journal: RedisJournal,
) -> ReviewResult:
    participant, pid = now.participant, now.participant.id
    try:
        share = run_share(rt, record, inputs.change, inputs.secrets)
        runs_program = participant.backend in ("command", "sarif")
        request = build_request(
            rt,
            share,
            participant,
            now.prompt,
            now.attempt,
            cancel,
            inputs.programs.get(pid),
            inputs.arg_files.get(pid, {}) if runs_program else None,
            journal=journal,
            shared=inputs.shared.get(pid, 0),
        )
        return masked_result(share.masker, reviewer_for(participant).review(request))
    except Exception as exc:
        return crashed(exc, started)
