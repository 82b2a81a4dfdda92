"""The journal store: findings a reviewer recorded as it went, one Redis list per attempt.

Structure: ``run:{run_id}:journal:{participant}:{attempt}`` is a list, RPUSH only, so a
dying worker loses nothing it already wrote. ``attempt`` comes from an INCR at task start,
so a redelivered task writes a new list and the fold reads every attempt in order.

A hard STORAGE cap protects Redis (1,000 entries per attempt, 1 MiB per entry); the
smaller READING caps of docs/harvest.md §5 apply when the journal is harvested. The append is
one Lua script (check and push atomically). Source: docs/architecture.md "State in Redis",
docs/harvest.md §1 (the reply sentence), §5.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import redis

from workers.stores import RedisClient
from workers.stores.keys import Keys

STORE_MAX_ENTRIES = 1000
"""Entries stored per attempt's journal before further appends are refused."""

STORE_MAX_ENTRY_BYTES = 1024 * 1024
"""Bytes one stored entry may take (1 MiB)."""

_APPEND = """
if redis.call('EXISTS', KEYS[3]) == 1 then return -3 end
if ARGV[5] ~= '' then
  local status = redis.call('HGET', KEYS[4], 'status')
  if status and status ~= ARGV[5] then return -4 end
end
if ARGV[6] ~= '' and redis.call('SISMEMBER', KEYS[5], ARGV[6]) == 1 then
  return redis.call('LLEN', KEYS[1])
end
if string.len(ARGV[1]) > tonumber(ARGV[3]) then return -1 end
if redis.call('LLEN', KEYS[1]) >= tonumber(ARGV[2]) then return -2 end
local n = redis.call('RPUSH', KEYS[1], ARGV[1])
if ARGV[6] ~= '' or n == 1 then redis.call('SADD', KEYS[5], ARGV[6]) end
redis.call('HINCRBY', KEYS[2], ARGV[4], 1)
if n == 1 then
  local ttl = redis.call('PTTL', KEYS[4])
  if ttl > 0 then
    redis.call('PEXPIRE', KEYS[1], ttl)
    redis.call('PEXPIRE', KEYS[5], ttl)
    redis.call('PEXPIRE', KEYS[2], ttl)
  end
end
return n
"""
"""KEYS: the attempt's journal, the run's recorded counts, the participant's outcome, the
run hash, the attempt's entry ids; ARGV: the entry, the entry cap, the byte cap, the
participant, the status the run must still be in ('' for no check), the entry's id (''
for none: an entry with an id already stored is not stored again). Returns the list's
length, or -1 (over the byte cap), -2 (journal full), -3 (the participant's outcome is
stored: nobody will read this attempt again), -4 (the run moved on). The first entry of
an attempt makes its journal and its ids set (holding '' when that entry has no id: no
id is '', and a later id joins a set that already expires) and gives them, and the
recorded counts, the run hash's TTL: they expire with the run."""

NOT_STORED: dict[int, str] = {
    -3: "the participant's review was already settled; nobody will read this entry",
    -4: "the run has moved on (its reviewers were filed, or it settled)",
}
"""Why an entry was refused for good, by the append script's code."""

_READ_ALL = """
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
local attempts = {}
for a = 1, n do attempts[a] = redis.call('LRANGE', ARGV[1] .. a, 0, -1) end
return attempts
"""
"""KEYS: the attempts counter; ARGV: the participant's journal key prefix (the attempt
number completes each key). Every attempt's entries, in attempt order, read atomically."""


_CHECK = """
if tonumber(redis.call('GET', KEYS[1]) or '0') < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
  if redis.call('PTTL', KEYS[1]) == -1 then
    local ttl = redis.call('PTTL', KEYS[3])
    if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
  end
end
local held = {}
for i = 2, #ARGV do held[i - 1] = redis.call('SISMEMBER', KEYS[2], ARGV[i]) end
return held
"""
"""KEYS: an attempts counter, an attempt's entry ids, the run hash; ARGV: the attempt the
counter must count at least, then entry ids. Returns 1 or 0 per id: whether the attempt
holds it. A counter made anew gets the run hash's TTL."""


class JournalStore:
    """Append to and read participants' journals in Redis."""

    def __init__(
        self,
        client: RedisClient,
        keys: Keys,
        *,
        max_entries: int = STORE_MAX_ENTRIES,
        max_entry_bytes: int = STORE_MAX_ENTRY_BYTES,
    ) -> None:
        self._r, self._keys = client, keys
        self._max_entries, self._max_entry_bytes = max_entries, max_entry_bytes
        self._append = client.register_script(_APPEND)

    def next_attempt(self, run_id: str, participant: str) -> int:
        """Start a new attempt for the participant and return its number (1, 2, …); a
        new counter gets the run hash's TTL."""
        key = self._keys.run_attempts(run_id, participant)
        n = int(self._r.incr(key))
        if n == 1:
            ttl = int(self._r.pttl(self._keys.run(run_id)))
            if ttl > 0:
                self._r.pexpire(key, ttl)
        return n

    def attempts(self, run_id: str, participant: str) -> int:
        """How many attempts have started (0 when none)."""
        value = self._r.get(self._keys.run_attempts(run_id, participant))
        return int(value) if value is not None else 0

    def coming_attempt(self, run_id: str, participants: Sequence[str]) -> int | None:
        """The attempt a task of ``participants`` is about to be (one ``MGET`` of their
        attempts counters and outcomes): per participant the attempts started, plus one
        unless its outcome is stored (a task for a settled participant starts none); the
        highest of them. None for no participants. (An outcome is read whole, and only
        when stored: a redelivery's, rare; a GET and an EXISTS each were twice the
        commands.)

        Why: a task's first line (``task_started``, Celery's "received") is written
        before the task numbers its attempt with an INCR; this is the number it will get,
        so a redelivered task's lines agree from the first (docs/architecture.md
        "Observability"). Two deliveries of one participant racing may still be told the
        same number: the task rebinds the one it gets.
        """
        ids = list(participants)
        if not ids:
            return None
        k = self._keys
        answers = self._r.mget(
            [k.run_attempts(run_id, p) for p in ids] + [k.run_outcome(run_id, p) for p in ids]
        )
        started, settled = answers[: len(ids)], answers[len(ids) :]
        pairs = zip(started, settled, strict=True)
        return max(int(n or 0) + (1 if done is None else 0) for n, done in pairs)

    def store(
        self,
        run_id: str,
        participant: str,
        attempt: int,
        raw: str,
        *,
        live: str = "",
        entry_id: str = "",
    ) -> int:
        """Store one raw entry as given; return the append script's code (the list's
        length, or a negative refusal, see :data:`_APPEND`).

        ``entry_id``: the entry's identity within the attempt ("" for none); an entry
        whose id the attempt already holds is not stored twice (a retried write that had
        in fact been applied, an entry stored again after Redis forgot its last second).

        ``live``: the status the run must still be in (``open`` for a reviewer,
        ``judging`` for the judge; "" checks nothing). An entry is refused for good once
        the participant's outcome is stored or the run left ``live``: a program still
        running after its attempt was settled (an orphan) must not be told "Recorded.".
        Raises what redis-py raises (the caller decides whether to wait for Redis).
        """
        data = raw.encode("utf-8", errors="replace")
        k = self._keys
        return int(
            self._append(
                keys=[
                    k.journal(run_id, participant, attempt),
                    k.run_recorded(run_id),
                    k.run_outcome(run_id, participant),
                    k.run(run_id),
                    k.journal_ids(run_id, participant, attempt),
                ],
                args=[data, self._max_entries, self._max_entry_bytes, participant, live, entry_id],
            )
        )

    def append(
        self, run_id: str, participant: str, attempt: int, raw: str, *, live: str = ""
    ) -> str:
        """Store one raw entry as given; return the reply sentence of docs/harvest.md §1.

        Never raises: a refused or failed store says so in the reply, so the reviewer
        keeps the finding for its final answer. ``live`` as in :meth:`store`.
        """
        try:
            n = self.store(run_id, participant, attempt, raw, live=live)
        except redis.RedisError as exc:
            return (
                f"Not recorded ({type(exc).__name__}: the journal store failed); "
                "keep it for your final answer."
            )
        return self.reply(n, len(raw.encode("utf-8", errors="replace")))

    def reply(self, n: int, size: int) -> str:
        """The reply sentence for the append script's code ``n`` of an entry of ``size``
        bytes."""
        if n in NOT_STORED:
            return f"Not recorded ({NOT_STORED[n]}); keep it for your final answer."
        if n == -1:
            return (
                f"Not recorded (the entry is {size} bytes, over the journal's "
                f"{self._max_entry_bytes}-byte cap); keep it for your final answer."
            )
        if n == -2:
            return (
                f"Not recorded (the journal already holds {self._max_entries} entries); "
                "keep it for your final answer."
            )
        return "Recorded."

    def missing(
        self, run_id: str, asks: Sequence[tuple[str, int, Sequence[str]]]
    ) -> list[list[str]]:
        """For each ``(participant, attempt, entry ids)``, which of the ids the attempt's
        journal does not hold (Redis forgot them: a restart that lost the tail of its
        AOF), in the order given; ONE pipelined round trip (none for no asks). Each also
        makes the attempts counter count the attempt again (the INCR that started it may
        be forgotten too, and the fold reads the attempts the counter counts)."""
        if not asks:
            return []
        k = self._keys
        pipe = self._r.pipeline(transaction=False)
        for pid, attempt, ids in asks:
            pipe.eval(
                _CHECK,
                3,
                k.run_attempts(run_id, pid),
                k.journal_ids(run_id, pid, attempt),
                k.run(run_id),
                attempt,
                *ids,
            )
        return [
            [i for i, there in zip(ids, held, strict=True) if not there]
            for (_, _, ids), held in zip(asks, pipe.execute(), strict=True)
        ]

    def read(self, run_id: str, participant: str, attempt: int) -> list[bytes]:
        """The raw entries of one attempt, in the order they were recorded."""
        return list(self._r.lrange(self._keys.journal(run_id, participant, attempt), 0, -1))

    def read_all(self, run_id: str, participant: str) -> list[list[bytes]]:
        """The raw entries of every attempt, in attempt order (docs/harvest.md §5)."""
        return [
            self.read(run_id, participant, a)
            for a in range(1, self.attempts(run_id, participant) + 1)
        ]

    def read_all_many(
        self,
        run_id: str,
        participants: Sequence[str],
        started: Mapping[str, int] | None = None,
    ) -> dict[str, list[list[bytes]]]:
        """:meth:`read_all` for several participants in ONE pipelined round trip.

        Per participant, one script reads the attempts counter and every attempt's list,
        so the count and the lists agree. ``started`` (participant → an attempt the
        caller knows started: its own) spares the script's EVAL: the counter is read
        first, then each list up to that attempt, in the same trip; a later attempt the
        counter names (one racing this one) is read in one more trip, so nothing it
        recorded before the read is missed. Returns participant → the raw entries of each
        attempt, in attempt order (an empty list when no attempt started).
        """
        k, known = self._keys, started or {}
        pipe = self._r.pipeline(transaction=False)
        for p in participants:
            n = known.get(p)
            if n is None:
                pipe.eval(_READ_ALL, 1, k.run_attempts(run_id, p), k.journal_prefix(run_id, p))
                continue
            pipe.get(k.run_attempts(run_id, p))
            for a in range(1, n + 1):
                pipe.lrange(k.journal(run_id, p, a), 0, -1)
        replies = iter(pipe.execute())
        got: dict[str, list[list[bytes]]] = {}
        later: list[tuple[str, int]] = []
        for p in participants:
            n = known.get(p)
            if n is None:
                got[p] = [list(entries) for entries in next(replies)]
                continue
            count = int(next(replies) or 0)
            got[p] = [list(next(replies)) for _ in range(n)]
            later += [(p, a) for a in range(n + 1, count + 1)]
        if later:
            pipe = self._r.pipeline(transaction=False)
            for p, a in later:
                pipe.lrange(k.journal(run_id, p, a), 0, -1)
            for (p, _), entries in zip(later, pipe.execute(), strict=True):
                got[p].append(list(entries))
        return got

    def recorded_counts(self, run_id: str) -> dict[str, int]:
        """Entries recorded so far per participant, across attempts (for progress)."""
        raw = self._r.hgetall(self._keys.run_recorded(run_id))
        return {k.decode(): int(v) for k, v in raw.items()}
