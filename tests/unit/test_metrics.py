"""Tests for workers/app/metrics.py: what a review attempt counts, the queue depth kombu's
lists give, tasks in flight, the server, and the Grafana dashboard's queries."""

from __future__ import annotations

import json
import re
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest
import redis
from celery import Celery, signals
from prometheus_client import REGISTRY
from structlog.testing import capture_logs

from council.model.backend_result import ReviewResult, Usage
from council.model.findings import Harvest
from council.model.participant import Participant
from council.roster.rate_limits import RateLimit
from council.round.cost import parse_prices
from council.round.outcome import ParticipantOutcome
from workers.app.metrics import (
    METRIC_NAMES,
    QueueDepth,
    connect_celery_signals,
    observe_review,
    queue_keys,
    serve,
    serving_registry,
)
from workers.stores.keys import Keys
from workers.stores.ratelimit import RedisRateLimiter

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "council-dashboard.json"


def sample(name: str, **labels: str) -> float:
    """A sample of the default registry (0 when absent)."""
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _participant(pid: str, backend: str, model: str | None) -> Participant:
    return Participant.model_validate({"id": pid, "backend": backend, "model": model})


def _outcome(pid: str, status: str = "answered", **harvest: Any) -> ParticipantOutcome:
    return ParticipantOutcome.model_validate(
        {"participant": pid, "status": status, "harvest": Harvest.model_validate(harvest)}
    )


def test_a_model_review_counts_outcome_tokens_cost_retries_and_first_token() -> None:
    """One answered openai attempt: reviews, duration (s), tokens per kind, requests,
    cost from the roster's prices, retries by reason, the first token (s), findings by
    severity and warnings by code all move by exactly what the attempt did."""
    model = "gpt-metrics-1"
    labels = {"provider": "openai", "model": model}
    prices = parse_prices({f"openai:{model}": {"input": 2.0, "output": 8.0}})
    before = {
        "reviews": sample("council_reviews_total", backend="openai", status="answered"),
        "input": sample("council_tokens_total", **labels, kind="input"),
        "output": sample("council_tokens_total", **labels, kind="output"),
        "cost": sample("council_cost_usd_total", **labels, participant="hawk"),
        "retries": sample("council_retries_total", provider="openai", reason="http-429"),
        "ttft": sample("council_review_time_to_first_token_seconds_sum", **labels),
        "minor": sample("council_findings_total", backend="openai", severity="minor"),
        "warned": sample("council_warnings_total", code="no-findings-array"),
        "seconds": sample("council_review_duration_seconds_sum", backend="openai"),
    }
    finding = {
        "anchor": {"kind": "change"},
        "label": "issue",
        "subject": "s",
        "severity": "minor",
    }
    warning = {"code": "no-findings-array", "at": "answer", "message": "m"}
    outcome = _outcome("hawk", findings=[finding], warnings=[warning])
    result = ReviewResult(
        answer="{}",
        duration_ms=2500,
        usage=Usage(input=1_000_000, output=500_000, requests=2),
        first_token_ms=250,
        retries=("http-429",),
    )
    observe_review(_participant("hawk", "openai", model), outcome, result, prices)
    assert sample("council_reviews_total", backend="openai", status="answered") == (
        before["reviews"] + 1
    )
    assert sample("council_tokens_total", **labels, kind="input") == before["input"] + 1_000_000
    assert sample("council_tokens_total", **labels, kind="output") == before["output"] + 500_000
    assert sample("council_model_requests_total", **labels) >= 2
    cost = sample("council_cost_usd_total", **labels, participant="hawk")
    assert cost == pytest.approx(before["cost"] + 6.0)
    assert sample("council_retries_total", provider="openai", reason="http-429") == (
        before["retries"] + 1
    )
    ttft = sample("council_review_time_to_first_token_seconds_sum", **labels)
    assert ttft == pytest.approx(before["ttft"] + 0.25)
    assert (
        sample("council_findings_total", backend="openai", severity="minor") == before["minor"] + 1
    )
    assert sample("council_warnings_total", code="no-findings-array") == before["warned"] + 1
    seconds = sample("council_review_duration_seconds_sum", backend="openai")
    assert seconds == pytest.approx(before["seconds"] + 2.5)


def test_a_program_review_counts_no_tokens_and_an_unpriced_model_no_cost() -> None:
    """A replay (no usage) adds no tokens; a model without a price adds tokens, no cost."""
    unpriced = {"provider": "openai", "model": "gpt-unpriced"}
    observe_review(_participant("owl", "replay", None), _outcome("owl"), ReviewResult())
    assert sample("council_tokens_total", provider="replay", model="", kind="input") == 0
    result = ReviewResult(usage=Usage(input=10, output=1, requests=1))
    observe_review(_participant("m", "openai", "gpt-unpriced"), _outcome("m"), result)
    assert sample("council_tokens_total", **unpriced, kind="input") >= 10
    assert sample("council_cost_usd_total", **unpriced, participant="m") == 0


def test_recording_never_raises_into_a_review() -> None:
    """Something that is not a review is logged as metrics_failed, not raised."""
    with capture_logs() as logs:
        observe_review(object(), object(), object())  # type: ignore[arg-type]
    assert [e["event"] for e in logs] == ["metrics_failed"]


def test_queue_keys_follow_kombus_priority_lists() -> None:
    """A queue's lists as kombu's Redis transport names them: the name for priority 0,
    name + "\\x06\\x16" + step for steps 3, 6, 9; transport options change all three."""
    assert queue_keys("council.openai") == [
        "council.openai",
        "council.openai\x06\x163",
        "council.openai\x06\x166",
        "council.openai\x06\x169",
    ]
    options = {"priority_steps": [0, 5], "sep": ":", "global_keyprefix": "p/"}
    assert queue_keys("q", options) == ["p/q", "p/q:5"]


def test_kombus_own_size_agrees_with_the_keys() -> None:
    """Messages kombu puts at several priorities are all found by queue_keys."""
    from kombu.transport.redis import Channel

    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    channel: Any = Channel.__new__(Channel)
    channel.priority_steps, channel.sep = [0, 3, 6, 9], Channel.sep
    for priority in (0, 3, 9, 9):
        client.lpush(channel._q_for_pri("council.default", priority), b"m")
    assert sum(int(client.llen(k)) for k in queue_keys("council.default")) == 4


def test_queue_depth_is_read_at_scrape_time_and_silent_during_an_outage() -> None:
    """The collector sums LLEN over each queue's lists at every collect; when Redis
    fails it yields no sample (never a stale one) and says so once until it recovers."""
    server = fakeredis.FakeServer()
    client = fakeredis.FakeRedis(server=server)
    depth = QueueDepth(client, ["council.default", "council.openai"])
    client.rpush("council.default", b"a", b"b")
    client.rpush("council.default\x06\x169", b"c")

    def values() -> dict[str, float]:
        (family,) = list(depth.collect())
        return {s.labels["queue"]: s.value for s in family.samples}

    assert values() == {"council.default": 3, "council.openai": 0}
    client.rpush("council.openai", b"x")
    assert values()["council.openai"] == 1
    server.connected = False
    with capture_logs() as logs:
        assert values() == {} and values() == {}
        server.connected = True
        assert values()["council.default"] == 3
    assert [e["event"] for e in logs] == ["queue_depth_unavailable", "queue_depth_recovered"]


@pytest.fixture
def in_flight() -> Iterator[Celery]:
    """A throwaway app with the in-flight receivers connected (disconnected after)."""
    app = Celery("t")
    connect_celery_signals(app)
    yield app
    signals.task_prerun.disconnect(dispatch_uid="council.metrics.task_prerun")
    signals.task_postrun.disconnect(dispatch_uid="council.metrics.task_postrun")


def test_tasks_in_flight_rise_and_fall_and_never_go_below_zero(in_flight: Celery) -> None:
    """prerun counts a task up, postrun down; a postrun without its prerun changes nothing."""

    @in_flight.task(name="t.metrics", shared=False)
    def body() -> None:
        """Nothing: only the name matters."""

    base = sample("council_tasks_in_flight", task="t.metrics")
    signals.task_prerun.send(sender=body, task_id="a", task=body, args=(), kwargs={})
    signals.task_prerun.send(sender=body, task_id="a", task=body, args=(), kwargs={})
    assert sample("council_tasks_in_flight", task="t.metrics") == base + 1
    signals.task_postrun.send(sender=body, task_id="a", task=body, state="SUCCESS")
    signals.task_postrun.send(sender=body, task_id="never-started", task=body, state="SUCCESS")
    assert sample("council_tasks_in_flight", task="t.metrics") == base


def test_rate_limit_waits_are_observed_per_sleep() -> None:
    """A request that had to wait for the shared limit adds to the wait histogram of its
    key: _count the sleeps, _sum the seconds slept."""
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    limiter = RedisRateLimiter(client, Keys(), {"openai": RateLimit(rpm=1)}, window_ms=200)
    key = "openai:gpt-wait"
    count = sample("council_rate_limit_wait_seconds_count", limit=key)
    assert limiter.acquire(key, 0, time.monotonic() + 1)
    assert sample("council_rate_limit_wait_seconds_count", limit=key) == count
    assert limiter.acquire(key, 0, time.monotonic() + 5)
    assert sample("council_rate_limit_wait_seconds_count", limit=key) > count
    assert sample("council_rate_limit_wait_seconds_sum", limit=key) > 0


def test_server_serves_the_registry_on_loopback() -> None:
    """serve(0) listens on 127.0.0.1 and shows the council metrics, no _created series."""
    running = serve(0)
    try:
        assert running.url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(running.url, timeout=5) as response:  # nosec B310
            text = response.read().decode()
        assert "# TYPE council_reviews_total counter" in text
        assert "_created" not in text
    finally:
        running.close()


def test_a_port_in_use_is_an_os_error() -> None:
    """Binding a port something already listens on raises OSError (the CLI says exit 2)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError):
            serve(taken.getsockname()[1])


def test_multiprocess_dir_serves_an_aggregating_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With PROMETHEUS_MULTIPROC_DIR set, the served registry is a new one that reads
    every process's files, not this process's default registry."""
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    registry = serving_registry()
    assert registry is not REGISTRY
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR")
    assert serving_registry() is REGISTRY


def test_dashboard_queries_only_exported_metrics() -> None:
    """deploy/grafana/council-dashboard.json is valid JSON, every panel has a query, and
    every metric a query names is one workers/app/metrics.py exports (a histogram's
    _bucket/_sum/_count series included)."""
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    panels = [p for p in dashboard["panels"] if p.get("type") != "row"]
    assert panels
    exprs = [t["expr"] for p in panels for t in p.get("targets", [])]
    assert len(exprs) >= len(panels)
    named: set[str] = set()
    for expr in exprs:
        names = set(re.findall(r"\bcouncil_[a-z0-9_]+", expr))
        assert names, expr
        named |= names
    series = {
        name + suffix
        for name in METRIC_NAMES
        for suffix in (("", "_bucket", "_sum", "_count") if name.endswith("_seconds") else ("",))
    }
    assert named <= series, named - series
    assert {"council_reviews_total", "council_queue_depth"} <= named


def test_registering_needs_no_redis() -> None:
    """A collector on an unreachable Redis registers (describe) without a round trip."""
    client = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    depth = QueueDepth(client, ["council.default"])
    REGISTRY.register(depth)
    REGISTRY.unregister(depth)
