"""Settling a run: the consolidation, the errback finalizer and the watchdog share this.

The stored outcomes are the source of truth (chord results only say who finished). A
participant with no stored outcome (its task died, the chord never fired, the run was
cancelled) is settled as a stop from its journals, so what it wrote down is filed; when
the watchdog settles a run, one whose task no worker ever started is a failure naming the
queue it waited on (:func:`never_started`), not a lost worker.
Which event leads where is :mod:`council.round.lifecycle`'s; this module reads what the run
holds, builds the filing with the domain's rules (:mod:`council.round.filing`, landing, the
session's marks) outside any transaction, and hands it to :meth:`SessionStore.commit`,
which persists the transition compare-and-set on the run's state: filing happens once,
and a second call returns the settled report. Source: docs/celery.md §1.4, docs/harvest.md §7-§8.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from council.asks.confirm import confirmation_asks, waiting_report
from council.asks.paused import pending
from council.asks.pending import PendingAsk
from council.change.commentable import land
from council.change.diff import added_lines, parse_diff
from council.change.diff_filter import apply_filter, parse_filter
from council.evidence.policy import runs_scripts
from council.model.backend_result import ReviewResult, Stop
from council.model.coverage import heard_coverage
from council.model.findings import Finding
from council.model.fingerprint import with_fingerprints
from council.model.participant import Identity, Participant, by_owner, working
from council.model.report import CouncilReport, RunStatus
from council.ranking.apply import ranked
from council.ranking.live import acted_records, round_records
from council.ranking.records import record_for
from council.round.filing import RoundFacts, conclude_judge, conclude_round
from council.round.gate import INCOMPLETE_STATUSES, apply_min_agreement
from council.round.lifecycle import Event, Transition, allows, ending, is_final, step
from council.round.outcome import ParticipantOutcome, harvest_outcome, heard_in_full
from council.round.slice_outcomes import fold_slices
from council.session.earlier_rounds import remembered
from council.session.ledger import Ledger
from council.slicing.judged import judge_prompt
from workers.app.celery_config import queue_for
from workers.app.clock import now_ms
from workers.app.services import Runtime
from workers.execution.participant_attempt import reading_policy, script_rows
from workers.settling.head_code import UNREAD_NOTE, HeadCode, over_cap_note
from workers.settling.session_marks import session_marks
from workers.stores import server_ms
from workers.stores.budget import RedisBudget
from workers.stores.run_record import RunRecord
from workers.stores.sessions import Filing
from workers.stores.track.records import RedisRecords

log = structlog.get_logger("council.settle")


class RunNotFound(LookupError):
    """The run is not in Redis (never opened here, or expired)."""

    def __init__(self, run_id: str) -> None:
        super().__init__(
            f"run {run_id} is not in Redis: it never opened on this server or its keys "
            f"expired (runs are kept COUNCIL_RUN_RETENTION_S after settling)"
        )


ABANDONED_NOTE = (
    "cancelled by a worker's sweep: the CLI that opened this run stopped before it "
    "dispatched the reviewers (nothing was sent to them)"
)
"""The report's note on a run settled on the ``abandoned`` event."""


class StillRunning(RuntimeError):
    """The reviewers were said to be settled (a consolidation delivered twice, or before
    its time), but some are being reviewed right now: nothing is filed; the run settles
    when they finish."""

    def __init__(self, run_id: str, running: list[str]) -> None:
        self.run_id, self.running = run_id, running
        super().__init__(f"run {run_id} still has reviewers running: {', '.join(running)}")


UNKEPT_NOTE = (
    "Redis restarted during this run and may have forgotten what it was told last (under "
    "appendfsync everysec, up to its last second): no outcome was stored and no worker "
    "still held one for these participants, so what they recorded then could not be kept; "
    "what their journals still hold is filed, and they count as stopped"
)
"""The start of the report's note naming whose findings could not be kept."""


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
    event: Event = "reviewers_settled",
) -> CouncilReport:
    """Settle ``run_id`` from what Redis holds; return its report (idempotent).

    ``event`` is what the caller noticed (the chord body ``reviewers_settled``, its errback
    ``worker_lost``); ``forced`` (``cancelled``, ``timeout``) and ``deadline_passed`` (the
    watchdog) name the event instead, and a run cancelled with :meth:`RunStore.cancel` ends
    as given there. ``lost`` is the stop for participants without an outcome (default
    ``worker-lost``); on the watchdog's event one no worker ever started FAILS instead
    (:func:`never_started`): no worker was lost. The transitions are
    :mod:`council.round.lifecycle`'s (``dispatch_judge`` sends the judge, once); an event it
    refuses files nothing and returns the stored report. Raises :class:`RunNotFound`.
    """
    record = rt.runs.record(run_id)
    if record is None:
        raise RunNotFound(run_id)
    state = rt.runs.status(run_id)
    if is_final(state) or state == "waiting":
        settled = rt.runs.report(run_id)
        if settled is not None:
            return settled  # a waiting run moves on only with its answers (council.resume)
    if forced is None:
        # A cancelled run settles as cancelled (or timeout) even when the consolidation,
        # fired by the stopped reviewers' tasks, gets here before the waiting CLI.
        forced = rt.runs.cancel_status(run_id)
    noticed = ending(forced, deadline_passed=deadline_passed) or event
    heard = _Hearing(rt, record, lost or Stop(limit="worker-lost"), deadline_passed)
    if state == "open" and noticed == "reviewers_settled":
        running = heard.running()
        if running:
            raise StillRunning(run_id, running)
    if state == "open":
        report = _file_reviewers(heard, noticed)
        if report.status != "judging":
            _log_settled(record.session, report)
            return report
        if dispatch_judge is not None and rt.runs.claim_judge(run_id):
            dispatch_judge(run_id)
        state = "judging"
    if heard.judge is None:
        raise RunNotFound(run_id)
    if noticed not in ("cancelled", "timed_out", "watchdog_fired"):
        if rt.runs.outcome(run_id, heard.judge.id) is None:
            return _stored(rt, run_id)  # the judge is still to be heard
        noticed = "judge_settled"
    if not allows(state, noticed):
        return _stored(rt, run_id)
    report = _file_judge(heard, noticed)
    _log_settled(record.session, report)
    return report


def unfiled_report(rt: Runtime, run_id: str, why: str) -> CouncilReport:
    """The report of an ``open`` run that Redis will not let anyone file (it refuses
    writes: ``maxmemory`` under ``noeviction``, a read-only replica): made from what
    Redis holds, by reads only, as the watchdog would file it, but left ``open`` (never
    settled: exit 3) with ``why`` and what was not done as a note.

    The findings shown are those Redis held: a reviewer with no stored outcome is
    named, stopped ``worker-lost``, and entries its worker still holds are not in it.
    Nothing is written (the session's ids, memory and records are untouched); a later
    settle of the same run files it once. Raises :class:`RunNotFound`."""
    record = rt.runs.record(run_id)
    if record is None:
        raise RunNotFound(run_id)
    settled = rt.runs.report(run_id)
    if settled is not None and rt.runs.status(run_id) not in ("open", "judging"):
        return settled
    heard = _Hearing(rt, record, Stop(limit="worker-lost"), deadline_passed=True)
    outcomes = {p.id: heard.outcome(p) for p in heard.reviewers}
    note = (
        f"{why}: this round could not be filed, and this report was made from what Redis "
        "held, by reads only. It is not kept (no finding id, dismissal or track record "
        "was written); a reviewer without a stored outcome is named, and entries its "
        "worker still held are not in it. Free Redis (raise maxmemory, point at the "
        f"master) and run `council show {run_id}` once the workers have filed it, or "
        "review again"
    )
    _, report = conclude_round(
        heard.facts(note),
        heard.reviewers,
        outcomes,
        rt.sessions.next_finding_id(record.session),
        status="open",
        settled_ms=now_ms(),
        change=heard.change,
        remembered=heard.marks.recall,
        code=heard.code,
        added=heard.added,
    )
    return heard.finish(report)


class _Hearing:
    """What settling reads of a run: its participants, their outcomes (stored, or made
    from the journals for a participant without one), the change, the session's marks."""

    def __init__(self, rt: Runtime, record: RunRecord, lost: Stop, deadline_passed: bool):
        self.rt, self.record, self.lost = rt, record, lost
        self.deadline_passed = deadline_passed
        participants = rt.runs.participants(record.run_id)
        self.judge = next((p for p in participants if p.role == "judge"), None)
        self.reviewers = [p for p in participants if p.role != "judge" and p.slice is None]
        self.units = by_owner(participants)
        """A reviewer sent in slices → its units, each settled on its own, then folded."""
        working_ids = [p.id for p in working(participants)]
        self.stored = rt.runs.outcomes_many(record.run_id, working_ids)
        self.progress = rt.runs.progress(record.run_id) if deadline_passed else {}
        self.change = parse_diff(rt.runs.change(record.run_id))
        self.code = HeadCode(rt, record)
        """The head tree's code, read for the findings' occurrences."""
        self.marks = session_marks(rt, record)
        self.paths = rt.runs.paths(record.run_id)
        pull = rt.runs.pull(record.run_id)
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
        held = RedisRecords(self.rt.client, self.rt.keys).all()
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
        answer it was given (the report keeps them: who asked what, what was said)."""
        run_id = self.record.run_id
        out: list[PendingAsk] = []
        for p in self.reviewers:
            resumed = self.rt.runs.resumption(run_id, p.id)
            if resumed is not None:
                ask = pending(run_id, p.id, resumed.paused)
                out.append(ask.model_copy(update={"answer": resumed.answer}))
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


ASKED_NOTE = (
    "waiting on the reviewers' questions to a person: the findings listed are those heard "
    "so far; the round is filed once the questions are answered and the reviewers that "
    "asked went on (council asks lists them), and a new finding's id is settled then"
)
"""The note of the report of a run waiting on its reviewers' questions."""

ASKING_EVENTS: frozenset[Event] = frozenset({"reviewers_settled", "worker_lost", "watchdog_fired"})
"""The events on which a reviewer paused on a question makes the run wait for its answer
(a cancellation, a timeout or an abandoned run files what it has instead)."""


def _file_reviewers(heard: _Hearing, event: Event) -> CouncilReport:
    """Apply ``event`` to an ``open`` run: file the reviewers' findings (interim when the
    run goes on to its judge), or wait on the questions reviewers put to a person."""
    outcomes = {p.id: heard.outcome(p) for p in heard.reviewers}
    asking = [
        u.id  # a sliced reviewer asks through its slice's task (its pause is the unit's)
        for p in heard.reviewers
        if outcomes[p.id].status == "asking"
        for u in heard.units.get(p.id, [p])
        if u.slice is None or heard.outcome(u).status == "asking"
    ]
    if asking and event in ASKING_EVENTS:
        return _wait_on_askers(heard, outcomes, asking)
    whole = all(heard_in_full(outcomes[p.id]) for p in heard.reviewers)
    judge = heard.judge is not None
    plain = step("open", event, judge=judge, whole="whole" if whole else "in part")
    said = (ABANDONED_NOTE,) if event == "abandoned" else ()
    facts = heard.facts(*said, *heard.unkept_notes())
    settled_at = now_ms()
    answered = heard.answered_asks()

    def build(first_id: int) -> tuple[Transition, list[Finding], CouncilReport]:
        filed, report = conclude_round(
            facts,
            heard.reviewers,
            outcomes,
            first_id,
            status=plain.target,
            settled_ms=settled_at,
            change=heard.change,
            remembered=heard.marks.recall,
            code=heard.code,
            added=heard.added,
        )
        report = heard.finish(report)
        if answered:
            report = report.model_copy(update={"asks": answered})
        asks = heard.asks(report) if plain.target in ("settled", "partial") else ()
        if not asks:
            return plain, filed, report
        asks = (*answered, *asks)
        asking = step("open", event, judge=judge, whole="whole" if whole else "in part", ask=True)
        return asking, filed, waiting_report(report, asks)

    return _commit(heard, build, settled_at)


def _wait_on_askers(
    heard: _Hearing, outcomes: dict[str, ParticipantOutcome], asking: list[str]
) -> CouncilReport:
    """The run waits on the questions of the reviewers that paused (``reviewers_asked``):
    its report lists every participant, the questions, and the findings heard so far,
    marked against the session as a filing would mark them (a finding of an earlier round
    keeps its id; a new one shows the id it would take now, settled once the round is
    filed), so a published summary never says "No findings." over an open critical.
    Nothing is filed in the session (the round is, once the askers went on); the pauses
    are already in the run's store, and the run's keys get their retention with the
    transition."""
    record = heard.record
    pauses = heard.rt.runs.pauses(record.run_id, asking)
    asks = tuple(pending(record.run_id, pid, pauses[pid]) for pid in asking if pid in pauses)
    transition = step("open", "reviewers_asked")
    facts = heard.facts(ASKED_NOTE)
    at = now_ms()

    def build(first_id: int) -> tuple[Transition, list[Finding], CouncilReport]:
        _, report = conclude_round(
            facts,
            heard.reviewers,
            outcomes,
            first_id,
            status="waiting",
            settled_ms=at,
            change=heard.change,
            remembered=heard.marks.recall,
            code=heard.code,
        )
        shown = heard.finish(report).model_copy(
            update={"asks": asks, "resumes_as": None, "settled_ms": None}
        )
        return transition, [], shown

    return _commit(heard, build, at)


def _file_judge(heard: _Hearing, event: Event) -> CouncilReport:
    """Apply ``event`` to a ``judging`` run: file the judge's verdicts over the interim
    report and settle."""
    record, judge = heard.record, heard.judge
    interim = heard.rt.runs.report(record.run_id)
    if interim is None or judge is None:
        raise RunNotFound(record.run_id)
    outcome = heard.outcome(judge)
    whole = all(p.heard_in_full for p in interim.participants) and heard_in_full(outcome)
    plain = step("judging", event, whole="whole" if whole else "in part")
    settled_at = now_ms()
    persona = heard.rt.runs.persona(record.run_id, judge.id)
    _, cut = judge_prompt(  # pure: the note the judge's prompt carried, if any
        judge, heard.change, interim.findings, persona_text=persona, notes=record.notes
    )

    def build(first_id: int) -> tuple[Transition, list[Finding], CouncilReport]:
        filed, report = conclude_judge(
            interim,
            judge,
            outcome,
            first_id,
            status=plain.target,
            settled_ms=settled_at,
            prices=record.prices,
            change=heard.change,
            remembered=heard.marks.recall,
            code=heard.code,
            added=heard.added,
        )
        report = heard.finish(report)
        if cut is not None and cut not in report.notes:
            report = report.model_copy(update={"notes": (*report.notes, cut)})
        unkept = tuple(n for n in heard.unkept_notes() if n not in report.notes)
        if unkept:
            report = report.model_copy(update={"notes": (*report.notes, *unkept)})
        asks = heard.asks(report) if plain.target in ("settled", "partial") else ()
        if not asks:
            return plain, filed, report
        asking = step("judging", event, whole="whole" if whole else "in part", ask=True)
        return asking, filed, waiting_report(report, asks)

    return _commit(heard, build, settled_at)


def _commit(
    heard: _Hearing,
    build: Callable[[int], tuple[Transition, list[Finding], CouncilReport]],
    now: int,
) -> CouncilReport:
    """Build the transition and its filing from the session's next finding id and commit
    them; build again when another run of the session took ids first (the store's
    compare-and-set)."""
    sessions, record = heard.rt.sessions, heard.record
    while True:
        first_id = sessions.next_finding_id(record.session)
        transition, findings, report = build(first_id)
        final = transition.final
        memory = remembered(report, heard.marks.recall) if final else None
        everyone = [*heard.reviewers, *((heard.judge,) if heard.judge else ())]
        filing = Filing(
            first_id=first_id,
            findings=findings,
            report=report,
            memory=memory,
            backends={p.id: p.backend for p in everyone},
            scripting=frozenset(p.id for p in everyone if runs_scripts(p)),
            records=round_records(report, heard.identities()) if final else (),
            acted=acted_records(report, heard.ledger().get) if final and report.outdated else {},
        )
        committed = sessions.commit(record, transition, filing, now)
        if committed is not None:
            return committed


def _stored(rt: Runtime, run_id: str) -> CouncilReport:
    """The report the run holds now (an event was refused: its state stands)."""
    report = rt.runs.report(run_id)
    if report is None:
        raise RunNotFound(run_id)
    return report


def _log_settled(session: str, report: CouncilReport) -> None:
    """The ``run_settled`` line: ``error`` for a run that could not complete (cancelled,
    timed out: :data:`~council.round.gate.INCOMPLETE_STATUSES`, the gate exits 3),
    ``warning`` for a ``partial`` one (someone stopped, failed or was lost), else ``info``."""
    if report.status in INCOMPLETE_STATUSES:
        say = log.error
    else:
        say = log.warning if report.status == "partial" else log.info
    say(
        "run_settled",
        run_id=report.run_id,
        session=session,
        status=report.status,
        findings=len(report.findings),
    )
