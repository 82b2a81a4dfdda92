"""The ``council`` command line: one click group, a context built once, thin commands.

Exit codes a CI job can tell apart: 0 passed, 1 the ``--fail-on`` gate tripped, 2 usage
or configuration error (nothing was sent), 3 the council could not complete. Source:
docs/style.md habit 12; issue "The council end to end". An interrupt (Ctrl-C) before a
command has its own handling exits 130 with one line, never a traceback.

The group is light to import: each command's module (pydantic, redis, celery, ...) is
imported when that command runs (:data:`COMMANDS`), so ``council record``, called by a
reviewer for every finding, loads only what it uses; a command's arguments are parsed
before the group's callback, so ``council review --help`` loads little but click. The
console script is :func:`workers.entry.main`, which also turns an interrupt during
imports into exit 130.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from typing import Any

import click
from click.core import ParameterSource

from workers.entry import INTERRUPTED_EXIT, INTERRUPTED_LINE, started

BROKEN_PIPE_EXIT = 141
"""The exit code when stdout's reader went away: 128 + SIGPIPE, as a shell reports it."""

INTERNAL_ERROR_EXIT = 3
"""The exit code of a crash: the council could not complete (never 1, the gate's code)."""


COMMANDS: dict[str, tuple[str, str]] = {
    "review": ("workers.cli.review", "review_command"),
    "check": ("workers.cli.check", "check_command"),
    "worker": ("workers.cli.worker", "worker_command"),
    "record": ("workers.cli.journal", "record_command"),
    "harvest": ("workers.cli.journal", "harvest_command"),
    "run-script": ("workers.cli.run_script", "run_script_command"),
    "consolidate": ("workers.cli.consolidate", "consolidate_command"),
    "evidence": ("workers.cli.evidence", "evidence_command"),
    "runs": ("workers.cli.readback", "runs_command"),
    "show": ("workers.cli.readback", "show_command"),
    "ledger": ("workers.cli.readback", "ledger_command"),
    "release": ("workers.cli.readback", "release_command"),
    "dismiss": ("workers.cli.suppression", "dismiss_command"),
    "baseline": ("workers.cli.suppression", "baseline_command"),
    "publish": ("workers.cli.publish", "publish_group"),
    "ask": ("workers.cli.ask", "ask_command"),
    "asks": ("workers.cli.answers", "asks_command"),
    "answer": ("workers.cli.answers", "answer_command"),
    "resume": ("workers.cli.answers", "resume_command"),
    "console": ("workers.console.command", "console_command"),
    "outcomes": ("workers.cli.ranking.outcomes", "outcomes_group"),
}
"""Command name → (module, attribute): imported when the command is asked for."""

SUMMARIES: dict[str, str] = {
    "answer": "Answer a question a run waits on, by its id.",
    "ask": "Check an ask, or ask a person from a command reviewer.",
    "asks": "List the questions runs wait on, unanswered.",
    "baseline": "Write .council-baseline.json from the open findings.",
    "check": "Validate the roster and claims; print each prompt.",
    "console": "Serve a live web page of the runs and their questions.",
    "consolidate": "Merge the findings of several sources into one report.",
    "dismiss": "Dismiss a finding in a session: listed, never gating.",
    "evidence": "Print which blocks of an answer are programs that ran.",
    "harvest": "Print the Harvest JSON of one reviewer answer.",
    "ledger": "List the identities a session's ledger holds.",
    "outcomes": "Each reviewer's scorecard; import what became of findings.",
    "publish": "Post a review on a pull request or merge request.",
    "record": "Append a finding to the running reviewer's journal.",
    "release": "Free a participant id in a session for a new meaning.",
    "resume": "Settle a run that waited on a person, once answered.",
    "review": "Review the change of HEAD since BASE with the council.",
    "run-script": "Run a script in the sandbox, recorded as evidence.",
    "runs": "List the runs Redis holds (distributed mode), newest first.",
    "show": "Show one run Redis holds: its report, or its progress.",
    "worker": "Run a council worker on COUNCIL_REDIS_URL.",
}
"""Command name → its line in ``council --help``: whole (click cut the docstrings' first
sentences at the terminal's width), and listed without importing every command."""

BODIES: dict[str, str] = {"review": "workers.cli.review.running"}
"""Command name → the module its run needs, when the command's own module is kept light
for its ``--help``: imported once the command's arguments are parsed and before
:func:`~workers.entry.started`, so an interrupt while it loads is still a quiet exit."""

GROUP_OPTIONS = frozenset({"--redis", "--log-level", "--log-format"})
"""Options of ``council`` itself, which go before the command name."""


class CouncilGroup(click.Group):
    """The command group, with one rule added: an exception no command turned into an
    exit code is a crash, and a crash exits 3 ("could not complete"), never Python's 1,
    which CI would read as "a finding tripped the gate". The traceback goes to stderr.
    An interrupt no command handled (Ctrl-C while a command's modules load, or before a
    review starts) exits 130 with one line: click would say "Aborted!" and exit 1.
    Commands are loaded when asked for (:data:`COMMANDS`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, loaded or not, sorted (as click lists them)."""
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands section of ``council --help``, from :data:`SUMMARIES`."""
        rows = []
        for name in self.list_commands(ctx):
            summary = SUMMARIES.get(name)
            if summary is None:  # a command added at run time
                command = self.get_command(ctx, name)
                if command is None or command.hidden:
                    continue
                summary = command.get_short_help_str(limit=formatter.width)
            rows.append((name, summary))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``, importing its module the first time it is asked for."""
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attribute = COMMANDS[cmd_name]
            command = getattr(importlib.import_module(module), attribute)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return self._invoke_parsed(ctx)
        except click.NoSuchOption as exc:
            if exc.option_name in GROUP_OPTIONS:
                # ``council review --redis URL``: the option is the group's, not the
                # command's; say where it goes rather than "did you mean --repo?".
                # A new exception, not an edited one: click 8.5 declares the message Final.
                raise click.NoSuchOption(
                    exc.option_name,
                    message=(
                        f"{exc.option_name} is an option of council itself, not of the "
                        f"command: put it before the command (council {exc.option_name} "
                        f"VALUE {ctx.invoked_subcommand or 'COMMAND'} ...)"
                    ),
                    ctx=exc.ctx,
                ) from None
            raise
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except KeyboardInterrupt:
            click.echo(INTERRUPTED_LINE, err=True)
            ctx.exit(INTERRUPTED_EXIT)
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

    def _invoke_parsed(self, ctx: click.Context) -> Any:
        """click's ``Group.invoke`` with the command's arguments parsed BEFORE the group's
        callback runs (click runs it first): ``council review --help`` and a usage error
        build no context (settings, logging) and load nothing of the run."""
        args = [*_protected_args(ctx), *ctx.args]
        if not args:
            return super().invoke(ctx)  # click's own "Missing command."
        _set_protected_args(ctx, [])
        ctx.args = []
        with ctx:
            name, command, rest = self.resolve_command(ctx, args)
            assert name is not None and command is not None
            ctx.invoked_subcommand = name
            sub_ctx = command.make_context(name, rest, parent=ctx)
            click.Command.invoke(self, ctx)  # the group's callback: builds ctx.obj
            sub_ctx.obj = ctx.obj  # what the command would have inherited from it
            with sub_ctx:
                return sub_ctx.command.invoke(sub_ctx)


def _protected_args(ctx: click.Context) -> list[str]:
    """The command name click holds apart from the rest (``_protected_args`` since
    click 8.2, ``protected_args`` before)."""
    held = getattr(ctx, "_protected_args", None)
    return list(held if held is not None else ctx.protected_args)


def _set_protected_args(ctx: click.Context, value: list[str]) -> None:
    if hasattr(ctx, "_protected_args"):
        ctx._protected_args = value
    else:  # click 8.1
        ctx.protected_args = value  # type: ignore[misc]


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
    default="warning",
    show_default=True,
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    help="Level of the log lines written to stderr.",
)
@click.option(
    "--log-format",
    envvar="COUNCIL_LOG_FORMAT",
    default="auto",
    show_default=True,
    type=click.Choice(["auto", "json", "console"], case_sensitive=False),
    help="Log lines on stderr: one JSON object each (json), or for a person to read "
    "(console); auto: console on a terminal, else json (env COUNCIL_LOG_FORMAT).",
)
@click.version_option(package_name="council")
@click.pass_context
def main(ctx: click.Context, redis_url: str | None, log_level: str, log_format: str) -> None:
    """A code-review council: several reviewers, one consolidated set of findings.

    \b
    Review the last commit of a repository, with nothing but this package installed:
      council review --repo . --base HEAD~1 --roster examples/council.toml
    Across workers on Redis:
      export COUNCIL_REDIS_URL=redis://localhost:6379/0
      council worker            # on any number of hosts
      council review --repo . --base origin/main
    """
    from workers.cli.context import CliContext

    given = ctx.get_parameter_source("redis_url") is ParameterSource.COMMANDLINE
    where = {"redis_source": "--redis"} if given else {}
    ctx.obj = CliContext.build(
        redis_url=redis_url, log_level=log_level, log_format=log_format.lower(), **where
    )
    body = BODIES.get(ctx.invoked_subcommand or "")
    if body is not None:
        importlib.import_module(body)
    started()


__all__ = ["main"]
