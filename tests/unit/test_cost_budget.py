"""A round's cost budget: the roster's ``max_cost_usd``, the reservation arithmetic
(:mod:`council.round.budget`) and its Redis ledger (:mod:`workers.stores.budget`) on
fakeredis, with hypothesis properties over interleaved reservations of many reviewers.
The whole council under a budget: tests/integration/test_cost_budget.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import fakeredis
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from council.errors import RosterError
from council.model.backend_result import Stop, Usage
from council.model.participant import Participant
from council.model.report import BudgetSpend
from council.roster import parse_roster
from council.round.budget import (
    Ledger,
    admits,
    parse_max_cost,
    request_estimate_usd,
    to_nanos,
    to_usd,
    unpriced,
    wrap_up_due,
)
from council.round.cost import Price, parse_prices
from workers.stores.budget import RedisBudget
from workers.stores.keys import Keys

REVIEWER = '[[reviewers]]\nid = "r"\nbackend = "openai"\nmodel = "m"\n'


@pytest.fixture
def client() -> Iterator[Any]:
    """An in-process fakeredis client (with Lua)."""
    yield fakeredis.FakeRedis(server=fakeredis.FakeServer())


# -- the roster ------------------------------------------------------------------------


def test_the_roster_reads_max_cost_usd_and_no_budget_when_absent() -> None:
    assert parse_roster(f"[council]\nmax_cost_usd = 2.5\n{REVIEWER}", "t.toml").max_cost_usd == 2.5
    assert parse_roster(f"[council]\nmax_cost_usd = 3\n{REVIEWER}", "t.toml").max_cost_usd == 3.0
    assert parse_roster(REVIEWER, "t.toml").max_cost_usd is None


@pytest.mark.parametrize("value", ["0", "-1", "0.0", '"2.5"', "true", "inf", "nan"])
def test_a_budget_that_is_not_a_positive_number_is_refused_naming_the_field(value: str) -> None:
    """Zero or negative would refuse every request; text, a flag or inf is a slip."""
    with pytest.raises(RosterError) as refused:
        parse_roster(f"[council]\nmax_cost_usd = {value}\n{REVIEWER}", "t.toml")
    assert refused.value.path == "council.max_cost_usd"
    assert "max_cost_usd as a positive number of US dollars" in str(refused.value)


def test_parse_max_cost_keeps_a_positive_amount() -> None:
    assert parse_max_cost(0.01) == 0.01


# -- the arithmetic --------------------------------------------------------------------


def test_nanos_round_up_so_an_estimate_never_shrinks() -> None:
    assert to_nanos(1.2) == 1_200_000_000
    assert to_nanos(1e-10) == 1  # a tenth of a nano-dollar still holds one
    assert to_nanos(0.0) == 0
    assert to_usd(2_500_000_000) == 2.5


def test_a_request_is_estimated_at_input_price_plus_its_output_cap() -> None:
    """Input at the uncached price (the cache may not serve it), the cap at output."""
    price = Price(input=2.0, output=8.0, cached_input=0.5)
    assert request_estimate_usd(price, 1_000_000, 500_000) == pytest.approx(2.0 + 4.0)
    assert request_estimate_usd(price, -5, 0) == 0.0


def test_admission_is_spent_plus_held_plus_estimate_within_the_limit() -> None:
    assert admits(10, 4, 3, 3)
    assert not admits(10, 4, 3, 4)
    assert not admits(0, 0, 0, 1)
    assert admits(0, 0, 0, 0)  # a free request fits any budget


def test_wrap_up_is_due_at_eighty_percent_spent() -> None:
    assert not wrap_up_due(100, 79)
    assert wrap_up_due(100, 80)


def test_unpriced_names_model_participants_without_a_price_only() -> None:
    prices = parse_prices(
        {"openai:gpt-a": {"input": 1, "output": 2}, "gpt-b": {"input": 1, "output": 2}}
    )
    people = [
        Participant.model_validate({"id": "a", "backend": "openai", "model": "gpt-a"}),
        Participant.model_validate({"id": "b", "backend": "anthropic", "model": "gpt-b"}),
        Participant.model_validate({"id": "c", "backend": "openai", "model": "gpt-c"}),
        Participant.model_validate({"id": "d", "backend": "replay"}),
        # A recording's model name: a replay reviewer sends no request, costs nothing.
        Participant.model_validate({"id": "e", "backend": "replay", "model": "recorded"}),
    ]
    assert unpriced(people, prices) == ["c"]


def test_a_ledger_settles_a_reservation_once() -> None:
    """Usage reported twice for one request is counted once."""
    book = Ledger(limit=10)
    assert book.reserve("a", 6)
    assert not book.reserve("b", 5)  # 6 held + 5 > 10
    assert book.settle("a", 4)
    assert not book.settle("a", 4)
    assert book.spent == 4 and book.held == {}
    assert book.reserve("b", 5)  # 4 spent + 5 <= 10


# -- the Redis ledger ------------------------------------------------------------------


def test_the_redis_budget_reserves_settles_once_and_reports_its_spend(client: Any) -> None:
    budget = RedisBudget(client, Keys(), "run1", 2.5)
    first = budget.reserve(to_nanos(1.2))
    second = budget.reserve(to_nanos(1.2))
    assert first is not None and second is not None
    assert budget.reserve(to_nanos(1.2)) is None  # 3.6 > 2.5: not sent
    assert budget.settle(first, to_nanos(1.0), "ant")
    assert not budget.settle(first, to_nanos(1.0), "ant")  # counted once
    assert budget.spend(("cat",)) == BudgetSpend(
        max_cost_usd=2.5, spent_usd=1.0, held_usd=1.2, stopped=("cat",)
    )
    assert client.hget(Keys().run_budget("run1"), "spent:ant") == b"1000000000"
    assert budget.reserve(to_nanos(0.3)) is not None  # 1.0 + 1.2 + 0.3 = 2.5 fits exactly


def test_a_budget_of_another_run_is_its_own(client: Any) -> None:
    one, two = RedisBudget(client, Keys(), "r1", 1.0), RedisBudget(client, Keys(), "r2", 1.0)
    assert one.reserve(to_nanos(1.0)) is not None
    assert one.reserve(1) is None
    assert two.reserve(to_nanos(1.0)) is not None


def test_a_participant_budget_prices_tokens_and_refuses_an_unpriced_model(client: Any) -> None:
    prices = parse_prices({"openai:m": {"input": 1.0, "output": 1000.0}})
    budget = RedisBudget(client, Keys(), "run1", 2.0)
    who = Participant.model_validate({"id": "r", "backend": "openai", "model": "m"})
    bound = budget.for_participant(who, prices)
    held = bound.reserve(input_tokens=1000, output_tokens=1000)  # $0.001 + $1.00
    assert held is not None
    assert budget.spend().held_usd == pytest.approx(1.001)
    bound.settle(held, Usage(input=1000, output=500, requests=1))
    assert budget.spend().spent_usd == pytest.approx(0.501)
    assert not bound.wrap_up_due()  # 0.501 of 2.0
    stranger = Participant.model_validate({"id": "s", "backend": "openai", "model": "other"})
    with pytest.raises(LookupError, match="no price for openai:other"):
        budget.for_participant(stranger, prices).reserve(1, 1)


def test_a_budget_must_be_positive(client: Any) -> None:
    with pytest.raises(ValueError, match="above \\$0"):
        RedisBudget(client, Keys(), "run1", 0.0)


# -- properties ------------------------------------------------------------------------

_STEPS = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=5),  # which of six reviewers acts
        st.integers(min_value=0, max_value=400),  # its next request's estimate
        st.floats(min_value=0.0, max_value=2.0),  # what the request used, × estimate
    ),
    max_size=60,
)


def _play(steps: list[tuple[int, int, float]], reserve: Any, settle: Any) -> tuple[int, int]:
    """Six reviewers, interleaved: each step a reviewer without a request in flight
    reserves one, one with a request settles it. Returns (requests admitted, overrun):
    the sum of what admitted requests used above their estimates."""
    flying: dict[int, tuple[str, int]] = {}
    admitted = overrun = 0
    for n, (who, estimate, ratio) in enumerate(steps):
        if who in flying:
            reservation, actual = flying.pop(who)
            settle(reservation, actual)
            continue
        reservation = f"{who}-{n}"
        if reserve(reservation, estimate):
            actual = int(estimate * ratio)
            flying[who] = (reservation, actual)
            admitted += 1
            overrun += max(0, actual - estimate)
    for reservation, actual in flying.values():
        settle(reservation, actual)
    return admitted, overrun


@settings(max_examples=300, deadline=None)
@given(limit=st.integers(min_value=1, max_value=1000), steps=_STEPS)
def test_interleaved_reservations_never_overspend_by_more_than_the_overruns(
    limit: int, steps: list[tuple[int, int, float]]
) -> None:
    """At every step spent + held stays within the budget plus what admitted requests
    used beyond their estimates; with honest estimates (no overrun) spend never passes
    the budget at all, so never by more than one request's estimate."""
    book = Ledger(limit=limit)
    seen_overrun = 0

    def reserve(reservation: str, estimate: int) -> bool:
        ok = book.reserve(reservation, estimate)
        assert book.spent + sum(book.held.values()) <= limit + seen_overrun
        return ok

    def settle(reservation: str, actual: int) -> None:
        nonlocal seen_overrun
        estimate = book.held[reservation]
        seen_overrun += max(0, actual - estimate)
        book.settle(reservation, actual)
        assert book.spent + sum(book.held.values()) <= limit + seen_overrun

    _, overrun = _play(steps, reserve, settle)
    assert book.held == {}
    assert book.spent <= limit + overrun
    if overrun == 0:
        assert book.spent <= limit


@settings(max_examples=100, deadline=None)
@given(limit=st.integers(min_value=1, max_value=1000), steps=_STEPS)
def test_the_redis_ledger_decides_as_the_arithmetic_does(
    limit: int, steps: list[tuple[int, int, float]]
) -> None:
    """The Lua scripts on (fake)redis admit and count exactly as :class:`Ledger`."""
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    budget = RedisBudget(client, Keys(), "run", to_usd(limit))
    book = Ledger(limit=limit)
    ids: dict[str, str] = {}

    def reserve(reservation: str, estimate: int) -> bool:
        held = budget.reserve(estimate)
        assert (held is not None) == book.reserve(reservation, estimate)
        if held is not None:
            ids[reservation] = held
        return held is not None

    def settle(reservation: str, actual: int) -> None:
        assert budget.settle(ids[reservation], actual, "p") == book.settle(reservation, actual)
        assert not budget.settle(ids[reservation], actual, "p")  # twice: counted once

    _play(steps, reserve, settle)
    assert budget.spend().spent_usd == pytest.approx(to_usd(book.spent))
    assert budget.spend().held_usd == 0


def test_threads_reserving_at_once_never_overspend(client: Any) -> None:
    """Sixteen reviewer threads, each reserving $0.30 requests until refused, settling
    each at its estimate: exactly what the budget affords was admitted."""
    budget = RedisBudget(client, Keys(), "run", 10.0)
    admitted: list[int] = []
    lock = threading.Lock()

    def reviewer() -> None:
        while (held := budget.reserve(to_nanos(0.3))) is not None:
            budget.settle(held, to_nanos(0.3), "p")
            with lock:
                admitted.append(1)

    threads = [threading.Thread(target=reviewer) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(admitted) == 33  # 33 × $0.30 = $9.90; a 34th would pass $10
    assert budget.spend().spent_usd == pytest.approx(9.9)


def test_a_budget_stop_is_named_for_people() -> None:
    assert Stop(limit="budget").describe() == "the round's cost budget (max_cost_usd)"
