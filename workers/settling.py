"""Settling a run: the consolidation, the errback finalizer and the watchdog share this.

The stored outcomes are the source of truth (chord results only say who finished). A
participant with no stored outcome (its task died, the chord never fired, the run was
cancelled) is settled as a stop from its journals, so what it wrote down is filed.
Filing happens once: :meth:`SessionStore.settle` is one transaction and a second call
returns the settled report. Source: celery.md §1.4, harvest.md §7-§8.
"""

from __future__ import annotations

import structlog

from council.diff import parse_diff
from council.findings import Finding, Read
from council.harvest import JournalCaps
from council.landing import land
from council.outcome import ParticipantOutcome, settle_outcome
from council.report.model import CouncilReport, RunStatus
from council.reviewers.base import Stop
from council.round import RoundFacts, conclude_round, round_status
from workers.review import now_ms
from workers.runtime import Runtime

log = structlog.get_logger("council.settle")


class RunNotFound(LookupError):
    """The run is not in Redis (never opened here, or expired)."""

    def __init__(self, run_id: str) -> None:
        super().__init__(
            f"run {run_id} is not in Redis: it never opened on this server or its keys "
            f"expired (runs are kept COUNCIL_RUN_RETENTION_S after settling)"
        )


def settle_run(
    rt: Runtime,
    run_id: str,
    *,
    forced: RunStatus | None = None,
    lost: Stop | None = None,
) -> CouncilReport:
    """Settle ``run_id`` from what Redis holds; return its report (idempotent).

    ``forced`` sets the status (``cancelled``, ``timeout``) instead of deriving it; when
    it is None, a run cancelled with :meth:`RunStore.cancel` gets the status given there;
    ``lost`` is the stop given to participants without an outcome (default
    ``worker-lost``).
    """
    record = rt.runs.record(run_id)
    if record is None:
        raise RunNotFound(run_id)
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
    outcomes: dict[str, ParticipantOutcome] = {}
    for p in participants:
        stored = rt.runs.outcome(run_id, p.id)
        if stored is None:
            stored = settle_outcome(
                p.id,
                p.role,
                None,
                rt.journals.read_all(run_id, p.id),
                read=read,
                caps=caps,
                attempts=rt.journals.attempts(run_id, p.id),
                lost=lost or Stop(limit="worker-lost"),
            )
            log.warning(
                "participant_settled_without_outcome",
                run_id=run_id,
                participant=p.id,
                stop=stored.stop.limit if stored.stop else None,
                findings=len(stored.harvest.findings),
            )
        outcomes[p.id] = stored
    status = round_status(participants, outcomes, forced)
    facts = RoundFacts(
        run_id=run_id,
        session=record.session,
        repository=record.repository,
        base=record.base,
        head=record.head,
        mode=record.mode,
        notes=record.notes,
        created_ms=record.created_ms,
    )
    settled_at = now_ms()
    change = parse_diff(rt.runs.change(run_id))

    def conclude(first_id: int) -> tuple[list[Finding], CouncilReport]:
        filed, report = conclude_round(
            facts, participants, outcomes, first_id, status=status, settled_ms=settled_at
        )
        return filed, land(report, change)

    report = rt.sessions.settle(record, status, conclude, settled_at)
    log.info(
        "run_settled",
        run_id=run_id,
        session=record.session,
        status=report.status,
        findings=len(report.findings),
    )
    return report
