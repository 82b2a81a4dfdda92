"""Opening a run in its session: claiming its participants' ids in the session's
ledger and writing the run ``open``, all or nothing; and the ledger itself.

Structures (see :mod:`workers.stores.keys`): ``session:{s}:ledger`` (the ledger JSON),
``session:{s}:open`` (open run → the ids it holds; those count as attributed),
``session:{s}:runs`` and ``runs`` (the runs, by creation time), ``runs:open``
(by deadline, for the sweep). A round's claims and the opening of its run are ONE
optimistic transaction (WATCH ledger, attributed ids and open runs; MULTI), so two
coordinators claiming one id with different meanings cannot both win. Raises
:class:`~council.errors.IdentityRefused` when a claim is refused.

Source: docs/identity-and-clocks.md "Identity and the ledger"; docs/architecture.md
"State in Redis".
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Literal

import redis

from council.model.participant import Identity, Participant, Role
from council.session.ledger import Ledger
from workers.stores import RedisClient, server_id, server_ms
from workers.stores.keys import Keys
from workers.stores.run_record import RunRecord

RUNS_INDEX_MAX = 10_000
"""Most runs ``council:runs`` keeps; older ones are trimmed by one opening in
:data:`RUNS_INDEX_TRIM_EVERY` (as are runs older than the run retention, whose keys have
expired): it lists this many plus the few opened since the last trim."""

RUNS_INDEX_TRIM_EVERY = 16
"""One opening in this many (chosen by the run id's CRC-32, so about one in 16 whatever
the load) trims ``council:runs``: two commands a run saved; ``council runs`` skips an
expired run it lists and removes it."""

OPEN_TTL_CAP_S = 30 * 24 * 3600
"""The longest a run's deadline counts toward its keys' TTL at opening (30 days)."""

RETENTION_SLACK = 0.01
"""How much a retention may be off when a step keeps the TTLs keys already hold instead
of setting each again: 1% of it (a run's keys may outlive its settling by 1% more than
the run retention; a session's keys may expire 1% of the session retention early after
a step that found them refreshed that recently)."""

Freshness = Literal["new", "fresh", "stale"]
"""A session's keys before a step writes them (:meth:`SessionOpening.freshness`)."""


class SessionOpening:
    """Open runs in a session and keep its ledger (a part of
    :class:`~workers.stores.sessions.SessionStore`, whose client, keys and retentions it
    uses)."""

    _r: RedisClient
    _keys: Keys
    _session_ttl: int
    _run_ttl: int

    def open_run(
        self, record: RunRecord, claims: Sequence[tuple[Role, Participant]], now_ms: int
    ) -> list[Identity]:
        """Claim every participant and write the run record ``open``, all or nothing.

        An id held by another still-open run (deadline not passed) counts as attributed.
        Raises :class:`~council.errors.IdentityRefused` (nothing written) when a claim is
        refused.
        """
        k, s = self._keys, record.session
        watched = [k.session_ledger(s), k.session_attributed(s), k.session_open(s)]
        # The watchdog's deadline and the abandon clock are scored on Redis's clock.
        server = server_ms(self._r)
        opened_on = server_id(self._r)  # the settling tells a Redis restart by it
        watchdog_at = server + max(0, record.deadline_ms - now_ms)
        with self._r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(*watched)
                    ledger = _load_ledger(pipe.get(k.session_ledger(s)))
                    attributed = {m.decode() for m in pipe.smembers(k.session_attributed(s))}
                    stale: list[bytes] = []
                    for rid, raw in pipe.hgetall(k.session_open(s)).items():
                        held = json.loads(raw)
                        if held.get("deadline_ms", 0) > now_ms:
                            attributed.update(held.get("ids", []))
                        else:
                            stale.append(rid)
                    identities = ledger.claim_round(list(claims), attributed)
                    fresh = self.freshness(pipe, s)
                    pipe.multi()
                    pipe.set(k.session_ledger(s), ledger.to_json(), ex=self._session_ttl)
                    if stale:
                        pipe.hdel(k.session_open(s), *stale)
                    pipe.hset(
                        k.session_open(s),
                        record.run_id,
                        dumps(
                            {"ids": [p.id for _, p in claims], "deadline_ms": record.deadline_ms}
                        ),
                    )
                    pipe.hset(
                        k.run(record.run_id),
                        mapping={
                            "record": record.model_dump_json(),
                            "status": "open",
                            "redis": opened_on,
                        },
                    )
                    pipe.expire(k.run(record.run_id), self.open_ttl_s(record, now_ms))
                    trims = trims_index(record.run_id)
                    if trims:
                        oldest = f"({now_ms - self._run_ttl * 1000}"
                        pipe.zremrangebyscore(k.runs_index(), "-inf", oldest)
                    pipe.zadd(k.runs_index(), {record.run_id: record.created_ms})
                    if trims:
                        pipe.zremrangebyrank(k.runs_index(), 0, -(RUNS_INDEX_MAX + 1))
                    pipe.zadd(k.runs_open(), {record.run_id: watchdog_at})
                    pipe.zadd(k.runs_undispatched(), {record.run_id: server})
                    pipe.zadd(k.session_runs(s), {record.run_id: record.created_ms})
                    if fresh == "stale":
                        self.refresh(pipe, s)
                    else:  # what this step may have made anew
                        pipe.expire(k.session_open(s), self._session_ttl)
                        if fresh == "new":
                            pipe.expire(k.session_runs(s), self._session_ttl)
                    pipe.execute()
                    return identities
                except redis.WatchError:
                    continue

    def freshness(self, client: RedisClient, session: str) -> Freshness:
        """``new`` (none of the session's keys exists), ``fresh`` (they were all given
        the session retention less than :data:`RETENTION_SLACK` of it ago) or ``stale``.

        ``session:{s}:runs`` is the marker: only :meth:`refresh` sets its TTL once it
        exists, and every step that sets a TTL on another session key sets it to the
        full retention from then, so no session key expires before the marker. A
        ``fresh`` session's keys all live at least 99% of the retention from now: a step
        sets a TTL only on the keys it writes (one may be made anew) and ``issued``
        (finding ids are never given twice while a key holding one lives). One or two
        reads instead of an EXPIRE of every session key at each opening and filing.
        """
        k = self._keys
        left_ms = int(client.pttl(k.session_runs(session)))
        if left_ms >= self._session_ttl * 1000 * (1 - RETENTION_SLACK):
            return "fresh"
        if left_ms == -2 and not client.exists(*k.session_keys(session)):
            return "new"
        return "stale"

    def refresh(self, pipe: redis.client.Pipeline, session: str) -> None:
        """Queue the session retention on every session key (an idle session expires
        whole, the retention after its last step)."""
        for key in self._keys.session_keys(session):
            pipe.expire(key, self._session_ttl)

    def open_ttl_s(self, record: RunRecord, now_ms: int) -> int:
        """The TTL a run's keys get when it opens: until its deadline (at most
        :data:`OPEN_TTL_CAP_S` ahead), plus the run retention. A run that never settles
        still expires; settling sets the retention from then on."""
        until_deadline = max(0, record.deadline_ms - now_ms) // 1000 + 1
        return min(until_deadline, OPEN_TTL_CAP_S) + self._run_ttl

    def ledger(self, session: str) -> Ledger:
        """The session's ledger (empty when none was written)."""
        return _load_ledger(self._r.get(self._keys.session_ledger(session)))

    def release(self, session: str, participant: str) -> bool:
        """Free a participant id in the session's ledger (True if it was held)."""
        key = self._keys.session_ledger(session)
        with self._r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(key)
                    ledger = _load_ledger(pipe.get(key))
                    released = ledger.release(participant)
                    pipe.multi()
                    pipe.set(key, ledger.to_json())
                    pipe.expire(key, self._session_ttl)
                    pipe.execute()
                    return released
                except redis.WatchError:
                    continue

    def runs(self, session: str, limit: int = 50) -> list[str]:
        """Run ids of the session, newest first."""
        return [
            r.decode() for r in self._r.zrevrange(self._keys.session_runs(session), 0, limit - 1)
        ]


def trims_index(run_id: str) -> bool:
    """Whether the opening of ``run_id`` trims ``council:runs`` (see
    :data:`RUNS_INDEX_TRIM_EVERY`)."""
    return zlib.crc32(run_id.encode()) % RUNS_INDEX_TRIM_EVERY == 0


def dumps(value: object) -> str:
    """Compact JSON for small records."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _load_ledger(raw: bytes | None) -> Ledger:
    return Ledger.from_json(raw.decode()) if raw else Ledger()
