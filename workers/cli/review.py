"""``council review`` and ``council check``."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import click
import redis

from council.errors import ConfigurationError, IdentityRefused, IncompleteError
from council.gate import exit_code, gate_summary, parse_fail_on
from council.ledger import Ledger
from council.report import render_json, render_markdown
from council.report.model import CouncilReport
from workers.cli.context import CliContext, Incomplete, UsageProblem
from workers.coordinator import (
    NothingToReview,
    ReviewOptions,
    Round,
    Waiter,
    open_and_dispatch,
    prepare,
)
from workers.embedded import embedded_council
from workers.logging import redact_text
from workers.progress import ParticipantProgress, Progress
from workers.review import now_ms
from workers.runtime import Runtime
from workers.stores.runs import Progress as StoredProgress

FAIL_ON = ["critical", "medium", "minor", "never"]

_repo_option = click.option(
    "--repo",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("."),
    show_default=True,
    help="The git repository holding the change.",
)
_roster_option = click.option(
    "--roster",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Roster TOML to use instead of council.toml in the BASE ref's tree.",
)


@click.command("review")
@_repo_option
@click.option(
    "--base", required=True, help="The ref the change starts from (e.g. origin/main, HEAD~3)."
)
@click.option("--head", default="HEAD", show_default=True, help="The ref the change ends at.")
@_roster_option
@click.option(
    "--json",
    "json_out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write the whole report as JSON to this file.",
)
@click.option(
    "--markdown",
    "markdown_out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the Markdown report to this file instead of stdout.",
)
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_ON),
    default="critical",
    show_default=True,
    help="Exit 1 when a finding of this round is at or above this severity.",
)
@click.option(
    "--quorum",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Exit 3 when fewer participants than this answered.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Bound the whole council; on it the run settles as timeout (exit 3).",
)
@click.option("--session", help="Session key (default: the repository and the head branch).")
@click.option(
    "--state",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Embedded mode: the file sessions are kept in (default: the cache directory).",
)
@click.option(
    "--progress/--no-progress",
    default=True,
    show_default=True,
    help="Show progress per participant on stderr.",
)
@click.pass_obj
def review_command(
    cli: CliContext,
    repo: Path,
    base: str,
    head: str,
    roster: Path | None,
    json_out: Path | None,
    markdown_out: Path | None,
    fail_on: str,
    quorum: int,
    timeout: float | None,
    session: str | None,
    state: Path | None,
    progress: bool,
) -> None:
    """Review the change BASE..HEAD of a repository with the roster's council.

    Prints a Markdown report on stdout and exits 0 (passed), 1 (a finding at or above
    --fail-on), 2 (usage or configuration error; nothing sent) or 3 (the council could
    not complete: Redis unreachable, --timeout, or fewer than --quorum answered).

    \b
    Example:
      council review --repo . --base HEAD~1 --roster examples/council.toml --json out.json
    """
    settings = cli.settings
    if state is not None:
        settings = settings.model_copy(update={"state_path": state})
    mode = "distributed" if cli.distributed else "embedded"
    options = ReviewOptions(repo=repo, base=base, head=head, roster=roster, session=session)
    try:
        round_ = prepare(settings, options, mode=mode)
    except NothingToReview as done:
        click.echo(f"council: {done}", err=True)
        click.echo(f"{done}.")
        return
    except ConfigurationError as exc:
        raise UsageProblem(str(exc)) from None
    show = Progress.for_stream(sys.stderr) if progress else None
    try:
        with _stop_signals() as stopped:
            if mode == "distributed":
                rt = cli.runtime()
                report = _run(rt, round_, stopped, show, timeout, app=None)
            else:
                try:
                    with embedded_council(settings, len(round_.participants)) as (app, rt):
                        report = _run(rt, round_, stopped, show, timeout, app=app)
                except ValueError as exc:
                    raise UsageProblem(str(exc)) from None
    except IdentityRefused as exc:
        raise UsageProblem(str(exc)) from None
    except (IncompleteError, redis.RedisError) as exc:
        raise Incomplete(redact_text(str(exc))) from None
    finally:
        if show is not None:
            show.close()
    _emit(report, json_out, markdown_out, fail_on)
    threshold = parse_fail_on(fail_on)
    click.echo(gate_summary(report, threshold, quorum), err=True)
    sys.exit(exit_code(report, threshold, quorum=quorum))


def _run(
    rt: Runtime,
    round_: Round,
    stopped: threading.Event,
    show: Progress | None,
    timeout: float | None,
    *,
    app: Any,
) -> CouncilReport:
    if app is None:
        from workers.celery_app import create_app

        app = create_app(rt.settings)
    open_and_dispatch(app, rt, round_)
    click.echo(
        f"council: run {round_.record.run_id} ({len(round_.participants)} participants, "
        f"{rt.mode} mode)",
        err=True,
    )
    waiter = Waiter(
        rt=rt,
        record=round_.record,
        on_progress=lambda states: show.update(_progress_view(states)) if show else None,
        stop_requested=stopped.is_set,
        timeout_ms=int(timeout * 1000) if timeout is not None else None,
    )
    return waiter.wait()


def _progress_view(states: dict[str, StoredProgress]) -> dict[str, ParticipantProgress]:
    now = now_ms()
    view: dict[str, ParticipantProgress] = {}
    for pid, s in states.items():
        start = s.started_ms
        end = s.updated_ms if s.state not in ("pending", "running") else now
        elapsed = (end or now) - start if start is not None else 0
        view[pid] = ParticipantProgress(
            participant=pid, state=s.state, findings=s.findings, elapsed_ms=max(0, elapsed)
        )
    return view


def _emit(
    report: CouncilReport, json_out: Path | None, markdown_out: Path | None, fail_on: str
) -> None:
    markdown = render_markdown(report, fail_on=fail_on)
    if markdown_out is not None:
        markdown_out.write_text(markdown, encoding="utf-8")
    else:
        click.echo(markdown)
    if json_out is not None:
        json_out.write_text(render_json(report), encoding="utf-8")


@contextlib.contextmanager
def _stop_signals() -> Iterator[threading.Event]:
    """Ctrl-C and SIGTERM (a cancelled CI job) set an event instead of killing us."""
    stopped = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        if stopped.is_set():
            raise KeyboardInterrupt
        click.echo(
            "council: stopping: cancelling the run and filing what was recorded "
            "(press Ctrl-C again to abandon)",
            err=True,
        )
        stopped.set()

    if threading.current_thread() is not threading.main_thread():
        yield stopped
        return
    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stopped
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


@click.command("check")
@_repo_option
@click.option("--base", default="HEAD~1", show_default=True, help="The ref the change starts from.")
@click.option("--head", default="HEAD", show_default=True, help="The ref the change ends at.")
@_roster_option
@click.option("--session", help="Session whose ledger the identity claims are checked against.")
@click.pass_obj
def check_command(
    cli: CliContext, repo: Path, base: str, head: str, roster: Path | None, session: str | None
) -> None:
    """Validate the roster and the identity claims; print each participant's prompt.

    Sends nothing and writes nothing. Exit 2 on a roster error or a refused claim.

    \b
    Example:
      council check --roster examples/council.toml --base HEAD~1
    """
    mode = "distributed" if cli.distributed else "embedded"
    try:
        round_ = prepare(cli.settings, ReviewOptions(repo, base, head, roster, session), mode=mode)
    except NothingToReview as done:
        click.echo(f"roster OK; {done}.")
        return
    except ConfigurationError as exc:
        raise UsageProblem(str(exc)) from None
    ledger = _ledger_for(cli, round_.record.session)
    try:
        ledger.claim_round(round_.roster.claims(), set())
    except IdentityRefused as exc:
        raise UsageProblem(str(exc)) from None
    for p in round_.participants:
        click.echo(f"===== {p.id} ({p.role}, backend {p.backend}) =====")
        click.echo(round_.prompts[p.id])
    for note in round_.notes:
        click.echo(f"note: {note}")
    click.echo(
        f"roster OK: {len(round_.participants)} participant(s); identity claims hold in "
        f"session {round_.record.session!r} (against what is attributed, a review may still "
        f"be refused if findings are filed meanwhile)."
    )


def _ledger_for(cli: CliContext, session: str) -> Ledger:
    """The session's ledger from Redis, or from the embedded state file."""
    if cli.distributed:
        return cli.runtime().sessions.ledger(session)
    import fakeredis

    from workers.embedded import default_state_path, load_state
    from workers.stores.keys import Keys
    from workers.stores.sessions import SessionStore

    client: Any = fakeredis.FakeRedis()
    keys = Keys(cli.settings.prefix)
    try:
        load_state(client, keys, cli.settings.state_path or default_state_path())
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    store = SessionStore(client, keys, session_retention_s=60, run_retention_s=60)
    return store.ledger(session)
