"""``council asks``, ``council answer``, ``council resume``: a person answers what a run
waits on, and the run settles.

A run waits on a person when ``[policy] confirm`` asks someone to confirm a finding
before it may fail the gate (:mod:`council.asks.confirm`); ``council review`` then exits
4 and prints the questions. These commands work on Redis (``COUNCIL_REDIS_URL``) or on
the embedded ``--state`` file, like ``council ledger``.

Source: docs/evidence-and-asks.md §2, docs/architecture.md "The run lifecycle".
"""

from __future__ import annotations

import getpass
import json
import sys
from pathlib import Path

import click

from council.asks.pending import checked_answer
from council.gate import EXIT_WAITING, FAIL_ON, exit_code, gate_summary
from council.report.markdown import render_markdown
from workers.cli.context import CliContext, UsageProblem, session_store
from workers.clock import now_ms
from workers.resume import find_ask, finish, pending_asks

_STATE = click.option(
    "--state",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Without Redis: the embedded state file holding the sessions (default: the cache "
    "directory).",
)


@click.command("asks")
@click.option("--run", "run_id", help="Only the asks of this run.")
@click.option("--session", help="Only the asks of this session.")
@click.option("--json", "as_json", is_flag=True, help="A JSON list: id, run, question, component.")
@_STATE
@click.pass_obj
def asks_command(
    cli: CliContext, run_id: str | None, session: str | None, as_json: bool, state: Path | None
) -> None:
    """List the questions runs wait on that nobody has answered yet.

    \b
    Examples:
      council asks
      council asks --session github:o/n#pr-7 --json
    """
    listed: list[dict[str, object]] = []
    with session_store(cli, state, save=False) as sessions:
        names = [session] if session else sessions.waiting_sessions()
        for name in names:
            for parked in sessions.waiting(name):
                if run_id and parked.record.run_id != run_id:
                    continue
                for ask in pending_asks(sessions, parked):
                    entry: dict[str, object] = {
                        "id": ask.id,
                        "run": ask.run,
                        "session": name,
                        "question": ask.ask.question,
                    }
                    if ask.ask.component is not None:
                        entry["component"] = ask.ask.component.as_json()
                    listed.append(entry)
    if as_json:
        click.echo(json.dumps(listed, indent=2, ensure_ascii=False))
        return
    if not listed:
        click.echo("no question is waiting for an answer")
    for entry in listed:
        takes = "yes|no" if "confirm" in str(entry.get("component", "")) else "VALUE"
        click.echo(f"{entry['id']} (run {entry['run']}): {entry['question']}")
        click.echo(f'  council answer {entry["id"]} {takes} --reason "…"')


@click.command("answer")
@click.argument("ask_id", metavar="ASK")
@click.argument("value")
@click.option("--reason", help="Why: kept with the answer (a rejected finding's dismissal).")
@_STATE
@click.pass_obj
def answer_command(
    cli: CliContext, ask_id: str, value: str, reason: str | None, state: Path | None
) -> None:
    """Answer the question ASK (found by its id alone) with VALUE.

    A confirmation takes yes or no: "no" dismisses the finding with your --reason (it no
    longer gates, in this run and the later rounds of its session); "yes" lets it gate.
    A choice takes one of its options. The run settles on the next `council review` of
    its session, or with `council resume RUN`.

    \b
    Examples:
      council answer ask_3f2a… no --reason "false positive: the input is validated above"
      council answer ask_3f2a… yes
    """
    with session_store(cli, state, save=True) as sessions:
        found = find_ask(sessions, ask_id)
        if found is None:
            raise UsageProblem(
                f"no run waits on an ask {ask_id!r}: it was answered and its run settled, "
                "it expired with its run, or the id is mistyped (council asks lists them)"
            )
        parked, ask = found
        answer = checked_answer(ask, value, reason, now_ms())
        answer = answer.model_copy(update={"by": _who()})
        sessions.answer(parked.record.session, ask.id, answer)
        left = len(pending_asks(sessions, parked))
    more = f"{left} more to answer" if left else "every question of the run is answered"
    click.echo(
        f"recorded {answer.value!r} for {ask.id} (run {parked.record.run_id}); {more}. "
        + (
            ""
            if left
            else f"Settle it: council resume {parked.record.run_id}, or run the "
            "same council review again."
        ),
        err=True,
    )


@click.command("resume")
@click.argument("run_id", metavar="RUN")
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_ON),
    help="The gate's threshold (default: the one the run was reviewed with, --fail-on of "
    "its council review).",
)
@_STATE
@click.pass_obj
def resume_command(cli: CliContext, run_id: str, fail_on: str | None, state: Path | None) -> None:
    """Settle the run RUN that waited on a person, once every question has its answer;
    print its report and exit as `council review` would (4 while something is unanswered).
    """
    from council.gate import parse_fail_on

    with session_store(cli, state, save=True) as sessions:
        parked = next(
            (
                w
                for name in sessions.waiting_sessions()
                for w in sessions.waiting(name)
                if w.record.run_id == run_id
            ),
            None,
        )
        if parked is None:
            raise UsageProblem(
                f"run {run_id} is not waiting on a person (settled already, expired, or "
                "another Redis or --state); council asks lists the runs that wait"
            )
        report = finish(sessions, parked)
    threshold = parse_fail_on(fail_on or parked.record.fail_on)
    shown = report if report is not None else parked.report
    click.echo(render_markdown(shown, fail_on=threshold, quorum=parked.record.quorum), nl=False)
    if report is None:
        click.echo(gate_summary(parked.report, threshold, parked.record.quorum), err=True)
        sys.exit(EXIT_WAITING)
    click.echo(gate_summary(report, threshold, parked.record.quorum), err=True)
    sys.exit(exit_code(report, threshold, quorum=parked.record.quorum))


def _who() -> str | None:
    """Who answers from this terminal (the login name), when it can be told."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return None
