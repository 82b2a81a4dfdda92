"""Waiting out a Redis outage instead of losing what a worker holds.

A reviewer that finishes while Redis restarts holds the only copy of its answer, and
redis-py's three retries last under a second. :func:`patiently` retries one step with
backoff (full jitter, 0.25 s doubling to 5 s) until Redis answers or the deadline passes
(:func:`task_deadline`: the task's start plus most of the visibility timeout, past which
its message is redelivered anyway). An outage is ``ConnectionError`` (``LOADING`` while a
restarted Redis reads its AOF included) or ``TimeoutError``; a refusal (:func:`refused`:
``OOM`` at ``maxmemory`` under ``noeviction``, ``READONLY`` after a failover, ``MISCONF``
on a full disk, ``NOREPLICAS``) is held the same way: Redis answers but keeps nothing, and
frees up or fails over within the same clocks; so is the ``UNBLOCKED`` a blocked command
gets when its Redis turns replica (:func:`switched`). Anything else is raised at once.

Source: docs/celery.md §1.6, §1.13 ("Connection loss").
"""

from __future__ import annotations

import random
import re
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
    redis.OutOfMemoryError,
)
"""What a Redis outage raises (``BusyLoadingError`` is a ``ConnectionError``), and the
refusals redis-py names; :func:`held_back` also knows those it does not."""

_REFUSAL = re.compile(r"(?:^|[\s:(\[])(OOM|MISCONF|READONLY|NOREPLICAS)\b")
"""A refusal's code at the start of an error, or inside a script's error."""


def refused(exc: BaseException) -> str | None:
    """The code of a Redis refusal (``OOM``, ``MISCONF``, ``READONLY``, ``NOREPLICAS``):
    Redis answered but did not keep the write; None for anything else."""
    if isinstance(exc, redis.OutOfMemoryError):
        return "OOM"
    if isinstance(exc, redis.ReadOnlyError):
        return "READONLY"
    if isinstance(exc, redis.ResponseError):
        found = _REFUSAL.search(str(exc))
        return found.group(1) if found else None
    return None


def switched(exc: BaseException) -> bool:
    """Whether ``exc`` is the ``UNBLOCKED`` a blocking command (``BLPOP``) gets when its
    Redis turns replica in a failover: nothing was done, the next try goes on."""
    return isinstance(exc, redis.ResponseError) and str(exc).startswith("UNBLOCKED")


def held_back(exc: BaseException) -> bool:
    """Whether ``exc`` is an outage, a refusal or a failover's ``UNBLOCKED``: the writer
    keeps its data and retries."""
    if isinstance(exc, OUTAGE_ERRORS) and not isinstance(exc, redis.ResponseError):
        return True
    return refused(exc) is not None or switched(exc)


def refused_only(exc: BaseException) -> bool:
    """Whether ``exc`` is a refusal: Redis answered and kept nothing, so the step may run
    again (a lost reply after a timeout may have been applied)."""
    return refused(exc) is not None


def note_refusal(exc: BaseException) -> None:
    """Count a refused write in the worker's metrics (never raises)."""
    code = refused(exc)
    if code is not None:
        from workers.app.metrics import observe_refusal

        observe_refusal(code)


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
    held: Callable[[BaseException], bool] = held_back,
) -> T:
    """Run ``step`` until it does not fail with an outage error or a refusal
    (:func:`held_back`); return what it returns.

    ``what`` names the step in the log (``redis_unreachable`` or ``redis_refused`` once,
    ``redis_reachable`` when it answers again; each refused try is counted). Past ``until``
    (a ``time.monotonic()`` value) the last error is raised. ``held``: which errors are
    retried (:func:`refused_only` for a step that must not run twice when its reply is
    lost).
    """
    pause = PAUSE_S[0]
    since: float | None = None
    while True:
        try:
            value = step()
        except redis.RedisError as exc:
            if not held(exc):
                raise
            note_refusal(exc)
            now = time.monotonic()
            if since is None:
                since = now
                event = "redis_refused" if refused(exc) else "redis_unreachable"
                log.warning(event, step=what, error=str(exc) or type(exc).__name__)
            if now >= until:
                log.error("redis_outage_outlasted", step=what, outage_s=round(now - since, 1))
                raise
            sleep(min(until - now, pause * random.uniform(0.5, 1.0)))  # nosec B311 (jitter)
            pause = min(2 * pause, PAUSE_S[1])
            continue
        if since is not None:
            log.info("redis_reachable", step=what, outage_s=round(time.monotonic() - since, 1))
        return value
