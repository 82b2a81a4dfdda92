"""Retry waits, Retry-After reading, key redaction and the clock watcher of the model backends."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from email.utils import formatdate

import pytest

from council.model.participant import Clocks
from reviewers.models.conversation import redact
from reviewers.models.retry import Backoff, retry_after_ms, retryable_status
from reviewers.models.stream_loop import bridge
from reviewers.models.stream_watch import Watch

NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"retry-after": "2"}, 2000),
        ({"Retry-After": "0.5"}, 500),
        ({"retry-after-ms": "250", "retry-after": "9"}, 250),
        ({"retry-after": formatdate(NOW + 3, usegmt=True)}, 3000),
        ({"retry-after": formatdate(NOW - 60, usegmt=True)}, 0),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-1"}, None),
    ],
)
def test_retry_after_reads_seconds_dates_and_ms(
    headers: dict[str, str], expected: int | None
) -> None:
    """Retry-After is read as seconds or an HTTP date, retry-after-ms as milliseconds."""
    assert retry_after_ms(headers, NOW) == expected


def test_retryable_statuses() -> None:
    """408, 429 and 5xx are retried; 400, 401, 403, 404 and 422 are not."""
    assert [
        s for s in (400, 401, 403, 404, 408, 422, 429, 500, 503, 529) if retryable_status(s)
    ] == [
        408,
        429,
        500,
        503,
        529,
    ]


def test_backoff_is_full_jitter_capped_and_yields_to_the_server() -> None:
    """Waits are uniform in [0, base·2^(n-1)] up to the cap; a server's wait is taken as is."""
    backoff = Backoff(attempts=5, base_ms=100, cap_ms=300)
    rng = random.Random(7)
    for retry, ceiling in ((1, 100), (2, 200), (3, 300), (6, 300)):
        waits = [backoff.delay_ms(retry, None, rng) for _ in range(200)]
        assert min(waits) >= 0 and max(waits) <= ceiling
        assert max(waits) > ceiling * 0.8
    assert backoff.delay_ms(1, 4321, rng) == 4321


def test_redact_masks_the_key_and_key_like_tokens() -> None:
    """The key itself and sk-… tokens never survive in a message."""
    key = "sk-live-abcdef123456"
    text = f"Incorrect API key provided: {key}; also sk-proj-****3456 in a key-value pair"
    masked = redact(text, key)
    assert key not in masked and "abcdef" not in masked and "3456" not in masked
    assert "Incorrect API key provided" in masked and "key-value pair" in masked


def test_watch_reports_clocks_in_order() -> None:
    """cancelled wins over the wall, the wall over the soft deadline, which wins over idle."""
    cancel = threading.Event()
    watch = Watch(Clocks(backstop_ms=1000, idle_ms=1000, answer_ms=500), cancel)
    assert watch.fired(soft=True, idle=True) is None
    watch.started -= 0.6
    assert watch.fired(soft=True, idle=True) == "soft-deadline"
    assert watch.fired(soft=False, idle=True) is None
    watch.started -= 0.5
    assert watch.fired(soft=True, idle=True) == "wall-clock"
    cancel.set()
    assert watch.fired(soft=True, idle=True) == "cancelled"
    assert watch.stop("soft-deadline").budget_ms == 500
    assert watch.stop("cancelled").budget_ms is None


def test_watch_sleep_is_cut_short_by_cancel() -> None:
    """A backoff wait ends as soon as the review is cancelled (through the cancel bridge)."""
    cancel = threading.Event()
    watch = Watch(Clocks(backstop_ms=60_000, idle_ms=1000, answer_ms=0), cancel)
    threading.Timer(0.2, cancel.set).start()

    async def sleep_bridged() -> str | None:
        with bridge(cancel) as woken:
            watch.woken = woken
            return await watch.sleep(5000, soft=True)

    started = time.monotonic()
    assert asyncio.run(sleep_bridged()) == "cancelled"
    assert time.monotonic() - started < 1.0
    quiet = Watch(Clocks(backstop_ms=60_000, idle_ms=1000, answer_ms=0), threading.Event())
    started = time.monotonic()
    assert asyncio.run(quiet.sleep(50, soft=True)) is None
    assert 0.04 <= time.monotonic() - started < 1.0
