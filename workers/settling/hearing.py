"""What settling reads of a run (:class:`Hearing`): its participants, their outcomes
(stored, or made from their journals for one without), the change, the head tree's code
and the session's marks; and why a participant no worker took failed
(:func:`never_started`). Source: docs/celery.md §1.4, docs/harvest.md §7.
"""

from __future__ import annotations

import structlog

from council.asks.confirm import confirmation_asks
from council.asks.paused import pending
from council.asks.pending import PendingAsk
from council.change.commentable import land
from council.change.diff import added_lines, parse_diff
from council.change.diff_filter import apply_filter, parse_filter
from council.model.backend_result import ReviewResult, Stop
from council.model.coverage import heard_coverage
from council.model.fingerprint import with_fingerprints
from council.model.participant import Identity, Participant, by_owner, working
from council.model.report import CouncilReport
from council.ranking.apply import ranked
from council.ranking.records import record_for, record_keys
from council.round.filing import RoundFacts
from council.round.gate import apply_min_agreement
from council.round.outcome import ParticipantOutcome, harvest_outcome, heard_in_full
from council.round.slice_outcomes import fold_slices
from council.session.ledger import Ledger
from workers.app.celery_config import queue_for
from workers.app.services import Runtime
from workers.execution.backend_request import ASKING_BACKENDS
from workers.execution.participant_attempt import reading_policy, script_rows
from workers.settling.head_code import UNREAD_NOTE, HeadCode, over_cap_note
from workers.settling.session_marks import session_marks
from workers.stores import server_ms
from workers.stores.budget import RedisBudget
from workers.stores.run_inputs import SettleInputs
from workers.stores.run_record import RunRecord
from workers.stores.track.records import RedisRecords

log = structlog.get_logger("council.settle")


UNKEPT_NOTE = (
    "Redis restarted during this run and may have forgotten what it was told last (under "
    "appendfsync everysec, up to its last second): no outcome was stored and no worker "
    "still held one for these participants, so what they recorded then could not be kept; "
    "what their journals still hold is filed, and they count as stopped"
)
"""The start of the report's note naming whose findings could not be kept."""


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


class Hearing:
    """What settling reads of a run: its participants, their outcomes (stored, or made
    from the journals for a participant without one), the change, the session's marks."""

    def __init__(
        self,
        rt: Runtime,
        record: RunRecord,
        lost: Stop,
        deadline_passed: bool,
        inputs: SettleInputs | None = None,
    ):
        """``inputs``: the run's and session's strings when the caller read them already
        (:meth:`RunStore.settle_inputs <workers.stores.run_inputs.RunInputs.settle_inputs>`
        with the session)."""
        self.rt, self.record, self.lost = rt, record, lost
        self.deadline_passed = deadline_passed
        # one MGET for every string read
        inputs = inputs or rt.runs.settle_inputs(record.run_id, record.session)
        self._next_id = inputs.next_id
        participants = inputs.participants
        self.judge = next((p for p in participants if p.role == "judge"), None)
        self.reviewers = [p for p in participants if p.role != "judge" and p.slice is None]
        self.units = by_owner(participants)
        """A reviewer sent in slices → its units, each settled on its own, then folded."""
        working_ids = [p.id for p in working(participants)]
        # read with the strings when the caller named them (settle: the record's tasks)
        unread = [p for p in working_ids if p not in inputs.read]
        found = {**inputs.outcomes, **rt.runs.outcomes_many(record.run_id, unread)}
        self.stored = {p: found[p] for p in working_ids if p in found}
        self.progress = rt.runs.progress(record.run_id) if deadline_passed else {}
        self.change = parse_diff(inputs.change)
        self.code = HeadCode(rt, record, inputs.secrets)
        """The head tree's code, read for the findings' occurrences."""
        self.marks = session_marks(rt, record, inputs)
        self.paths = inputs.paths
        pull = inputs.pull
        self.pull = parse_diff(pull) if pull is not None else self.change
        """What ``--filter`` judges against: the pull request's change (with
        ``--since-last`` the round's own change is only the new commits, and a finding
        still open on the pull request's code must keep gating)."""
        self.added = added_lines(self.pull)
        """The pull request's added lines: identical code counts them last."""
        self.unkept: dict[str, None] = {}
        """Participants made from their journals after Redis restarted during the run:
        what it forgot of theirs nobody held (:meth:`unkept_notes`)."""
        self._restarted: bool | None = None

    def first_id(self) -> int:
        """The session's next finding id: as the settle inputs read it the first time
        (a filing built from it is refused if it moved since), then read afresh."""
        told, self._next_id = self._next_id, None
        return told if told is not None else self.rt.sessions.next_finding_id(self.record.session)

    def restarted(self) -> bool:
        """Whether Redis restarted since the run opened (asked once)."""
        if self._restarted is None:
            self._restarted = self.rt.runs.restarted(self.record.run_id)
        return self._restarted

    def unkept_notes(self) -> tuple[str, ...]:
        """The report's note naming the participants whose findings could not be kept
        (none: no note)."""
        if not self.unkept:
            return ()
        who = ", ".join(self.unkept)
        return (f"{UNKEPT_NOTE}: {who}",)

    def facts(self, *notes: str) -> RoundFacts:
        """What the report says of the run besides its outcomes, from its record, with
        ``notes`` after the record's own (why it was abandoned, what it waits on)."""
        record = self.record
        return RoundFacts(
            run_id=record.run_id,
            session=record.session,
            repository=record.repository,
            base=record.base,
            head=record.head,
            mode=record.mode,
            notes=(*record.notes, *notes),
            created_ms=record.created_ms,
            prices=record.prices,
        )

    def finish(self, report: CouncilReport) -> CouncilReport:
        """A filed report with its coverage (:func:`~council.model.coverage.heard_coverage`),
        landed on the diff, marked against the session, filtered
        (``--filter``, the head tree's paths: :mod:`council.change.diff_filter`) and held to
        ``--min-agreement`` (:func:`council.round.gate.apply_min_agreement`)."""
        gate = self.record.gate
        if self.code.unread and UNREAD_NOTE not in report.notes:
            report = report.model_copy(update={"notes": (*report.notes, UNREAD_NOTE)})
        if self.code.over_cap:
            note = over_cap_note(sorted(self.code.over_cap))
            report = report.model_copy(update={"notes": (*report.notes, note)})
        if self.record.coverage is not None:
            reviewers = [
                (p.id, p.backend, p.heard_in_full, p.optional)
                for p in report.participants
                if p.role == "reviewer"
            ]
            sliced = {
                owner: [(u.id, heard_in_full(self.outcome(u))) for u in units]
                for owner, units in self.units.items()
            }
            coverage = heard_coverage(self.record.coverage, reviewers, sliced)
            report = report.model_copy(update={"coverage": coverage})
        gated = land(report, self.change).gated(**gate.model_dump())
        marked = self.marks.apply(gated, self.pull, self.code, self.added)
        filtered = apply_filter(marked, self.pull, parse_filter(gate.filter or "added"), self.paths)
        held = apply_min_agreement(filtered)
        return with_fingerprints(self.rank(self.spend(held)))

    def rank(self, report: CouncilReport) -> CouncilReport:
        """``report`` with a likelihood on each open finding, weighed by the track
        records each reviewer's identity brings (docs/ranking.md), and ``likely_at``."""
        pairs = [(p.id, key) for p in self.reviewers for key in record_keys(p.identity())]
        held = RedisRecords(self.rt.client, self.rt.keys).of(pairs)
        records = {p.id: record_for(held, p.id, p.identity()) for p in self.reviewers}
        return ranked(report, records, likely_at=self.record.likely_at)

    def identities(self) -> dict[str, Identity | None]:
        """Each reviewer's identity this round (what the session's ledger holds)."""
        return {p.id: p.identity() for p in self.reviewers}

    def ledger(self) -> Ledger:
        """The session's ledger now: the identities of earlier findings' raisers."""
        return self.rt.sessions.ledger(self.record.session)

    def spend(self, report: CouncilReport) -> CouncilReport:
        """``report`` with the round's budget against what it spent (no budget: as is)."""
        record = self.record
        if record.max_cost_usd is None:
            return report
        stopped = tuple(p.id for p in report.participants if p.stop and p.stop.limit == "budget")
        budget = RedisBudget(self.rt.client, self.rt.keys, record.run_id, record.max_cost_usd)
        return report.model_copy(update={"budget": budget.spend(stopped)})

    def asks(self, report: CouncilReport) -> tuple[PendingAsk, ...]:
        """The questions ``[policy] confirm`` puts to a person before the run may settle."""
        if self.record.confirm is None:
            return ()
        return confirmation_asks(report, self.record.confirm)

    def answered_asks(self) -> tuple[PendingAsk, ...]:
        """The questions reviewers asked in this run and went on with, each with the
        answer it was given (the report keeps them: who asked what, what was said), in
        roster order; one round trip, for the backends that can ask (none when none can)."""
        run_id = self.record.run_id
        out: list[PendingAsk] = []
        asking = [p.id for p in self.reviewers if p.backend in ASKING_BACKENDS]
        resumed = self.rt.runs.resumptions(run_id, asking) if asking else {}
        for pid, one in resumed.items():
            ask = pending(run_id, pid, one.paused)
            out.append(ask.model_copy(update={"answer": one.answer}))
        return tuple(out)

    def running(self) -> list[str]:
        """The reviewers without a stored outcome whose latest attempt holds a live lease
        (:mod:`workers.execution.leases`): a worker is reviewing them right now."""
        tasks = [u for p in self.reviewers for u in self.units.get(p.id, [p])]
        missing = [p.id for p in tasks if p.id not in self.stored]
        if not missing:
            return []
        rt, run_id = self.rt, self.record.run_id
        latest = rt.client.mget([rt.keys.run_attempts(run_id, p) for p in missing])
        pipe = rt.client.pipeline(transaction=False)
        for pid, n in zip(missing, latest, strict=True):
            pipe.zscore(rt.keys.leases(), rt.keys.lease_member(run_id, pid, int(n or 0)))
        now = server_ms(rt.client)  # leases lapse on Redis's clock
        return [
            pid
            for pid, score in zip(missing, pipe.execute(), strict=True)
            if score is not None and score > now
        ]

    def outcome(self, p: Participant) -> ParticipantOutcome:
        """``p``'s stored outcome, or one made from its journals: a stop with the lost
        stop, or, on the watchdog's event, a failure when no worker ever started it. A
        reviewer sent in slices: its slices' outcomes so made, folded
        (:func:`~council.round.slice_outcomes.fold_slices`)."""
        units = self.units.get(p.id)
        if units:
            return fold_slices(p.id, [self.outcome(u) for u in units])
        run_id = self.record.run_id
        stored = self.stored.get(p.id)
        if stored is None and p.role == "judge":  # the judge's may have come since
            stored = self.rt.runs.outcome(run_id, p.id)
        if stored is not None:
            return stored
        attempts = self.rt.journals.attempts(run_id, p.id)
        shown = self.progress.get(p.id)
        unstarted = (
            self.deadline_passed and attempts == 0 and (shown is None or shown.state == "pending")
        )
        made = harvest_outcome(
            p.id,
            p.role,
            ReviewResult(failure=never_started(p)) if unstarted else None,
            self.rt.journals.read_all(run_id, p.id),
            policy=reading_policy(self.rt, self.record),
            attempts=attempts,
            lost=self.lost,
            scripts=script_rows(self.rt, run_id, p, attempts),
        )
        forgotten = not unstarted and self.restarted()
        if forgotten:
            self.unkept[p.id] = None
        log.warning(
            "participant_never_started" if unstarted else "participant_settled_without_outcome",
            run_id=run_id,
            participant=p.id,
            stop=made.stop.limit if made.stop else None,
            findings=len(made.harvest.findings),
            redis_restarted=forgotten,
        )
        return made
