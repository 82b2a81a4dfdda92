"""Finishing a run that waited on a person: once every ask has its answer, apply them
and settle the run (``waiting`` → ``settled`` | ``partial``, :mod:`council.lifecycle`).

The answers are the session's (``council answer`` records them); the rules are the
domain's (:func:`council.asks.confirm.answered_report`: a rejected finding is dismissed
with the person's reason); the store persists the transition compare-and-set, keeping
the dismissals in the session so later rounds keep them. Works on Redis and on the
embedded state file alike: the waiting run's record and report live in its session.

Source: docs/architecture.md "The run lifecycle", docs/evidence-and-asks.md §2.
"""

from __future__ import annotations

from council.asks.confirm import answered_report, unanswered
from council.asks.pending import PendingAsk
from council.earlier_rounds import remembered
from council.lifecycle import Whole, step
from council.report.model import CouncilReport
from workers.clock import now_ms
from workers.session_marks import recall_of
from workers.stores.sessions import Filing, SessionStore, Waiting


def pending_asks(sessions: SessionStore, parked: Waiting) -> list[PendingAsk]:
    """The asks of a waiting run that no one has answered yet."""
    return unanswered(parked.report, sessions.answers(parked.record.session))


def finish(sessions: SessionStore, parked: Waiting) -> CouncilReport | None:
    """Settle ``parked`` with its answers and return its report; None while an ask is
    still unanswered (the run keeps waiting: an unanswered ask never passes the gate)."""
    record = parked.record
    answers = sessions.answers(record.session)
    if unanswered(parked.report, answers):
        return None
    settled_at = now_ms()
    settled, dismissals = answered_report(parked.report, answers, settled_at)
    whole: Whole = "whole" if settled.status == "settled" else "in part"
    transition = step("waiting", "answered", whole=whole)
    memory = remembered(settled, record.quorum, recall_of(sessions, record.session))
    while True:
        filing = Filing(
            first_id=sessions.next_finding_id(record.session),
            findings=(),
            report=settled,
            memory=memory,
            dismissals=dismissals,
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
