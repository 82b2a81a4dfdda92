"""The HTTP connection pools the model reviewers of one event loop share.

Why shared pools: a worker runs hundreds of reviews at once on one loop
(:mod:`~reviewers.models.stream_loop`), and an SDK client with its own pool costs tens of
milliseconds to build (a TLS context each) and keeps its connections to itself. The SDK
clients of every review are thin wrappers over one ``httpx2.AsyncClient`` per SDK and
loop, on the SDK's own aiohttp transport (``DefaultAioHttpClient``): measured on 500
streams of 2 s, it used half the CPU of httpx2's own transport (``bench/concurrency.py``).
Timeouts are set per request from the review's clocks, so the pool's default is only a
fallback. Idle connections are kept for reuse.

Source: docs/architecture.md "Worker pool", issue "Model reviewers" (speed).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import httpx2

MAX_CONNECTIONS = 100_000
"""Connections open at once, per pool: in effect no limit (every review streams on its
own). A number, not None: the aiohttp transport reads None as aiohttp's default of 100."""

KEEPALIVE_CONNECTIONS = 64
"""Idle connections kept open for reuse."""

KEEPALIVE_EXPIRY_S = 30.0
"""How long an idle connection is kept, in seconds."""

FALLBACK_TIMEOUT_S = 60.0
"""Timeout (seconds) of a request that sets none; the reviewers always set one."""

Sdk = Literal["openai", "anthropic"]

T = TypeVar("T")

_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, httpx2.AsyncClient]] = (
    weakref.WeakKeyDictionary()
)


def shared_client(sdk: Sdk) -> httpx2.AsyncClient:
    """The running loop's pool for ``sdk``'s clients, built on first use.

    Call inside a coroutine. Raises RuntimeError when no loop is running.
    """
    loop = asyncio.get_running_loop()
    pools = _pools.setdefault(loop, {})
    client = pools.get(sdk)
    if client is None or client.is_closed:
        limits = httpx2.Limits(
            max_connections=MAX_CONNECTIONS,
            max_keepalive_connections=KEEPALIVE_CONNECTIONS,
            keepalive_expiry=KEEPALIVE_EXPIRY_S,
        )
        timeout = httpx2.Timeout(FALLBACK_TIMEOUT_S)
        if sdk == "openai":
            import openai

            client = openai.DefaultAioHttpClient(limits=limits, timeout=timeout)
        else:
            import anthropic

            client = anthropic.DefaultAioHttpClient(limits=limits, timeout=timeout)
        pools[sdk] = client
    return client


_sdk_clients: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[str, str, str], Any]
] = weakref.WeakKeyDictionary()


def sdk_client(sdk: Sdk, make: Callable[..., T], base_url: str, key: str) -> T:
    """The running loop's SDK client for (``sdk``, ``base_url``, ``key``), built once as
    ``make(api_key=key, base_url=base_url, max_retries=0, http_client=pool)`` over
    :func:`shared_client` and then reused by every review. ``make`` is the SDK's async
    client class (``openai.AsyncOpenAI``); its retries are off (the conversation retries).

    Why: building an SDK client costs about a millisecond of CPU (its resources, auth,
    headers); a worker starting 500 reviews at once paid a quarter of its start-up time
    for it (``bench/concurrency.py``, py-spy). The key is held in memory only, as the
    client itself holds it. Call inside a coroutine.
    """
    clients = _sdk_clients.setdefault(asyncio.get_running_loop(), {})
    found: T | None = clients.get((sdk, base_url, key))
    if found is None:
        pool = shared_client(sdk)
        found = make(api_key=key, base_url=base_url, max_retries=0, http_client=pool)
        clients[(sdk, base_url, key)] = found
    return found


async def close_pools() -> None:
    """Close the running loop's pools (their connections); the next use builds new ones."""
    loop = asyncio.get_running_loop()
    _sdk_clients.pop(loop, None)
    pools = _pools.pop(loop, {})
    for client in pools.values():
        await client.aclose()
