"""The council's Celery tasks. Thin: take ids, call the runtime, return small JSON.

``council.review_participant`` (one reviewer) and ``council.review_batch`` (several model
reviewers of one run, grouped per queue) never raise for a reviewer fault, so the chord
always gets N results. ``council.consolidate`` is the chord body (it reads the stored
outcomes: results only say who finished), ``council.finalize`` its errback for what a task
cannot catch (a hard kill, a lost worker), ``council.judge`` the optional judge, sent once the
reviewers' findings are filed. Settling is idempotent, so which gets there first is moot.

Source: docs/architecture.md (the shape), docs/celery.md §1.3-§1.4, docs/style.md habit 7.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any, TypeVar

import structlog
from celery import current_app, shared_task
from celery.signals import worker_ready

from reviewers import load_backends
from workers.app import services as runtime
from workers.app.celery_config import queue_for
from workers.execution import keeping, sweep
from workers.execution.batch import review_batch as run_batch
from workers.execution.outage_retry import patiently, task_deadline
from workers.execution.participant_attempt import review
from workers.execution.sweep import settle_if_heard
from workers.settling.judge_turn import judge_run
from workers.settling.settle import StillRunning, settle_run
from workers.stores.run_record import PROTOCOL

log = structlog.get_logger("council.settle")

T = TypeVar("T")


def _kept(what: str, step: Callable[[], T]) -> T:
    """Run a settling step, riding out a Redis outage or refusal (``OOM``, ``READONLY``,
    ``MISCONF``) within the task's clocks: the filing is retried, never dropped."""
    rt = runtime.current()
    until = task_deadline(time.monotonic(), rt.settings.visibility_timeout_s)
    return patiently(what, step, until=until)


@shared_task(name="council.review_participant", bind=True, acks_late=True)
def review_participant(
    self: Any,
    run_id: str,
    participant: str,
    protocol: int = PROTOCOL,
    redispatched: bool = False,
    session: str | None = None,
) -> dict[str, Any]:
    """Review the run's change as one participant; return its outcome's summary.

    ``session`` (here and in every task of a run's chord): the run's session, named for
    the task's log lines only (:mod:`workers.app.task_lines`).

    ``redispatched``: sent by a sweep after the participant's worker was lost (no chord
    counts this task), so once its outcome completes the reviewers it settles the run.
    """
    rt = runtime.current()
    outcome = review(rt, run_id, participant, protocol)
    if redispatched:
        settle_if_heard(rt, run_id, send_judge)
    return {"participant": outcome.participant, "status": outcome.status}


@shared_task(name="council.review_batch", bind=True, acks_late=True)
def review_batch(
    self: Any,
    run_id: str,
    participants: list[str],
    protocol: int = PROTOCOL,
    session: str | None = None,
) -> list[dict[str, Any]]:
    """Review the run's change as each of ``participants``, concurrently; return each
    outcome's summary (``[{"participant": id, "status": status}, ...]``, in order)."""
    outcomes = run_batch(runtime.current(), run_id, participants, protocol)
    return [{"participant": o.participant, "status": o.status} for o in outcomes]


@shared_task(name="council.consolidate", bind=True, acks_late=True)
def consolidate(
    self: Any, results: list[Any], run_id: str, session: str | None = None
) -> dict[str, Any]:
    """Settle the run once every reviewer task finished (the chord body). Delivered while
    reviewers still run (a duplicate), it files nothing and says so."""
    try:
        report = _kept(
            "consolidate", lambda: settle_run(runtime.current(), run_id, dispatch_judge=send_judge)
        )
    except StillRunning as exc:
        log.warning("consolidation_early", run_id=run_id, running=exc.running)
        return {"run_id": run_id, "status": "open", "running": exc.running}
    return {"run_id": run_id, "status": report.status, "findings": len(report.findings)}


@shared_task(name="council.finalize", bind=True, acks_late=True)
def finalize(self: Any, run_id: str, session: str | None = None) -> dict[str, Any]:
    """Settle the run when the chord failed (errback): lost participants get stops."""
    report = _kept(
        "finalize",
        lambda: settle_run(
            runtime.current(), run_id, dispatch_judge=send_judge, event="worker_lost"
        ),
    )
    return {"run_id": run_id, "status": report.status, "findings": len(report.findings)}


@shared_task(name="council.judge", bind=True, acks_late=True)
def judge(self: Any, run_id: str, protocol: int = PROTOCOL) -> dict[str, Any]:
    """The judge reads the filed findings and answers; then the run settles."""
    report = judge_run(runtime.current(), run_id, protocol)
    return {"run_id": run_id, "status": report.status, "findings": len(report.findings)}


def resend(run_id: str, participant: str, backend: str) -> str:
    """Send one participant's review again, alone, on its queue (a sweep found its
    worker lost); the new task's id."""
    sent = current_app.send_task(
        "council.review_participant",
        kwargs={
            "run_id": run_id,
            "participant": participant,
            "protocol": PROTOCOL,
            "redispatched": True,
        },
        queue=queue_for(backend),
        ignore_result=True,  # nobody reads it: the run's state in Redis is the record
    )
    return str(sent.id)


@worker_ready.connect
def _start_sweeping(**_: Any) -> None:
    """Every distributed worker sweeps (workers/execution/sweep.py) and keeps the outcomes
    it stored until their filing is durable (workers/execution/keeping.py); embedded mode
    does neither."""
    if _distributed():
        rt = runtime.current()
        sweep.start(rt, resend, send_judge)
        keeping.start(rt, lambda run_id: settle_if_heard(rt, run_id, send_judge))


@worker_ready.connect
def _freeze_startup_heap(**_: Any) -> None:
    """Load the SDKs of the model providers this worker's registry holds, then move every
    object start-up made (modules, classes, the runtime) out of the garbage collector's
    sight: they live as long as the process, and each full collection walked them all
    again (a quarter of a second, twice per council of 500 streams: ``bench/concurrency.py``).
    Garbage made later is collected as before. Not in embedded mode: the CLI would wait
    for it, and lives for one review."""
    if not _distributed():
        return
    load_backends(entry.api for entry in runtime.current().providers.providers.values())
    gc.collect()
    gc.freeze()


def _distributed() -> bool:
    """Whether this worker serves a real broker (not embedded mode's memory one)."""
    url = current_app.conf.broker_url
    return bool(url) and not str(url).startswith("memory")


def send_judge(run_id: str) -> None:
    """Send the run's judge task (settling calls this once, when reviewers are filed)."""
    rt = runtime.current()
    record = rt.runs.record(run_id)
    judge = rt.runs.participant(run_id, record.judge) if record and record.judge else None
    current_app.send_task(
        "council.judge",
        kwargs={"run_id": run_id, "protocol": PROTOCOL},
        queue=queue_for(judge.backend if judge else ""),
        ignore_result=True,  # nobody reads it: the run's state in Redis is the record
    )
