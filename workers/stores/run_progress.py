"""A run's progress and outcomes: each participant's attempts, progress, pauses on a
question and settled outcome, and the wake list the waiting CLI blocks on.

``run:{id}:state`` (participant → progress JSON; every write pushes ``run:{id}:wake``, one
element kept, on which the CLI BLPOPs), ``run:{id}:outcome:{p}`` (``SET NX``: the first
terminal result wins, so a redelivered task returns it instead of filing twice) and
``run:{id}:pause:{p}`` (a conversation paused on a question, and its answer). A batch
starts its attempts and puts its outcomes in one round trip each
(:meth:`RunProgress.start_attempts`, :meth:`RunProgress.put_outcomes`).

Source: docs/architecture.md "State in Redis"; docs/celery.md §1.8.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import redis

from council.asks.paused import Paused, Resumption
from council.asks.pending import Answer
from council.model.report import RunStatus
from council.round.outcome import ParticipantOutcome
from workers.stores import RedisClient
from workers.stores.keys import Keys
from workers.stores.run_record import Progress

_WAKE_LUA = """
local function wake(key)
  if redis.call('LLEN', key) == 0 then
    redis.call('RPUSH', key, '1')
    redis.call('EXPIRE', key, %d)
  end
end
"""
"""The wake push inside a script: nothing more when the list holds its element already
(one command: a burst of writes before the CLI wakes), else the element and the list's
TTL (three)."""

_KEY_TTL_LUA = """
local function key_ttl(given, run)
  local ttl = tonumber(given)
  if ttl > 0 then return ttl end
  return redis.call('PTTL', run)
end
"""
"""The TTL (ms) a key a worker creates gets: the one given, else (0) the run hash's
(``PTTL``; not positive: the run hash has none, and neither does the key)."""

_START_ATTEMPTS_BODY = """
local shown = string.sub(ARGV[1], 1, -2) .. ',"attempt":'
local numbers = {}
local lease = tonumber(ARGV[2])
local ttl = nil
if lease > 0 then
  local now = redis.call('TIME')
  lease = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + lease
end
for i = 5, #KEYS do
  ttl = ttl or key_ttl(ARGV[4], KEYS[4])
  local n = 1
  local made
  if ttl > 0 then
    made = redis.call('SET', KEYS[i], '1', 'NX', 'PX', ttl)
  else
    made = redis.call('SET', KEYS[i], '1', 'NX')
  end
  if not made then n = redis.call('INCR', KEYS[i]) end
  redis.call('HSET', KEYS[1], ARGV[i], shown .. n .. '}')
  if lease > 0 then
    redis.call('ZADD', KEYS[2], lease, ARGV[3] .. '|' .. ARGV[i] .. '|' .. n)
  end
  numbers[i - 4] = n
end
wake(KEYS[3])
return numbers
"""
"""KEYS: the progress hash, the leases set, the wake list, the run hash, then each
participant's attempts counter; ARGV: the progress JSON object without ``attempt`` (each
new attempt number is added to it), the ms the attempts' leases last from now on Redis's
clock (0: no lease), the run id, the TTL (ms) a new counter gets (0: the run hash's), then
each participant (ARGV[i] goes with KEYS[i]). Returns the new attempt numbers, in
order. A first attempt makes its counter with its TTL in one command (``SET NX PX``); a
later one finds it and INCRs it (the two cannot both miss: one script, atomic)."""

_PUT_OUTCOME_BODY = """
local ttl = key_ttl(ARGV[5], KEYS[5])
local stored
if ttl > 0 then
  stored = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ttl)
else
  stored = redis.call('SET', KEYS[1], ARGV[1], 'NX')
end
local kept = false
if stored then
  if ttl > 0 then
    redis.call('SET', KEYS[2], ARGV[2], 'PX', ttl)
  else
    redis.call('SET', KEYS[2], ARGV[2])
  end
  redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
else
  kept = redis.call('GET', KEYS[1])
end
if ARGV[6] == '1' then wake(KEYS[4]) end
return kept
"""
"""KEYS: the outcome, the answer, the progress hash, the wake list, the run hash; ARGV:
the outcome JSON, the answer, the participant, its progress JSON, the TTL (ms) the
outcome and answer get (0: the run hash's), '1' to push the wake list. Nil when stored,
else the outcome already stored."""


@dataclass(frozen=True)
class Settled:
    """One participant's terminal write: its outcome, the verbatim answer archived with
    it, and the progress shown once it is stored (see :meth:`RunStore.put_outcomes`)."""

    outcome: ParticipantOutcome
    answer: str
    progress: Progress


WAKE_TTL_S = 24 * 3600
"""Seconds a run's wake list lives after the push that made it (a waiter that never
came; the waiting CLI's BLPOP empties it, and the next push makes it anew)."""

_START_ATTEMPTS = _WAKE_LUA % WAKE_TTL_S + _KEY_TTL_LUA + _START_ATTEMPTS_BODY
_PUT_OUTCOME = _WAKE_LUA % WAKE_TTL_S + _KEY_TTL_LUA + _PUT_OUTCOME_BODY

_WAIT_READ = """
local status = redis.call('HGET', KEYS[1], 'status')
return {status or false, redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3])}
"""
"""KEYS: the run hash, its progress hash, its recorded counts. What the waiting CLI reads
after each wake, in one command: the status, every progress, every count."""


def wake(pipe: redis.client.Pipeline, keys: Keys, run_id: str) -> None:
    """Queue the push that wakes the run's waiting CLI (at most one element is kept)."""
    key = keys.run_wake(run_id)
    pipe.rpush(key, b"1")
    pipe.ltrim(key, -1, -1)
    pipe.expire(key, WAKE_TTL_S)


class RunProgress:
    """Record and read how a run's participants are doing (a part of
    :class:`~workers.stores.runs.RunStore`, whose client and keys it uses)."""

    _r: RedisClient
    _keys: Keys

    # -- progress and outcomes --------------------------------------------------------------
    def set_progress(self, run_id: str, participant: str, progress: Progress) -> None:
        """Record a participant's progress (and wake the waiting CLI)."""
        pipe = self._r.pipeline(transaction=False)
        pipe.hset(self._keys.run_state(run_id), participant, progress.model_dump_json())
        wake(pipe, self._keys, run_id)
        pipe.execute()

    def set_progress_many(self, run_id: str, progress: Mapping[str, Progress]) -> None:
        """Record several participants' progress (participant → Progress) in one HSET
        (and wake the waiting CLI), one round trip."""
        if progress:
            pipe = self._r.pipeline(transaction=False)
            pipe.hset(
                self._keys.run_state(run_id),
                mapping={p: s.model_dump_json() for p, s in progress.items()},
            )
            wake(pipe, self._keys, run_id)
            pipe.execute()

    def wait_read(
        self, run_id: str
    ) -> tuple[RunStatus | None, dict[str, Progress], dict[str, int]]:
        """The status, every participant's progress and every recorded count, in ONE
        command (a script): what the waiting CLI reads after each wake."""
        k = self._keys
        status, states, counts = self._r.eval(
            _WAIT_READ, 3, k.run(run_id), k.run_state(run_id), k.run_recorded(run_id)
        )
        progress = {
            states[i].decode(): Progress.model_validate_json(states[i + 1])
            for i in range(0, len(states), 2)
        }
        recorded = {counts[i].decode(): int(counts[i + 1]) for i in range(0, len(counts), 2)}
        return (status.decode() if status else None), progress, recorded

    def wait_wake(self, run_id: str, timeout_s: float) -> bool:
        """Block until the run's wake list is pushed or ``timeout_s`` passes (BLPOP);
        whether it was pushed."""
        key = self._keys.run_wake(run_id)
        return self._r.blpop([key], timeout=max(timeout_s, 0.01)) is not None

    def poke(self, run_id: str) -> None:
        """Wake the run's waiting CLI (it reads the run again)."""
        pipe = self._r.pipeline(transaction=False)
        wake(pipe, self._keys, run_id)
        pipe.execute()

    def start_attempts(
        self,
        run_id: str,
        participants: Sequence[str],
        started_ms: int,
        lease_ms: int = 0,
        ttl_ms: int = 0,
    ) -> dict[str, int]:
        """Start a new attempt of each participant, in one round trip (one script call).

        Per participant, atomically: INCR its attempts counter (the counter
        :meth:`JournalStore.next_attempt <workers.stores.journal.JournalStore.next_attempt>`
        counts; a new one gets ``ttl_ms``, else the run hash's TTL) and record it
        ``running`` since ``started_ms`` (ms since the epoch) with that attempt number,
        and, when ``lease_ms`` > 0, give the attempt a lease lapsing ``lease_ms`` from
        now on Redis's clock (``TIME``: :mod:`workers.execution.leases`); then wake the
        waiting CLI. Returns participant → the attempt number (1, 2, …).
        """
        k = self._keys
        body = Progress(state="running", started_ms=started_ms, updated_ms=started_ms)
        shown = body.model_dump_json(exclude={"attempt"})
        ids = list(participants)
        if not ids:
            return {}
        keys = [
            k.run_state(run_id),
            k.leases(),
            k.run_wake(run_id),
            k.run(run_id),
            *(k.run_attempts(run_id, p) for p in ids),
        ]
        numbers = self._r.eval(
            _START_ATTEMPTS, len(keys), *keys, shown, max(0, lease_ms), run_id, max(0, ttl_ms), *ids
        )
        return {p: int(n) for p, n in zip(ids, numbers, strict=True)}

    def progress(self, run_id: str) -> dict[str, Progress]:
        """Every participant's progress (participant → Progress)."""
        raw = self._r.hgetall(self._keys.run_state(run_id))
        return {k.decode(): Progress.model_validate_json(v) for k, v in raw.items()}

    def put_outcome(self, run_id: str, outcome: ParticipantOutcome, answer: str) -> bool:
        """Store the outcome if none is stored yet (first terminal result wins), with the
        run hash's TTL.

        Returns True when this call stored it. The verbatim answer is archived with it.
        """
        k = self._keys
        ttl = int(self._r.pttl(k.run(run_id)))
        px = ttl if ttl > 0 else None
        stored = self._r.set(
            k.run_outcome(run_id, outcome.participant), outcome.model_dump_json(), nx=True, px=px
        )
        if stored:
            self._r.set(k.run_answer(run_id, outcome.participant), answer.encode("utf-8"), px=px)
        return bool(stored)

    def put_outcomes(
        self,
        run_id: str,
        settled: Sequence[Settled],
        leases: Sequence[str] = (),
        ttl_ms: int = 0,
    ) -> dict[str, ParticipantOutcome]:
        """Store each outcome unless one is stored (first terminal result wins), in one
        pipelined round trip; the same rule as :meth:`put_outcome`.

        Per participant, atomically: SET NX the outcome; when this call stored it, also
        archive the answer and record ``progress``; both keys get ``ttl_ms`` (0: the run
        hash's TTL). Returns, for each participant whose outcome was ALREADY stored, that
        kept outcome (the caller shows its progress); participants absent from the result
        were stored by this call. ``leases``: lease members (:meth:`Keys.lease_member`)
        ended in the same round trip. The last script also wakes the waiting CLI.
        """
        k = self._keys
        pipe = self._r.pipeline(transaction=False)
        if leases:
            pipe.zrem(k.leases(), *leases)
        for i, s in enumerate(settled):
            p = s.outcome.participant
            pipe.eval(
                _PUT_OUTCOME,
                5,
                k.run_outcome(run_id, p),
                k.run_answer(run_id, p),
                k.run_state(run_id),
                k.run_wake(run_id),
                k.run(run_id),
                s.outcome.model_dump_json(),
                s.answer.encode("utf-8", errors="replace"),
                p,
                s.progress.model_dump_json(),
                max(0, ttl_ms),
                "1" if i == len(settled) - 1 else "0",
            )
        if not settled:
            wake(pipe, k, run_id)
            pipe.execute()
            return {}
        replies = pipe.execute()[1 if leases else 0 :]
        return {
            s.outcome.participant: ParticipantOutcome.model_validate_json(kept)
            for s, kept in zip(settled, replies, strict=True)
            if kept is not None
        }

    def outcome(self, run_id: str, participant: str) -> ParticipantOutcome | None:
        """The stored outcome of a participant, if it settled."""
        raw = self._r.get(self._keys.run_outcome(run_id, participant))
        return ParticipantOutcome.model_validate_json(raw) if raw is not None else None

    def outcomes_many(
        self, run_id: str, participants: Sequence[str]
    ) -> dict[str, ParticipantOutcome]:
        """The stored outcomes of ``participants`` (id → outcome; ids without one are
        left out), in ONE round trip (MGET), however many participants."""
        ids = list(participants)
        if not ids:
            return {}
        raws = self._r.mget([self._keys.run_outcome(run_id, p) for p in ids])
        return {
            p: ParticipantOutcome.model_validate_json(raw)
            for p, raw in zip(ids, raws, strict=True)
            if raw is not None
        }

    def put_pause(self, run_id: str, participant: str, paused: Paused) -> None:
        """Keep ``participant``'s conversation paused on a question (``run:{run}:pause:{p}``
        field ``pause``), dropping an answer an earlier pause was given; the hash gets
        the run hash's TTL (it lives as long as the run)."""
        key = self._keys.run_pause(run_id, participant)
        ttl = self._r.ttl(self._keys.run(run_id))
        with self._r.pipeline() as pipe:
            pipe.hset(key, "pause", paused.model_dump_json())
            pipe.hdel(key, "answer")
            if ttl > 0:
                pipe.expire(key, ttl)
            pipe.execute()

    def pauses(self, run_id: str, participants: Sequence[str]) -> dict[str, Paused]:
        """The paused conversations of ``participants`` (those that have one)."""
        pipe = self._r.pipeline(transaction=False)
        for p in participants:
            pipe.hget(self._keys.run_pause(run_id, p), "pause")
        found = pipe.execute()
        return {
            p: Paused.model_validate_json(raw)
            for p, raw in zip(participants, found, strict=True)
            if raw is not None
        }

    def resumption(self, run_id: str, participant: str) -> Resumption | None:
        """``participant``'s paused conversation with the answer it goes on with; None
        when it has no pause, or its pause has no answer yet."""
        key = self._keys.run_pause(run_id, participant)
        paused, answer = self._r.hmget(key, ["pause", "answer"])
        if paused is None or answer is None:
            return None
        return Resumption(
            paused=Paused.model_validate_json(paused), answer=Answer.model_validate_json(answer)
        )

    def resumptions(self, run_id: str, participants: Sequence[str]) -> dict[str, Resumption]:
        """:meth:`resumption` of each of ``participants`` that has one, in their order, in
        one pipelined round trip: a batch (or the settling) of 500 reviews asks once."""
        pipe = self._r.pipeline(transaction=False)
        for p in participants:
            pipe.hmget(self._keys.run_pause(run_id, p), ["pause", "answer"])
        found = pipe.execute()
        return {
            p: Resumption(
                paused=Paused.model_validate_json(paused), answer=Answer.model_validate_json(answer)
            )
            for p, (paused, answer) in zip(participants, found, strict=True)
            if paused is not None and answer is not None
        }

    def answer(self, run_id: str, participant: str) -> str | None:
        """The archived verbatim answer of a participant."""
        raw = self._r.get(self._keys.run_answer(run_id, participant))
        return raw.decode("utf-8", errors="replace") if raw is not None else None
