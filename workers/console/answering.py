"""Answering an ask from the console: ``council answer``, then ``council resume`` when done.

The ask is found by its id (:func:`workers.coordinator.resume.find_ask`), the value checked
against its component (:func:`council.asks.pending.checked_answer`), recorded in the session
(:meth:`~workers.stores.sessions.SessionStore.answer`), and the run settled once no ask is
left (:func:`workers.coordinator.resume.finish`). A run waiting on its reviewers' own
questions stays waiting: the next ``council review`` of its session (or ``council resume
RUN``) sends them again, which the console does not do. Nothing here decides anything the
CLI would decide differently.

Source: docs/evidence-and-asks.md §2.
"""

from __future__ import annotations

from dataclasses import dataclass

from council.asks.pending import Answer, checked_answer
from council.model.report import CouncilReport
from workers.coordinator.resume import find_ask, finish, pending_asks
from workers.stores.artifacts import ArtifactStore
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
    artifacts: ArtifactStore | None = None,
    against: str | None = None,
) -> Answered:
    """Record ``value`` (with ``reason``) as the answer to ``ask_id`` at ``now_ms`` (ms
    since the epoch), and settle its run when that was its last unanswered ask (a run
    waiting on its reviewers' questions stays waiting: see the module docstring).
    ``artifacts``: the run's artifact store, where a ``choice``'s options behind its
    ``props_ref`` are read (None: only inline options are checked); ``against`` the
    artifact ref the page rendered the question from (an answer against another one is
    refused as stale).

    Raises :class:`AskGone` when no waiting run holds the ask, and
    :class:`~council.asks.pending.AnswerRefused` when the value does not fit the ask
    (nothing is recorded then). Source: docs/evidence-and-asks.md §2.
    """
    found = find_ask(sessions, ask_id)
    if found is None:
        raise AskGone(ask_id)
    parked, ask = found
    props = (
        _stored_props(artifacts, ask.run, ask.ask.component.props_ref)
        if (artifacts is not None and ask.ask.component is not None and ask.ask.component.props_ref)
        else None
    )
    answer = checked_answer(ask, value, reason, now_ms, props, against).model_copy(
        update={"by": by}
    )
    sessions.answer(parked.record.session, ask.id, answer)
    left = len(pending_asks(sessions, parked))
    settled = finish(sessions, parked) if not left else None  # None: reviewers go on later
    return Answered(
        run_id=parked.record.run_id, ask_id=ask.id, answer=answer, left=left, settled=settled
    )


def _stored_props(artifacts: ArtifactStore, run_id: str, ref: str) -> dict[str, object] | None:
    """The JSON object the artifact ``ref`` of ``run_id`` holds, or None."""
    artifact = artifacts.get(run_id, ref)
    value = artifact.value() if artifact is not None and artifact.kind == "json" else None
    return dict(value) if isinstance(value, dict) else None
