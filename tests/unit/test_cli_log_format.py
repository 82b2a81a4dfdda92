"""``council --log-format``: the CLI's own log lines as JSON objects (a CI log, jq) or for a
person at a terminal; ``auto`` picks by whether stderr is a terminal."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest
import structlog
from click.testing import CliRunner

from workers.app.logging import configure_logging
from workers.cli import main
from workers.cli.context import CliContext


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _json_again() -> Iterator[None]:
    """Every other test expects the JSON lines: put them back after each of these."""
    yield
    configure_logging()


def _warn_into(stream: io.StringIO, monkeypatch: pytest.MonkeyPatch, log_format: str) -> str:
    """What one warning looks like on ``stream`` as stderr under ``log_format``."""
    monkeypatch.setattr("sys.stderr", stream)
    CliContext.build(redis_url=None, log_level="warning", log_format=log_format)
    structlog.get_logger("council.test").warning("reviewer_unheard", participant="hawk")
    return stream.getvalue()


def test_json_writes_one_object_per_line(monkeypatch: pytest.MonkeyPatch) -> None:
    line = _warn_into(_Terminal(), monkeypatch, "json").strip()
    assert json.loads(line)["event"] == "reviewer_unheard"


def test_console_writes_a_line_for_a_person(monkeypatch: pytest.MonkeyPatch) -> None:
    line = _warn_into(io.StringIO(), monkeypatch, "console").strip()
    assert "reviewer_unheard" in line and "participant" in line and "hawk" in line
    with pytest.raises(json.JSONDecodeError):
        json.loads(line)


def test_auto_is_console_on_a_terminal_and_json_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    on_terminal = _warn_into(_Terminal(), monkeypatch, "auto").strip()
    with pytest.raises(json.JSONDecodeError):
        json.loads(on_terminal)
    in_a_log = _warn_into(io.StringIO(), monkeypatch, "auto").strip()
    assert json.loads(in_a_log)["participant"] == "hawk"


def test_an_unknown_format_is_a_usage_error_naming_the_choices() -> None:
    done = CliRunner().invoke(main, ["--log-format", "yaml", "runs"])
    assert done.exit_code == 2
    assert "'auto', 'json', 'console'" in done.output


@pytest.mark.parametrize("log_format", ["json", "console"])
def test_no_format_writes_a_ci_command(monkeypatch: pytest.MonkeyPatch, log_format: str) -> None:
    """A reviewer's stderr in ``failure`` writes neither ``##[`` nor a line starting ``::``."""
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    CliContext.build(redis_url=None, log_level="warning", log_format=log_format)
    structlog.get_logger("council.test").warning(
        "review_finished", failure="exit 3: ##[error]hashcmd\n::add-mask::y"
    )
    text = stream.getvalue()
    assert "hashcmd" in text and "##[" not in text
    assert not any(line.lstrip().startswith("::") for line in text.splitlines())
