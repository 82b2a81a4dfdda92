"""The ``council`` command line: one click group, a context built once, thin commands.

Exit codes a CI job can tell apart: 0 passed, 1 the ``--fail-on`` gate tripped, 2 usage
or configuration error (nothing was sent), 3 the council could not complete. Source:
style.md habit 12; issue "The council end to end".
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any

import click
from click.core import ParameterSource

from workers.cli.context import CliContext
from workers.cli.journal import harvest_command, record_command
from workers.cli.publish import publish_group
from workers.cli.readback import ledger_command, release_command, runs_command, show_command
from workers.cli.review import check_command, review_command
from workers.cli.suppression import baseline_command, dismiss_command
from workers.cli.worker import worker_command
from workers.runtime import REDIS_ENV

BROKEN_PIPE_EXIT = 141
"""The exit code when stdout's reader went away: 128 + SIGPIPE, as a shell reports it."""

INTERNAL_ERROR_EXIT = 3
"""The exit code of a crash: the council could not complete (never 1, the gate's code)."""


class CouncilGroup(click.Group):
    """The command group, with one rule added: an exception no command turned into an
    exit code is a crash, and a crash exits 3 ("could not complete"), never Python's 1,
    which CI would read as "a finding tripped the gate". The traceback goes to stderr."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except BrokenPipeError:
            # The reader went away (``council runs | head``): stop quietly, as a command
            # killed by SIGPIPE would; later writes go nowhere instead of failing again.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(BROKEN_PIPE_EXIT)
        except Exception as error:
            traceback.print_exc(file=sys.stderr)
            click.echo(
                f"council: internal error ({type(error).__name__}: {error}); the council "
                f"could not complete (exit {INTERNAL_ERROR_EXIT}). The traceback above says "
                f"where; please report it.",
                err=True,
            )
            ctx.exit(INTERNAL_ERROR_EXIT)


@click.group(
    cls=CouncilGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--redis",
    "redis_url",
    envvar="COUNCIL_REDIS_URL",
    metavar="URL",
    help="Redis for broker, results and state (env COUNCIL_REDIS_URL). Unset: embedded mode.",
)
@click.option(
    "--log-level",
    default="WARNING",
    show_default=True,
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    help="Level of the JSON log lines written to stderr.",
)
@click.version_option(package_name="council")
@click.pass_context
def main(ctx: click.Context, redis_url: str | None, log_level: str) -> None:
    """A code-review council: several reviewers, one consolidated set of findings.

    \b
    Review the last commit of a repository, with nothing but this package installed:
      council review --repo . --base HEAD~1 --roster examples/council.toml
    Across workers on Redis:
      export COUNCIL_REDIS_URL=redis://localhost:6379/0
      council worker            # on any number of hosts
      council review --repo . --base origin/main
    """
    given = ctx.get_parameter_source("redis_url") is ParameterSource.COMMANDLINE
    ctx.obj = CliContext.build(
        redis_url=redis_url,
        log_level=log_level,
        redis_source="--redis" if given else REDIS_ENV,
    )


for command in (
    review_command,
    check_command,
    worker_command,
    record_command,
    harvest_command,
    runs_command,
    show_command,
    ledger_command,
    release_command,
    dismiss_command,
    baseline_command,
    publish_group,
):
    main.add_command(command)

__all__ = ["main"]
