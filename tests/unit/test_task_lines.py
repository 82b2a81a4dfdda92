"""Tests for workers/app/task_lines.py: the five ids on every line of a Celery task,
from its signals, its coming attempt, its run's record, and Celery's own lines outside it."""

from __future__ import annotations

import json
import logging
import signal as os_signal
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from celery import Celery, signals
from celery.app.task import Context
from celery.app.trace import LOG_RECEIVED

from workers.app.logging import bind_task_context, get_logger
from workers.app.task_lines import RunFacts, connect_celery_signals

Lines = Callable[[], list[dict[str, Any]]]

pytestmark = pytest.mark.usefixtures("restore_logging")


@pytest.fixture
def app() -> Celery:
    """A throwaway Celery app with our receivers connected."""
    celery_app = Celery("t")
    connect_celery_signals(celery_app)
    return celery_app


def _task(app: Celery, name: str) -> Any:
    """Register a do-nothing task named ``name`` for the signals to carry as sender."""

    def body(*args: object, **kwargs: object) -> None:
        """Do nothing: only the task's name and request matter here."""

    return app.task(name=name, shared=False)(body)


def _send(sig: Any, **arguments: Any) -> None:
    """Send a Celery signal and fail if any receiver raised (Celery only logs those)."""
    for receiver, response in sig.send(**arguments):
        assert not isinstance(response, Exception), (receiver, response)


def test_connect_sets_worker_logging_conf(app: Celery) -> None:
    """Celery must neither hijack the root logger nor redirect stdout into records."""
    assert app.conf.worker_hijack_root_logger is False
    assert app.conf.worker_redirect_stdouts is False


def test_connect_twice_adds_no_receiver(app: Celery) -> None:
    """Receivers have fixed dispatch ids, so connecting again does not double the lines."""
    before = len(signals.task_prerun.receivers)
    connect_celery_signals(app)
    assert len(signals.task_prerun.receivers) == before


def test_setup_logging_signal_configures_json(
    app: Celery, capsys: pytest.CaptureFixture[str]
) -> None:
    """Celery's setup_logging signal installs our handler at the level the worker asked for."""
    _send(signals.setup_logging, sender=None, loglevel=logging.WARNING, logfile=None)
    assert len([h for h in logging.getLogger().handlers if h.get_name() == "council"]) == 1
    assert logging.getLogger().level == logging.WARNING
    get_logger("council.test").warning("ready")
    assert json.loads(capsys.readouterr().err)["event"] == "ready"


def test_task_started_and_finished_lines(app: Celery, lines: Lines) -> None:
    """prerun binds the task's fields for its lines; postrun logs state and duration_ms."""

    review = _task(app, "t.review")

    kwargs = {"run_id": "r1", "participant": "alice", "session": "s1"}
    _send(signals.task_prerun, sender=review, task_id="id-1", task=review, args=(), kwargs=kwargs)
    get_logger("council.test").info("harvest_done", findings=2)
    _send(
        signals.task_postrun,
        sender=review,
        task_id="id-1",
        task=review,
        args=(),
        kwargs=kwargs,
        retval=None,
        state="SUCCESS",
    )
    get_logger("council.test").info("after")
    started, inner, finished, after = lines()
    for line in (started, inner, finished):
        assert line["run_id"] == "r1"
        assert line["participant"] == "alice"
        assert line["session"] == "s1"
        assert line["task_id"] == "id-1"
        assert line["task"] == "t.review"
        assert line["attempt"] == 1
    assert started["event"] == "task_started"
    assert finished["event"] == "task_finished"
    assert finished["state"] == "SUCCESS"
    assert isinstance(finished["duration_ms"], int)
    assert finished["duration_ms"] >= 0
    assert "run_id" not in after
    assert "task_id" not in after


def test_prerun_clears_leftover_context(app: Celery, lines: Lines) -> None:
    """A task started after one that never cleared does not inherit its run_id."""

    other = _task(app, "t.other")

    bind_task_context(run_id="leftover", participant="bob")
    _send(signals.task_prerun, sender=other, task_id="id-2", task=other, args=(), kwargs={})
    (line,) = lines()
    assert line["event"] == "task_started"
    assert line["run_id"] is None and line["participant"] is None  # keys kept, values not


def test_attempt_and_redelivered_from_request(app: Celery, lines: Lines) -> None:
    """Without a lookup, attempt is retries + 1; the broker's redelivered flag is carried."""

    retried = _task(app, "t.retry")

    retried.push_request(retries=2, delivery_info={"redelivered": True})
    try:
        _send(
            signals.task_prerun,
            sender=retried,
            task_id="id-3",
            task=retried,
            args=(),
            kwargs={"run_id": "r3", "participant_id": "carol"},
        )
    finally:
        retried.pop_request()
    (line,) = lines()
    assert line["attempt"] == 3
    assert line["redelivered"] is True
    assert line["participant"] == "carol"


def test_postrun_tolerates_missing_fields(app: Celery, lines: Lines) -> None:
    """postrun with no prerun and state None still logs one line, with null duration."""
    _send(signals.task_postrun, sender=None, task_id="ghost", state=None)
    (line,) = lines()
    assert line["event"] == "task_finished"
    assert line["task_id"] == "ghost"
    assert line["state"] is None
    assert line["duration_ms"] is None


def test_task_failed_without_bound_context(app: Celery, lines: Lines) -> None:
    """task_failure in MainProcess (nothing bound) names the task from the signal arguments."""

    review = _task(app, "t.review")

    error = ConnectionError("redis://:pw@h lost")
    for _ in range(2):  # 5.7.0 can fire task_failure twice for one hard time limit
        _send(
            signals.task_failure,
            sender=review,
            task_id="id-4",
            exception=error,
            args=(),
            kwargs={"run_id": "r4", "participant": "dave"},
            traceback=None,
            einfo=None,
        )
    first, second = lines()
    assert first == {**second, "timestamp": first["timestamp"]}
    assert first["event"] == "task_failed"
    assert first["level"] == "error"
    assert first["task_id"] == "id-4"
    assert first["task"] == "t.review"
    assert first["run_id"] == "r4"
    assert first["participant"] == "dave"
    assert first["error_type"] == "ConnectionError"
    assert "pw" not in first["error"]


def test_task_failed_with_no_arguments(app: Celery, lines: Lines) -> None:
    """A bare task_failure (no sender, no exception) still logs instead of raising."""
    _send(signals.task_failure, sender=None, task_id=None)
    (line,) = lines()
    assert line["event"] == "task_failed"
    assert line["task_id"] is None
    assert line["error_type"] is None


def test_task_revoked_from_signal_arguments(app: Celery, lines: Lines) -> None:
    """task_revoked takes task_id and run fields from the request it is given."""

    review = _task(app, "t.review")

    request = Context(id="id-5", task="t.review", kwargs={"run_id": "r5"})
    _send(
        signals.task_revoked,
        sender=review,
        request=request,
        terminated=True,
        signum=os_signal.SIGTERM,
        expired=False,
    )
    (line,) = lines()
    assert line["event"] == "task_revoked"
    assert line["level"] == "warning"
    assert line["task_id"] == "id-5"
    assert line["task"] == "t.review"
    assert line["run_id"] == "r5"
    assert line["terminated"] is True
    assert line["signum"] == int(os_signal.SIGTERM)
    assert line["expired"] is False


def test_real_trace_binds_for_celery_lines_too(app: Celery, lines: Lines) -> None:
    """Run through Celery's own tracer, its stdlib lines carry the task's bound fields."""
    review = _task(app, "t.review")
    review.apply(kwargs={"run_id": "r6", "participant": "erin"})
    get_logger("council.test").info("after")
    *during, after = lines()
    assert during[0]["event"] == "task_started"
    assert during[-1]["event"] == "task_finished"
    assert during[-1]["state"] == "SUCCESS"
    assert {line["logger"] for line in during} >= {"workers.app.task_lines", "celery.app.trace"}
    assert all(line["run_id"] == "r6" and line["participant"] == "erin" for line in during)
    assert "run_id" not in after


class _Lookups:
    """``run_of`` and ``attempt_of`` as a worker's Redis would answer; records each ask."""

    def __init__(self, attempt: int | None = 2, judge: str | None = "judge-1") -> None:
        self.attempt, self.judge = attempt, judge
        self.runs: list[str] = []
        self.asked: list[tuple[str, list[str]]] = []

    def run_of(self, run_id: str) -> RunFacts | None:
        self.runs.append(run_id)
        return RunFacts(session=f"session-of-{run_id}", judge=self.judge)

    def attempt_of(self, run_id: str, participants: Sequence[str]) -> int | None:
        self.asked.append((run_id, list(participants)))
        return self.attempt


@pytest.fixture
def looked_up(app: Celery) -> _Lookups:
    """The app's receivers connected again with lookups (attempt 2 coming, a judge)."""
    lookups = _Lookups()
    connect_celery_signals(app, run_of=lookups.run_of, attempt_of=lookups.attempt_of)
    return lookups


def _prerun(task: Any, task_id: str, kwargs: dict[str, Any]) -> None:
    _send(signals.task_prerun, sender=task, task_id=task_id, task=task, args=(), kwargs=kwargs)


def test_a_redelivered_tasks_first_line_says_the_attempt_it_is_about_to_start(
    app: Celery, looked_up: _Lookups, lines: Lines
) -> None:
    """Celery's retries say 1 for a message redelivered after a kill; task_started says
    the attempt the task will number (looked up), as its later lines do."""
    review = _task(app, "council.review_participant")
    _prerun(review, "id-1", {"run_id": "r1", "participant": "hawk"})
    (line,) = lines()
    assert (line["event"], line["attempt"], line["session"]) == ("task_started", 2, "session-of-r1")
    assert looked_up.asked == [("r1", ["hawk"])]


def _delivered(task: Any, task_id: str, kwargs: dict[str, Any], again: bool) -> None:
    """``task_prerun`` of a message as a worker runs it: first delivery or redelivered."""
    task.push_request(id=task_id, retries=0, delivery_info={"redelivered": again})
    try:
        _prerun(task, task_id, kwargs)
    finally:
        task.pop_request()


def test_a_chords_message_on_its_first_delivery_is_attempt_1_with_no_lookup(
    app: Celery, looked_up: _Lookups, lines: Lines
) -> None:
    """A chord's task (it names its session) delivered for the first time is attempt 1:
    no Redis command for its line. Redelivered, or resent by a sweep (``redispatched``),
    the attempt is looked up."""
    review, batch = _task(app, "council.review_participant"), _task(app, "council.review_batch")
    chord_kwargs = {"run_id": "r1", "participant": "hawk", "session": "s1"}
    _delivered(review, "id-1", chord_kwargs, again=False)
    batched = {"run_id": "r1", "participants": ["a", "b"], "session": "s1"}
    _delivered(batch, "id-2", batched, again=False)
    assert [line["attempt"] for line in lines()] == [1, 1]
    assert looked_up.asked == []
    _delivered(review, "id-3", chord_kwargs, again=True)
    resent = {"run_id": "r1", "participant": "hawk", "redispatched": True}
    _delivered(review, "id-4", resent, again=False)
    assert [line["attempt"] for line in lines()] == [1, 1, 2, 2]
    assert looked_up.asked == [("r1", ["hawk"]), ("r1", ["hawk"])]


def test_the_received_lines_lookup_serves_the_tasks_first_line(
    app: Celery, looked_up: _Lookups, lines: Lines
) -> None:
    """Celery's "received" line looks the attempt up; ``task_started`` of the same
    message in the same process says the same number without asking again."""
    kwargs = "{'run_id': 'r1', 'participant': 'hawk', 'session': 's1'}"
    _received("id-7", "council.review_participant", kwargs)
    chord_kwargs = {"run_id": "r1", "participant": "hawk", "session": "s1"}
    _delivered(_task(app, "council.review_participant"), "id-7", chord_kwargs, again=False)
    received, started = lines()
    assert (received["attempt"], started["attempt"], started["event"]) == (2, 2, "task_started")
    assert looked_up.asked == [("r1", ["hawk"])]


def test_a_task_naming_its_session_reads_no_run_record(
    app: Celery, looked_up: _Lookups, lines: Lines
) -> None:
    """A chord's task names its session in its kwargs: its lines carry that session and
    the run's record is not read for it (a judge task still reads it for its judge)."""
    review = _task(app, "council.review_participant")
    _prerun(review, "id-s", {"run_id": "r1", "participant": "hawk", "session": "s-given"})
    (line,) = lines()
    assert (line["session"], line["attempt"]) == ("s-given", 2)
    assert looked_up.runs == []


def test_a_batch_asks_for_all_its_participants_and_a_judge_task_names_its_judge(
    app: Celery, looked_up: _Lookups, lines: Lines
) -> None:
    """A batch's own lines carry the attempt its participants are about to start; the
    judge task (kwargs name only the run) gets the run's judge as participant; the run's
    record is read once per run."""
    batch, judge = _task(app, "council.review_batch"), _task(app, "council.judge")
    _prerun(batch, "id-b", {"run_id": "r1", "participants": ["hawk", "owl"]})
    _prerun(judge, "id-j", {"run_id": "r1"})
    first, second = lines()
    assert (first["participant"], first["participants"], first["attempt"]) == (
        None,
        ["hawk", "owl"],
        2,
    )
    assert (second["participant"], second["attempt"], second["task"]) == (
        "judge-1",
        2,
        "council.judge",
    )
    assert looked_up.asked == [("r1", ["hawk", "owl"]), ("r1", ["judge-1"])]
    assert looked_up.runs == ["r1"]


def test_lookups_that_fail_leave_the_delivered_attempt_and_no_session(
    app: Celery, lines: Lines
) -> None:
    """Redis away at task start: the line still comes, attempt from Celery's retries."""

    def broken(*_: object) -> Any:
        raise ConnectionError("redis away")

    connect_celery_signals(app, run_of=broken, attempt_of=broken)
    review = _task(app, "council.review_participant")
    _prerun(review, "id-1", {"run_id": "r1", "participant": "hawk"})
    (line,) = lines()
    assert (line["attempt"], line["session"], line["participant"]) == (1, None, "hawk")


def _received(task_id: str, name: str, kwargs: str) -> None:
    """Log what Celery's consumer logs when a message arrives (celery/worker/strategy.py)."""
    context = {"id": task_id, "name": name, "args": "()", "kwargs": kwargs, "eta": None}
    logging.getLogger("celery.worker.strategy").info(LOG_RECEIVED, context, extra={"data": context})


def test_celerys_received_line_carries_the_tasks_ids(
    app: Celery, looked_up: _Lookups, lines: Lines
) -> None:
    """ "Task … received", written before any task context exists, gets the five ids
    from the message (kwargs as Celery shows them), even when the repr was cut short."""
    _received("id-1", "council.review_participant", "{'run_id': 'r1', 'participant': 'hawk'}")
    _received("id-2", "council.review_batch", "{'run_id': 'r2', 'participants': ['a', 'b', ...")
    _received("id-3", "council.consolidate", "{'results': [], 'run_id': 'r3'}")
    one, two, three = lines()
    assert one["event"] == "Task council.review_participant[id-1] received"
    assert {k: one[k] for k in ("run_id", "session", "participant", "task_id", "attempt")} == {
        "run_id": "r1",
        "session": "session-of-r1",
        "participant": "hawk",
        "task_id": "id-1",
        "attempt": 2,
    }
    assert (two["run_id"], two["task_id"], two["session"]) == ("r2", "id-2", "session-of-r2")
    assert (three["run_id"], three["participant"], three["task"]) == (
        "r3",
        None,
        "council.consolidate",
    )


def test_a_celery_record_inside_a_task_keeps_the_tasks_context(
    app: Celery, looked_up: _Lookups, lines: Lines
) -> None:
    """A record with Celery's ``data`` written inside a task is left to the bound context
    (no lookup is made)."""
    bind_task_context(run_id="r9", task_id="id-9", attempt=3)
    _received("id-9", "council.review_participant", "{'run_id': 'other'}")
    (line,) = lines()
    assert (line["run_id"], line["task_id"], line["attempt"]) == ("r9", "id-9", 3)
    assert looked_up.asked == []


@pytest.mark.parametrize(
    ("broker", "shown"),
    [
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("redis://:hunter2@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
    ],
)
def test_kombus_masked_url_is_shown_as_ours(broker: str, shown: str, lines: Lines) -> None:
    """kombu writes ``redis://:**@`` with or without a password; the lines say what is
    there: no mask for a URL without a password, ours for one with it."""
    connect_celery_signals(Celery("t", broker=broker))
    logging.getLogger("celery.worker.consumer.connection").info(
        "Connected to %s", "redis://:**@127.0.0.1:6379/0"
    )
    (line,) = lines()
    assert line["event"] == f"Connected to {shown}"
    assert "hunter2" not in json.dumps(line)


def test_failed_and_revoked_lines_outside_the_task_carry_its_ids(
    app: Celery, looked_up: _Lookups, lines: Lines
) -> None:
    """``task_failed`` and ``task_revoked`` written in MainProcess (no context) carry the
    five ids, looked up as the task's first line's were."""
    review = _task(app, "council.review_participant")
    kwargs = {"run_id": "r1", "participant": "hawk"}
    _send(
        signals.task_failure,
        sender=review,
        task_id="id-f",
        exception=RuntimeError("boom"),
        args=(),
        kwargs=kwargs,
        traceback=None,
        einfo=None,
    )
    request = Context(id="id-r", task="council.review_participant", kwargs=kwargs)
    _send(signals.task_revoked, sender=review, request=request, terminated=False, expired=True)
    for line, task_id in zip(lines(), ("id-f", "id-r"), strict=True):
        assert {k: line[k] for k in ("run_id", "session", "participant", "task_id", "attempt")} == {
            "run_id": "r1",
            "session": "session-of-r1",
            "participant": "hawk",
            "task_id": task_id,
            "attempt": 2,
        }
