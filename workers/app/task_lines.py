"""The lines of a Celery task: the five ids on every one, Celery's own lines included.

An operator follows one task, one participant or one run through a worker's log with
``jq``; a line without the ids falls out of the filter. So each task binds ``run_id``,
``session``, ``participant``, ``task_id`` and ``attempt`` at start (:data:`TASK_KEYS`, null
where a task has none), and Celery's lines written outside the task (the consumer's "Task …
received") get the same ids from the task's message (:func:`received_fields`). The attempt
on a task's first line is the one it is about to start (:data:`AttemptOf`; a chord's
message on its first delivery is attempt 1 unasked), so a redelivered task says the same
number on every line; the session comes from the task's kwargs (a
run's chord names it), else, as a judge task's participant does, from the run's record,
once per run per process (:data:`RunOf`).

Source: docs/architecture.md "Observability", docs/celery.md §0 item 7 and §2.1,
docs/style.md habit 10.
"""

from __future__ import annotations

import ast
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from structlog.contextvars import get_contextvars

from workers.app.logging import (
    bind_task_context,
    clear_task_context,
    configure_logging,
    get_logger,
    redact_url,
    set_record_fields,
    show_url_as,
)

if TYPE_CHECKING:
    from celery import Celery

__all__ = [
    "TASK_KEYS",
    "AttemptOf",
    "RunFacts",
    "RunOf",
    "connect_celery_signals",
    "received_fields",
]

TASK_KEYS: tuple[str, ...] = ("run_id", "session", "participant", "task_id", "attempt")
"""Fields every line of a task carries (null when the task has none: a run's
``council.consolidate`` has no participant; a batch's own lines name ``participants``)."""

RUN_CACHE = 1024
"""Run ids whose facts (session, judge) a worker process remembers (they never change)."""

JUDGE_TASK = "council.judge"
"""The task whose participant is the run's judge (its kwargs name only the run)."""


@dataclass(frozen=True)
class RunFacts:
    """What a task's lines need from its run's record: its session, its judge's id."""

    session: str | None
    judge: str | None = None


RunOf = Callable[[str], "RunFacts | None"]
"""Given a run id, its :class:`RunFacts` (None when the run is unknown)."""

AttemptOf = Callable[[str, Sequence[str]], "int | None"]
"""Given a run id and participant ids, the attempt a task of theirs is about to be (see
:meth:`workers.stores.journal.JournalStore.coming_attempt`); None when unknown."""


class _Runs:
    """``run_of`` with a small memory: one lookup per run per process; a failed lookup
    (Redis away) is None, never an exception into Celery's signal or a log line."""

    def __init__(self, run_of: RunOf | None) -> None:
        self._run_of = run_of
        self._known: dict[str, RunFacts] = {}
        self._lock = threading.Lock()

    def __call__(self, run_id: object) -> RunFacts | None:
        if self._run_of is None or not isinstance(run_id, str):
            return None
        with self._lock:
            if run_id in self._known:
                return self._known[run_id]
        try:
            facts = self._run_of(run_id)
        except Exception:
            return None
        if facts is not None:
            with self._lock:
                if len(self._known) >= RUN_CACHE:
                    self._known.pop(next(iter(self._known)))
                self._known[run_id] = facts
        return facts


CHORD_TASKS = frozenset({"council.review_participant", "council.review_batch"})
"""The tasks a run's chord sends (a sweep's resend is one too, marked ``redispatched``)."""


class _TaskIds:
    """The five ids of a task from its name and kwargs (with the run's facts and the
    coming attempt looked up; never raises).

    The lookup is one Redis command a task: it is made once per task (the consumer's
    "received" line keeps what it found for ``task_started`` in the same process), and
    not at all for a chord's message on its first delivery, which is attempt 1
    (:func:`first_of_chord`)."""

    def __init__(self, run_of: RunOf | None, attempt_of: AttemptOf | None) -> None:
        self.runs = _Runs(run_of)
        self.attempt_of = attempt_of
        self._found: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(
        self,
        task: str | None,
        kwargs: object,
        delivered: int = 1,
        *,
        task_id: str | None = None,
        first: bool = False,
        keep: bool = False,
    ) -> dict[str, object]:
        """``delivered``: the attempt when none can be looked up (Celery's retries + 1);
        ``task_id``: the message's, whose attempt an earlier line may have found (``keep``:
        keep what this one finds for the next); ``first``: its first delivery (not
        redelivered, not retried)."""
        fields: dict[str, object] = dict.fromkeys(TASK_KEYS)
        fields["task"] = task
        fields.update(_kwarg_fields(kwargs))
        run_id = fields["run_id"]
        named = fields["session"] is not None and task != JUDGE_TASK
        facts = None if named else self.runs(run_id)  # a chord's tasks name their session
        if fields["session"] is None and facts is not None:
            fields["session"] = facts.session
        if task == JUDGE_TASK and fields["participant"] is None and facts is not None:
            fields["participant"] = facts.judge
        who = fields.get("participants") or (
            [fields["participant"]] if fields["participant"] is not None else []
        )
        with self._lock:
            attempt = self._found.pop(task_id, None) if task_id is not None else None
        if attempt is None and first and first_of_chord(task, kwargs):
            attempt = 1
        elif attempt is None:
            attempt = self._coming(run_id, who)
            if attempt is not None and task_id is not None and keep:
                self._keep(task_id, attempt)
        fields["attempt"] = attempt if attempt is not None else delivered
        return fields

    def _keep(self, task_id: str, attempt: int) -> None:
        with self._lock:
            if len(self._found) >= RUN_CACHE:
                self._found.pop(next(iter(self._found)))
            self._found[task_id] = attempt

    def _coming(self, run_id: object, who: object) -> int | None:
        if self.attempt_of is None or not isinstance(run_id, str) or not isinstance(who, list):
            return None
        if not who or not all(isinstance(p, str) for p in who):
            return None
        try:
            return self.attempt_of(run_id, who)
        except Exception:
            return None


def first_of_chord(task: str | None, kwargs: object) -> bool:
    """Whether a task, delivered for the first time, is attempt 1 without asking Redis:
    a chord's message (it names its session; a sweep's resend is ``redispatched``)."""
    return (
        task in CHORD_TASKS
        and isinstance(kwargs, Mapping)
        and kwargs.get("session") is not None
        and not kwargs.get("redispatched")
    )


def _kwarg_fields(kwargs: object) -> dict[str, object]:
    """The identifying fields a task's kwargs carry (``participant_id`` read as
    participant; a batch's ``participants`` kept as they are)."""
    if not isinstance(kwargs, Mapping):
        return {}
    fields = {key: kwargs[key] for key in ("run_id", "session") if key in kwargs}
    participant = kwargs.get("participant", kwargs.get("participant_id"))
    if participant is not None:
        fields["participant"] = participant
    participants = kwargs.get("participants")
    if isinstance(participants, list | tuple):
        fields["participants"] = list(participants)
    return fields


_QUOTED_ID = re.compile(r"'(?P<key>run_id|participant|session)': '(?P<value>[^'\\]*)'")


def _kwargs_of(shown: object) -> object:
    """A task's kwargs from what Celery logs of them: a dict, or its ``repr`` (the
    message's ``kwargsrepr``, cut at 1,024 characters for a long batch: then the ids that
    can still be read)."""
    if not isinstance(shown, str):
        return shown
    try:
        return ast.literal_eval(shown)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return {m["key"]: m["value"] for m in _QUOTED_ID.finditer(shown)}


_ids: dict[str, _TaskIds] = {}
"""The process's task-id resolver, from the last :func:`connect_celery_signals` (key
``""``): the receivers connected first read it at each call."""


def received_fields(record: logging.LogRecord) -> dict[str, object] | None:
    """The ids of the task a Celery record outside any task is about, or None.

    Celery's records about one task (``Task NAME[ID] received`` above all, written by the
    consumer before any task context exists) carry ``data`` with ``id``, ``name`` and the
    kwargs' ``repr``. A record written inside a task (its context bound) is left alone.
    """
    data = getattr(record, "data", None)
    ids = _ids.get("")
    if ids is None or not isinstance(data, Mapping) or "id" not in data or "name" not in data:
        return None
    if get_contextvars().get("task_id") is not None:
        return None
    name = data["name"] if isinstance(data["name"], str) else None
    task_id = data["id"] if isinstance(data["id"], str) else None
    fields = ids(name, _kwargs_of(data.get("kwargs")), task_id=task_id, keep=True)
    fields["task_id"] = data["id"]
    return fields


def _celery_level(loglevel: object) -> str:
    if isinstance(loglevel, int) and loglevel > 0:
        return logging.getLevelName(loglevel)
    if isinstance(loglevel, str) and loglevel:
        return loglevel
    return "INFO"


def _task_name(task: object) -> str | None:
    name = getattr(task, "name", None)
    return name if isinstance(name, str) else None


class _TaskSignals:
    """Receivers for Celery's task signals: one ``task_started`` and one closing line per task.

    Keeps the monotonic start of each running task by task id, for ``duration_ms``. Every
    receiver tolerates missing arguments: 5.7.0 fires ``task_failure`` twice for a hard time
    limit and ``task_postrun`` may carry ``state=None`` (docs/celery.md §2.1, §4).
    """

    def __init__(self) -> None:
        self._started: dict[str, float] = {}
        self._log = get_logger(__name__)

    def setup_logging(self, loglevel: object = None, **_: Any) -> None:
        """Configure our logging instead of Celery's (any receiver stops Celery doing it)."""
        configure_logging(level=_celery_level(loglevel))

    def prerun(self, sender: Any = None, task_id: str | None = None, **signal: Any) -> None:
        """Clear the previous task's context, bind this task's fields, log ``task_started``."""
        clear_task_context()
        task = signal.get("task", sender)
        request = getattr(task, "request", None)
        retries = getattr(request, "retries", None)
        delivery_info = getattr(request, "delivery_info", None)
        delivered = retries + 1 if isinstance(retries, int) else 1
        first = (
            delivered == 1
            and isinstance(delivery_info, Mapping)
            and delivery_info.get("redelivered") is False
        )
        ids = _ids.get("") or _TaskIds(None, None)
        kwargs = signal.get("kwargs")
        fields = ids(_task_name(task), kwargs, delivered, task_id=task_id, first=first)
        fields["task_id"] = task_id
        if isinstance(delivery_info, Mapping) and "redelivered" in delivery_info:
            fields["redelivered"] = bool(delivery_info["redelivered"])
        bind_task_context(**fields)
        if task_id is not None:
            self._started[task_id] = time.monotonic()
        self._log.info("task_started")

    def postrun(self, sender: Any = None, task_id: str | None = None, **signal: Any) -> None:
        """Log ``task_finished`` with ``state`` and ``duration_ms``, then clear the context."""
        started = self._started.pop(task_id, None) if task_id is not None else None
        self._log.info(
            "task_finished",
            task_id=task_id,
            state=signal.get("state"),
            duration_ms=_elapsed_ms(started),
        )
        clear_task_context()

    def failure(self, sender: Any = None, task_id: str | None = None, **signal: Any) -> None:
        """Log ``task_failed`` with the task's ids: its context where it is bound, else
        from the signal's own arguments (MainProcess has no context)."""
        exception = signal.get("exception")
        self._log.error(
            "task_failed",
            **_outside(_task_name(sender), task_id, signal.get("kwargs")),
            error_type=type(exception).__name__ if exception is not None else None,
            error=str(exception) if exception is not None else None,
            duration_ms=_elapsed_ms(self._started.get(task_id) if task_id else None),
        )

    def revoked(self, sender: Any = None, request: Any = None, **signal: Any) -> None:
        """Log ``task_revoked`` from the signal's own arguments: it runs in MainProcess."""
        signum = signal.get("signum")
        name = _task_name(sender) or getattr(request, "task", None)
        self._log.warning(
            "task_revoked",
            **_outside(name, getattr(request, "id", None), getattr(request, "kwargs", None)),
            terminated=signal.get("terminated"),
            signum=int(signum) if signum is not None else None,
            expired=signal.get("expired"),
        )


def _outside(task: object, task_id: object, kwargs: object) -> dict[str, object]:
    """The ids of a line about a task: none where its context is bound (the line gets
    them from there), else looked up as its first line's were (:data:`TASK_KEYS`)."""
    if task_id is not None and get_contextvars().get("task_id") == task_id:
        return {}
    ids = _ids.get("") or _TaskIds(None, None)
    fields = ids(task if isinstance(task, str) else None, kwargs)
    fields["task_id"] = task_id
    return fields


def _elapsed_ms(started: float | None) -> int | None:
    return None if started is None else round((time.monotonic() - started) * 1000)


def _broker_forms(app: Celery) -> None:
    """Show the broker's URL in Celery's and kombu's lines as :func:`redact_url` does:
    kombu writes ``redis://:**@host`` whether or not the URL holds a password."""
    url = app.conf.broker_url
    if not isinstance(url, str) or "://" not in url:
        return
    try:
        with app.connection_for_write() as connection:  # made, not connected
            kombu_form = str(connection.as_uri())
    except Exception:  # a URL kombu cannot read: Celery will say so itself
        return
    show_url_as(kombu_form, redact_url(url))


def connect_celery_signals(
    app: Celery, run_of: RunOf | None = None, attempt_of: AttemptOf | None = None
) -> None:
    """Hand logging over to structlog for the worker that runs ``app``; safe to call twice.

    Connects ``setup_logging`` (Celery then configures no logging; ``configure_logging`` runs
    instead), ``task_prerun``, ``task_postrun``, ``task_failure`` and ``task_revoked``, and sets
    ``worker_hijack_root_logger=False`` and ``worker_redirect_stdouts=False`` on ``app`` so no
    line is wrapped a second time in a non-JSON record. Receivers have fixed dispatch ids:
    a second call adds nothing (the last call's lookups are used). Every task line
    carries :data:`TASK_KEYS`, Celery's records about a task outside it too
    (:func:`received_fields`); ``run_of`` fills ``session`` (and a judge task's
    participant), ``attempt_of`` the attempt. Source: docs/celery.md §0 item 7, §2.1.
    """
    from celery import signals

    app.conf.worker_hijack_root_logger = False
    app.conf.worker_redirect_stdouts = False
    _ids[""] = _TaskIds(run_of, attempt_of)
    set_record_fields(received_fields)
    _broker_forms(app)
    receivers = _TaskSignals()
    for signal, receiver in (
        (signals.setup_logging, receivers.setup_logging),
        (signals.task_prerun, receivers.prerun),
        (signals.task_postrun, receivers.postrun),
        (signals.task_failure, receivers.failure),
        (signals.task_revoked, receivers.revoked),
    ):
        signal.connect(receiver, weak=False, dispatch_uid=f"council.logging.{signal.name}")
