"""The CLI's context object and its errors with meaningful exit codes."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click
from pydantic import SecretStr, ValidationError

from council.rendering.escape import for_log
from workers.app.logging import configure_logging, real_stream
from workers.app.settings import Settings

if TYPE_CHECKING:
    from workers.app.services import Runtime
    from workers.stores.sessions import SessionStore

REDIS_ENV = "COUNCIL_REDIS_URL"
"""Where the Redis URL comes from unless the user passed ``--redis``."""


class UsageProblem(click.ClickException):
    """A usage or configuration error: nothing was sent. Exit code 2.

    The message may name what a change holds (a path, a link): it is printed escaped for
    a terminal or a CI log (:func:`~council.rendering.escape.for_log`)."""

    exit_code = 2

    def format_message(self) -> str:
        return for_log(self.message)


class Incomplete(click.ClickException):
    """The council could not complete (Redis unreachable, timeout, quorum). Exit code 3.

    Printed escaped for a terminal or a CI log, like :class:`UsageProblem`."""

    exit_code = 3

    def format_message(self) -> str:
        return for_log(self.message)


@dataclass
class CliContext:
    """Built once by the group; handed to every command."""

    settings: Settings
    log_level: str
    redis_source: str = REDIS_ENV
    """Where the Redis URL came from: ``--redis`` when the user passed the flag, else
    ``COUNCIL_REDIS_URL``; errors about the URL name it."""

    @classmethod
    def build(
        cls,
        *,
        redis_url: str | None,
        log_level: str,
        redis_source: str = REDIS_ENV,
        log_format: str = "auto",
    ) -> CliContext:
        """Settings from the environment, with ``--redis`` on top; logging to stderr.

        ``redis_source`` is ``"--redis"`` when ``redis_url`` came from the flag (the
        group asks click), so a malformed URL is reported under the name the user wrote.
        ``log_format``: ``json``, ``console``, or ``auto`` (console when stderr is a
        terminal: a person running a review reads its warnings; a CI log keeps JSON).
        """
        json = log_format == "json" or (
            log_format == "auto" and not real_stream(sys.stderr).isatty()
        )
        configure_logging(level=log_level.upper(), json=json)
        overrides = {"redis_url": SecretStr(redis_url)} if redis_url else {}
        try:
            settings = Settings(**overrides)  # type: ignore[arg-type]
        except ValidationError as exc:
            first = exc.errors()[0]
            field = "_".join(str(p) for p in first["loc"])
            where = redis_source if field == "redis_url" else "COUNCIL_" + field.upper()
            message = str(first["msg"]).removeprefix("Value error, ")
            raise UsageProblem(f"{where}: {message}") from None
        return cls(settings=settings, log_level=log_level, redis_source=redis_source)

    @property
    def distributed(self) -> bool:
        """Whether a Redis URL was given (else embedded mode)."""
        return self.settings.redis_url is not None

    def runtime(self, *, check: bool = True) -> Runtime:
        """A runtime on the configured Redis; exit 2 without a URL, 3 when unreachable
        (``check``: PING it first; without, the first command finds out)."""
        if not self.distributed:
            raise UsageProblem(
                "this command reads what Redis holds: set COUNCIL_REDIS_URL or pass --redis URL"
            )
        # Imported here: redis and the stores are for the commands that reach Redis,
        # not for every start of the CLI (``council record`` runs once per finding).
        from council.errors import ConfigurationError, StoreUnavailable
        from workers.app.services import build_runtime, connect

        try:
            if not check:
                url = self.settings.redis_url_value() or ""
                client = connect(url, source=self.redis_source, check=False)
                return build_runtime(self.settings, client, source=self.redis_source)
            return build_runtime(self.settings, source=self.redis_source)
        except ConfigurationError as exc:
            raise UsageProblem(str(exc)) from None
        except StoreUnavailable as exc:
            raise Incomplete(str(exc)) from None


@contextlib.contextmanager
def session_store(
    cli: CliContext, state: Path | None, *, save: bool, session: str | None = None
) -> Iterator[SessionStore]:
    """The session store: Redis's with COUNCIL_REDIS_URL, else the embedded state file's
    (``state``, or the default; merged back when ``save``, holding the lock of
    ``session``, the one the command changes: None when it cannot say before reading,
    and then every session's). A state file that cannot be read is a usage error (exit
    2)."""
    from council.errors import ConfigurationError
    from workers.coordinator.embedded import state_sessions

    if cli.distributed:
        yield cli.runtime().sessions
        return
    try:
        with state_sessions(with_state(cli, state), save=save, session=session) as store:
            yield store
    except ConfigurationError as exc:
        raise UsageProblem(str(exc)) from None


@contextlib.contextmanager
def state_stores(
    cli: CliContext, state: Path | None, *, save: bool, session: str | None = None
) -> Iterator[Runtime]:
    """The stores without a council running: Redis's runtime with COUNCIL_REDIS_URL,
    else the embedded state file's (its sessions, and the runs it keeps waiting on their
    reviewers' questions, with their artifacts); as :func:`session_store`."""
    from council.errors import ConfigurationError
    from workers.coordinator.embedded import state_runtime

    if cli.distributed:
        yield cli.runtime()
        return
    try:
        with state_runtime(with_state(cli, state), save=save, session=session) as rt:
            yield rt
    except ConfigurationError as exc:
        raise UsageProblem(str(exc)) from None


def with_state(cli: CliContext, state: Path | None) -> Settings:
    """The CLI's settings, with ``--state`` (the embedded state file) when given."""
    if state is None:
        return cli.settings
    return cli.settings.model_copy(update={"state_path": state})
