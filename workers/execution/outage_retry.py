"""Waiting out a Redis outage instead of losing what a worker holds.

A reviewer that finishes while Redis restarts holds the only copy of its answer, and
redis-py's three retries last under a second. :func:`patiently` retries one step with
backoff (full jitter, 0.25 s doubling to 5 s) until Redis answers or the deadline passes
(:func:`task_deadline`: the task's start plus most of the visibility timeout, past which
its message is redelivered anyway). An outage is ``ConnectionError`` (``LOADING`` while a
restarted Redis reads its AOF included), ``TimeoutError`` or ``ReadOnlyError`` (a failover);
anything else is raised at once.

Source: docs/celery.md §1.6, §1.13 ("Connection loss").
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

import redis
import structlog

log = structlog.get_logger("council.worker")

T = TypeVar("T")

OUTAGE_ERRORS: tuple[type[Exception], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.ReadOnlyError,
)
"""What a Redis outage raises (``BusyLoadingError`` is a ``ConnectionError``)."""

PAUSE_S = (0.25, 5.0)
"""The first and the longest pause between tries, in seconds (doubling, full jitter)."""

DEADLINE_SHARE = 0.9
"""The share of the visibility timeout a task may spend waiting for Redis."""


def task_deadline(started: float, visibility_timeout_s: int) -> float:
    """The ``time.monotonic()`` until which a task that started at ``started`` waits for
    Redis: most of the visibility timeout, after which its message goes back to the
    queue and another attempt folds what this one stored."""
    return started + visibility_timeout_s * DEADLINE_SHARE


def patiently(
    what: str,
    step: Callable[[], T],
    *,
    until: float,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``step`` until it does not fail with an outage error; return what it returns.

    ``what`` names the step in the log (``redis_unreachable`` once, ``redis_reachable``
    when it answers again). Past ``until`` (a ``time.monotonic()`` value) the last error
    is raised.
    """
    pause = PAUSE_S[0]
    since: float | None = None
    while True:
        try:
            value = step()
        except OUTAGE_ERRORS as exc:
            now = time.monotonic()
            if since is None:
                since = now
                log.warning("redis_unreachable", step=what, error=str(exc) or type(exc).__name__)
            if now >= until:
                log.error("redis_outage_outlasted", step=what, outage_s=round(now - since, 1))
                raise
            sleep(min(until - now, pause * random.uniform(0.5, 1.0)))  # nosec B311 (jitter)
            pause = min(2 * pause, PAUSE_S[1])
            continue
        if since is not None:
            log.info("redis_reachable", step=what, outage_s=round(time.monotonic() - since, 1))
        return value
