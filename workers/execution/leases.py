"""Heartbeats of running attempts: a lost worker is noticed in seconds, not hours.

Every attempt a worker runs holds a lease, a member ``{run}|{participant}|{attempt}`` of the
sorted set ``council:leases`` scored by the ms it lapses on Redis's clock (``TIME`` in the
script that writes it: a worker whose own clock is off neither lapses early nor late). One
thread per process (:class:`LeaseKeeper`) pushes every lease it holds :data:`LEASE_MS` ahead each
:data:`BEAT_S`, in one round trip (``ZADD XX``: a lease a sweep took is not brought back);
a dead process's leases lapse, and a sweep (:mod:`workers.execution.sweep`) sends those
participants again. A beat Redis refuses (``OOM``, ``READONLY``, ``MISCONF``) is not a lost
worker: the sweep cannot run either while writes are refused, and after any failed beat it
waits one lease length of health before it believes a lapse. A sorted set, not a key with
a TTL per attempt: an expired key is gone, while ``ZRANGEBYSCORE leases -inf NOW`` lists
exactly the lapsed leases in one command.
Source: docs/celery.md §1.14.
"""

from __future__ import annotations

import threading
import time

import redis
import structlog

from workers.execution.outage_retry import held_back, note_refusal
from workers.stores import RedisClient
from workers.stores.keys import Keys

log = structlog.get_logger("council.worker")

LEASE_MS = 10_000
"""How long a lease lasts without a beat, in ms (a lost worker is noticed this soon)."""

BEAT_S = 2.0
"""Seconds between two beats of a worker's leases."""

SEP = "|"
"""Between a lease member's run id, participant id and attempt number (ids contain no
``|``: run ids are hex, participant ids are checked names)."""


_PUSH = """
local now = redis.call('TIME')
local at = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + tonumber(ARGV[1])
local args = {}
for i = 3, #ARGV do
  args[#args + 1] = at
  args[#args + 1] = ARGV[i]
end
if ARGV[2] == 'XX' then
  return redis.call('ZADD', KEYS[1], 'XX', unpack(args))
end
return redis.call('ZADD', KEYS[1], unpack(args))
"""
"""KEYS: the leases set; ARGV: the lease length in ms, ``XX`` (only push leases still
there) or ``-``, then the members: each scored Redis's now plus the length."""

member = Keys.lease_member
"""The lease member of one attempt."""


def parse(raw: bytes | str) -> tuple[str, str, int] | None:
    """``(run_id, participant, attempt)`` of a lease member; None for a malformed one."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    parts = text.split(SEP)
    if len(parts) != 3 or not parts[2].isdigit():
        return None
    return parts[0], parts[1], int(parts[2])


class LeaseKeeper:
    """The leases of the attempts running in this process, and the thread that beats
    them. :meth:`hold` when an attempt starts (the lease is written at once),
    :meth:`release` when its outcome is stored."""

    def __init__(self, client: RedisClient, keys: Keys, lease_ms: int = LEASE_MS) -> None:
        self._r, self._keys, self._lease_ms = client, keys, lease_ms
        self._held: set[str] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def lease_ms(self) -> int:
        """How long a lease lasts without a beat, in ms."""
        return self._lease_ms

    def hold(self, run_id: str, participants: dict[str, int], *, written: bool = False) -> None:
        """Start the leases of these attempts (participant → attempt number); ``written``:
        the caller already wrote them (:meth:`RunStore.start_attempts`). Never raises: a
        lease that could not be written is beaten in at the next beat."""
        names = [member(run_id, p, a) for p, a in participants.items()]
        with self._lock:
            self._held.update(names)
            self._start()
        if written:
            return
        try:
            self._push(names, xx=False)
        except redis.RedisError as exc:
            log.warning("lease_not_written", run_id=run_id, error=str(exc))

    def release(self, run_id: str, participants: dict[str, int], *, written: bool = False) -> None:
        """End these attempts' leases (their outcomes are stored); ``written``: the
        caller already removed them (:meth:`RunStore.put_outcomes`). Never raises."""
        names = [member(run_id, p, a) for p, a in participants.items()]
        with self._lock:
            self._held.difference_update(names)
        if written:
            return
        try:
            self._r.zrem(self._keys.leases(), *names)
        except redis.RedisError as exc:  # it lapses; the sweep finds the outcome stored
            log.warning("lease_not_released", run_id=run_id, error=str(exc))

    def drop(self, run_id: str, participants: dict[str, int]) -> None:
        """Stop beating these attempts' leases without ending them (the attempt failed
        without storing an outcome): they lapse and a sweep sends the participants
        again."""
        names = [member(run_id, p, a) for p, a in participants.items()]
        with self._lock:
            self._held.difference_update(names)

    def beat(self) -> int:
        """Push every held lease forward (one ``ZADD XX``); how many were held. A beat
        may bring back a lease ended a moment ago: it lapses, and a sweep finds its
        outcome stored and forgets it."""
        with self._lock:
            names = list(self._held)
        if names:
            self._push(names, xx=True)
        return len(names)

    def _push(self, names: list[str], *, xx: bool) -> None:
        """Score ``names`` :attr:`lease_ms` past Redis's now (one script call)."""
        flag = "XX" if xx else "-"
        self._r.eval(_PUSH, 1, self._keys.leases(), self._lease_ms, flag, *names)

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="council-leases", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        failing = False
        while True:
            time.sleep(BEAT_S)
            try:
                self.beat()
            except redis.RedisError as exc:
                if not held_back(exc):
                    log.exception("lease_beat_crashed")
                    continue
                note_refusal(exc)
                if not failing:  # once per outage or refusal, not every beat
                    log.warning("lease_beat_failed", error=str(exc) or type(exc).__name__)
                failing = True
            except Exception:  # the beat must go on; say what happened
                log.exception("lease_beat_crashed")
            else:
                if failing:
                    log.info("lease_beat_recovered")
                failing = False


_keepers: dict[int, LeaseKeeper] = {}
_keepers_lock = threading.Lock()


def keeper(client: RedisClient, keys: Keys) -> LeaseKeeper:
    """The process's keeper for ``client`` (one per client, so one beat thread)."""
    with _keepers_lock:
        found = _keepers.get(id(client))
        if found is None:
            found = _keepers[id(client)] = LeaseKeeper(client, keys)
        return found
