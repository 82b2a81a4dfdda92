"""Building the Celery app from the settings: configuration, queues, tasks, logging.

Configuration follows docs/celery.md §0 and §5 (JSON only, late acks, prefetch 1, the
visibility timeout in all three places), adjusted by docs/architecture.md (threads pool).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from celery import Celery
from kombu.entity import Exchange, Queue

from workers.app import metrics, stdio
from workers.app.redis_urls import is_sentinel, parse_sentinel
from workers.app.settings import Settings
from workers.app.task_lines import RunFacts, connect_celery_signals
from workers.execution import connection_loss

REVIEW_QUEUE = "council.default"
"""Queue of program, analyzer and replay reviewers."""

PROVIDER_QUEUES: dict[str, str] = {
    "openai": "council.openai",
    "anthropic": "council.anthropic",
}
"""One queue per model provider, so a slow provider cannot starve the others: a team
runs workers per queue (``council worker --queues openai``) sized to each budget."""

CONSOLIDATE_QUEUE = "council.consolidate"
"""Queue of the chord body and the finalizer: some worker must consume it."""

LOCAL_REDIS = "redis://127.0.0.1:6379/0"


def queue_for(backend: str) -> str:
    """The queue a participant's review task goes to, by its backend."""
    return PROVIDER_QUEUES.get(backend, REVIEW_QUEUE)


ALL_QUEUES: tuple[str, ...] = (REVIEW_QUEUE, CONSOLIDATE_QUEUE, *PROVIDER_QUEUES.values())
"""Every queue the council uses; a worker started without --queues consumes them all."""


def _queue(name: str) -> Queue:
    """A queue on its own direct exchange, so no message is bound to two queues."""
    exchange = Exchange(name, type="direct")  # type: ignore[no-untyped-call]
    return Queue(name, exchange, routing_key=name)  # type: ignore[no-untyped-call]


def celery_config(settings: Settings, *, embedded: bool = False) -> dict[str, Any]:
    """The Celery settings for our shape (docs/celery.md §5), as a dict for ``conf.update``."""
    vt = settings.visibility_timeout_s
    transport: dict[str, Any] = {
        "visibility_timeout": vt,
        "socket_keepalive": True,
        "health_check_interval": 25,
    }
    if settings.restore_interval_s is not None:
        transport["unacked_restore_interval"] = settings.restore_interval_s
        transport["unacked_restore_throttle"] = 1
    conf: dict[str, Any] = {
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "result_accept_content": ["json"],
        "task_acks_late": True,
        "task_reject_on_worker_lost": False,
        "task_acks_on_failure": True,
        "task_acks_on_timeout": True,
        "worker_prefetch_multiplier": 1,
        "task_track_started": True,
        "task_ignore_result": False,
        "result_expires": 2 * 24 * 3600,
        "result_chord_expires": max(2 * 24 * 3600, 3 * vt),
        "result_extended": True,
        "task_default_queue": REVIEW_QUEUE,
        "task_queues": tuple(_queue(name) for name in ALL_QUEUES),
        "task_routes": {
            "council.review_participant": {"queue": REVIEW_QUEUE},
            "council.review_batch": {"queue": REVIEW_QUEUE},
            "council.consolidate": {"queue": CONSOLIDATE_QUEUE},
            "council.finalize": {"queue": CONSOLIDATE_QUEUE},
            "council.judge": {"queue": REVIEW_QUEUE},
        },
        "task_allow_error_cb_on_chord_header": False,
        "task_always_eager": False,
        "broker_connection_retry_on_startup": True,
        "worker_hijack_root_logger": False,
        "worker_redirect_stdouts": False,
        "worker_send_task_events": True,
        "task_send_sent_event": True,
        "worker_pool": "threads",
        "worker_concurrency": settings.worker_threads,
    }
    if embedded:
        conf.update(
            broker_url="memory://localhost/",
            result_backend="cache+memory://",
        )
        return conf
    url = settings.redis_url_value() or LOCAL_REDIS
    backend_transport: dict[str, Any] = {
        "visibility_timeout": vt,
        "result_chord_ordered": True,
        "retry_policy": {"timeout": 5.0},
    }
    if is_sentinel(url):
        # kombu and Celery read the sentinels from the URL, the master's name from their
        # transport options (docs/celery.md §1.16).
        sentinel = parse_sentinel(url)
        url = sentinel.kombu_url()
        transport["master_name"] = backend_transport["master_name"] = sentinel.master_name
    conf.update(
        broker_url=url,
        result_backend=url,
        result_failure_expires=7 * 24 * 3600,
        broker_transport_options=transport,
        result_backend_transport_options=backend_transport,
        visibility_timeout=vt,
        result_backend_always_retry=True,
        # A result (and the chord's count) waits out a Redis outage as long as the task's
        # own writes do (workers/execution/outage_retry.py): retries sleep up to 10 s with full
        # jitter, 5 s on average, over most of the visibility timeout.
        result_backend_max_retries=max(10, int(vt * 0.9 / 5)),
        result_backend_max_sleep_between_retries_ms=10_000,
        redis_socket_keepalive=True,
        redis_retry_on_timeout=True,
        worker_cancel_long_running_tasks_on_connection_loss=True,
        worker_deduplicate_successful_tasks=True,
    )
    return conf


def _run_of(run_id: str) -> RunFacts | None:
    """The session and judge of a run, from its record in this worker's Redis (None if
    absent)."""
    from workers.app import services as runtime

    record = runtime.current().runs.record(run_id)
    return RunFacts(record.session, record.judge) if record is not None else None


def _attempt_of(run_id: str, participants: Sequence[str]) -> int | None:
    """The attempt a task of ``participants`` is about to be, from this worker's Redis."""
    from workers.app import services as runtime

    return runtime.current().journals.coming_attempt(run_id, participants)


class CouncilCelery(Celery):  # type: ignore[misc]
    """Celery whose worker program is :class:`workers.app.stdio.JsonWorker`: its banner is
    one JSON line, like everything else a council worker writes."""

    @cached_property
    def Worker(self) -> Any:
        return self.subclass_with_self("workers.app.stdio:JsonWorker")


def create_app(settings: Settings | None = None, *, embedded: bool = False) -> Celery:
    """A configured Celery app with the council's tasks registered.

    A worker's app (not embedded) also gets the signal receivers of its logs
    (:func:`workers.app.task_lines.connect_celery_signals`), of its stdout and stderr as JSON
    (:func:`workers.app.stdio.connect_celery_signals`) and of its metrics
    (:func:`workers.app.metrics.connect_celery_signals`).
    """
    settings = settings or Settings()
    app = CouncilCelery("council", include=["workers.app.tasks"], set_as_current=not embedded)
    app.conf.update(celery_config(settings, embedded=embedded))
    if not embedded:
        connect_celery_signals(app, run_of=_run_of, attempt_of=_attempt_of)
        stdio.connect_celery_signals()
        metrics.connect_celery_signals(app)
        connection_loss.install()
    return app
