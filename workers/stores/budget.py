"""A round's cost budget shared by every worker: ``[council] max_cost_usd``, held in Redis.

One hash per run (``run:{id}:budget``, :meth:`~workers.stores.keys.Keys.run_budget`), in
whole nano-dollars: ``spent``, ``held`` (the estimates reserved and not settled yet),
``held:{reservation}`` → its estimate, ``spent:{participant}``. One Lua script reserves
(``spent + held + estimate <= limit``, :func:`council.round.budget.admits`) and one settles
(releases the estimate, adds the actual cost, once per reservation), each atomic across
workers, so reviewers starting at once cannot overspend together. A reservation whose
worker died stays held: never spent twice, never given back unseen (fail closed). The
limit travels with each call (the run record holds it). Embedded mode runs the same
scripts on its in-process fakeredis. Source: docs/guide.md "A cost budget",
docs/operating.md "Cost budget".
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from council.model.backend_result import Usage
from council.model.participant import Participant
from council.model.report import BudgetSpend
from council.round.budget import request_estimate_usd, to_nanos, to_usd, wrap_up_due
from council.round.cost import PriceTable, cost_usd
from workers.stores import RedisClient
from workers.stores.keys import Keys

_RESERVE = """
local limit = tonumber(ARGV[1])
local estimate = tonumber(ARGV[2])
local field = 'held:' .. ARGV[3]
local spent_raw = redis.call('HGET', KEYS[1], 'spent')
local held_raw = redis.call('HGET', KEYS[1], 'held')
local spent = tonumber(spent_raw or '0')
local held = tonumber(held_raw or '0')
if redis.call('HEXISTS', KEYS[1], field) == 1 or spent + held + estimate > limit then
  return 0
end
local fresh = not spent_raw and not held_raw
redis.call('HINCRBY', KEYS[1], 'held', ARGV[2])
redis.call('HSET', KEYS[1], field, ARGV[2])
if fresh then
  local ttl = redis.call('PTTL', KEYS[2])
  if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
end
return 1
"""
"""Hold an estimate when it fits: 1 held, 0 refused. KEYS: the budget hash, the run hash
(a budget hash made here gets its TTL: it expires with the run); ARGV: the limit, the
estimate (nano-dollars), the reservation id."""

_SETTLE = """
local field = 'held:' .. ARGV[1]
local estimate = redis.call('HGET', KEYS[1], field)
if not estimate then return 0 end
redis.call('HDEL', KEYS[1], field)
if estimate ~= '0' then redis.call('HINCRBY', KEYS[1], 'held', '-' .. estimate) end
redis.call('HINCRBY', KEYS[1], 'spent', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'spent:' .. ARGV[3], ARGV[2])
return 1
"""
"""Release a reservation and count its actual cost: 1 settled, 0 not held (unknown, or
settled already: counted once). KEYS: the budget hash; ARGV: the reservation id, the
actual cost (nano-dollars), the participant id."""


class RedisBudget:
    """One round's budget of ``limit_usd`` US dollars, on the run's hash in Redis.

    :meth:`reserve` and :meth:`settle` work in nano-dollars; :meth:`for_participant`
    binds it to one participant's prices (:class:`reviewers.base.CostBudget`).
    Thread-safe (each call is one script). Redis errors propagate.
    """

    def __init__(self, client: RedisClient, keys: Keys, run_id: str, limit_usd: float) -> None:
        if limit_usd <= 0:
            raise ValueError(f"a cost budget must be above $0, not {limit_usd}")
        self._client, self._key = client, keys.run_budget(run_id)
        self._run = keys.run(run_id)
        self.limit = to_nanos(limit_usd)
        self._reserve = client.register_script(_RESERVE)
        self._settle = client.register_script(_SETTLE)

    def reserve(self, estimate: int) -> str | None:
        """Hold ``estimate`` nano-dollars; the reservation id, or None when it does not
        fit what is left."""
        reservation = uuid.uuid4().hex
        held = self._reserve(
            keys=[self._key, self._run], args=[self.limit, max(0, estimate), reservation]
        )
        return reservation if int(held) == 1 else None

    def settle(self, reservation: str, actual: int, participant: str) -> bool:
        """Release ``reservation`` and count ``actual`` nano-dollars to ``participant``;
        False when it was not held (settled already: nothing counted twice)."""
        done = self._settle(keys=[self._key], args=[reservation, max(0, actual), participant])
        return int(done) == 1

    def spent(self) -> int:
        """Nano-dollars settled so far."""
        return int(self._client.hget(self._key, "spent") or 0)

    def spend(self, stopped: tuple[str, ...] = ()) -> BudgetSpend:
        """The budget against what was spent and is still held, for the report."""
        spent, held = self._client.hmget(self._key, ["spent", "held"])
        return BudgetSpend(
            max_cost_usd=to_usd(self.limit),
            spent_usd=to_usd(int(spent or 0)),
            held_usd=to_usd(int(held or 0)),
            stopped=stopped,
        )

    def for_participant(self, participant: Participant, prices: PriceTable) -> ParticipantBudget:
        """This budget as ``participant``'s requests reach it, at its prices."""
        return ParticipantBudget(self, participant, prices)


@dataclass(frozen=True)
class ParticipantBudget:
    """:class:`reviewers.base.CostBudget` for one participant: tokens priced at the
    roster's prices for its backend and model. A model without a price (refused up front
    under a budget) cannot reserve: it raises LookupError, so nothing is sent."""

    budget: RedisBudget
    participant: Participant
    prices: PriceTable

    def reserve(self, input_tokens: int, output_tokens: int) -> str | None:
        """Reserve one request: its input estimate and its output cap, priced."""
        p = self.participant
        price = self.prices.price(p.backend, p.model)
        if price is None:
            raise LookupError(f"no price for {p.backend}:{p.model} in the roster's [prices]")
        estimate = request_estimate_usd(price, input_tokens, output_tokens)
        return self.budget.reserve(to_nanos(estimate))

    def settle(self, reservation: str, usage: Usage) -> None:
        """Settle a reservation to what the request used, priced."""
        p = self.participant
        dollars = cost_usd(usage, p.backend, p.model, self.prices) or 0.0
        self.budget.settle(reservation, to_nanos(dollars), p.id)

    def wrap_up_due(self) -> bool:
        """Whether the round has spent most of the budget."""
        return wrap_up_due(self.budget.limit, self.budget.spent())
