"""Redis stores of the council: one module per structure (runs, journals, sessions).

``RedisClient`` is the type of the clients the stores take: a ``redis.Redis`` (or a
fakeredis one). It is spelled ``Any`` because redis-py types every command as
``Awaitable[Any] | Any`` (sync and async share stubs), which defeats checking; the stores
are exercised on fakeredis and on a real redis-server instead.

:func:`server_ms` is Redis's own clock: leases, deadlines and the sweep's watchdog are
scored and compared on it, never on two hosts' wall clocks (docs/identity-and-clocks.md).
:func:`server_id` names the Redis process: a restart changes it (docs/celery.md §1.16).
"""

from __future__ import annotations

from typing import Any, TypeAlias

import redis

RedisClient: TypeAlias = Any


def server_ms(client: RedisClient) -> int:
    """Redis's clock (``TIME``), in ms since the epoch: the one clock every host shares."""
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def server_id(client: RedisClient) -> str:
    """The Redis process's ``run_id`` (``INFO server``): another after every restart, so
    a restart (which may have lost the tail of its AOF) is noticed. "" where the server
    has no ``INFO`` (fakeredis, in embedded mode)."""
    try:
        info = client.info("server")
    except redis.ResponseError:
        return ""
    return str(info.get("run_id", ""))
