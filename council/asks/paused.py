"""A model reviewer paused on its question to a person: what it had said, and what the
answer continues.

A reviewer whose ``ask_human`` call its door accepts
(:func:`~council.asks.ask.checked_ask`) does not wait in a worker for hours: its
conversation stops at that call, kept as a :class:`Paused` value (the provider's messages
through the asking turn, that turn's other replies, turns, texts, usage, notes) stored
with the run (``run:{run}:pause:{participant}``). Once a person answered, the participant
is dispatched again and goes on, the answer being the pending call's reply
(:func:`tool_reply`); :func:`ask_id` is stable for the same pause.
Pure. Source: docs/evidence-and-asks.md §2.
"""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from council.asks.ask import Ask
from council.asks.pending import Answer, PendingAsk
from council.model.backend_result import Usage

ASKS_PER_RUN = 5
"""The most questions one reviewer may put to a person in one run: past it, ``ask_human``
and ``council ask --question`` are refused and the reviewer decides on its own (a
reviewer asking forever would keep a pull request waiting forever)."""


def too_many_asks(resume: Resumption | None) -> str | None:
    """Why a reviewer going on from ``resume`` may not ask again (it has put
    :data:`ASKS_PER_RUN` questions in this run), or None."""
    if resume is None or resume.paused.asked < ASKS_PER_RUN:
        return None
    return (
        f"this reviewer has already put {resume.paused.asked} questions to a person in this "
        f"run, the most it may ({ASKS_PER_RUN}): decide without asking, and say what you "
        "would have asked in the finding"
    )


class Paused(BaseModel):
    """A model reviewer's conversation stopped at an accepted ``ask_human`` call.

    * ``ask``: the checked question and component.
    * ``call_id``: the provider's id of the ``ask_human`` call whose reply is pending.
    * ``messages``: the provider's own message list (its wire shape, JSON), ending with
      the assistant turn that called ``ask_human``.
    * ``replies``: that turn's tool calls in call order, each ``[call_id, reply]``; the
      reply is null for the ask (filled with the answer on resume).
    * ``turns``: requests the tool loop had made (the resumed loop counts on from it).
    * ``texts``: the text of each finished turn so far (the answer falls back on them).
    * ``usage``, ``notes``, ``journal_entries``: what the first leg used, said and
      recorded, added to the resumed leg's.
    * ``asked``: the questions it has put in this run, this one included.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    ask: Ask
    call_id: str = Field(min_length=1)
    messages: list[JsonValue]
    replies: list[tuple[str, str | None]]
    turns: int = Field(default=1, ge=1)
    texts: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    notes: list[str] = Field(default_factory=list)
    journal_entries: int = 0
    asked: int = Field(default=1, ge=1)
    """How many questions the participant has put to a person in this run, this one
    included (a reviewer may ask at most :data:`ASKS_PER_RUN`)."""

    @property
    def key(self) -> str:
        """What names this pause among the reviewer's pauses in a run: the turn and the
        call (a provider may reuse a call id on a later turn; the turn never repeats)."""
        return f"{self.turns}:{self.call_id}"

    def answered_replies(self, answer: Answer) -> list[tuple[str, str]]:
        """The turn's tool replies in call order, the ask's being :func:`tool_reply`."""
        text = tool_reply(answer)
        return [(cid, text if reply is None else reply) for cid, reply in self.replies]


class Resumption(BaseModel):
    """What a paused reviewer is given to go on: its pause and the person's answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    paused: Paused
    answer: Answer


def ask_id(run_id: str, participant: str, key: str) -> str:
    """The id of a reviewer's ask (``key``: :attr:`Paused.key`): stable for one pause (a
    redelivered task stores the same question once), unguessable enough to be typed
    rather than browsed."""
    digest = hashlib.sha256(f"{run_id}:{participant}:{key}".encode()).hexdigest()[:16]
    return f"ask_{digest}"


def pending(run_id: str, participant: str, paused: Paused) -> PendingAsk:
    """The question ``participant``'s pause puts to a person, as the run's pending ask."""
    return PendingAsk(
        id=ask_id(run_id, participant, paused.key),
        run=run_id,
        ask=paused.ask,
        participant=participant,
    )


def tool_reply(answer: Answer) -> str:
    """The reply the model reads for its ``ask_human`` call: a JSON object
    ``{"answer": VALUE}`` plus ``"reason"`` when the person gave one."""
    shown: dict[str, str] = {"answer": answer.value}
    if answer.reason:
        shown["reason"] = answer.reason
    return json.dumps(shown, ensure_ascii=False)
