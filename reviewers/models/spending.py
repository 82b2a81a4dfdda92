"""One model review's side of the round's cost budget (``max_cost_usd``).

Before each request the conversation reserves its estimate (the rate limiter's token
estimate, split into the input and the output cap); a request that does not fit is not
sent and the review stops as ``budget``. After it, the reservation is settled to the
provider's usage: a request the provider reported no usage for is counted at its estimate
(a note says so), one refused before any token streamed at nothing. Once the round has spent
most of the budget the review is asked, once, to wrap up. A budget store that cannot be
reached fails the review before anything is sent (fail closed).
Source: docs/guide.md "A cost budget", reviewers/base.py (``CostBudget``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from council.model.backend_result import StopLimit, Usage
from council.model.participant import Participant
from reviewers.base import CostBudget
from reviewers.models.stream_watch import StreamedTurn

BUDGET_WRAP_UP = (
    "The review's cost budget is nearly spent. Stop investigating and answer now, in the "
    'answer contract, with what you already have: one JSON object {"findings": [...]} '
    '({"findings": []} when you have nothing to report). Do not call any more tools.'
)
"""The wrap-up turn's message when the round has spent most of its budget."""


def output_cap(participant: Participant) -> int | None:
    """The most output tokens one request of ``participant`` may use: ``max_tokens``
    for ``anthropic`` (always set), ``max_output_tokens`` otherwise (None: no cap, so
    a request cannot be estimated and a budget refuses the reviewer up front)."""
    if participant.backend == "anthropic":
        # Imported here: the anthropic module imports the conversation, which imports this.
        from reviewers.models.anthropic_messages import max_tokens_of

        return max_tokens_of(participant)
    cap = participant.options.get("max_output_tokens")
    return int(cap) if cap is not None else None


class Unaffordable(Exception):
    """A request was not sent: ``limit`` ``budget`` (it did not fit), or ``failure``
    (the budget could not be checked)."""

    def __init__(self, limit: StopLimit | None, failure: str | None = None) -> None:
        super().__init__(failure or "over the cost budget")
        self.limit, self.failure = limit, failure


@dataclass(frozen=True)
class _Held:
    """A reservation: its id, and the tokens it was estimated at (input, output cap)."""

    reservation: str
    input: int
    output: int


class Spending:
    """The budget of one review (``budget`` None: no budget, every call a no-op).

    ``note`` adds a sentence to the review's notes. One request at a time: the
    conversation reserves, sends, settles, then the next.
    """

    def __init__(
        self, budget: CostBudget | None, participant: Participant, note: Callable[[str], None]
    ) -> None:
        self.budget, self.note = budget, note
        self.cap = output_cap(participant) or 0
        self.held: _Held | None = None
        self.asked_to_wrap_up = False
        self.said: set[str] = set()

    async def reserve(self, estimate: int) -> None:
        """Reserve the next request, estimated at ``estimate`` tokens (input plus output
        cap). Raises :class:`Unaffordable` when it must not be sent."""
        if self.budget is None:
            return
        output = min(self.cap, max(estimate, 0))
        input_tokens = max(estimate, 0) - output
        try:
            reservation = await asyncio.to_thread(self.budget.reserve, input_tokens, output)
        except Exception as error:  # fail closed: no request the budget did not see
            raise Unaffordable(
                None,
                f"the round's cost budget could not be checked ({type(error).__name__}), "
                "so no request was sent",
            ) from error
        if reservation is None:
            raise Unaffordable("budget")
        self.held = _Held(reservation, input_tokens, output)

    async def release(self) -> None:
        """Give back a reservation whose request was not sent (a clock fired first)."""
        await self._settle(Usage())

    async def settle(self, turn: StreamedTurn) -> None:
        """Settle the reservation of the request ``turn`` made to what it used."""
        held = self.held
        if held is None:
            return
        used = turn.usage
        if used.input == 0 and used.output == 0:
            streamed = turn.finished or turn.activity.first is not None
            if streamed:  # billed, but not said: count the estimate
                used = Usage(input=held.input, output=held.output, requests=1)
                self._once(
                    "the provider reported no token usage for a request; the cost budget "
                    f"counted it at its estimate ({held.input} input, {held.output} output "
                    "tokens), as any other such request of this review"
                )
        if turn.usage_repeats:
            self._once(
                "the provider reported a request's usage more than once in one stream; "
                "it was counted once"
            )
        await self._settle(used)

    async def _settle(self, used: Usage) -> None:
        held, self.held = self.held, None
        if held is None or self.budget is None:
            return
        try:
            await asyncio.to_thread(self.budget.settle, held.reservation, used)
        except Exception as error:  # the estimate stays held: never under-counted
            self._once(
                f"a request's cost could not be settled on the round's budget "
                f"({type(error).__name__}); its estimate stays counted"
            )

    async def wrap_up_due(self) -> bool:
        """Whether to ask for the answer now: true once, when the round has spent most
        of its budget. A store that cannot be read says no (the next reserve decides)."""
        if self.budget is None or self.asked_to_wrap_up:
            return False
        try:
            due = await asyncio.to_thread(self.budget.wrap_up_due)
        except Exception:  # the reservation that follows fails closed
            return False
        self.asked_to_wrap_up = due
        return due

    def _once(self, text: str) -> None:
        if text not in self.said:
            self.said.add(text)
            self.note(text)
