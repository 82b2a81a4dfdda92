"""Tests for workers/app/logging.py: JSON line shape, task context, redaction."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr
from structlog.contextvars import merge_contextvars
from structlog.testing import capture_logs

from workers.app.logging import (
    MASK,
    Redact,
    bind_task_context,
    clear_task_context,
    configure_logging,
    get_logger,
    redact_text,
    redact_url,
    render_json_line,
)

Lines = Callable[[], list[dict[str, Any]]]

pytestmark = pytest.mark.usefixtures("restore_logging")


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
    assert len([h for h in logging.getLogger().handlers if h.get_name() == "council"]) == 1
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
        (
            "sentinel://:pw@h1:26379;sentinel://:pw@h2:26379/0?master_name=m",
            "sentinel://:***@h1:26379;sentinel://:***@h2:26379/0?master_name=m",
        ),
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
    prose = "over the judge's context budget of 6000 tokens: shown are the parts"
    assert redact_text(prose) == prose  # the judge's note lost its word "shown"


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


# --- CI runner commands -----------------------------------------------------------------

HOSTILE = "exit 3: ##[error]hashcmd\n::add-mask::y"
"""What a command reviewer's stderr can put in ``failure``: a command GitHub's runner reads
anywhere in a line, and one it reads at a line's start."""


def _commands(text: str) -> list[str]:
    """The lines of ``text`` a CI runner would read as a command (``##[`` or ``::``)."""
    return [line for line in text.splitlines() if "##[" in line or line.lstrip().startswith("::")]


def _written(json_lines: bool) -> str:
    """Every kind of line, with HOSTILE in its event, fields, nested values, a foreign
    record, a traceback and beside a secret, as written in one format."""
    buffer = io.StringIO()
    configure_logging(stream=buffer, json=json_lines)
    log = get_logger("council.test")
    log.warning(
        f"review_finished {HOSTILE}",
        failure=HOSTILE,
        nested={HOSTILE: [HOSTILE, (HOSTILE,)]},
        api_key="hunter2",
        broker="redis://:pw9@h/0 " + HOSTILE,
    )
    logging.getLogger("kombu").warning("lost %s", HOSTILE)
    try:
        raise RuntimeError(HOSTILE)
    except RuntimeError:
        log.exception("reviewer_failed")
    return buffer.getvalue()


@pytest.mark.parametrize("json_lines", [True, False], ids=["json", "console"])
def test_no_value_writes_a_ci_command(json_lines: bool) -> None:
    """``##[error]`` and a newline before ``::add-mask::`` reach the log as text: no line
    holds ``##[`` or starts with ``::``, in JSON and in the console format; secrets stay
    masked and the text stays readable."""
    text = _written(json_lines)
    assert _commands(text) == []
    assert "##\\[error]hashcmd" in (
        json.loads(text.splitlines()[0])["failure"] if json_lines else text
    )
    assert "hunter2" not in text and "pw9" not in text
    assert "RuntimeError" in text


def test_json_keeps_the_value_but_the_command() -> None:
    """In JSON only ``##[`` changes (JSON escapes the newline itself)."""
    (first, *_) = _written(True).splitlines()
    assert json.loads(first)["failure"] == "exit 3: ##\\[error]hashcmd\n::add-mask::y"


def test_console_keeps_a_traceback_on_its_lines() -> None:
    """The console escapes a field's newline but a traceback keeps its lines, a line
    starting with ``::`` escaped."""
    text = _written(False)
    assert "failure='exit 3: ##\\\\[error]hashcmd\\\\x0a::add-mask::y'" in text
    assert "\nTraceback (most recent call last):\n" in text
    assert "\n\\::add-mask::y" in text


def test_render_json_line_writes_no_command() -> None:
    """The signal handlers' line goes through the same step."""
    line = render_json_line(HOSTILE, level="warning", logger="council.test", failure=HOSTILE)
    assert _commands(line) == []
    assert json.loads(line)["failure"] == "exit 3: ##\\[error]hashcmd\n::add-mask::y"


PIECES = ("##[", "::", "#", "[", ":", "\n", "\r", "\x0b", "\x85", "\u2028", " ", "\t", "a", "\\")
"""What a hostile value is made of: the commands, their parts, and every line break."""


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(PIECES), max_size=12).map("".join))
@pytest.mark.parametrize("json_lines", [True, False], ids=["json", "console"])
def test_no_text_writes_a_ci_command(json_lines: bool, value: str) -> None:
    """Whatever a field, the event or a foreign record holds, no written line is a CI
    runner's command, in either format."""
    buffer = io.StringIO()
    configure_logging(stream=buffer, json=json_lines)
    get_logger("council.test").warning(value, failure=value, nested={value: [value]})
    logging.getLogger("kombu").warning(value)
    assert _commands(buffer.getvalue()) == []
