"""Answering an ask from the console: the same operation as ``council answer``, then
``council resume`` once the run's last ask is answered.

The ask is found by its id alone (:func:`workers.resume.find_ask`), the value checked
against its component (:func:`council.asks.pending.checked_answer`: yes or no for a
confirmation, one of the options for a choice, non-blank text otherwise), recorded in
the session (:meth:`~workers.stores.sessions.SessionStore.answer`), and, when no ask of
the run is left unanswered, the run is settled with its answers
(:func:`workers.resume.finish`: a rejected finding is dismissed with the person's
reason). Nothing here decides anything the CLI would decide differently.

Source: docs/evidence-and-asks.md §2.
"""

from __future__ import annotations

from dataclasses import dataclass

from council.asks.pending import Answer, checked_answer
from council.report.model import CouncilReport
from workers.resume import find_ask, finish, pending_asks
from workers.stores.sessions import SessionStore

ANSWERED_BY = "console"
"""What the console records as who answered (``Answer.by``): it knows the token was
held, not which person held it."""


class AskGone(LookupError):
    """No waiting run holds the ask: it was answered and its run settled, it expired
    with its run, or the id is mistyped. The message says so, like ``council answer``."""

    def __init__(self, ask_id: str) -> None:
        self.ask_id = ask_id
        super().__init__(
            f"no run waits on an ask {ask_id!r}: it was answered and its run settled, it "
            "expired with its run, or the id is mistyped"
        )


@dataclass(frozen=True)
class Answered:
    """What answering did: the run and ask, the recorded answer, how many of the run's
    asks are still unanswered, and the settled report when this answer was the last."""

    run_id: str
    ask_id: str
    answer: Answer
    left: int
    settled: CouncilReport | None


def answer_ask(
    sessions: SessionStore,
    ask_id: str,
    value: str,
    reason: str | None,
    now_ms: int,
    by: str | None = ANSWERED_BY,
) -> Answered:
    """Record ``value`` (with ``reason``) as the answer to ``ask_id`` at ``now_ms`` (ms
    since the epoch), and settle its run when that was its last unanswered ask.

    Raises :class:`AskGone` when no waiting run holds the ask, and
    :class:`~council.asks.pending.AnswerRefused` when the value does not fit the ask
    (nothing is recorded then). Source: docs/evidence-and-asks.md §2.
    """
    found = find_ask(sessions, ask_id)
    if found is None:
        raise AskGone(ask_id)
    parked, ask = found
    answer = checked_answer(ask, value, reason, now_ms).model_copy(update={"by": by})
    sessions.answer(parked.record.session, ask.id, answer)
    left = len(pending_asks(sessions, parked))
    settled = finish(sessions, parked) if not left else None
    return Answered(
        run_id=parked.record.run_id, ask_id=ask.id, answer=answer, left=left, settled=settled
    )
