"""Costs from the roster's price table, and the roster's prices, limits and persona dirs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from council.errors import RosterError
from council.model.backend_result import Usage
from council.model.report import CouncilReport, ParticipantSummary
from council.roster import RateLimit, limit_key, limits_for, parse_limits, parse_roster
from council.round.cost import (
    CostSummary,
    Price,
    PriceTable,
    cost_usd,
    parse_prices,
    saved_usd,
    sum_costs,
    sum_savings,
)

HAWK = """
[[reviewers]]
id = "hawk"
backend = "openai"
model = "gpt-4.1"
"""

PRICES = PriceTable(
    prices={
        "openai:gpt-4.1": Price(input=2.0, output=8.0, cached_input=0.5),
        "gpt-4.1": Price(input=3.0, output=9.0, cached_input=3.0),
    }
)


def test_cost_bills_input_and_output_per_million_tokens() -> None:
    """1M input at $2 plus 0.5M output at $8 is $6."""
    usage = Usage(input=1_000_000, output=500_000, requests=3)
    assert cost_usd(usage, "openai", "gpt-4.1", PRICES) == pytest.approx(6.0)


def test_cached_input_is_billed_at_the_cached_price() -> None:
    """Of 1M input, the 400k cached are billed at $0.5, the 600k rest at $2."""
    usage = Usage(input=1_000_000, cached=400_000)
    assert cost_usd(usage, "openai", "gpt-4.1", PRICES) == pytest.approx(0.2 + 1.2)


def test_reasoning_is_part_of_output_and_not_billed_twice() -> None:
    """Reasoning tokens are already in output: 1M output of which 0.9M reasoning is $8."""
    usage = Usage(output=1_000_000, reasoning=900_000)
    assert cost_usd(usage, "openai", "gpt-4.1", PRICES) == pytest.approx(8.0)


def test_cached_count_above_input_is_held_to_input() -> None:
    """A provider reporting more cached than input tokens never makes input negative."""
    usage = Usage(input=100_000, cached=300_000)
    assert cost_usd(usage, "openai", "gpt-4.1", PRICES) == pytest.approx(0.05)


def test_backend_entry_wins_over_the_model_entry() -> None:
    """ "openai:gpt-4.1" prices openai; "gpt-4.1" prices the model on any other backend."""
    usage = Usage(input=1_000_000)
    assert cost_usd(usage, "openai", "gpt-4.1", PRICES) == pytest.approx(2.0)
    assert cost_usd(usage, "anthropic", "gpt-4.1", PRICES) == pytest.approx(3.0)


@pytest.mark.parametrize(("backend", "model"), [("openai", "gpt-5"), ("openai", None)])
def test_unpriced_model_has_no_cost(backend: str, model: str | None) -> None:
    """A model the table does not price costs None, never 0."""
    assert cost_usd(Usage(input=10, output=10), backend, model, PRICES) is None


@pytest.mark.parametrize(
    ("parts", "expected", "said"),
    [
        ([0.25, 0.5], CostSummary(0.75, True), "$0.7500"),
        ([0.25, None, 1.5], CostSummary(1.75, False), "at least $1.75"),
        ([None, None], CostSummary(None, False), "unknown"),
        ([], CostSummary(None, True), "$0"),
    ],
)
def test_sum_costs_says_whether_every_part_was_priced(
    parts: list[float | None], expected: CostSummary, said: str
) -> None:
    """A partly priced council gives the priced sum as a lower bound, flagged incomplete."""
    summary = sum_costs(parts)
    total, complete = summary
    assert (total, complete) == (pytest.approx(expected.total_usd), expected.complete)
    assert summary.describe() == said


def test_parse_prices_defaults_cached_input_to_input() -> None:
    """cached_input is optional and then costs what input costs; integers are accepted."""
    table = parse_prices({"m": {"input": 1, "output": 4}, "openai:n": {"input": 2, "output": 3}})
    assert table.price("anthropic", "m") == Price(input=1.0, output=4.0, cached_input=1.0)
    assert table.price("openai", "n") == Price(input=2.0, output=3.0, cached_input=2.0)


def test_parse_prices_reads_cache_write_and_defaults_it_to_input() -> None:
    """cache_write is read when written, and otherwise costs what input costs."""
    table = parse_prices(
        {"m": {"input": 3, "output": 15, "cache_write": 3.75}, "n": {"input": 2, "output": 3}}
    )
    assert table.price("anthropic", "m") == Price(
        input=3.0, output=15.0, cached_input=3.0, cache_write=3.75
    )
    assert table.price("openai", "n") == Price(
        input=2.0, output=3.0, cached_input=2.0, cache_write=2.0
    )


CLAUDE = PriceTable(
    prices={"anthropic:c": Price(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75)}
)


def test_cache_reads_and_writes_have_their_own_prices() -> None:
    """Of 1M input, 600k read from cache at $0.3, 300k written at $3.75, 100k at $3."""
    usage = Usage(input=1_000_000, cached=600_000, cache_write=300_000)
    assert cost_usd(usage, "anthropic", "c", CLAUDE) == pytest.approx(0.18 + 1.125 + 0.3)


def test_cache_writes_beyond_the_input_are_held_to_it() -> None:
    """Reads and writes above the input a provider reported never bill more input than it."""
    usage = Usage(input=100_000, cached=80_000, cache_write=900_000)
    assert cost_usd(usage, "anthropic", "c", CLAUDE) == pytest.approx(0.024 + 0.075)


def test_the_saving_is_the_full_input_price_minus_the_cost() -> None:
    """Cache reads save; writes that are not read back cost more than they save (a
    negative saving); nothing cached, or no price, has no saving to state."""
    read = Usage(input=1_000_000, cached=900_000)
    assert saved_usd(read, "anthropic", "c", CLAUDE) == pytest.approx(0.9 * (3.0 - 0.3))
    written = Usage(input=1_000_000, cache_write=1_000_000)
    assert saved_usd(written, "anthropic", "c", CLAUDE) == pytest.approx(3.0 - 3.75)
    assert saved_usd(Usage(input=1_000_000), "anthropic", "c", CLAUDE) is None
    assert saved_usd(read, "openai", "unpriced", CLAUDE) is None
    assert sum_savings([None, 1.5, -0.25]) == pytest.approx(1.25)
    assert sum_savings([None, None]) is None


_COUNTS = st.integers(min_value=0, max_value=10_000_000)
_RATES = st.floats(min_value=0, max_value=100, allow_nan=False)


@given(
    counts=st.tuples(_COUNTS, _COUNTS, _COUNTS, _COUNTS),
    rates=st.tuples(_RATES, _RATES, _RATES, _RATES),
)
def test_cost_plus_saving_is_the_cost_at_full_input_price(
    counts: tuple[int, int, int, int], rates: tuple[float, float, float, float]
) -> None:
    """For any usage and prices: cost + saving = the cost with every input token at the
    input price; the saving is never negative when reads and writes cost at most input."""
    total, cached, written, output = counts
    given_input, given_output, read_rate, write_rate = rates
    price = Price(
        input=given_input, output=given_output, cached_input=read_rate, cache_write=write_rate
    )
    table = PriceTable(prices={"m": price})
    usage = Usage(input=total, output=output, cached=cached, cache_write=written)
    full = cost_usd(Usage(input=total, output=output), "openai", "m", table)
    cost = cost_usd(usage, "openai", "m", table)
    saved = saved_usd(usage, "openai", "m", table)
    assert full is not None and cost is not None and cost >= 0
    if cached or written:
        assert saved is not None and cost + saved == pytest.approx(full, rel=1e-9, abs=1e-12)
        if read_rate <= given_input and write_rate <= given_input:
            assert saved >= -1e-12
    else:
        assert saved is None


def test_roster_reads_prices_limits_and_persona_dirs() -> None:
    """[prices], [limits] and [council] persona_dirs land on the Roster, checked."""
    roster = parse_roster(
        '[council]\npersona_dirs = ["personas", "/etc/council/roster/personas"]\n'
        '[prices."openai:gpt-4.1"]\ninput = 2.0\noutput = 8.0\ncached_input = 0.5\n'
        '[limits.openai]\nrpm = 500\n[limits."openai:gpt-4.1"]\ntpm = 30000\n' + HAWK,
        "council.toml",
    )
    assert roster.persona_dirs == ("personas", "/etc/council/roster/personas")
    assert roster.prices.price("openai", "gpt-4.1") == Price(
        input=2.0, output=8.0, cached_input=0.5
    )
    assert roster.limits == {"openai": RateLimit(rpm=500), "openai:gpt-4.1": RateLimit(tpm=30000)}


def test_roster_without_prices_or_limits_has_empty_ones() -> None:
    """A roster that writes neither table prices nothing and limits nothing."""
    roster = parse_roster(HAWK, "council.toml")
    assert roster.prices == PriceTable() and roster.limits == {} and roster.persona_dirs == ()


@pytest.mark.parametrize(
    ("toml", "path"),
    [
        ('[prices."openai:gpt-4.1"]\ninput = -1\noutput = 8\n', 'prices."openai:gpt-4.1".input'),
        ('[prices."openai:gpt-4.1"]\ninput = "2"\noutput = 8\n', 'prices."openai:gpt-4.1".input'),
        ('[prices."openai:gpt-4.1"]\ninput = 2\n', 'prices."openai:gpt-4.1".output'),
        ("[prices.m]\ninput = 2\noutput = 8\ncached_input = inf\n", "prices.m.cached_input"),
        ("[prices.m]\ninput = 2\noutput = 8\ncache_write = -1\n", "prices.m.cache_write"),
        ("[prices.m]\ninput = 2\noutput = true\n", "prices.m.output"),
        ("[prices.m]\ninput = 2\noutput = 8\ncache = 1\n", "prices.m.cache"),
        ("[prices]\nm = 3\n", "prices.m"),
        ("prices = 3\n", "prices"),
        ("[limits.openai]\nrpm = 0\n", "limits.openai.rpm"),
        ("[limits.openai]\nrpm = 1.5\n", "limits.openai.rpm"),
        ('[limits."openai:m"]\ntpm = -5\n', 'limits."openai:m".tpm'),
        ("[limits.openai]\nrps = 5\n", "limits.openai.rps"),
        ("[limits.openai]\n", "limits.openai"),
        ("[limits.command]\nrpm = 5\n", "limits.command"),
        ('[limits."openai:"]\nrpm = 5\n', 'limits."openai:"'),
        ("[limits]\nopenai = 5\n", "limits.openai"),
        ("[council]\npersona_dirs = [1]\n", "council.persona_dirs[0]"),
        ('[council]\npersona_dirs = "personas"\n', "council.persona_dirs"),
    ],
)
def test_bad_prices_limits_and_dirs_are_refused_at_their_path(toml: str, path: str) -> None:
    """Every bad price, limit or persona dir is a RosterError naming its field path."""
    with pytest.raises(RosterError) as caught:
        parse_roster(toml + HAWK, "council.toml")
    assert caught.value.path == path


@pytest.mark.parametrize("persona", ["../secrets", "security.md", "a b"])
def test_persona_that_is_not_an_id_is_refused(persona: str) -> None:
    """A persona must be a charter file's name without .md: no dots, slashes or spaces."""
    with pytest.raises(RosterError) as caught:
        parse_roster(HAWK + f'persona = "{persona}"\n', "council.toml")
    assert caught.value.path == "reviewers[0].persona"


def test_limits_for_holds_a_model_to_its_own_and_its_provider_limit() -> None:
    """A model key collects its own limit and its backend's; unknown keys collect none."""
    limits = parse_limits({"openai": {"rpm": 5}, "openai:gpt-4.1": {"tpm": 9}})
    assert [n for n, _ in limits_for(limit_key("openai", "gpt-4.1"), limits)] == [
        "openai:gpt-4.1",
        "openai",
    ]
    assert [n for n, _ in limits_for(limit_key("openai", None), limits)] == ["openai"]
    assert limits_for("anthropic:claude-sonnet-4", limits) == []


def test_report_cost_fields_are_optional_and_round_trip() -> None:
    """Old reports read without cost fields; new ones keep usage and cost per participant."""
    old = CouncilReport.model_validate({"run_id": "r", "session": "s", "status": "settled"})
    assert old.cost_usd is None and old.cost_complete is True
    hawk = ParticipantSummary(
        id="hawk", backend="openai", state="answered", usage=Usage(input=5), cost_usd=0.01
    )
    report = CouncilReport(
        run_id="r",
        session="s",
        status="settled",
        participants=(hawk,),
        cost_usd=0.01,
        cost_complete=False,
    )
    assert CouncilReport.model_validate_json(report.model_dump_json()) == report
