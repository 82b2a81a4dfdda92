"""The CLI's context object and its errors with meaningful exit codes."""

from __future__ import annotations

from dataclasses import dataclass

import click
from pydantic import SecretStr, ValidationError

from workers.logging import configure_logging
from workers.runtime import Runtime, build_runtime
from workers.settings import Settings


class UsageProblem(click.ClickException):
    """A usage or configuration error: nothing was sent. Exit code 2."""

    exit_code = 2


class Incomplete(click.ClickException):
    """The council could not complete (Redis unreachable, timeout, quorum). Exit code 3."""

    exit_code = 3


@dataclass
class CliContext:
    """Built once by the group; handed to every command."""

    settings: Settings
    log_level: str

    @classmethod
    def build(cls, *, redis_url: str | None, log_level: str) -> CliContext:
        """Settings from the environment, with ``--redis`` on top; logging to stderr."""
        configure_logging(level=log_level.upper())
        overrides = {"redis_url": SecretStr(redis_url)} if redis_url else {}
        try:
            settings = Settings(**overrides)  # type: ignore[arg-type]
        except ValidationError as exc:
            first = exc.errors()[0]
            where = "COUNCIL_" + "_".join(str(p) for p in first["loc"]).upper()
            raise UsageProblem(f"{where}: {first['msg']}") from None
        return cls(settings=settings, log_level=log_level)

    @property
    def distributed(self) -> bool:
        """Whether a Redis URL was given (else embedded mode)."""
        return self.settings.redis_url is not None

    def runtime(self) -> Runtime:
        """A runtime on the configured Redis; exit 2 without a URL, 3 when unreachable."""
        if not self.distributed:
            raise UsageProblem(
                "this command reads what Redis holds: set COUNCIL_REDIS_URL or pass --redis URL"
            )
        from council.errors import ConfigurationError, StoreUnavailable

        try:
            return build_runtime(self.settings)
        except ConfigurationError as exc:
            raise UsageProblem(str(exc)) from None
        except StoreUnavailable as exc:
            raise Incomplete(str(exc)) from None
