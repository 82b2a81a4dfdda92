"""Settling a run: the consolidation, the errback finalizer and the watchdog share this.

The stored outcomes are the source of truth (chord results only say who finished). A
participant with no stored outcome (its task died, the chord never fired, the run was
cancelled) is settled as a stop from its journals, so what it wrote down is filed; when
the watchdog settles a run, one whose task no worker ever started is a failure naming the
queue it waited on (:func:`~workers.settling.hearing.never_started`), not a lost worker.
Which event leads where is :mod:`council.round.lifecycle`'s; this module reads what the run
holds, builds the filing with the domain's rules (:mod:`council.round.filing`, landing, the
session's marks) outside any transaction, and hands it to :meth:`SessionStore.commit`,
which persists the transition compare-and-set on the run's state: filing happens once,
and a second call returns the settled report. Source: docs/celery.md §1.4, docs/harvest.md §7-§8.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from council.asks.confirm import waiting_report
from council.asks.paused import pending
from council.evidence.policy import runs_scripts
from council.model.backend_result import Stop
from council.model.findings import Finding
from council.model.report import CouncilReport, RunStatus
from council.ranking.live import acted_records, round_records
from council.round.filing import conclude_judge, conclude_round
from council.round.gate import INCOMPLETE_STATUSES
from council.round.lifecycle import Event, Transition, allows, ending, is_final, step
from council.round.outcome import ParticipantOutcome, heard_in_full
from council.session.earlier_rounds import remembered
from council.slicing.judged import judge_prompt
from workers.app.clock import now_ms
from workers.app.services import Runtime
from workers.settling.hearing import Hearing
from workers.stores.sessions import Filing

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


JudgeDispatch = Callable[[str], None]
"""Sends the judge task of a run (by run id); given by whoever settles the reviewers."""


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
    (:func:`~workers.settling.hearing.never_started`): no worker was lost. The transitions are
    :mod:`council.round.lifecycle`'s (``dispatch_judge`` sends the judge, once); an event it
    refuses files nothing and returns the stored report. Raises :class:`RunNotFound`.
    """
    record, state = rt.runs.record_and_status(run_id)
    if record is None:
        raise RunNotFound(run_id)
    if is_final(state) or state == "waiting":
        settled = rt.runs.report(run_id)
        if settled is not None:
            return settled  # a waiting run moves on only with its answers (council.resume)
    # one MGET of every string, the outcomes of every task the record names too
    tasks = (*record.participants, *record.units, *((record.judge,) if record.judge else ()))
    inputs = rt.runs.settle_inputs(run_id, record.session, tasks)
    if forced is None:
        # A cancelled run settles as cancelled (or timeout) even when the consolidation,
        # fired by the stopped reviewers' tasks, gets here before the waiting CLI.
        forced = inputs.cancelled
    noticed = ending(forced, deadline_passed=deadline_passed) or event
    heard = Hearing(rt, record, lost or Stop(limit="worker-lost"), deadline_passed, inputs)
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
    heard = Hearing(rt, record, Stop(limit="worker-lost"), deadline_passed=True)
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


ASKED_NOTE = (
    "waiting on the reviewers' questions to a person: the findings listed are those heard "
    "so far; the round is filed once the questions are answered and the reviewers that "
    "asked went on (council asks lists them), and a new finding's id is settled then"
)
"""The note of the report of a run waiting on its reviewers' questions."""

ASKING_EVENTS: frozenset[Event] = frozenset({"reviewers_settled", "worker_lost", "watchdog_fired"})
"""The events on which a reviewer paused on a question makes the run wait for its answer
(a cancellation, a timeout or an abandoned run files what it has instead)."""


def _file_reviewers(heard: Hearing, event: Event) -> CouncilReport:
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
    heard: Hearing, outcomes: dict[str, ParticipantOutcome], asking: list[str]
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


def _file_judge(heard: Hearing, event: Event) -> CouncilReport:
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
    heard: Hearing,
    build: Callable[[int], tuple[Transition, list[Finding], CouncilReport]],
    now: int,
) -> CouncilReport:
    """Build the transition and its filing from the session's next finding id and commit
    them; build again when another run of the session took ids first (the store's
    compare-and-set)."""
    sessions, record = heard.rt.sessions, heard.record
    while True:
        first_id = heard.first_id()
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
