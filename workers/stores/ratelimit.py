"""Rate limits shared by every worker: requests and tokens per minute, held in Redis.

Per limit name (``openai``, ``openai:gpt-4.1``; :func:`council.roster.rate_limits.limits_for`),
two sorted sets: ``ratelimit:{name}:requests`` (admission id → admitted ms; its size held
under ``rpm``) and ``ratelimit:{name}:tokens`` (``{admission id}|{tokens}`` → ms; their sum
held under ``tpm``). A sliding-window log, not a token bucket: it is exact, no window ever
holds more than ``rpm`` admissions (a bucket lets a full burst follow a full refill). One Lua
script admits into every limit that applies or none, atomic across workers, on the Redis
server's clock (``TIME``), so hosts with skewed clocks agree; keys expire one window after
the last write. Source: docs/celery.md §1.10 (Celery's ``rate_limit`` is per worker; a
provider-wide limit needs Redis), reviewers/base.py (``RateLimiter``).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from council.roster.rate_limits import RateLimit, limits_for
from workers.app.metrics import observe_rate_limit_wait
from workers.stores import RedisClient
from workers.stores.keys import Keys

WINDOW_MS = 60_000
"""The length of the window ``rpm`` and ``tpm`` count over, in milliseconds (a minute)."""

REMEMBERED = 32
"""Admissions a thread remembers for :meth:`RedisRateLimiter.correct` (oldest forgotten)."""

_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local tokens = tonumber(ARGV[2])
local id = ARGV[3]
local edge = now - window
local wait = 0
local function amount(member)
  return tonumber(string.match(member, '|(%d+)$'))
end
for i = 1, #KEYS / 2 do
  local rk, tk = KEYS[2 * i - 1], KEYS[2 * i]
  local rpm, tpm = tonumber(ARGV[2 + 2 * i]), tonumber(ARGV[3 + 2 * i])
  if rpm > 0 then
    redis.call('ZREMRANGEBYSCORE', rk, '-inf', edge)
    local held = redis.call('ZCARD', rk)
    if held >= rpm then
      local e = redis.call('ZRANGE', rk, held - rpm, held - rpm, 'WITHSCORES')
      wait = math.max(wait, tonumber(e[2]) - edge)
    end
  end
  if tpm > 0 then
    redis.call('ZREMRANGEBYSCORE', tk, '-inf', edge)
    local entries = redis.call('ZRANGE', tk, 0, -1, 'WITHSCORES')
    local used = 0
    for j = 1, #entries, 2 do used = used + amount(entries[j]) end
    if used > 0 and used + tokens > tpm then
      local remaining = used
      for j = 1, #entries, 2 do
        remaining = remaining - amount(entries[j])
        if remaining <= 0 or remaining + tokens <= tpm then
          wait = math.max(wait, tonumber(entries[j + 1]) - edge)
          break
        end
      end
    end
  end
end
if wait > 0 then return {0, wait} end
for i = 1, #KEYS / 2 do
  local rk, tk = KEYS[2 * i - 1], KEYS[2 * i]
  if tonumber(ARGV[2 + 2 * i]) > 0 then
    redis.call('ZADD', rk, now, id)
    redis.call('PEXPIRE', rk, window)
  end
  if tonumber(ARGV[3 + 2 * i]) > 0 then
    redis.call('ZADD', tk, now, id .. '|' .. tokens)
    redis.call('PEXPIRE', tk, window)
  end
end
return {1, now}
"""
"""Admit one request into every limit of KEYS (requests, tokens pairs), or say how long
to wait: ``{1, now_ms}`` admitted, ``{0, wait_ms}`` not yet. ARGV: window ms, tokens,
admission id, then ``rpm, tpm`` per limit (0 = not limited)."""

_SETTLE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local id, estimated, actual = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
for i = 1, #KEYS do
  local score = false
  if id ~= '' then score = redis.call('ZSCORE', KEYS[i], id .. '|' .. ARGV[3]) end
  if score and tonumber(score) > now - window then
    redis.call('ZREM', KEYS[i], id .. '|' .. ARGV[3])
    redis.call('ZADD', KEYS[i], score, id .. '|' .. ARGV[4])
  elseif actual > estimated then
    redis.call('ZADD', KEYS[i], now, ARGV[5] .. '|' .. (actual - estimated))
    redis.call('PEXPIRE', KEYS[i], window)
  end
end
return 1
"""
"""Correct an admission's tokens in place while it is in the window; otherwise count
the excess (if any) from now. KEYS: the tokens sets; ARGV: window ms, admission id
('' when unknown), estimated, actual, a fresh id for an excess entry."""


@dataclass(frozen=True)
class _Admission:
    """One admission a thread made, kept so its ``correct`` can find the Redis entry."""

    key: str
    admission_id: str
    tokens: int


class RedisRateLimiter:
    """Admission to model providers shared by every worker, per ``rpm``/``tpm`` limit.

    Implements :class:`reviewers.base.RateLimiter` over the roster's ``limits``
    (:attr:`council.roster.Roster.limits`): a request on key ``"openai:gpt-4.1"``
    (:func:`council.roster.rate_limits.limit_key`) must fit every limit that applies to it,
    and a key with none is admitted at once, without touching Redis. ``window_ms`` is the
    window both limits count over (a minute; tests shorten it). A caller calls
    :meth:`acquire` with its estimate of tokens, then :meth:`correct` with the provider's usage.
    Thread-safe: one instance serves every reviewer thread of a worker. Redis errors
    propagate.
    """

    def __init__(
        self,
        client: RedisClient,
        keys: Keys,
        limits: Mapping[str, RateLimit],
        *,
        window_ms: int = WINDOW_MS,
    ) -> None:
        if window_ms < 1:
            raise ValueError(f"window_ms must be at least 1 ms, not {window_ms}")
        self._keys, self._limits, self._window_ms = keys, dict(limits), window_ms
        self._acquire = client.register_script(_ACQUIRE)
        self._settle = client.register_script(_SETTLE)
        self._local = threading.local()

    def _remembered(self) -> list[_Admission]:
        """This thread's recent admissions, oldest first."""
        admissions: list[_Admission] | None = getattr(self._local, "admissions", None)
        if admissions is None:
            admissions = []
            self._local.admissions = admissions
        return admissions

    def acquire(self, key: str, tokens: int, deadline: float) -> bool:
        """Wait until a request estimated at ``tokens`` may be sent on ``key``.

        Returns True once admitted (counted in every limit that applies), False when
        ``deadline`` (a ``time.monotonic()`` value) passes first. Between attempts it
        sleeps until the oldest entry in the way leaves the window (the script says
        how long), never past the deadline: no busy loop. A request estimated above
        ``tpm`` on its own is admitted once the window holds no other tokens, instead
        of never. Negative estimates count as 0. Each sleep is observed in
        ``council_rate_limit_wait_seconds{limit=key}`` (:mod:`workers.app.metrics`).
        """
        applicable = limits_for(key, self._limits)
        if not applicable:
            return True
        tokens = max(0, int(tokens))
        admission_id = uuid.uuid4().hex
        redis_keys: list[str] = []
        args: list[int | str] = [self._window_ms, tokens, admission_id]
        for name, limit in applicable:
            redis_keys += self._keys.ratelimit_keys(name)
            args += [limit.rpm or 0, limit.tpm or 0]
        while True:
            admitted, value = self._acquire(keys=redis_keys, args=args)
            if int(admitted) == 1:
                remembered = self._remembered()
                remembered.append(_Admission(key, admission_id, tokens))
                del remembered[:-REMEMBERED]
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            pause = min((int(value) + 1) / 1000, remaining)
            observe_rate_limit_wait(key, pause)
            time.sleep(pause)

    def correct(self, key: str, estimated: int, actual: int) -> None:
        """Correct the tokens of a request admitted at ``estimated`` to ``actual``.

        The admission is this thread's latest on ``key`` with that estimate. While it
        is still in the window its entry is corrected in place, so the correction
        leaves the window with it; once it has left (or when no admission is known),
        an excess is counted from now and a shortfall is dropped: the window only ever
        errs towards holding back. A key without a ``tpm`` limit has nothing to correct.
        """
        names = [name for name, limit in limits_for(key, self._limits) if limit.tpm]
        if not names:
            return
        estimated, actual = max(0, int(estimated)), max(0, int(actual))
        remembered = self._remembered()
        admission_id = ""
        for index in range(len(remembered) - 1, -1, -1):
            if remembered[index].key == key and remembered[index].tokens == estimated:
                admission_id = remembered.pop(index).admission_id
                break
        if not admission_id and actual <= estimated:
            return
        self._settle(
            keys=[self._keys.ratelimit_tokens(name) for name in names],
            args=[self._window_ms, admission_id, estimated, actual, uuid.uuid4().hex],
        )
