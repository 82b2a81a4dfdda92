"""The HTTP connection pool the model reviewers of one process share.

Why one pool: a worker runs many reviews at once on threads, and an SDK client with its
own pool costs tens of milliseconds to build (a TLS context each) and keeps its
connections to itself. The SDK clients of every review are thin wrappers over this one
``httpx2.Client``; timeouts are set per request from the review's clocks, so the pool's
own defaults are only a fallback. Connections are unlimited (every concurrent review
streams on its own); idle ones are kept for reuse.

Source: architecture.md "Worker pool" (a threads pool holding many reviews at once).
"""

from __future__ import annotations

import os
import threading

import httpx2

KEEPALIVE_CONNECTIONS = 64
"""Idle connections kept open for reuse."""

KEEPALIVE_EXPIRY_S = 30.0
"""How long an idle connection is kept, in seconds."""

FALLBACK_TIMEOUT_S = 60.0
"""Timeout (seconds) of a request that sets none; the reviewers always set one."""

_lock = threading.Lock()
_client: httpx2.Client | None = None
_owner_pid = 0


def shared_client() -> httpx2.Client:
    """The process's pool, built on first use (again after a fork: sockets do not fork)."""
    global _client, _owner_pid
    with _lock:
        if _client is None or _owner_pid != os.getpid():
            _client = httpx2.Client(
                limits=httpx2.Limits(
                    max_connections=None,
                    max_keepalive_connections=KEEPALIVE_CONNECTIONS,
                    keepalive_expiry=KEEPALIVE_EXPIRY_S,
                ),
                timeout=httpx2.Timeout(FALLBACK_TIMEOUT_S),
            )
            _owner_pid = os.getpid()
        return _client
