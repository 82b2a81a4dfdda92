"""Tests for workers/app/stdio.py: whatever a worker process writes becomes JSON lines."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from tests.services import free_port
from workers.app.logging import clear_task_context, configure_logging, render_json_line
from workers.app.stdio import LineStream

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def stream() -> Iterator[tuple[LineStream, io.StringIO]]:
    """A LineStream whose log lines go to a buffer (logging configured onto it)."""
    out = io.StringIO()
    configure_logging(stream=out)
    yield LineStream("stdout", logging.INFO, out), out
    root = logging.getLogger()
    for handler in [h for h in root.handlers if h.get_name() == "council"]:
        root.removeHandler(handler)
    structlog.reset_defaults()
    clear_task_context()


def _read(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_each_printed_line_is_one_record_and_a_partial_line_waits(
    stream: tuple[LineStream, io.StringIO],
) -> None:
    """Two lines in one write are two records; a partial line is held until its newline
    (or a flush); blank lines are dropped."""
    lines, out = stream
    print("one\ntwo", file=lines)
    lines.write("thr")
    assert [e["text"] for e in _read(out)] == ["one", "two"]
    lines.write("ee\n\n")
    lines.write("four")
    lines.flush()
    entries = _read(out)
    assert [e["text"] for e in entries] == ["one", "two", "three", "four"]
    assert {(e["event"], e["stream"], e["level"]) for e in entries} == {
        ("printed", "stdout", "info")
    }


def test_a_printed_traceback_is_one_record_with_the_traceback_in_a_field(
    stream: tuple[LineStream, io.StringIO],
) -> None:
    """traceback.print_exc writes line by line; the block is one printed_traceback."""
    lines, out = stream
    try:
        raise ValueError("boom")
    except ValueError:
        import traceback

        traceback.print_exc(file=lines)
    print("after", file=lines)
    first, second = _read(out)
    assert first["event"] == "printed_traceback" and first["level"] == "error"
    assert first["exception"].startswith("Traceback (most recent call last):")
    assert first["text"] == "ValueError: boom" and "raise ValueError" in first["exception"]
    assert second["text"] == "after"


def test_printed_secrets_are_masked_and_task_context_is_carried(
    stream: tuple[LineStream, io.StringIO],
) -> None:
    """A print inside a task carries its bound ids and goes through redaction."""
    lines, out = stream
    with structlog.contextvars.bound_contextvars(run_id="r1", participant="hawk"):
        print("using redis://:hunter2@redis:6379/0 and sk-abcdefghijklmnopqrstuvwx", file=lines)
    (entry,) = _read(out)
    assert (entry["run_id"], entry["participant"]) == ("r1", "hawk")
    assert "hunter2" not in entry["text"] and "sk-abcdefghij" not in entry["text"]


def test_render_json_line_needs_no_logging_and_redacts() -> None:
    """The lock-free rendering used in signal handlers: one JSON object, redacted."""
    line = render_json_line("celery_notice", level="info", logger="x", text="api_key=abc123")
    entry = json.loads(line)
    assert (entry["event"], entry["level"], entry["logger"]) == ("celery_notice", "info", "x")
    assert entry["text"] == "api_key=***" and "timestamp" in entry


SCRIPT = textwrap.dedent(
    """
    import sys, threading, traceback, warnings
    import celery.apps.worker as celery_worker
    from workers.app.stdio import install_worker_output

    install_worker_output("INFO")
    install_worker_output("INFO")  # twice: nothing wrapped twice
    print("plain print")
    sys.stderr.write("to stderr\\n")
    warnings.warn("careful", RuntimeWarning)
    try:
        1 / 0
    except ZeroDivisionError:
        traceback.print_exc()
    thread = threading.Thread(target=lambda: 1 / 0, name="doomed")
    thread.start(); thread.join()
    celery_worker.safe_say("worker: Warm shutdown (MainProcess)", sys.__stdout__)
    print("password=hunter2 partial", end="")
    raise RuntimeError("uncaught redis://:hunter2@h:6379/0")
    """
)


def test_a_worker_process_writes_nothing_but_json(tmp_path: Path) -> None:
    """In a real process after install_worker_output: a print, a stderr write, a Python
    warning, a printed traceback, a thread's exception, Celery's safe_say notice, a
    partial last line and an uncaught exception all come out as JSON lines (on stdout
    and stderr alike), secrets masked; the exit status stays Python's."""
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    raw = [line for line in (done.stdout + "\n" + done.stderr).splitlines() if line.strip()]
    entries = [json.loads(line) for line in raw]  # raises on any line that is not JSON
    assert all(isinstance(e, dict) for e in entries)
    by_event: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        by_event.setdefault(e["event"], []).append(e)
    printed = [e["text"] for e in by_event["printed"]]
    assert printed == ["plain print", "to stderr", "password=*** partial"]
    (warned,) = by_event["python_warning"]
    assert (warned["category"], warned["warning"]) == ("RuntimeWarning", "careful")
    (printed_tb,) = by_event["printed_traceback"]
    assert "ZeroDivisionError" in printed_tb["exception"]
    thread_error, main_error = by_event["uncaught_exception"]
    assert thread_error["thread"] == "doomed" and "ZeroDivisionError" in thread_error["exception"]
    assert main_error["level"] == "critical" and main_error["error_type"] == "RuntimeError"
    assert "Traceback" in main_error["exception"]
    (notice,) = by_event["celery_notice"]
    assert notice["text"] == "worker: Warm shutdown (MainProcess)"
    assert "hunter2" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("redis_url", "extra", "exit_code", "says"),
    [
        (f"redis://127.0.0.1:{free_port()}/0", [], 3, "cannot reach Redis at redis://127.0.0.1:"),
        (None, [], 2, "council worker needs a broker"),
        (None, ["--redis", "redis://127.0.0.1:6379/0"], 2, "is an option of council itself"),
    ],
)
def test_a_worker_that_cannot_start_says_why_in_one_error_line(
    redis_url: str | None, extra: list[str], exit_code: int, says: str
) -> None:
    """No Redis (or no URL at all, or ``--redis`` written after ``worker``, where it
    would go to ``celery worker``): ``council worker`` exits with its code and writes one
    JSON line, ``worker_failed`` at error with the message, not click's text as a
    ``printed`` warning; a URL without a password is shown without a mask."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    if redis_url is not None:
        env["COUNCIL_REDIS_URL"] = redis_url
    done = subprocess.run(
        [sys.executable, "-m", "workers.cli", "worker", *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == exit_code, done.stderr
    (line,) = [json.loads(text) for text in (done.stdout + done.stderr).splitlines() if text]
    assert (line["event"], line["level"], line["exit_code"]) == (
        "worker_failed",
        "error",
        exit_code,
    )
    assert says in line["message"]
    assert "***" not in line["message"]
