"""``council runs``, ``show``, ``ledger`` and ``release``: read back what Redis holds."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import click

from council.rendering import render_json, render_markdown
from workers.cli.context import CliContext, UsageProblem, session_store


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%SZ")


@click.command("runs")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
@click.pass_obj
def runs_command(cli: CliContext, limit: int) -> None:
    """List the most recent runs Redis still holds, newest first."""
    rt = cli.runtime()
    records = rt.runs.recent(limit)
    if not records:
        click.echo("no runs held (runs expire COUNCIL_RUN_RETENTION_S after settling)")
        return
    statuses = rt.runs.status_map([r.run_id for r in records])
    for r in records:
        click.echo(
            f"{r.run_id}  {_when(r.created_ms)}  {statuses[r.run_id]:<9}  "
            f"{len(r.participants)} participant(s)  {r.head[:12]}  session {r.session}"
        )


@click.command("show")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report instead of Markdown.")
@click.pass_obj
def show_command(cli: CliContext, run_id: str, as_json: bool) -> None:
    """Show one run: its report once settled, its progress while open."""
    rt = cli.runtime()
    record = rt.runs.record(run_id)
    if record is None:
        raise UsageProblem(
            f"run {run_id} is not held in Redis (unknown or expired); see `council runs`"
        )
    report = rt.runs.report(run_id)
    if report is not None:
        click.echo(render_json(report) if as_json else render_markdown(report))
        return
    progress = rt.runs.progress(run_id)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "run_id": run_id,
                    "status": "open",
                    "participants": {p: s.model_dump() for p, s in progress.items()},
                }
            )
        )
        return
    click.echo(f"run {run_id} is open (session {record.session}, since {_when(record.created_ms)})")
    for pid, state in progress.items():
        click.echo(f"  {pid:<20} {state.state:<9} attempt {state.attempt}")


@click.command("ledger")
@click.argument("session", required=False)
@click.option(
    "--repo",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("."),
    show_default=True,
    help="Without SESSION: the repository whose default session key is used.",
)
@click.option("--head", default="HEAD", show_default=True, help="Without SESSION: its branch.")
@click.option(
    "--state",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Without Redis: the embedded state file holding the session (default: the "
    "cache directory).",
)
@click.pass_obj
def ledger_command(
    cli: CliContext, session: str | None, repo: Path, head: str, state: Path | None
) -> None:
    """List the identities a session's ledger holds, in the order first claimed.

    SESSION is the key a review prints on stderr (``council: run … session KEY``);
    without it, the session a review of --repo's --head would use by default (the
    repository's path and its branch, as council dismiss reads it). With
    COUNCIL_REDIS_URL the session is Redis's; without it, the embedded state file's.
    """
    from workers.cli.suppression import session_key

    session = session_key(session, repo, head)
    with session_store(cli, state, save=False) as store:
        held = store.ledger(session).held()
    if not held:
        click.echo(f"session {session!r} holds no identities")
    for identity in held:
        click.echo(f"{identity.id}: {identity.describe()}")


@click.command("release")
@click.argument("session")
@click.argument("participant")
@click.option(
    "--state",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Without Redis: the embedded state file holding the session (default: the "
    "cache directory).",
)
@click.pass_obj
def release_command(cli: CliContext, session: str, participant: str, state: Path | None) -> None:
    """Free a participant id in a session, so it may take a new meaning.

    Its earlier findings then no longer say unambiguously who raised them. With
    COUNCIL_REDIS_URL the session is Redis's; without it, the embedded state file's.
    """
    with session_store(cli, state, save=True, session=session) as store:
        released = store.release(session, participant)
    if released:
        click.echo(f"released {participant!r} in session {session!r}")
    else:
        raise UsageProblem(
            f"{participant!r} is not held in session {session!r}; see `council ledger`"
        )
