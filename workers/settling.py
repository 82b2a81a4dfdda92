"""Settling a run: the consolidation, the errback finalizer and the watchdog share this.

The stored outcomes are the source of truth (chord results only say who finished). A
participant with no stored outcome (its task died, the chord never fired, the run was
cancelled) is settled as a stop from its journals, so what it wrote down is filed; when
the watchdog settles a run, one whose task no worker ever started is a failure naming the
queue it waited on (:func:`never_started`), not a lost worker.
Filing happens once: :meth:`SessionStore.settle` is one transaction and a second call
returns the settled report. Source: celery.md §1.4, harvest.md §7-§8.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from council.diff import Change, parse_diff
from council.findings import Finding, Read
from council.harvest import JournalCaps
from council.landing import land
from council.outcome import ParticipantOutcome, heard_in_full, settle_outcome
from council.participant import Participant
from council.report.model import CouncilReport, RunStatus
from council.reviewers.base import ReviewResult, Stop
from council.round import RoundFacts, conclude_judge, conclude_round, round_status
from workers.celery_config import queue_for
from workers.marking import session_marks
from workers.review import now_ms
from workers.runtime import Runtime
from workers.stores.runs import RunRecord

log = structlog.get_logger("council.settle")


class RunNotFound(LookupError):
    """The run is not in Redis (never opened here, or expired)."""

    def __init__(self, run_id: str) -> None:
        super().__init__(
            f"run {run_id} is not in Redis: it never opened on this server or its keys "
            f"expired (runs are kept COUNCIL_RUN_RETENTION_S after settling)"
        )


JudgeDispatch = Callable[[str], None]
"""Sends the judge task of a run (by run id); given by whoever settles the reviewers."""


def never_started(participant: Participant) -> str:
    """The failure of a participant whose task no worker took before the run's deadline.

    Says which Celery queue the task waited on (``queue_for(backend)``) and how to get a
    worker onto it, so an operator looks at the workers, not at a crash that never was.
    """
    queue = queue_for(participant.backend)
    short = queue.removeprefix("council.")
    return (
        f"no worker took {participant.id}'s task before the run's deadline: it waited on "
        f"the Celery queue {queue}, which no running worker consumed (or every worker "
        f"consuming it stayed busy). Start `council worker` on this Redis consuming that "
        f"queue (`council worker --queues {short},consolidate`, or no --queues for every "
        f"queue); see README, Distributed mode."
    )


def settle_run(
    rt: Runtime,
    run_id: str,
    *,
    forced: RunStatus | None = None,
    lost: Stop | None = None,
    dispatch_judge: JudgeDispatch | None = None,
    deadline_passed: bool = False,
) -> CouncilReport:
    """Settle ``run_id`` from what Redis holds; return its report (idempotent).

    ``forced`` sets the status (``cancelled``, ``timeout``) instead of deriving it; when
    it is None, a run cancelled with :meth:`RunStore.cancel` gets the status given there;
    ``lost`` is the stop given to participants without an outcome (default
    ``worker-lost``). ``deadline_passed`` is the watchdog's: a participant without an
    outcome that no worker ever started (no attempt, its progress still ``pending``)
    then FAILS with :func:`never_started` instead, because no worker was lost.

    A run with a judge settles in two steps (architecture.md: chord → judge → settle):
    the reviewers' findings are filed and the run becomes ``judging`` (then
    ``dispatch_judge`` sends the judge, once), and when the judge has an outcome (or the
    run is forced or the watchdog fires) its findings are filed and the run settles.
    """
    record = rt.runs.record(run_id)
    if record is None:
        raise RunNotFound(run_id)
    current = rt.runs.status(run_id)
    if current not in ("open", "judging"):
        settled = rt.runs.report(run_id)
        if settled is not None:
            return settled
    if forced is None:
        # A cancelled run settles as cancelled (or timeout) even when the consolidation,
        # fired by the stopped reviewers' tasks, gets here before the waiting CLI.
        forced = rt.runs.cancel_status(run_id)
    participants = rt.runs.participants(run_id)
    read = Read(witness=record.witness) if record.witness else Read(unpinned="no tree pinned")
    caps = JournalCaps(rt.settings.journal_max_entries, rt.settings.journal_max_entry_bytes)
    judge = next((p for p in participants if p.role == "judge"), None)
    reviewers = [p for p in participants if p.role != "judge"]

    stored_outcomes = rt.runs.outcomes_many(run_id, [p.id for p in participants])
    progress = rt.runs.progress(run_id) if deadline_passed else {}

    def outcome_of(p: Participant) -> ParticipantOutcome:
        stored = stored_outcomes.get(p.id)
        if stored is None and p.role == "judge":  # the judge's may have come since
            stored = rt.runs.outcome(run_id, p.id)
        if stored is not None:
            return stored
        attempts = rt.journals.attempts(run_id, p.id)
        shown = progress.get(p.id)
        unstarted = (
            deadline_passed and attempts == 0 and (shown is None or shown.state == "pending")
        )
        made = settle_outcome(
            p.id,
            p.role,
            ReviewResult(failure=never_started(p)) if unstarted else None,
            rt.journals.read_all(run_id, p.id),
            read=read,
            caps=caps,
            answer_max_entries=rt.settings.answer_max_entries,
            attempts=attempts,
            lost=lost or Stop(limit="worker-lost"),
        )
        log.warning(
            "participant_never_started" if unstarted else "participant_settled_without_outcome",
            run_id=run_id,
            participant=p.id,
            stop=made.stop.limit if made.stop else None,
            findings=len(made.harvest.findings),
        )
        return made

    settled_at = now_ms()
    change = parse_diff(rt.runs.change(run_id))
    if current != "judging":
        marks = session_marks(rt, record)
        outcomes = {p.id: outcome_of(p) for p in reviewers}
        status = round_status(reviewers, outcomes, forced)
        facts = RoundFacts(
            run_id=run_id,
            session=record.session,
            repository=record.repository,
            base=record.base,
            head=record.head,
            mode=record.mode,
            notes=record.notes,
            created_ms=record.created_ms,
            prices=record.prices,
        )
        step: RunStatus = "judging" if judge is not None and forced is None else status

        def conclude(first_id: int) -> tuple[list[Finding], CouncilReport]:
            filed, report = conclude_round(
                facts,
                reviewers,
                outcomes,
                first_id,
                status=step,
                settled_ms=settled_at,
                change=change,
            )
            return filed, marks.apply(land(report, change))

        report = rt.sessions.settle(record, step, conclude, settled_at)
        if report.status != "judging" or judge is None:
            # A run cancelled or timed out before its judge was sent settles without it.
            _log_settled(record.session, report)
            return report
        if dispatch_judge is not None and rt.runs.claim_judge(run_id):
            dispatch_judge(run_id)
        judged = rt.runs.outcome(run_id, judge.id)
        if judged is None:
            return report
    interim = rt.runs.report(run_id)
    if interim is None or judge is None:
        raise RunNotFound(run_id)
    report = _settle_judge(rt, record, interim, judge, outcome_of, change, forced=forced)
    _log_settled(record.session, report)
    return report


def _settle_judge(
    rt: Runtime,
    record: RunRecord,
    interim: CouncilReport,
    judge: Participant,
    outcome_of: Callable[[Participant], ParticipantOutcome],
    change: Change,
    *,
    forced: RunStatus | None = None,
) -> CouncilReport:
    """File the judge's findings on top of the interim report and settle the run."""
    outcome = outcome_of(judge)
    if forced is not None:
        status: RunStatus = forced
    else:
        reviewers_whole = all(p.heard_in_full for p in interim.participants)
        status = "settled" if reviewers_whole and heard_in_full(outcome) else "partial"
    settled_at = now_ms()
    marks = session_marks(rt, record)

    def conclude(first_id: int) -> tuple[list[Finding], CouncilReport]:
        filed, report = conclude_judge(
            interim,
            judge,
            outcome,
            first_id,
            status=status,
            settled_ms=settled_at,
            prices=record.prices,
            change=change,
        )
        return filed, marks.apply(land(report, change))

    return rt.sessions.settle(record, status, conclude, settled_at, expect="judging")


def _log_settled(session: str, report: CouncilReport) -> None:
    log.info(
        "run_settled",
        run_id=report.run_id,
        session=session,
        status=report.status,
        findings=len(report.findings),
    )
