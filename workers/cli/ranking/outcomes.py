"""``council outcomes [import FILE]``: reviewers' scorecards, and outcomes imported into
their track records (Redis with COUNCIL_REDIS_URL, else the embedded state file).
Source: docs/ranking.md "Importing outcomes", "Scorecards".
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import click

from council.errors import ConfigurationError
from council.ranking.outcomes import KEPT_REASONS, MAX_LINE, read_outcomes, records_from
from council.ranking.scorecard import scorecard_lines
from workers.cli.context import CliContext, UsageProblem, with_state
from workers.stores.track.records import FileRecords, RecordStore, RedisRecords

STATE_OPTION = click.option(
    "--state",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Embedded mode: the state file the records are kept in (default: the cache directory).",
)


def record_store(cli: CliContext, state: Path | None) -> RecordStore:
    """Redis's records with COUNCIL_REDIS_URL, else the embedded state file's."""
    if cli.distributed:
        runtime = cli.runtime()
        return RedisRecords(runtime.client, runtime.keys)
    from workers.coordinator.embedded import default_state_path

    return FileRecords(with_state(cli, state).state_path or default_state_path())


@click.group("outcomes", invoke_without_command=True)
@STATE_OPTION
@click.pass_context
def outcomes_group(ctx: click.Context, state: Path | None) -> None:
    """Each reviewer's scorecard: findings, confirmed, dismissed, estimated precision
    (± its uncertainty), findings a round, cost a confirmed finding.

    \b
    Examples:
      council outcomes
      council outcomes import --state state.json outcomes.jsonl
    """
    ctx.ensure_object(CliContext)
    if ctx.invoked_subcommand is not None:
        return
    if state is not None and not state.exists() and not ctx.obj.distributed:
        raise UsageProblem(
            f"--state {state}: no such file. A review or `council outcomes import` writes "
            "it; check the path (without --state, the default state file is read)"
        )
    try:
        records = record_store(ctx.obj, state).all()
    except ConfigurationError as exc:
        raise UsageProblem(str(exc)) from None
    for line in scorecard_lines(records.values()):
        click.echo(line)


@outcomes_group.command("import")
@click.argument("outcomes", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@STATE_OPTION
@click.pass_obj
def import_command(cli: CliContext, outcomes: Path, state: Path | None) -> None:
    """Add the judged findings of OUTCOMES (JSON Lines) to the track records.

    One object a line: {"participant": ID or [IDs], "verdict": "confirmed"|"dismissed"
    |"acted"}, optional "subject", "silent" (reviewers heard that did not raise it),
    "round" and "identity". A bad line is skipped and counted; nothing is written when
    no line is good. Exit 0 when the good lines were imported (the skipped ones counted,
    the first reasons shown), 2 when the file (or every line) cannot be read. An id never
    seen before is a new reviewer's history: check the ids `council outcomes` lists.
    """
    try:
        with outcomes.open("rb") as file:
            reading = read_outcomes(_bounded(file))
    except OSError as exc:
        raise UsageProblem(f"{outcomes}: cannot be read ({exc.strerror})") from None
    if reading.bad:
        shown = "; ".join(reading.reasons)
        more = f" (and {reading.bad - KEPT_REASONS} more)" if reading.bad > KEPT_REASONS else ""
        click.echo(f"council: {reading.bad} line(s) skipped: {shown}{more}", err=True)
    if not reading.outcomes:
        raise UsageProblem(f"{outcomes}: no outcome could be read; nothing imported")
    try:
        record_store(cli, state).add(records_from(reading.outcomes))
    except ConfigurationError as exc:
        raise UsageProblem(str(exc)) from None
    click.echo(f"imported {len(reading.outcomes)} outcome(s), skipped {reading.bad}")


def _bounded(file: BinaryIO) -> Iterator[bytes]:
    """Lines of at most MAX_LINE + 1 bytes each (a longer one is cut there, and refused
    as too long), so one huge line never fills memory."""
    while line := file.readline(MAX_LINE + 1):
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            while (rest := file.readline(MAX_LINE + 1)) and not rest.endswith(b"\n"):
                pass
        yield line
