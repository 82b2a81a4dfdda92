"""Prometheus metrics of a worker: reviews, durations, tokens, cost, retries, queues.

Served by ``council worker --metrics-port`` (on 127.0.0.1 unless ``--metrics-host``). Every
name is in :data:`METRIC_NAMES`, and the Grafana dashboard
(``deploy/grafana/council-dashboard.json``) queries only those. Units are Prometheus's:
seconds (council's millisecond clocks divided by 1000), counts, US dollars. An attempt is
counted by the worker that folded it, so a redelivered review counts twice, tokens and cost
too: both were spent. A prefork pool needs ``PROMETHEUS_MULTIPROC_DIR``. Never raises into a
review: a failure to record is logged (``metrics_failed``). Labels and what each metric counts:
docs/operating.md "Metrics". Source: docs/architecture.md "Observability".
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import redis
import structlog
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from council.round.cost import PriceTable, cost_usd
from workers.app.redis_urls import redis_client

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from celery import Celery

    from council.model.backend_result import ReviewResult
    from council.model.participant import Participant
    from council.round.outcome import ParticipantOutcome

log = structlog.get_logger("council.metrics")

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus-client's variable: set, every process writes its values there."""

DEFAULT_HOST = "127.0.0.1"
"""Where the metrics server listens unless ``--metrics-host`` says otherwise."""

REVIEW_BUCKETS_S = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600)
"""Buckets of the review duration, in seconds: a program's second to a model's hour."""

FIRST_TOKEN_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120)
"""Buckets of the time to first token, in seconds."""

WAIT_BUCKETS_S = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
"""Buckets of one sleep on the shared rate limiter, in seconds."""

REVIEWS = Counter(
    "council_reviews", "Review attempts run by this worker, by outcome.", ["backend", "status"]
)
REVIEW_SECONDS = Histogram(
    "council_review_duration_seconds",
    "Wall time of one review attempt's backend call, in seconds.",
    ["backend"],
    buckets=REVIEW_BUCKETS_S,
)
FIRST_TOKEN_SECONDS = Histogram(
    "council_review_time_to_first_token_seconds",
    "Seconds from sending a model request to its first streamed token (first per review).",
    ["provider", "model"],
    buckets=FIRST_TOKEN_BUCKETS_S,
)
TOKENS = Counter(
    "council_tokens",
    "Tokens model reviewers used (cached is part of input, reasoning of output).",
    ["provider", "model", "kind"],
)
COST = Counter(
    "council_cost_usd",
    "What model reviewers cost, in US dollars, by roster participant.",
    ["provider", "model", "participant"],
)
MODEL_REQUESTS = Counter(
    "council_model_requests",
    "HTTP requests made to model providers, retried ones included.",
    ["provider", "model"],
)
FINDINGS = Counter("council_findings", "Findings read from reviewers.", ["backend", "severity"])
WARNINGS = Counter("council_warnings", "Harvest warnings, by warning code.", ["code"])
RETRIES = Counter(
    "council_retries",
    "Model requests retried, by why (http-429, transport, ...).",
    ["provider", "reason"],
)
RATE_LIMIT_WAIT_SECONDS = Histogram(
    "council_rate_limit_wait_seconds",
    "One sleep on the shared rate limiter until a request fits, in seconds.",
    ["limit"],
    buckets=WAIT_BUCKETS_S,
)
REDIS_REFUSALS = Counter(
    "council_redis_refusals",
    "Writes Redis refused (OOM, MISCONF, READONLY, NOREPLICAS) that the worker kept and retried.",
    ["code"],
)
for _code in ("OOM", "MISCONF", "READONLY", "NOREPLICAS"):
    REDIS_REFUSALS.labels(_code)
TASKS_IN_FLIGHT = Gauge(
    "council_tasks_in_flight",
    "Celery tasks running on this worker now.",
    ["task"],
    multiprocess_mode="livesum",
)

QUEUE_DEPTH_NAME = "council_queue_depth"

METRIC_NAMES: frozenset[str] = frozenset(
    {
        "council_reviews_total",
        "council_review_duration_seconds",
        "council_review_time_to_first_token_seconds",
        "council_tokens_total",
        "council_cost_usd_total",
        "council_model_requests_total",
        "council_findings_total",
        "council_warnings_total",
        "council_retries_total",
        "council_redis_refusals_total",
        "council_rate_limit_wait_seconds",
        "council_tasks_in_flight",
        QUEUE_DEPTH_NAME,
    }
)
"""Every metric this module exports, as a query names it (a histogram's series add
``_bucket``, ``_sum`` and ``_count``)."""


def observe_review(
    participant: Participant,
    outcome: ParticipantOutcome,
    result: ReviewResult,
    prices: PriceTable | None = None,
) -> None:
    """Count one review attempt this worker ran: its outcome, duration, tokens, cost,
    findings, warnings, retries and time to first token. Never raises. The tokens of a
    review that went on after a person's answer count only what it used since (its
    pause's were counted when it paused)."""
    try:
        backend = participant.backend
        model = participant.model or ""
        REVIEWS.labels(backend, outcome.status).inc()
        REVIEW_SECONDS.labels(backend).observe(max(result.duration_ms, 0) / 1000)
        for finding in outcome.harvest.findings:
            FINDINGS.labels(backend, finding.severity or "none").inc()
        for warning in outcome.harvest.warnings:
            WARNINGS.labels(warning.code).inc()
        for reason in result.retries:
            RETRIES.labels(backend, reason).inc()
        if result.first_token_ms is not None:
            FIRST_TOKEN_SECONDS.labels(backend, model).observe(result.first_token_ms / 1000)
        usage = result.usage
        if usage is not None and result.usage_before is not None:
            usage = usage - result.usage_before
        if usage is not None:
            for kind in ("input", "output", "cached", "reasoning"):
                TOKENS.labels(backend, model, kind).inc(max(getattr(usage, kind), 0))
            MODEL_REQUESTS.labels(backend, model).inc(max(usage.requests, 0))
            dollars = cost_usd(usage, backend, participant.model, prices or PriceTable())
            if dollars is not None:
                COST.labels(backend, model, participant.id).inc(max(dollars, 0.0))
    except Exception as error:  # a metric must never cost a review
        log.warning("metrics_failed", error_type=type(error).__name__, error=str(error))


def observe_refusal(code: str) -> None:
    """One write Redis refused with ``code`` (kept and retried). Never raises."""
    try:
        REDIS_REFUSALS.labels(code).inc()
    except Exception as error:  # a metric must never break a write's retry
        log.warning("metrics_failed", error_type=type(error).__name__, error=str(error))


def observe_rate_limit_wait(limit: str, seconds: float) -> None:
    """One sleep of ``seconds`` on the shared rate limiter for key ``limit``."""
    RATE_LIMIT_WAIT_SECONDS.labels(limit).observe(max(seconds, 0.0))


class _InFlight:
    """Receivers of ``task_prerun``/``task_postrun``: the in-flight gauge per task name.

    A task is counted down only if it was counted up (by id), so a postrun without its
    prerun never drives the gauge below zero."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, str] = {}

    def prerun(self, sender: Any = None, task_id: str | None = None, **signal: Any) -> None:
        name = str(getattr(signal.get("task", sender), "name", None) or "unknown")
        if task_id is None:
            return
        with self._lock:
            if task_id in self._running:
                return
            self._running[task_id] = name
        TASKS_IN_FLIGHT.labels(name).inc()

    def postrun(self, sender: Any = None, task_id: str | None = None, **_: Any) -> None:
        with self._lock:
            name = self._running.pop(task_id, None) if task_id is not None else None
        if name is not None:
            TASKS_IN_FLIGHT.labels(name).dec()


def connect_celery_signals(app: Celery) -> None:
    """Count the tasks in flight of the worker that runs ``app``; safe to call twice
    (fixed dispatch ids)."""
    from celery import signals

    receivers = _InFlight()
    signals.task_prerun.connect(
        receivers.prerun, weak=False, dispatch_uid="council.metrics.task_prerun"
    )
    signals.task_postrun.connect(
        receivers.postrun, weak=False, dispatch_uid="council.metrics.task_postrun"
    )


def queue_keys(queue: str, transport_options: Mapping[str, Any] | None = None) -> list[str]:
    """The Redis lists kombu's Redis transport keeps for ``queue``, as it names them.

    The queue's own name holds priority 0; each other priority step ``P`` (kombu's
    ``priority_steps``, default 0, 3, 6, 9) has the list ``queue + sep + str(P)``, ``sep``
    being ``"\\x06\\x16"``; ``global_keyprefix`` goes before all of them. The three can be
    changed by the broker's transport options, as kombu reads them. Source: kombu
    ``kombu/transport/redis.py`` (``Channel._q_for_pri``, ``Channel._size``).
    """
    from kombu.transport.redis import PRIORITY_STEPS, Channel

    options = transport_options or {}
    sep = str(options.get("sep", Channel.sep))
    prefix = str(options.get("global_keyprefix", ""))
    steps = sorted(set(options.get("priority_steps", PRIORITY_STEPS)))
    return [prefix + (f"{queue}{sep}{step}" if step else queue) for step in steps]


class QueueDepth(Collector):
    """``council_queue_depth{queue}``: messages waiting in each queue, read at scrape time.

    One pipelined round trip of ``LLEN`` over :func:`queue_keys` of every queue. When
    Redis cannot be read the scrape shows no depth (never a stale one) and
    ``queue_depth_unavailable`` is logged once until a read succeeds again.
    """

    def __init__(
        self,
        client: redis.Redis,
        queues: Sequence[str],
        transport_options: Mapping[str, Any] | None = None,
    ) -> None:
        self._client = client
        self._keys = {q: queue_keys(q, transport_options) for q in dict.fromkeys(queues)}
        self._failing = False

    def describe(self) -> Iterable[Metric]:
        """The family without samples (so registering reads nothing from Redis)."""
        return [self._family()]

    def collect(self) -> Iterable[Metric]:
        family = self._family()
        try:
            with self._client.pipeline(transaction=False) as pipe:
                for keys in self._keys.values():
                    for key in keys:
                        pipe.llen(key)
                sizes: Iterator[Any] = iter(pipe.execute())
        except redis.RedisError as error:
            if not self._failing:
                self._failing = True
                log.warning(
                    "queue_depth_unavailable", error_type=type(error).__name__, error=str(error)
                )
            return [family]
        if self._failing:
            self._failing = False
            log.info("queue_depth_recovered")
        for queue, keys in self._keys.items():
            family.add_metric([queue], sum(int(next(sizes)) for _ in keys))
        return [family]

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            QUEUE_DEPTH_NAME,
            "Messages waiting in each council queue (Redis LLEN).",
            labels=["queue"],
        )


def serving_registry(extra: Iterable[Collector] = ()) -> CollectorRegistry:
    """The registry a metrics server shows: the default one (this process), or, when
    ``PROMETHEUS_MULTIPROC_DIR`` is set, a new one aggregating every process's files;
    ``extra`` collectors (the queue depth) are added to it."""
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    else:
        registry = REGISTRY
    for collector in extra:
        registry.register(collector)
    return registry


class MetricsServer:
    """A running metrics endpoint: ``url`` to scrape, :meth:`close` to stop it."""

    def __init__(
        self,
        server: WSGIServer,
        thread: threading.Thread,
        registry: CollectorRegistry,
        extra: Sequence[Collector],
    ) -> None:
        self._server, self._thread, self._registry, self._extra = server, thread, registry, extra
        host, port = server.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else str(host)
        self.url = f"http://{name}:{port}/metrics"

    def close(self) -> None:
        """Stop serving and unregister the collectors added for this server."""
        self._server.shutdown()
        self._server.server_close()
        for collector in self._extra:
            self._registry.unregister(collector)


def serve(
    port: int,
    host: str = DEFAULT_HOST,
    *,
    redis_url: str | None = None,
    queues: Sequence[str] = (),
    transport_options: Mapping[str, Any] | None = None,
) -> MetricsServer:
    """Serve the metrics on ``host:port`` (port 0: any free one) from a daemon thread.

    With ``redis_url`` and ``queues``, ``council_queue_depth`` is read from that Redis
    at each scrape (2 s socket timeouts, so a scrape during an outage returns quickly).
    The ``*_created`` series prometheus-client adds by default are turned off. Raises
    ``OSError`` when the address cannot be bound (in use, not this host's).
    """
    from prometheus_client import disable_created_metrics, start_http_server

    disable_created_metrics()  # type: ignore[no-untyped-call]  # no *_created series
    extra: list[Collector] = []
    if redis_url is not None and queues:
        client = redis_client(redis_url, socket_timeout=2, socket_connect_timeout=2)
        extra.append(QueueDepth(client, queues, transport_options))
    registry = serving_registry(extra)
    try:
        server, thread = start_http_server(port, addr=host, registry=registry)
    except BaseException:
        for collector in extra:
            registry.unregister(collector)
        raise
    running = MetricsServer(server, thread, registry, extra)
    log.info("metrics_serving", url=running.url, multiprocess=bool(os.environ.get(MULTIPROC_ENV)))
    return running
