"""Cost in the report: per participant and in total, and "at least" when partly priced."""

from __future__ import annotations

from council.model.backend_result import Usage
from council.model.findings import Harvest
from council.model.participant import Participant
from council.rendering import render_markdown
from council.round.cost import PriceTable, parse_prices
from council.round.filing import RoundFacts, conclude_round
from council.round.outcome import ParticipantOutcome

USAGE = Usage(input=1_000_000, output=100_000, requests=1)


def _conclude(prices: PriceTable, usage: Usage = USAGE) -> str:
    people = [
        Participant(id="gpt", backend="openai", model="m1"),
        Participant(id="claude", backend="anthropic", model="m2"),
        Participant(id="ruff", backend="sarif", options={"program": "ruff"}),
    ]
    outcomes = {
        p.id: ParticipantOutcome(
            participant=p.id,
            status="answered",
            harvest=Harvest(),
            usage=usage if p.backend != "sarif" else None,
        )
        for p in people
    }
    _, report = conclude_round(
        RoundFacts(run_id="r", session="s", prices=prices),
        people,
        outcomes,
        1,
        status="settled",
        settled_ms=0,
    )
    assert report.participants[2].usage is None and report.participants[2].cost_usd is None
    return render_markdown(report)


def test_fully_priced_council_states_its_cost() -> None:
    """Every model priced: per-participant costs and an exact total."""
    prices = parse_prices(
        {"openai:m1": {"input": 2.0, "output": 10.0}, "m2": {"input": 3.0, "output": 15.0}}
    )
    text = _conclude(prices)
    assert "**Cost:** $7.50" in text  # gpt 2 + 1, claude 3 + 1.5
    assert "| $3.00 |" in text and "| $4.50 |" in text
    assert "1000000 / 100000" in text


def test_partly_priced_council_says_at_least() -> None:
    """One model unpriced: the total is a lower bound and says so."""
    text = _conclude(parse_prices({"openai:m1": {"input": 2.0, "output": 10.0}}))
    assert "**Cost:** at least $3.00" in text
    assert "unpriced" in text


def test_unpriced_council_says_unknown() -> None:
    """No model priced: the cost is unknown, not zero."""
    assert "**Cost:** unknown" in _conclude(PriceTable())


def test_a_council_without_cache_hits_says_nothing_of_caches() -> None:
    """No token read from or written to a cache: no saving, no prompt-cache line."""
    text = _conclude(parse_prices({"m2": {"input": 3.0, "output": 15.0}}))
    assert "Prompt cache" not in text and "saved" not in text and "cached" not in text


def test_cache_hits_are_counted_and_their_saving_stated() -> None:
    """Each participant's cached input is named beside its tokens and its saving beside
    its cost; the round says the cached share and the total saving, "on the priced
    models" when some are unpriced."""
    cached = Usage(input=1_000_000, output=100_000, cached=750_000, requests=2)
    prices = parse_prices({"m2": {"input": 3.0, "output": 15.0, "cached_input": 0.3}})
    text = _conclude(prices, cached)
    # claude: 250k x $3 + 750k x $0.3 + 100k x $15 = $2.475; full price $4.50
    assert "| 1000000 (750000 cached) / 100000 | $2.48 (saved $2.02) |" in text
    assert "| 1000000 (750000 cached) / 100000 | unpriced |" in text
    assert (
        "**Prompt cache:** 75.0% of the input tokens read from cache (1500000 of 2000000); "
        "saved $2.02 on the priced models." in text
    )
