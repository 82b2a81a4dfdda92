"""A worker holding running tasks survives the loss of its Redis broker connection.

On a broker connection error Celery 5.7.0 detaches the connection's transport, then closes
it; closing restores the unacknowledged messages through ``transport.client.hostname``, an
``AttributeError`` that ``Worker.start`` treats as unrecoverable, so a busy worker stopped
(kombu#582, celery#9250). Restoring would be wrong anyway: those tasks still run here, and
put back on the queue they would run twice at once. So :func:`install` wraps the consumer's
handler: the lost connection's channels do not restore (``do_restore = False``), each task's
ack is done on a fresh connection when it finishes (:func:`_ack_on_fresh_connection`), and
if the process dies first the visibility-timeout sweep puts the messages back. An ack
Redis refuses (``OOM``: under ``maxmemory`` every ``MULTI`` is refused) does not stop the
consumer either: the message is forgotten here and removed from Redis's unacked index by a
thread that retries (:func:`_ack_later`). ``READONLY`` on the broker connection, and the
``UNBLOCKED`` a waiting ``BRPOP`` gets when its Redis becomes a replica in a failover, are
a lost connection too: reconnected (under Sentinel, to the new master), not a worker exit.
Source: docs/celery.md §1.6, §1.13 and §4.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import redis
import structlog
from celery.worker.consumer.consumer import Consumer
from kombu.transport import redis as kombu_redis
from kombu.transport import virtual

from workers.app.redis_urls import redis_client
from workers.execution.outage_retry import held_back, note_refusal, refused, switched

log = structlog.get_logger("council.worker")

ACK_RETRY_S = 120.0
"""Seconds a finished task's ack after a connection loss is retried for (the message
is redelivered after the visibility timeout anyway, and then skipped: its result is
stored, ``worker_deduplicate_successful_tasks``; a chord's task, whose result is not,
returns its participant's stored outcome, docs/celery.md §1.8)."""

_PAUSE_S = (0.25, 5.0)

_URL_ATTR = "_council_broker_url"

_lock = threading.Lock()
_installed = False


def install() -> None:
    """Patch Celery's consumer and kombu's Redis QoS once per process (idempotent)."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
        original_error = Consumer.on_connection_error_after_connected
        original_ack = kombu_redis.QoS.ack

        def on_connection_error_after_connected(self: Consumer, exc: Exception) -> None:
            _keep_unacked(self)
            original_error(self, exc)

        def ack(self: kombu_redis.QoS, delivery_tag: str) -> None:
            where = getattr(self.channel, _URL_ATTR, None)
            if where is None:
                try:
                    original_ack(self, delivery_tag)  # type: ignore[no-untyped-call]
                except redis.ResponseError as exc:
                    if refused(exc) is None:
                        raise
                    _ack_later(self, delivery_tag, exc)
                return
            _ack_on_fresh_connection(self, where, delivery_tag)

        patched: Any = Consumer
        patched.on_connection_error_after_connected = on_connection_error_after_connected
        patched = kombu_redis.QoS
        patched.ack = ack
        # READONLY: the Redis the broker connection reached became a replica (a failover,
        # the old master back). A lost connection to reconnect, not an unrecoverable error
        # that stops the worker; under Sentinel the reconnect finds the new master.
        patched = kombu_redis.Transport
        patched.connection_errors = (*patched.connection_errors, redis.ReadOnlyError)
        original_brpop_read = kombu_redis.Channel._brpop_read

        def brpop_read(self: kombu_redis.Channel, **options: Any) -> Any:
            try:
                return original_brpop_read(self, **options)  # type: ignore[no-untyped-call]
            except redis.ResponseError as exc:
                if not switched(exc):
                    raise
                # The waiting BRPOP's Redis turned replica under it: a lost connection.
                self.client.connection.disconnect()
                raise redis.ConnectionError(f"the broker's Redis became a replica: {exc}") from exc

        patched = kombu_redis.Channel
        patched._brpop_read = brpop_read


def _keep_unacked(consumer: Consumer) -> None:
    """Tell every channel of the consumer's lost connection not to restore its unacked
    messages at close, and where to acknowledge them later."""
    connection = consumer.connection
    transport = getattr(connection, "_transport", None) if connection is not None else None
    channels: list[Any] = list(getattr(transport, "channels", None) or ())
    default = getattr(connection, "_default_channel", None)
    if default is not None and default not in channels:
        channels.append(default)
    url = consumer.app.conf.broker_url
    options = consumer.app.conf.broker_transport_options or {}
    held = 0
    for channel in channels:
        channel.do_restore = False
        setattr(channel, _URL_ATTR, (url, options.get("master_name")))
        qos = getattr(channel, "_qos", None)
        held += len(getattr(qos, "_delivered", None) or ())
    if held:
        log.warning("broker_lost_unacked_kept", messages=held)


def _ack_later(qos: kombu_redis.QoS, delivery_tag: str, exc: Exception) -> None:
    """Redis refused an ack: retry it on a thread (the consumer's loop goes on)."""
    note_refusal(exc)
    log.warning("ack_refused", delivery_tag=delivery_tag, error=str(exc))
    broker = qos.channel.connection.client
    master_name: str | None = getattr(qos.channel, "master_name", None)
    # A Sentinel broker's URL is every sentinel, ";" between them (kombu keeps them apart).
    url = ";".join(broker.alt) if master_name else broker.as_uri(include_password=True)
    threading.Thread(
        target=_ack_on_fresh_connection,
        args=(qos, (url, master_name), delivery_tag),
        name="council-ack",
        daemon=True,
    ).start()


def _ack_on_fresh_connection(
    qos: kombu_redis.QoS, where: tuple[str, str | None], delivery_tag: str
) -> None:
    """Remove an acknowledged message from Redis's unacked index and hash on a new
    connection (the old channel's is gone) to ``where`` (the broker URL and, under
    Sentinel, the master's name), retrying with backoff for :data:`ACK_RETRY_S`; then
    forget it locally. Never raises."""
    url, master_name = where
    deadline = time.monotonic() + ACK_RETRY_S
    pause = _PAUSE_S[0]
    while True:
        client = redis_client(
            url, master_name=master_name, socket_connect_timeout=5, socket_timeout=5
        )
        try:
            prefix = getattr(qos.channel, "global_keyprefix", "") or ""
            pipe = client.pipeline()
            pipe.zrem(prefix + qos.unacked_index_key, delivery_tag)
            pipe.hdel(prefix + qos.unacked_key, delivery_tag)
            pipe.execute()
            log.info("ack_after_reconnect", delivery_tag=delivery_tag)
            break
        except redis.RedisError as exc:
            if not held_back(exc):
                raise
            if time.monotonic() + pause > deadline:
                log.warning(
                    "ack_after_reconnect_gave_up", delivery_tag=delivery_tag, error=str(exc)
                )
                break
            time.sleep(pause * random.uniform(0.5, 1.0))  # nosec B311 (jitter)
            pause = min(2 * pause, _PAUSE_S[1])
        finally:
            client.close()
    virtual.QoS.ack(qos, delivery_tag)  # type: ignore[no-untyped-call]  # forget it locally
