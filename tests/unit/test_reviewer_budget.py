"""A model reviewer under the round's cost budget, against the fake OpenAI server: a
request that does not fit is not sent (stop ``budget``), each one is reserved before and
settled after, a provider that reports no usage is counted at the estimate (a note), the
round spending most of its budget asks for the answer once, and a budget that cannot be
checked sends nothing. The arithmetic and the Redis ledger: tests/unit/test_cost_budget.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import pytest

from council.model.backend_result import ReviewResult, Usage
from council.round.budget import Ledger
from reviewers.models.spending import BUDGET_WRAP_UP, Spending, output_cap
from reviewers.models.stream_watch import Activity, StreamedTurn
from tests.fakes import FakeOpenAI, Scenario
from tests.fakes.review import BACKENDS, KEY, participant, request

OPENAI = BACKENDS[0]
ANSWER = json.dumps({"findings": []})


@dataclass
class BookBudget:
    """A :class:`reviewers.base.CostBudget` on an in-memory :class:`Ledger`, in tokens
    (one token = one unit), recording every call."""

    limit: int
    wrap: bool = False
    broken: bool = False
    book: Ledger = field(init=False)
    reserved: list[tuple[int, int]] = field(default_factory=list)
    settled: list[Usage] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.book = Ledger(limit=self.limit)

    def reserve(self, input_tokens: int, output_tokens: int) -> str | None:
        if self.broken:
            raise ConnectionError("redis is gone")
        self.reserved.append((input_tokens, output_tokens))
        name = f"r{len(self.reserved)}"
        return name if self.book.reserve(name, input_tokens + output_tokens) else None

    def settle(self, reservation: str, usage: Usage) -> None:
        self.settled.append(usage)
        self.book.settle(reservation, usage.input + usage.output)

    def wrap_up_due(self) -> bool:
        return self.wrap


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY) as fake:
        yield fake


def _review(server: FakeOpenAI, budget: BookBudget, **options: object) -> ReviewResult:
    who = participant(OPENAI, server, max_output_tokens=100, **options)
    return OPENAI.reviewer().review(replace(request(who), budget=budget))


def test_a_request_the_budget_cannot_afford_is_not_sent(server: FakeOpenAI) -> None:
    """A positive budget no request fits in: the reviewer stops as budget, nothing sent."""
    server.script(Scenario(text=ANSWER))
    budget = BookBudget(limit=50)  # the output cap alone is 100 tokens
    result = _review(server, budget)
    assert result.stop is not None and result.stop.limit == "budget"
    assert result.failure is None
    assert server.count == 0
    assert budget.book.spent == 0 and budget.book.held == {}


def test_each_request_is_reserved_at_its_estimate_and_settled_to_its_usage(
    server: FakeOpenAI,
) -> None:
    server.script(Scenario(text=ANSWER, input_tokens=70, output_tokens=30))
    budget = BookBudget(limit=100_000)
    result = _review(server, budget)
    assert result.stop is None and result.answer == ANSWER
    ((input_tokens, output_tokens),) = budget.reserved
    assert output_tokens == 100 and input_tokens > 0  # the cap; the prompt's estimate
    assert budget.settled == [Usage(input=70, output=30, requests=1)]
    assert budget.book.spent == 100 and budget.book.held == {}


def test_a_provider_that_reports_no_usage_is_counted_at_the_estimate(server: FakeOpenAI) -> None:
    server.script(Scenario(text=ANSWER, input_tokens=0, output_tokens=0))
    budget = BookBudget(limit=100_000)
    result = _review(server, budget)
    ((input_tokens, output_tokens),) = budget.reserved
    assert budget.settled == [Usage(input=input_tokens, output=output_tokens, requests=1)]
    notes = result.notes
    assert any("reported no token usage" in note for note in notes), notes


def test_a_request_refused_before_any_token_costs_nothing(server: FakeOpenAI) -> None:
    """A 400 streams nothing: its reservation is released, nothing counted."""
    server.script(Scenario.error(400, "bad request"))
    budget = BookBudget(limit=100_000)
    result = _review(server, budget)
    assert result.failure is not None
    assert budget.settled == [Usage(requests=1)]
    assert budget.book.spent == 0 and budget.book.held == {}


def test_a_round_spending_most_of_its_budget_asks_for_the_answer_once(
    server: FakeOpenAI,
) -> None:
    server.script(Scenario(text=ANSWER))
    budget = BookBudget(limit=100_000, wrap=True)
    result = _review(server, budget, tools=["read_file"])
    assert result.stop is None and result.answer == ANSWER
    assert server.count == 1
    sent = OPENAI.texts(server.requests[0].body, "user")
    assert sent[-1] == BUDGET_WRAP_UP
    notes = result.notes
    assert any("spent most of its cost budget" in note for note in notes), notes


def test_a_budget_that_cannot_be_checked_sends_nothing(server: FakeOpenAI) -> None:
    """Fail closed: a broken store is a failure that says why, and no request went out."""
    server.script(Scenario(text=ANSWER))
    result = _review(server, BookBudget(limit=100_000, broken=True))
    failure = result.failure
    assert failure is not None and "cost budget could not be checked" in failure
    assert server.count == 0


def test_usage_reported_twice_in_one_stream_is_counted_once_with_a_note(
    server: FakeOpenAI,
) -> None:
    turn = StreamedTurn(Activity())
    for _ in range(2):
        turn.set_usage(input=10, output=5, cached=0, reasoning=0)
    turn.finished = True
    assert turn.usage == Usage(input=10, output=5, requests=1) and turn.usage_repeats == 1
    notes: list[str] = []
    budget = BookBudget(limit=1000)
    who = participant(OPENAI, server, max_output_tokens=20)
    spending = Spending(budget, who, notes.append)

    async def go() -> None:
        await spending.reserve(50)
        await spending.settle(turn)
        await spending.settle(turn)  # settled already: nothing more

    asyncio.run(go())
    assert budget.reserved == [(30, 20)]
    assert budget.settled == [Usage(input=10, output=5, requests=1)]
    assert budget.book.spent == 15
    assert any("more than once in one stream" in note for note in notes), notes


def test_the_output_cap_of_each_backend(server: FakeOpenAI) -> None:
    """Anthropic always sends max_tokens; OpenAI only when max_output_tokens is set."""
    fake = server
    assert output_cap(participant(OPENAI, fake)) is None
    assert output_cap(participant(OPENAI, fake, max_output_tokens=7)) == 7
    assert output_cap(participant(BACKENDS[1], fake, max_output_tokens=9)) == 9
    assert (output_cap(participant(BACKENDS[1], fake)) or 0) > 0
