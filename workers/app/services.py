"""The process-wide runtime: settings, the state Redis client and the stores built on it.

A worker process builds one lazily from the environment the first time a task needs it;
embedded mode and the tests install their own with :func:`install` (an in-process
fakeredis server, or a test redis-server). Source: docs/architecture.md "Two modes, one code
path".
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

import redis
import redis.sentinel

from council.errors import ConfigurationError, StoreUnavailable
from council.roster.providers import ProviderRegistry
from workers.app.logging import redact_text, redact_url
from workers.app.providers import load_providers
from workers.app.redis_urls import follow_switches, is_sentinel, parse_sentinel, redis_client
from workers.app.settings import Settings
from workers.execution.cancellation import CancelWatch
from workers.execution.unpacked_trees import TreeCache
from workers.stores import RedisClient
from workers.stores.artifacts import ArtifactStore
from workers.stores.journal import JournalStore
from workers.stores.keys import Keys
from workers.stores.runs import RunStore
from workers.stores.scripts import ScriptStore
from workers.stores.sessions import SessionStore

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
    artifacts: ArtifactStore
    """Each run's artifacts (an ask's large props), by ref, scoped to the run."""
    scripts: ScriptStore
    """Each attempt's script rows (``run_script``, ``council run-script``)."""
    mode: str = "distributed"
    """``embedded`` only in the CLI's own council (its roster's endpoints are honoured)."""
    providers: ProviderRegistry = field(default_factory=lambda: ProviderRegistry(source="none"))
    """This worker's provider registry (:mod:`council.roster.providers`)."""


REDIS_ENV = "COUNCIL_REDIS_URL"
"""Where the Redis URL comes from unless the user passed ``--redis``."""


def _no_master(
    url: str, shown: str, source: str, exc: redis.sentinel.MasterNotFoundError
) -> StoreUnavailable:
    """No sentinel named the master: none answered, or those that did know no master of
    that name. One line each (redis-py's message lists every sentinel's client object)."""
    said = parse_sentinel(url)
    where = ", ".join(f"{host}:{port}" for host, port in said.sentinels)
    unreachable = str(exc).count("- network:")
    if unreachable >= len(said.sentinels):
        return StoreUnavailable(
            shown,
            f"no sentinel answered ({where})",
            f"Start the sentinels there or fix their addresses in {source}, or unset "
            f"{REDIS_ENV} to run in embedded mode.",
        )
    return StoreUnavailable(
        shown,
        f"the sentinels ({where}) know no master named {said.master_name!r}"
        + (f"; {unreachable} did not answer" if unreachable else ""),
        "Set master_name to the name they monitor (`redis-cli -p 26379 SENTINEL masters` "
        f"lists them) in {source}.",
    )


def connect(url: str, *, source: str = REDIS_ENV, check: bool = True) -> RedisClient:
    """A Redis client for ``url``, checked with a PING within 5 s (``check``; without,
    the first command finds out: ``council record`` waits out an outage instead).

    ``source`` names where the URL came from (``COUNCIL_REDIS_URL``, or ``--redis``
    when the user passed the flag), so an error names what the user wrote. Raises
    :class:`ConfigurationError` for a URL redis-py cannot read and
    :class:`StoreUnavailable` naming the URL without its password.
    """
    shown = redact_url(url)
    fix = (
        "Start redis-server there, fix COUNCIL_REDIS_URL, or unset it to run in embedded mode."
        if source == REDIS_ENV
        else f"Start redis-server there, fix the {source} URL, or leave {source} out (and "
        f"{REDIS_ENV} unset) to run in embedded mode."
    )
    try:
        client: RedisClient = redis_client(
            url,
            socket_connect_timeout=CONNECT_TIMEOUT_S,
            socket_timeout=30.0,
            health_check_interval=25,
            retry_on_timeout=True,
        )
    except ValueError as exc:
        # redis-py's message quotes the URL's parts, the password among them.
        raise ConfigurationError(
            f"{source} {shown} {exc}"
            if is_sentinel(url)
            else f"{source} {shown} cannot be read: write it as "
            "redis://[:PASSWORD@]HOST:PORT/DB (percent-encode ':' '/' '@' in the password)"
        ) from None
    if not check:
        return client
    try:
        client.ping()
    except redis.AuthenticationError:
        raise StoreUnavailable(
            shown,
            "Redis refused the credentials",
            f"Check the user and password in the {source} URL.",
        ) from None
    except redis.sentinel.MasterNotFoundError as exc:
        raise _no_master(url, shown, source, exc) from None
    except (redis.RedisError, OSError) as exc:
        reason = redact_text(str(exc)) or type(exc).__name__
        raise StoreUnavailable(shown, reason, fix) from None
    follow_switches(client)  # a long-lived client: off the old master at once
    return client


def build_runtime(
    settings: Settings,
    client: RedisClient | None = None,
    *,
    mode: str = "distributed",
    source: str = REDIS_ENV,
    providers: ProviderRegistry | None = None,
) -> Runtime:
    """Build the stores over ``client`` (or a checked connection to the settings' URL;
    ``source`` names where that URL came from, for :func:`connect`'s errors) and the
    provider registry (``providers``, else the settings' and this process's environment:
    raises :class:`~council.roster.providers.RegistryError` when it is wrong)."""
    registry = providers if providers is not None else load_providers(settings, os.environ)
    if client is None:
        url = settings.redis_url_value()
        if url is None:
            raise StoreUnavailable(
                "(no COUNCIL_REDIS_URL)", "a worker needs COUNCIL_REDIS_URL to find its broker"
            )
        client = connect(url, source=source)
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
        trees=TreeCache(settings.work_dir, settings.max_unpacked_tree_bytes),
        cancels=CancelWatch(RunStore(client, keys).cancelled_many),
        artifacts=ArtifactStore(
            client,
            keys,
            max_bytes=settings.artifact_max_bytes,
            run_max_bytes=settings.artifact_run_max_bytes,
        ),
        scripts=ScriptStore(client, keys),
        mode=mode,
        providers=registry,
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
