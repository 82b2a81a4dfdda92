"""The process-wide runtime: settings, the state Redis client and the stores built on it.

A worker process builds one lazily from the environment the first time a task needs it;
embedded mode and the tests install their own with :func:`install` (an in-process
fakeredis server, or a test redis-server). Source: architecture.md "Two modes, one code
path".
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import redis

from council.errors import ConfigurationError, StoreUnavailable
from workers.cancellation import CancelWatch
from workers.logging import redact_text, redact_url
from workers.settings import Settings
from workers.stores import RedisClient
from workers.stores.journal import JournalStore
from workers.stores.keys import Keys
from workers.stores.runs import RunStore
from workers.stores.sessions import SessionStore
from workers.trees import TreeCache

CONNECT_TIMEOUT_S = 5.0
"""Seconds to wait for Redis before saying it cannot be reached."""


@dataclass
class Runtime:
    """Everything a task or the coordinator needs to reach the council's state."""

    settings: Settings
    client: RedisClient
    keys: Keys
    runs: RunStore
    journals: JournalStore
    sessions: SessionStore
    trees: TreeCache
    cancels: CancelWatch
    mode: str = "distributed"


def connect(url: str) -> RedisClient:
    """A Redis client for ``url``, checked with a PING within 5 s.

    Raises :class:`StoreUnavailable` naming the URL without its password.
    """
    shown = redact_url(url)
    try:
        client: RedisClient = redis.Redis.from_url(
            url,
            socket_connect_timeout=CONNECT_TIMEOUT_S,
            socket_timeout=30.0,
            health_check_interval=25,
            retry_on_timeout=True,
        )
    except ValueError:
        # redis-py's message quotes the URL's parts, the password among them.
        raise ConfigurationError(
            f"COUNCIL_REDIS_URL {shown} cannot be read: write it as "
            "redis://[:PASSWORD@]HOST:PORT/DB (percent-encode ':' '/' '@' in the password)"
        ) from None
    try:
        client.ping()
    except redis.AuthenticationError:
        raise StoreUnavailable(
            shown, "Redis refused the credentials", "Check the user and password in the URL."
        ) from None
    except (redis.RedisError, OSError) as exc:
        raise StoreUnavailable(shown, redact_text(str(exc)) or type(exc).__name__) from None
    return client


def build_runtime(
    settings: Settings, client: RedisClient | None = None, *, mode: str = "distributed"
) -> Runtime:
    """Build the stores over ``client`` (or a checked connection to the settings' URL)."""
    if client is None:
        url = settings.redis_url_value()
        if url is None:
            raise StoreUnavailable(
                "(no COUNCIL_REDIS_URL)", "a worker needs COUNCIL_REDIS_URL to find its broker"
            )
        client = connect(url)
    keys = Keys(settings.prefix)
    return Runtime(
        settings=settings,
        client=client,
        keys=keys,
        runs=RunStore(client, keys),
        journals=JournalStore(client, keys),
        sessions=SessionStore(
            client,
            keys,
            session_retention_s=settings.session_retention_s,
            run_retention_s=settings.run_retention_s,
        ),
        trees=TreeCache(settings.work_dir),
        cancels=CancelWatch(RunStore(client, keys).cancelled_many),
        mode=mode,
    )


_lock = threading.Lock()
_current: Runtime | None = None


def install(runtime: Runtime | None) -> None:
    """Make ``runtime`` the one tasks in this process use (None forgets it)."""
    global _current
    with _lock:
        _current = runtime


def current() -> Runtime:
    """The installed runtime, built from the environment on first use in a worker."""
    global _current
    with _lock:
        if _current is None:
            _current = build_runtime(Settings())
        return _current
