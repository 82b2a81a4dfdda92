"""Settings read at the edge: Redis URLs, caps, and errors that never leak a password."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from council.errors import ConfigurationError, StoreUnavailable
from workers.app.services import connect
from workers.app.settings import Settings
from workers.cli import main


def test_empty_redis_url_means_embedded(monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty COUNCIL_REDIS_URL (an unset CI secret) is embedded mode, not an error."""
    monkeypatch.setenv("COUNCIL_REDIS_URL", "")
    assert Settings().redis_url is None


def test_non_redis_url_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """An http:// URL is refused with the form a Redis URL takes."""
    monkeypatch.setenv("COUNCIL_REDIS_URL", "http://localhost:6379")
    with pytest.raises(ValidationError, match="redis://"):
        Settings()


def test_cli_reports_bad_settings_as_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A malformed setting is exit 2 naming the variable, never a traceback."""
    monkeypatch.setenv("COUNCIL_MAX_DIFF_BYTES", "abc")
    result = CliRunner().invoke(main, ["runs"])
    assert result.exit_code == 2
    assert "COUNCIL_MAX_DIFF_BYTES" in result.output
    assert "Traceback" not in result.output


def test_malformed_url_error_hides_the_password() -> None:
    """redis-py's parse error quotes the password; ours names the URL redacted."""
    with pytest.raises(ConfigurationError) as caught:
        connect("redis://admin:S3cret:Pass/w0rd@127.0.0.1:1/0")
    assert "S3cret" not in str(caught.value)
    assert "cannot be read" in str(caught.value)


def test_unreachable_error_hides_the_password() -> None:
    """A refused connection names the URL without its password and says the way out."""
    with pytest.raises(StoreUnavailable) as caught:
        connect("redis://:hunter2@127.0.0.1:1/0")
    text = str(caught.value)
    assert "hunter2" not in text and "127.0.0.1:1" in text
    assert ".." not in text


def test_bad_redis_flag_names_the_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--redis notaurl``: the error names --redis, which the user wrote, not the
    environment variable the user never set."""
    monkeypatch.delenv("COUNCIL_REDIS_URL", raising=False)
    result = CliRunner().invoke(main, ["--redis", "notaurl", "runs"])
    assert result.exit_code == 2
    assert "--redis: must be a Redis URL" in result.output
    assert "COUNCIL_REDIS_URL" not in result.output
    assert "Value error" not in result.output


def test_bad_redis_variable_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same URL from COUNCIL_REDIS_URL is reported under that name."""
    monkeypatch.setenv("COUNCIL_REDIS_URL", "notaurl")
    result = CliRunner().invoke(main, ["runs"])
    assert result.exit_code == 2
    assert "COUNCIL_REDIS_URL: must be a Redis URL" in result.output


def test_unreachable_redis_flag_names_the_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unreachable or unreadable ``--redis`` URL: the way out names --redis."""
    monkeypatch.delenv("COUNCIL_REDIS_URL", raising=False)
    result = CliRunner().invoke(main, ["--redis", "redis://127.0.0.1:1/0", "runs"])
    assert result.exit_code == 3
    assert "fix the --redis URL" in result.output
    assert "fix COUNCIL_REDIS_URL" not in result.output
    result = CliRunner().invoke(main, ["--redis", "redis://h:notaport/0", "runs"])
    assert result.exit_code == 2
    assert "--redis: names a port that is not a number from 1 to 65535" in result.output


def test_unreachable_redis_variable_names_the_variable() -> None:
    """connect() without a source names COUNCIL_REDIS_URL, as before."""
    with pytest.raises(StoreUnavailable, match="fix COUNCIL_REDIS_URL"):
        connect("redis://127.0.0.1:1/0")


def test_redis_after_the_command_says_where_it_goes(monkeypatch: pytest.MonkeyPatch) -> None:
    """``council review --redis URL``: --redis is the group's option; the error says to
    put it before the command instead of offering --repo."""
    monkeypatch.delenv("COUNCIL_REDIS_URL", raising=False)
    result = CliRunner().invoke(main, ["review", "--redis", "notaurl"])
    assert result.exit_code == 2
    assert "put it before the command (council --redis VALUE review" in result.output
    assert "--repo" not in result.output
