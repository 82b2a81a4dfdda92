"""A round's hard cost budget: ``[council] max_cost_usd``, in US dollars, the arithmetic of
reserving a request's estimate before it is sent and settling it to its usage after.

Amounts are whole nano-dollars (:data:`NANOS_PER_USD`) in the ledger, so sums are exact on
every worker and in Redis's Lua; USD floats at the edges. A request is admitted only when
``spent + held + estimate <= limit``: with estimates no lower than the usage, spend never
passes the budget, and each request that used more than its estimate can only add its own
overrun. Pure. Source: docs/guide.md "A cost budget", docs/operating.md "Cost budget"
(under "Redis").
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from council.errors import RosterError
from council.model.participant import Participant
from council.round.cost import PER_TOKENS, Price, PriceTable

NANOS_PER_USD = 1_000_000_000
"""Ledger units per US dollar: amounts are whole nano-dollars."""

WRAP_UP_SHARE = 0.8
"""The share of the budget spent at which running reviewers are asked, once, to wrap up."""

BUDGET_FIX = "Write max_cost_usd as a positive number of US dollars per round, e.g. 2.5"


def parse_max_cost(value: object, where: str = "council.max_cost_usd") -> float:
    """A budget in USD: a finite number above 0. Raises RosterError at ``where``: a zero or
    negative budget would refuse every request, a typo must not pass as "no budget"."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RosterError(where, f"{value!r} is not a number", BUDGET_FIX)
    if not math.isfinite(value) or value <= 0:
        raise RosterError(where, f"{value!r} is not a budget (it must be above 0)", BUDGET_FIX)
    return float(value)


def to_nanos(usd: float) -> int:
    """USD as whole nano-dollars, rounded up (an estimate never shrinks by rounding)."""
    return max(0, math.ceil(usd * NANOS_PER_USD - 1e-6))


def to_usd(nanos: int) -> float:
    """Nano-dollars as USD."""
    return nanos / NANOS_PER_USD


def request_estimate_usd(price: Price, input_tokens: int, output_tokens: int) -> float:
    """What one request may cost, in USD: its estimated input at the uncached ``input``
    price (the cache may not serve it) and its output cap at ``output``."""
    dollars = max(input_tokens, 0) * price.input + max(output_tokens, 0) * price.output
    return dollars / PER_TOKENS


BUDGETED_BACKENDS: frozenset[str] = frozenset({"openai", "anthropic"})
"""The backends whose requests council sends, and so estimates under a budget; a replay,
command or sarif reviewer sends none (its ``model``, if any, names a recording or a
program's own choice), and needs no price."""


def unpriced(participants: Iterable[Participant], prices: PriceTable) -> list[str]:
    """The ids of the model participants (:data:`BUDGETED_BACKENDS`) ``prices`` does not
    price: a budget cannot estimate their requests, so the round is refused up front."""
    return [
        p.id
        for p in participants
        if p.backend in BUDGETED_BACKENDS
        and p.model is not None
        and prices.price(p.backend, p.model) is None
    ]


def admits(limit: int, spent: int, held: int, estimate: int) -> bool:
    """Whether a request estimated at ``estimate`` fits: ``spent + held + estimate <=
    limit`` (all nano-dollars). A request no budget can afford is never admitted."""
    return spent + held + max(estimate, 0) <= limit


def wrap_up_due(limit: int, spent: int) -> bool:
    """Whether ``spent`` has reached :data:`WRAP_UP_SHARE` of ``limit`` (nano-dollars)."""
    return spent >= WRAP_UP_SHARE * limit


@dataclass
class Ledger:
    """One round's budget in memory: what :mod:`workers.stores.budget` keeps in Redis,
    the same rules, for tests and reasoning. Nano-dollars; reservation ids are strings.

    :meth:`reserve` holds an estimate or refuses; :meth:`settle` releases it and adds the
    actual cost, once (a second settle of one reservation changes nothing: usage reported
    twice is counted once).
    """

    limit: int
    spent: int = 0
    held: dict[str, int] = field(default_factory=dict)

    def reserve(self, reservation: str, estimate: int) -> bool:
        """Hold ``estimate`` under ``reservation`` when it fits; whether it did."""
        if reservation in self.held or not admits(
            self.limit, self.spent, sum(self.held.values()), estimate
        ):
            return False
        self.held[reservation] = max(estimate, 0)
        return True

    def settle(self, reservation: str, actual: int) -> bool:
        """Release ``reservation`` and count ``actual``; False (nothing counted) when it
        is not held (never reserved, or settled already)."""
        if self.held.pop(reservation, None) is None:
            return False
        self.spent += max(actual, 0)
        return True
