"""Finishing a run that waited on a person: once every ask has its answer, apply them
and settle the run (``waiting`` → ``settled`` | ``partial``, :mod:`council.round.lifecycle`),
or, when reviewers asked, hand them the answers and let them go on
(``waiting`` → ``open``: :func:`resume_askers`).

The answers are the session's (``council answer`` records them); the rules are the
domain's (:func:`council.asks.confirm.answered_report`: a rejected finding is dismissed
with the person's reason); the store persists the transition compare-and-set, keeping
the dismissals in the session so later rounds keep them. Works on Redis and on the
embedded state file alike: the waiting run's record and report live in its session.

Source: docs/architecture.md "The run lifecycle", docs/evidence-and-asks.md §2.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from council.asks.confirm import answered_report, unanswered
from council.asks.pending import Answer, PendingAsk
from council.model.report import CouncilReport
from council.ranking.live import (
    acted_records,
    answered_verdicts,
    judged_records,
    round_records,
)
from council.round.lifecycle import Whole, step
from council.session.earlier_rounds import remembered
from workers.app.clock import now_ms
from workers.app.services import Runtime
from workers.coordinator.dispatch import chord_header, judge_sender, release_results, send_chord
from workers.coordinator.waiting import Waiter
from workers.settling.session_marks import recall_of
from workers.settling.settle import RunNotFound
from workers.stores.run_record import Progress
from workers.stores.sessions import Filing, SessionStore, Waiting

log = structlog.get_logger("council.coordinator")


def asked_by_reviewers(parked: Waiting) -> bool:
    """Whether the run waits on questions its reviewers asked (it goes on by dispatching
    them again, :func:`resume_askers`), not on a policy's confirmations (:func:`finish`)."""
    return parked.report.waits_on_reviewers


def resume_askers(
    app: Any,
    rt: Runtime,
    parked: Waiting,
    *,
    on_progress: Callable[[dict[str, Progress]], None] = lambda _: None,
    stop_requested: Callable[[], bool] = lambda: False,
) -> CouncilReport | None:
    """Hand the reviewers that asked their answers and wait for the run to settle.

    None while a question is unanswered (the run keeps waiting). Otherwise the run is
    resumed (``waiting`` → ``open``, :meth:`SessionStore.resume_run`: its deadline one
    round length from now), the askers are sent again through ``app`` (one chord: their
    tasks, then ``council.consolidate``), each going on from its paused conversation
    with the answer as its pending tool call's reply, and the run settles as a round
    does (the other reviewers' outcomes are kept: they are not asked again). Returns
    the run's report (possibly ``waiting`` again: a new question, a confirmation).
    Raises :class:`~workers.settling.settle.RunNotFound` when the run's keys expired (its
    questions went with it).
    """
    record = parked.record
    answers = rt.sessions.answers(record.session)
    if unanswered(parked.report, answers):
        return None
    if rt.runs.record(record.run_id) is None:
        raise RunNotFound(record.run_id)
    given: dict[str, Answer] = {}
    asked: list[str] = []
    for ask in parked.report.asks:
        answer = ask.answer or answers.get(ask.id)
        if ask.participant is not None and answer is not None:
            given[ask.participant] = answer
            asked.append(ask.id)
    now = now_ms()
    span = max(0, record.deadline_ms - record.created_ms)
    resumed = record.model_copy(update={"deadline_ms": now + span})
    if rt.sessions.resume_run(resumed, step("waiting", "resumed"), given, asked, now):
        people = [p for p in rt.runs.participants(record.run_id) if p.id in given]
        header = chord_header(app, record.run_id, people, rt.settings.batch_size, record.session)
        release_results(app, send_chord(app, record.run_id, header, record.session))
        log.info("run_resumed", run_id=record.run_id, askers=sorted(given))
    else:
        stored = rt.runs.record(record.run_id)
        if stored is None:
            raise RunNotFound(record.run_id)
        resumed = stored  # another CLI resumed it first: wait for the same run
    judge = rt.runs.participant(record.run_id, record.judge) if record.judge else None
    waiter = Waiter(
        rt=rt,
        record=resumed,
        on_progress=on_progress,
        stop_requested=stop_requested,
        dispatch_judge=judge_sender(app, judge.backend) if judge is not None else None,
    )
    return waiter.wait()


def pending_asks(sessions: SessionStore, parked: Waiting) -> list[PendingAsk]:
    """The asks of a waiting run that no one has answered yet."""
    return unanswered(parked.report, sessions.answers(parked.record.session))


def finish(sessions: SessionStore, parked: Waiting) -> CouncilReport | None:
    """Settle ``parked`` with its answers and return its report; None while an ask is
    still unanswered (the run keeps waiting: an unanswered ask never passes the gate),
    and for a run waiting on its reviewers' questions, which goes on only by sending
    them again (:func:`resume_askers`), never by settling here."""
    if asked_by_reviewers(parked):
        return None
    record = parked.record
    answers = sessions.answers(record.session)
    if unanswered(parked.report, answers):
        return None
    settled_at = now_ms()
    settled, dismissals = answered_report(parked.report, answers, settled_at)
    whole: Whole = "whole" if settled.status == "settled" else "in part"
    transition = step("waiting", "answered", whole=whole)
    memory = remembered(settled, recall_of(sessions, record.session))
    ledger = sessions.ledger(record.session)
    identities = {p.id: ledger.get(p.id) for p in settled.participants}
    verdicts = answered_verdicts(settled)
    records = (
        *round_records(settled, identities),
        *judged_records(settled, verdicts, identities),
    )
    while True:
        filing = Filing(
            first_id=sessions.next_finding_id(record.session),
            findings=(),
            report=settled,
            memory=memory,
            dismissals=dismissals,
            records=records,
            acted=acted_records(settled, ledger.get),
        )
        committed = sessions.commit(record, transition, filing, settled_at)
        if committed is not None:
            return committed


def find_ask(sessions: SessionStore, ask_id: str) -> tuple[Waiting, PendingAsk] | None:
    """The waiting run holding the ask ``ask_id``, and the ask; None when no waiting run
    of any session holds it (answered and settled already, expired, or mistyped)."""
    for session in sessions.waiting_sessions():
        for parked in sessions.waiting(session):
            for ask in parked.report.asks:
                if ask.id == ask_id:
                    return parked, ask
    return None
