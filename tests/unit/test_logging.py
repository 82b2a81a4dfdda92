"""Tests for workers/app/logging.py: JSON line shape, task context, redaction, Celery signals."""

from __future__ import annotations

import io
import json
import logging
import signal as os_signal
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import structlog
from celery import Celery, signals
from celery.app.task import Context
from pydantic import SecretStr
from structlog.contextvars import merge_contextvars
from structlog.testing import capture_logs

from workers.app.logging import (
    MASK,
    Redact,
    bind_task_context,
    clear_task_context,
    configure_logging,
    connect_celery_signals,
    get_logger,
    redact_text,
    redact_url,
)

CELERY_SIGNALS = (
    signals.setup_logging,
    signals.task_prerun,
    signals.task_postrun,
    signals.task_failure,
    signals.task_revoked,
)

Lines = Callable[[], list[dict[str, Any]]]


def _council_handlers() -> list[logging.Handler]:
    return [h for h in logging.getLogger().handlers if h.get_name() == "council"]


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """Put structlog, the root logger, contextvars and Celery's receivers back after each test."""
    root = logging.getLogger()
    level = root.level
    yield
    for handler in _council_handlers():
        root.removeHandler(handler)
    root.setLevel(level)
    structlog.reset_defaults()
    clear_task_context()
    for sig in CELERY_SIGNALS:
        sig.disconnect(dispatch_uid=f"council.logging.{sig.name}")


@pytest.fixture
def lines() -> Lines:
    """Configure JSON logging into a buffer; the returned callable parses what was written."""
    buffer = io.StringIO()
    configure_logging(stream=buffer)

    def read() -> list[dict[str, Any]]:
        return [json.loads(line) for line in buffer.getvalue().splitlines()]

    return read


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


# --- line shape -------------------------------------------------------------------------


def test_line_is_json_with_event_level_and_utc_timestamp(lines: Lines) -> None:
    """Each call gives one JSON object with event, level, logger and an ISO UTC timestamp."""
    get_logger("council.test").info("harvest_done", findings=7)
    (line,) = lines()
    assert line["event"] == "harvest_done"
    assert line["level"] == "info"
    assert line["logger"] == "council.test"
    assert line["findings"] == 7
    assert datetime.fromisoformat(line["timestamp"]).utcoffset() == UTC.utcoffset(None)


def test_level_filters_lower_records(lines: Lines) -> None:
    """At the default INFO level a debug call writes nothing."""
    get_logger("council.test").debug("noise")
    assert lines() == []


def test_unknown_level_is_refused() -> None:
    """An unknown level name raises ValueError instead of silently logging everything."""
    with pytest.raises(ValueError, match="LOUD"):
        configure_logging(level="LOUD")


def test_default_stream_is_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    """Without a stream, lines go to stderr and stdout stays free for the CLI's report."""
    configure_logging()
    get_logger("council.test").info("to_stderr")
    out, err = capsys.readouterr()
    assert out == ""
    assert json.loads(err)["event"] == "to_stderr"


def test_configure_twice_keeps_one_handler() -> None:
    """A second configure replaces the root handler: one handler, lines only in the new stream."""
    first, second = io.StringIO(), io.StringIO()
    configure_logging(stream=first)
    configure_logging(stream=second)
    get_logger("council.test").info("once")
    assert len(_council_handlers()) == 1
    assert first.getvalue() == ""
    assert [json.loads(line)["event"] for line in second.getvalue().splitlines()] == ["once"]


def test_stdlib_records_come_out_as_json(lines: Lines) -> None:
    """Celery's own stdlib records go through the same chain, context and redaction included."""
    bind_task_context(run_id="r1")
    logging.getLogger("celery").warning("Connected to %s", "redis://:pw@localhost:6379/0")
    (line,) = lines()
    assert line["logger"] == "celery"
    assert line["level"] == "warning"
    assert line["run_id"] == "r1"
    assert "pw" not in line["event"]
    assert "timestamp" in line


def test_stdlib_exception_text_is_redacted(lines: Lines) -> None:
    """A stdlib record's traceback is rendered into `exception` with the password masked."""
    try:
        raise ConnectionError("cannot reach redis://:hunter2@cache:6379/0")
    except ConnectionError:
        logging.getLogger("kombu").exception("lost connection")
    (line,) = lines()
    assert "ConnectionError" in line["exception"]
    assert "hunter2" not in line["exception"]


def test_console_renderer_also_redacts() -> None:
    """json=False renders for humans, with the same redaction."""
    buffer = io.StringIO()
    configure_logging(stream=buffer, json=False)
    get_logger("council.test").info("connecting", url="redis://:hunter2@cache/0")
    text = buffer.getvalue()
    assert "connecting" in text
    assert "hunter2" not in text


def test_capture_logs_sees_loggers_made_before_configure() -> None:
    """Loggers are not cached, so capture_logs works on module-level loggers."""
    log = get_logger("council.test")
    configure_logging(stream=io.StringIO())
    with capture_logs() as logs:
        log.info("journal_appended", seq=3)
    assert logs == [{"event": "journal_appended", "seq": 3, "log_level": "info"}]


# --- task context -----------------------------------------------------------------------


def test_bound_context_appears_then_is_cleared(lines: Lines) -> None:
    """Task A's run_id is on A's lines and absent from task B's after clearing."""
    log = get_logger("council.test")
    bind_task_context(run_id="run-a", participant="alice")
    log.info("in_a")
    clear_task_context()
    log.info("in_b")
    a, b = lines()
    assert (a["run_id"], a["participant"]) == ("run-a", "alice")
    assert "run_id" not in b
    assert "participant" not in b


def test_explicit_field_wins_over_bound_context() -> None:
    """A field passed to the call overrides the bound value of the same name."""
    bind_task_context(attempt=1)
    with capture_logs(processors=[merge_contextvars]) as logs:
        get_logger("council.test").info("retry", attempt=2)
    assert logs[0]["attempt"] == 2


# --- redaction --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis://:secret@host:6379/0", "redis://:***@host:6379/0"),
        ("redis://user:pw@h", "redis://user:***@h"),
        ("https://tok@host/path", "https://***@host/path"),
        ("rediss://:p@ss@host:6380/1", "rediss://:***@host:6380/1"),
        (
            "https://api.example.com/v1?api_key=abc123&x=1",
            "https://api.example.com/v1?api_key=***&x=1",
        ),
        ("redis://localhost:6379/0", "redis://localhost:6379/0"),
        ("redis://:***@host/0", "redis://:***@host/0"),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    """Passwords, bare token users and secret query values are masked; the rest is kept."""
    assert redact_url(url) == expected


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("key sk-" + "a1B2" * 6 + " refused", "a1B2" * 6),
        ("sk-ant-api03-" + "x" * 30, "x" * 30),
        ("token ghp_" + "Z" * 36, "Z" * 36),
        ("github_pat_" + "1" * 40, "1" * 40),
        ("Authorization: Bearer eyJhbGciOi.payload.sig", "eyJhbGciOi"),
        ("bearer abc-def_ghi", "abc-def_ghi"),
        ("aws AKIAABCDEFGHIJKLMNOP", "ABCDEFGHIJKLMNOP"),
        ("password: hunter2", "hunter2"),
        ("{'api_key': 'abc123'}", "abc123"),
        ("X-Api-Key=zz9", "zz9"),
    ],
)
def test_redact_text_masks_key_shapes(text: str, secret: str) -> None:
    """Every known key shape and secret assignment in free text is masked."""
    redacted = redact_text(text)
    assert secret not in redacted
    assert MASK in redacted


def test_redact_text_keeps_counts_and_prose() -> None:
    """Token counts and ordinary words are not mistaken for secrets."""
    text = "tokens_in=1200 max_tokens: 4096 task-sk-short risk-assessment"
    assert redact_text(text) == text


def test_redact_processor_masks_secret_keys_case_insensitively() -> None:
    """Values under secret-looking keys become the mask; numbers under them are kept."""
    event = {
        "event": "call",
        "API_KEY": "abc",
        "github-token": "t",
        "db_password": "p",
        "client_secret": "s",
        "Authorization": "Basic dXNlcjpwdw==",
        "tokens_in": 1200,
        "model": "m1",
    }
    out = Redact()(None, "info", event)
    assert out == {
        "event": "call",
        "API_KEY": MASK,
        "github-token": MASK,
        "db_password": MASK,
        "client_secret": MASK,
        "Authorization": MASK,
        "tokens_in": 1200,
        "model": "m1",
    }


def test_redact_processor_walks_nested_values() -> None:
    """Dicts, lists and tuples are walked; secrets at any depth are masked, shapes kept."""
    event: dict[str, Any] = {
        "event": "call",
        "request": {
            "headers": {"x-api-key": "k1", "accept": "json"},
            "urls": ["redis://:pw@h/0", ("https://tok@api", 3)],
        },
    }
    out = Redact()(None, "info", event)
    assert out["request"] == {
        "headers": {"x-api-key": MASK, "accept": "json"},
        "urls": ["redis://:***@h/0", ("https://***@api", 3)],
    }
    assert event["request"]["headers"]["x-api-key"] == "k1"


def test_redact_processor_masks_secretstr_and_objects() -> None:
    """SecretStr renders as the mask; an exception object is rendered and redacted."""
    event = {
        "event": "e",
        "key": SecretStr("sk-" + "q" * 30),
        "error": ConnectionError("redis://u:pw@h"),
    }
    out = Redact()(None, "info", event)
    assert out["key"] == MASK
    assert out["error"] == "ConnectionError('redis://u:***@h')"


def test_custom_secret_key_parts() -> None:
    """Settings in __init__ choose which field names are secret."""
    redact = Redact(secret_key_parts=["pin"])
    out = redact(None, "info", {"event": "e", "user_pin": "1234x", "password": "p"})
    assert out == {"event": "e", "user_pin": MASK, "password": "p"}


def test_logged_exception_text_is_redacted(lines: Lines) -> None:
    """log.exception renders the traceback, then every secret in it is masked."""
    key = "sk-" + "k" * 32
    try:
        raise RuntimeError(f"backend refused {key} at https://tok@api.example.com")
    except RuntimeError:
        get_logger("council.test").exception("llm_call_failed")
    (line,) = lines()
    assert "RuntimeError" in line["exception"]
    assert key not in line["exception"]
    assert "tok@" not in line["exception"]


def test_nested_secret_never_reaches_the_line(lines: Lines) -> None:
    """End to end: a nested api key and a URL password are absent from the JSON text."""
    get_logger("council.test").info(
        "settings", config={"backend": {"api_key": "abc-123"}}, broker="redis://:pw9@h/0"
    )
    (line,) = lines()
    assert line["config"] == {"backend": {"api_key": MASK}}
    assert line["broker"] == "redis://:***@h/0"


# --- Celery signals ---------------------------------------------------------------------


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
    assert len(_council_handlers()) == 1
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
    """attempt is retries + 1 and the broker's redelivered flag is carried."""

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
    assert {line["logger"] for line in during} >= {"workers.app.logging", "celery.app.trace"}
    assert all(line["run_id"] == "r6" and line["participant"] == "erin" for line in during)
    assert "run_id" not in after
