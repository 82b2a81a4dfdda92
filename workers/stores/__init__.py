"""Redis stores of the council: one module per structure (runs, journals, sessions).

``RedisClient`` is the type of the clients the stores take: a ``redis.Redis`` (or a
fakeredis one). It is spelled ``Any`` because redis-py types every command as
``Awaitable[Any] | Any`` (sync and async share stubs), which defeats checking; the stores
are exercised on fakeredis and on a real redis-server instead.
"""

from __future__ import annotations

from typing import Any, TypeAlias

RedisClient: TypeAlias = Any
