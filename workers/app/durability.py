"""The durability an operator chooses for a run's filing (``COUNCIL_DURABILITY``).

``appendfsync everysec`` may lose Redis's last second. An operator who needs more asks
``council review`` to confirm, once the run is settled and before it reports, that the
filing reached this Redis's AOF on disk (``aof``: ``WAITAOF``, Redis 7.2 or later), N
replicas (``replicas:N``: ``WAIT``) or both. Both commands wait for the writes of the
connection they are sent on, and Redis writes its AOF and its replication stream in
order, so one small write of the CLI's own (``run:{id}:durable``), then the wait, on one
connection, covers the filing written before it by a worker. A Redis that cannot give it
is refused before the run opens, in one line (:func:`refusal`).
Source: docs/celery.md §1.16, docs/operating.md "Redis".
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from workers.stores import RedisClient
from workers.stores.keys import Keys

WAITAOF_SINCE = (7, 2)
"""The first Redis version with ``WAITAOF``."""


@dataclass(frozen=True)
class Durability:
    """What the filing must reach: this Redis's AOF on disk, and how many replicas."""

    aof: bool
    replicas: int

    @classmethod
    def parse(cls, text: str) -> Durability | None:
        """The setting's value (checked by :class:`~workers.app.settings.Settings`) as a
        :class:`Durability`; None when empty."""
        if not text:
            return None
        aof, _, replicas = text.partition("replicas:")
        return cls(aof=aof.startswith("aof"), replicas=int(replicas or 0))

    def describe(self) -> str:
        parts = ["the AOF fsynced"] if self.aof else []
        if self.replicas:
            parts.append(f"{self.replicas} replica{'s' if self.replicas != 1 else ''}")
        return " and ".join(parts)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".")[:2] if p.isdigit())


def refusal(client: RedisClient, wanted: Durability, setting: str) -> str | None:
    """Why this Redis cannot give ``wanted`` (one line naming ``setting``, the value), or
    None when it can."""
    info = client.info()
    version = str(info.get("redis_version", "0"))
    if wanted.aof and _version(version) < WAITAOF_SINCE:
        return (
            f"COUNCIL_DURABILITY={setting} needs WAITAOF (Redis 7.2 or later), and this Redis "
            f"is {version}: upgrade it, or set COUNCIL_DURABILITY=replicas:N or leave it unset"
        )
    if wanted.aof and str(info.get("aof_enabled", "0")) != "1":
        return f"COUNCIL_DURABILITY={setting} needs appendonly yes, and this Redis keeps no AOF"
    replicas = int(info.get("connected_slaves", 0) or 0)
    if replicas < wanted.replicas:
        return (
            f"COUNCIL_DURABILITY={setting} needs {wanted.replicas} replica(s), and this Redis "
            f"has {replicas} connected"
        )
    return None


def confirm(
    client: RedisClient, keys: Keys, run_id: str, wanted: Durability, timeout_ms: int
) -> str | None:
    """Wait until the run's filing reached what ``wanted`` asks; None when it did, else
    why not (one line). Raises what redis-py raises."""
    pipe = client.pipeline(transaction=False)
    pipe.set(keys.run_durable(run_id), b"1", ex=3600)
    if wanted.aof:
        pipe.execute_command("WAITAOF", 1, wanted.replicas, timeout_ms)
    else:
        pipe.execute_command("WAIT", wanted.replicas, timeout_ms)
    try:
        answer = pipe.execute()[-1]
    except redis.ResponseError as exc:
        return f"Redis refused to confirm it ({exc})"
    if wanted.aof:
        local, replicas = (int(n) for n in answer)
    else:
        local, replicas = 1, int(answer)
    if local >= 1 and replicas >= wanted.replicas:
        return None
    got = []
    if wanted.aof:
        got.append("the AOF fsynced" if local else "the AOF not fsynced")
    if wanted.replicas:
        got.append(f"{replicas} of {wanted.replicas} replicas")
    return f"within {timeout_ms} ms Redis confirmed {', '.join(got)}"
