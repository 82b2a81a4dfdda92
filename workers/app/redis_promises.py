"""What the Redis a worker reaches promises: persistence, replicas, eviction, its role.

``council worker`` says it in one line at start (``redis_promises``) and warns, once each,
for what can drop a run's keys or writes: an evicting ``maxmemory-policy`` (a queued task,
a chord counter, a ledger deleted when full), no persistence (a restart loses every run)
and ``appendfsync no``. A read-only replica refuses every write: the worker does not start.
``CONFIG`` renamed or forbidden (managed Redis) leaves those settings ``unknown``.
Source: docs/operating.md "Redis" and "Why each setting is what it is".
"""

from __future__ import annotations

from dataclasses import dataclass, field

import redis

from workers.stores import RedisClient

UNKNOWN = "unknown"
"""A setting ``CONFIG GET`` could not read."""

SAFE_POLICIES = frozenset({"noeviction", UNKNOWN})
"""Policies that never delete a key to make room (``volatile-*`` deletes keys with a TTL:
every settled run's)."""


@dataclass(frozen=True)
class Promises:
    """One Redis's promises, as ``INFO`` and ``CONFIG GET`` tell them."""

    role: str
    aof: bool
    appendfsync: str
    rdb_saves: str
    replicas: int
    maxmemory: int
    policy: str
    warnings: list[str] = field(default_factory=list)

    @property
    def read_only(self) -> bool:
        """A replica: every write is refused (``READONLY``)."""
        return self.role in ("slave", "replica")


def _config(client: RedisClient, name: str) -> str:
    try:
        found = client.config_get(name)
    except redis.ResponseError:  # CONFIG renamed or forbidden (managed Redis)
        return UNKNOWN
    value = found.get(name)
    if value is None:
        return UNKNOWN
    return value.decode() if isinstance(value, bytes) else str(value)


def read_promises(client: RedisClient) -> Promises:
    """Read what ``client``'s Redis promises, with a warning per weak promise."""
    persistence = client.info("persistence")
    replication = client.info("replication")
    aof = bool(int(persistence.get("aof_enabled", 0)))
    fsync = _config(client, "appendfsync")
    saves = _config(client, "save")
    policy = _config(client, "maxmemory-policy")
    raw_max = _config(client, "maxmemory")
    promises = Promises(
        role=str(replication.get("role", UNKNOWN)),
        aof=aof,
        appendfsync=fsync,
        rdb_saves=saves,
        replicas=int(replication.get("connected_slaves", 0)),
        maxmemory=int(raw_max) if raw_max.isdigit() else -1,
        policy=policy,
    )
    if policy not in SAFE_POLICIES:
        promises.warnings.append(
            f"maxmemory-policy {policy} evicts keys when Redis is full: a queued task, a "
            "chord counter or a ledger can be dropped; set maxmemory-policy noeviction"
        )
    if not aof and saves in ("", UNKNOWN):
        promises.warnings.append(
            "no persistence (appendonly no, no RDB saves): a Redis restart loses every run; "
            "set appendonly yes, appendfsync everysec"
        )
    elif not aof:
        promises.warnings.append(
            "appendonly no: a Redis restart loses the writes since the last RDB snapshot "
            "(minutes); set appendonly yes, appendfsync everysec"
        )
    elif fsync == "no":
        promises.warnings.append(
            "appendfsync no: the AOF is flushed when the OS decides; set appendfsync everysec"
        )
    if promises.read_only:
        promises.warnings.append(
            "this Redis is a read-only replica: every write is refused; point "
            "COUNCIL_REDIS_URL at the primary"
        )
    return promises
