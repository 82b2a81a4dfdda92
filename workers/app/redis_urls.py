"""Redis URLs: a plain one (``redis://``, ``rediss://``, ``unix://``) or Redis Sentinel's.

The Sentinel form names every sentinel, ``;`` between them, and the master's name::

    sentinel://[:PASSWORD@]HOST1:26379;sentinel://HOST2:26379/DB?master_name=NAME

The password (the master's), ``/DB`` and ``master_name`` may be written on any one of
the addresses; written twice they must agree. Every client (the council's stores, kombu's
broker, Celery's result backend) asks the sentinels for the master and asks again when a
command finds the master gone or read-only (a failover), so a failover is an outage that
ends; the council's own long-lived client also leaves a master the sentinels replaced at
once (:func:`follow_switches`). Source: docs/celery.md §1.16.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from workers.stores import RedisClient

SENTINEL_SCHEME = "sentinel://"
DEFAULT_SENTINEL_PORT = 26379
SENTINEL_TIMEOUT_S = 5.0
"""Longest wait for one sentinel's answer (which master) before asking the next."""

FORM = "sentinel://[:PASSWORD@]HOST:26379[;sentinel://HOST:26379...]/DB?master_name=NAME"
"""The Sentinel URL form, as errors show it."""


@dataclass(frozen=True)
class SentinelUrl:
    """A Sentinel URL read: the sentinels, the master's name, its database and login."""

    sentinels: tuple[tuple[str, int], ...]
    master_name: str
    db: int = 0
    username: str | None = None
    password: str | None = None

    def kombu_url(self) -> str:
        """The URL kombu's broker and Celery's result backend read: every sentinel with
        the login and database (``master_name`` goes in their transport options)."""
        login = ""
        if self.password is not None:
            login = f"{quote(self.username or '', safe='')}:{quote(self.password, safe='')}@"
        elif self.username:
            login = f"{quote(self.username, safe='')}@"
        return ";".join(
            f"sentinel://{login}{_host(host)}:{port}/{self.db}" for host, port in self.sentinels
        )


def is_sentinel(url: str) -> bool:
    """Whether ``url`` is a Sentinel URL."""
    return url.strip().lower().startswith(SENTINEL_SCHEME)


def parse_sentinel(url: str, *, master_name: str | None = None) -> SentinelUrl:
    """Read a Sentinel URL (``master_name`` given: it wins over the URL's). Raises
    ``ValueError`` saying what is wrong as a predicate ("needs one master_name…", to follow
    "the URL"), never quoting the password."""
    sentinels: list[tuple[str, int]] = []
    names: set[str] = set()
    dbs: set[int] = set()
    logins: set[tuple[str | None, str | None]] = set()
    for chunk in (c.strip() for c in url.strip().split(";")):
        if not chunk:
            continue
        if not chunk.lower().startswith(SENTINEL_SCHEME):
            raise ValueError(f"has an address not starting with sentinel:// (write {FORM})")
        try:
            parts = urlsplit(chunk)
            port = parts.port or DEFAULT_SENTINEL_PORT
        except ValueError:
            raise ValueError(f"has an address that cannot be read (write {FORM})") from None
        if not parts.hostname:
            raise ValueError(f"has an address naming no host (write {FORM})")
        sentinels.append((parts.hostname, port))
        query = parse_qs(parts.query)
        names.update(v for v in query.pop("master_name", []) if v)
        if query:
            raise ValueError(
                f"has unknown option(s) {', '.join(sorted(query))}: only master_name is read "
                f"(write {FORM})"
            )
        path = parts.path.strip("/")
        if path:
            if not path.isdigit():
                raise ValueError(f"names database {path!r}: write a number (write {FORM})")
            dbs.add(int(path))
        if parts.password is not None or parts.username:
            password = unquote(parts.password) if parts.password is not None else None
            logins.add((unquote(parts.username) if parts.username else None, password))
    if not sentinels:
        raise ValueError(f"names no sentinel (write {FORM})")
    if master_name:
        names = {master_name}
    if len(names) != 1:
        raise ValueError(
            f"needs one master_name, the name the sentinels monitor (write {FORM})"
            if not names
            else f"names {len(names)} different master_name values; give one"
        )
    if len(dbs) > 1:
        raise ValueError(f"names {len(dbs)} different databases; give one /DB")
    if len(logins) > 1:
        raise ValueError("names different users or passwords; give the master's once")
    username, password = next(iter(logins)) if logins else (None, None)
    return SentinelUrl(
        sentinels=tuple(sentinels),
        master_name=names.pop(),
        db=dbs.pop() if dbs else 0,
        username=username,
        password=password,
    )


def redis_client(url: str, *, master_name: str | None = None, **options: Any) -> RedisClient:
    """A Redis client for ``url`` with the connection ``options`` (``socket_timeout``…):
    a Sentinel URL gives a client of the master the sentinels name now (asked again on
    every reconnect: a failover costs an outage, not the client). ``master_name`` is for
    the URLs kombu reads (:meth:`SentinelUrl.kombu_url`), which carry none. Raises
    ``ValueError`` for a URL that cannot be read."""
    # Imported here: the settings read URLs on every start of the CLI, which reaches
    # Redis only for some commands (``council record`` runs once per finding).
    import redis
    from redis.sentinel import Sentinel

    if not is_sentinel(url):
        client: RedisClient = redis.Redis.from_url(url, **options)
        return client
    parsed = parse_sentinel(url, master_name=master_name)
    # A sentinel is asked with short timeouts, whatever the master's: a dead one is skipped.
    asking = {
        key: min(float(options.get(key) or SENTINEL_TIMEOUT_S), SENTINEL_TIMEOUT_S)
        for key in ("socket_timeout", "socket_connect_timeout")
    }
    sentinel = Sentinel(list(parsed.sentinels), sentinel_kwargs=asking)  # type: ignore[no-untyped-call]
    login = {"username": parsed.username, "password": parsed.password}
    master: RedisClient = sentinel.master_for(  # type: ignore[no-untyped-call]
        parsed.master_name,
        db=parsed.db,
        **{k: v for k, v in login.items() if v is not None},
        **options,
    )
    return master


def follow_switches(client: RedisClient) -> None:
    """For a client of a Sentinel URL (others: nothing), drop its connections whenever a
    sentinel announces ``+switch-master`` for its master, from a daemon thread. Why: a
    master demoted alive (``SENTINEL FAILOVER``) keeps taking writes on the connections
    already open to it until the sentinel reconfigures it, seconds later, and those
    writes are then lost; dropped, the next command reconnects to the new master."""
    import redis

    pool = client.connection_pool
    sentinel = getattr(pool, "sentinel_manager", None)
    master_name = getattr(pool, "service_name", None)
    if sentinel is None or master_name is None:
        return

    def listen() -> None:
        while True:
            for node in sentinel.sentinels:
                pubsub = node.pubsub(ignore_subscribe_messages=True)
                try:
                    pubsub.subscribe("+switch-master")
                    while True:
                        message = pubsub.get_message(timeout=1.0)
                        data = message.get("data") if message else None
                        text = data.decode() if isinstance(data, bytes) else str(data or "")
                        if text.split(" ", 1)[0] == master_name:
                            _drop_connections(pool)
                except (redis.RedisError, OSError):
                    pass  # this sentinel is gone: listen to the next
                finally:
                    pubsub.close()
            time.sleep(SENTINEL_TIMEOUT_S)

    threading.Thread(target=listen, name="council-sentinel", daemon=True).start()


def _drop_connections(pool: Any) -> None:
    """Close ``pool``'s idle connections, and mark those in use to be closed when they
    are given back (closing one mid-command from this thread breaks its reader)."""
    pool.disconnect(inuse_connections=False)
    lock = getattr(pool, "_lock", None)
    if lock is None:
        return
    with lock:
        for connection in list(getattr(pool, "_in_use_connections", ())):
            mark = getattr(connection, "mark_for_reconnect", None)
            if mark is not None:
                mark()


def _host(host: str) -> str:
    """An IPv6 address in brackets, as a URL writes it."""
    return f"[{host}]" if ":" in host else host
