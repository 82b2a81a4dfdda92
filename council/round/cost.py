"""What a model reviewer's tokens cost, from the roster's price table, in US dollars.

``[prices."<backend>:<model>"]`` (or ``[prices."<model>"]``: that model on any backend),
in USD per million tokens as providers publish them: ``input`` (not served from the
cache), ``output`` (reasoning included), ``cached_input`` (read from the provider's prompt
cache; default: ``input``), ``cache_write`` (written to it; default: ``input``). A model
without a price has no cost (None), never a cost of 0: a report with some participants
unpriced says "at least" (:func:`sum_costs`). What the cache saved is the same usage at
the full input price minus its cost (:func:`saved_usd`). Pure.
Source: docs/architecture.md "Observability" (``cost_usd`` on every reviewer line).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, model_validator

from council.errors import RosterError

if TYPE_CHECKING:
    from council.model.backend_result import Usage

PER_TOKENS = 1_000_000
"""Prices are per this many tokens (one million), as providers publish them."""

PRICE_KEYS: tuple[str, ...] = ("input", "output", "cached_input", "cache_write")
"""Keys of one ``[prices."..."]`` table."""


class Price(BaseModel):
    """One model's prices, in USD per million tokens (:data:`PER_TOKENS`).

    ``cached_input`` is what the provider bills for input tokens served from its prompt
    cache, ``cache_write`` for those written to it (Anthropic: 1.25 × ``input`` for the
    5-minute cache); each defaults to ``input`` when the roster leaves it out.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float
    output: float
    cached_input: float
    cache_write: float

    @model_validator(mode="before")
    @classmethod
    def _writes_at_input_price(cls, data: object) -> object:
        """A price without ``cache_write`` (written before it existed) bills writes at
        ``input``."""
        if isinstance(data, dict) and "cache_write" not in data and "input" in data:
            return {**data, "cache_write": data["input"]}
        return data


class PriceTable(BaseModel):
    """The roster's prices: ``"<backend>:<model>"`` or ``"<model>"`` → :class:`Price`.

    Lookup tries the backend's own entry first, then the model's on any backend (see
    :meth:`price`). Empty when the roster writes no ``[prices]``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    prices: dict[str, Price] = Field(default_factory=dict)

    def price(self, backend: str, model: str | None) -> Price | None:
        """The price of ``model`` on ``backend``, or None when the table has none.

        ``"<backend>:<model>"`` wins over ``"<model>"``: the same model may cost more
        through a reseller than from its maker.
        """
        if model is None:
            return None
        return self.prices.get(f"{backend}:{model}", self.prices.get(model))


def _rate(entry: Mapping[str, object], key: str, path: str) -> float | None:
    """One price: a finite number >= 0 (USD per 1M tokens), or None when absent."""
    if key not in entry:
        return None
    value = entry[key]
    fix = f"Write {key} in US dollars per million tokens, e.g. {key} = 2.5"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RosterError(f"{path}.{key}", f"{value!r} is not a number", fix)
    if not math.isfinite(value) or value < 0:
        raise RosterError(f"{path}.{key}", f"{value!r} is not a price", fix)
    return float(value)


def parse_prices(table: object, where: str = "prices") -> PriceTable:
    """The roster's ``[prices]`` table, checked, as a :class:`PriceTable`.

    Each entry is a table with ``input`` and ``output`` (required), ``cached_input`` and
    ``cache_write`` (optional, each defaults to ``input``), each a number >= 0 in USD per
    million tokens.
    Why strict: a misspelt key or a price in the wrong unit would make every reported
    cost silently wrong. ``where`` is the table's path in messages. Raises
    :class:`~council.errors.RosterError` naming the field (``prices."openai:gpt-4.1".input``).
    """
    if not isinstance(table, dict):
        raise RosterError(
            where, "must be a table", f'Write each price as [{where}."<backend>:<model>"]'
        )
    prices: dict[str, Price] = {}
    for name, entry in table.items():
        path = RosterError.field(where, str(name))
        if not str(name).strip():
            raise RosterError(path, "names no model", 'Name the model: [prices."gpt-4.1"]')
        if not isinstance(entry, dict):
            raise RosterError(
                path, "must be a table", f"Write [{path}] with input = ... and output = ..."
            )
        for key in entry:
            if key not in PRICE_KEYS:
                raise RosterError(
                    f"{path}.{key}",
                    f"unknown key {key!r}",
                    f"Allowed here: {', '.join(PRICE_KEYS)} (USD per million tokens)",
                )
        found = {key: _rate(entry, key, path) for key in PRICE_KEYS}
        for key in ("input", "output"):
            if found[key] is None:
                raise RosterError(
                    f"{path}.{key}",
                    "is missing",
                    f"Write {key} in US dollars per million tokens, e.g. {key} = 2.5",
                )
        input_price, output_price = found["input"] or 0.0, found["output"] or 0.0
        cached, written = found["cached_input"], found["cache_write"]
        prices[str(name)] = Price(
            input=input_price,
            output=output_price,
            cached_input=input_price if cached is None else cached,
            cache_write=input_price if written is None else written,
        )
    return PriceTable(prices=prices)


def cost_usd(usage: Usage, backend: str, model: str | None, prices: PriceTable) -> float | None:
    """What ``usage`` cost on ``backend``/``model``, in USD, or None when unpriced.

    Cached input tokens (``usage.cached``, at most ``usage.input``) are billed at
    ``cached_input``, those written to the cache (``usage.cache_write``, at most the
    input left) at ``cache_write``, the rest of ``usage.input`` at ``input``;
    ``usage.output`` is billed at ``output`` and already includes reasoning tokens
    (providers count them as output), so ``usage.reasoning`` is not added again. Source:
    the provider's usage fields as :class:`~council.model.backend_result.Usage` documents
    them.
    """
    price = prices.price(backend, model)
    if price is None:
        return None
    total = max(usage.input, 0)
    cached = min(max(usage.cached, 0), total)
    written = min(max(usage.cache_write, 0), total - cached)
    dollars = (
        (total - cached - written) * price.input
        + cached * price.cached_input
        + written * price.cache_write
        + max(usage.output, 0) * price.output
    )
    return dollars / PER_TOKENS


def saved_usd(usage: Usage, backend: str, model: str | None, prices: PriceTable) -> float | None:
    """What the provider's prompt cache saved on ``usage``, in USD: its cost with every
    input token at the full ``input`` price, minus its cost (:func:`cost_usd`).

    Negative when cache writes (billed above ``input``) were not read back enough to pay
    for themselves. None when unpriced, or when nothing was read from or written to a
    cache (nothing to say).
    """
    if usage.cached <= 0 and usage.cache_write <= 0:
        return None
    paid = cost_usd(usage, backend, model, prices)
    full = cost_usd(
        usage.model_copy(update={"cached": 0, "cache_write": 0}), backend, model, prices
    )
    return None if paid is None or full is None else full - paid


class CostSummary(NamedTuple):
    """The cost of a council: the sum of the priced parts, and whether every part was priced.

    * ``total_usd``: USD, or None when no part had a price.
    * ``complete``: False when some part was unpriced; ``total_usd`` is then a lower
      bound ("at least").
    """

    total_usd: float | None
    complete: bool

    def describe(self) -> str:
        """A phrase for people: ``$0.0421``, ``at least $1.30``, or ``unknown``."""
        if self.total_usd is None:
            return "unknown" if not self.complete else "$0"
        amount = self.total_usd
        text = f"${amount:.4f}" if amount < 1 else f"${amount:.2f}"
        return text if self.complete else f"at least {text}"


def sum_costs(parts: Iterable[float | None]) -> CostSummary:
    """Sum the costs of the participants that used tokens (None = unpriced).

    Why a flag, not a zero: an unpriced model did cost something, so a total without
    it is only a lower bound and must say so. Pass one part per participant that
    reported a :class:`~reviewers.base.Usage` (programs and replays cost
    nothing and are left out). No parts: ``(None, True)``; only unpriced parts:
    ``(None, False)``.
    """
    total: float | None = None
    complete = True
    for part in parts:
        if part is None:
            complete = False
        else:
            total = part if total is None else total + part
    return CostSummary(total, complete)


def sum_savings(parts: Iterable[float | None]) -> float | None:
    """The savings of the participants that have one (:func:`saved_usd`), summed; None
    when none has."""
    known = [part for part in parts if part is not None]
    return sum(known) if known else None
