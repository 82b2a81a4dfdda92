"""``council asks``, ``council answer``, ``council resume``: a person answers what a run
waits on, and the run settles.

A run waits on a person when ``[policy] confirm`` asks someone to confirm a finding
before it may fail the gate (:mod:`council.asks.confirm`), or when a model reviewer asked
a question through its ``ask_human`` tool (:mod:`council.asks.paused`); ``council
review`` then exits 4 and prints the questions. Once answered, a confirmation settles
the run; a reviewer's question sends that reviewer again, to go on from its paused
conversation (:func:`settle_parked`). These commands work on Redis (``COUNCIL_REDIS_URL``) or on
the embedded ``--state`` file, like ``council ledger``.

Source: docs/evidence-and-asks.md §2, docs/architecture.md "The run lifecycle".
"""

from __future__ import annotations

import getpass
import json
import sys
import threading
from pathlib import Path
from typing import Any

import click

from council.asks.pending import AnswerRefused, PendingAsk, checked_answer
from council.model.gate_choices import FAIL_ON
from council.model.report import CouncilReport
from council.rendering.escape import for_log, no_controls_json
from council.rendering.markdown import render_markdown
from council.round.gate import EXIT_WAITING, exit_code, gate_summary
from workers.app.clock import now_ms
from workers.app.services import Runtime
from workers.cli.context import (
    CliContext,
    Incomplete,
    UsageProblem,
    session_store,
    state_stores,
    with_state,
)
from workers.coordinator.progress import Progress, progress_view
from workers.coordinator.resume import (
    asked_by_reviewers,
    find_ask,
    finish,
    pending_asks,
    resume_askers,
)
from workers.settling.settle import RunNotFound
from workers.stores.sessions import Waiting
from workers.stores.state_file import StateNotSaved

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
    with state_stores(cli, state, save=False) as rt:
        sessions = rt.sessions
        names = [session] if session else sessions.waiting_sessions()
        for name in names:
            for parked in sessions.waiting(name):
                if run_id and parked.record.run_id != run_id:
                    continue
                if asked_by_reviewers(parked) and rt.runs.record(parked.record.run_id) is None:
                    continue  # its run expired: its questions went with it
                for ask in pending_asks(sessions, parked):
                    entry: dict[str, object] = {
                        "id": ask.id,
                        "run": ask.run,
                        "session": name,
                        "question": ask.ask.question,
                    }
                    if ask.participant is not None:
                        entry["participant"] = ask.participant
                    if ask.ask.component is not None:
                        entry["component"] = ask.ask.component.as_json()
                    listed.append(entry)
    if as_json:  # the text is a reviewer's: controls and bidi marks as JSON escapes
        click.echo(no_controls_json(json.dumps(listed, indent=2, ensure_ascii=False)))
        return
    if not listed:
        click.echo("no question is waiting for an answer")
    for entry in listed:
        takes = "yes|no" if "confirm" in str(entry.get("component", "")) else "VALUE"
        asked = f"{entry['id']} (run {entry['run']}): {entry['question']}"
        click.echo(for_log(asked, one_line=True))
        click.echo(f'  council answer {entry["id"]} {takes} --reason "…"')


@click.command("answer")
@click.argument("ask_id", metavar="ASK")
@click.argument("value")
@click.option("--reason", help="Why: kept with the answer (a rejected finding's dismissal).")
@click.option(
    "--against",
    metavar="REF",
    help="The artifact (art_…) you answered from, as `council asks --json` showed it: an "
    "answer made against another artifact than the ask pins is refused as stale.",
)
@_STATE
@click.pass_obj
def answer_command(
    cli: CliContext,
    ask_id: str,
    value: str,
    reason: str | None,
    against: str | None,
    state: Path | None,
) -> None:
    """Answer the question ASK (found by its id alone) with VALUE.

    A confirmation takes yes or no: "no" dismisses the finding with your --reason (it no
    longer gates, in this run and the later rounds of its session); "yes" lets it gate.
    A choice takes one of its options (inline, or in the artifact its props_ref names).
    A reviewer's question takes any text; the reviewer reads it as the reply to its
    question. The run settles on the next `council review` of its session, or with
    `council resume RUN`.

    \b
    Examples:
      council answer ask_3f2a… no --reason "false positive: the input is validated above"
      council answer ask_3f2a… yes
    """
    with state_stores(cli, state, save=True) as rt:
        sessions = rt.sessions
        found = find_ask(sessions, ask_id)
        if found is None:
            raise UsageProblem(
                f"no run waits on an ask {ask_id!r}: it was answered and its run settled, "
                "it expired with its run, or the id is mistyped (council asks lists them)"
            )
        parked, ask = found
        try:
            answer = checked_answer(ask, value, reason, now_ms(), _stored_props(rt, ask), against)
        except AnswerRefused as refused:  # exit 2 on Redis too, not a crash
            raise UsageProblem(str(refused)) from None
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
@click.option(
    "--min-likelihood",
    type=click.FloatRange(min=0, max=1),
    metavar="P",
    help="A finding ranked below likelihood P does not gate (default: the run's own "
    "--min-likelihood, else none).",
)
@_STATE
@click.pass_obj
def resume_command(
    cli: CliContext,
    run_id: str,
    fail_on: str | None,
    min_likelihood: float | None,
    state: Path | None,
) -> None:
    """Settle the run RUN that waited on a person, once every question has its answer;
    print its report and exit as `council review` would (4 while something is unanswered).
    """
    from council.round.gate import parse_fail_on

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
    from workers.cli.review.running import stop_signals

    unkept: NotKept | None = None
    try:
        with stop_signals() as stopped:
            report = settle_parked(
                cli, state, parked, show=Progress.for_stream(sys.stderr), stopped=stopped
            )
    except RunNotFound as gone:
        raise UsageProblem(f"{gone}; its questions went with it") from None
    except NotKept as exc:
        unkept, report = exc, exc.noted()
    gate = parked.record.gate
    policy = {
        "fail_on": parse_fail_on(fail_on or gate.fail_on),
        "quorum": gate.quorum,
        "min_likelihood": gate.min_likelihood if min_likelihood is None else min_likelihood,
    }
    shown = (report if report is not None else parked.report).gated(**policy)
    click.echo(render_markdown(shown), nl=False)
    click.echo(gate_summary(shown), err=True)
    if unkept is not None:
        raise Incomplete(unkept.reason)
    sys.exit(EXIT_WAITING if report is None else exit_code(shown))


class NotKept(Exception):
    """A waiting run settled, then the embedded state file could not be saved (a full
    disk): ``report`` is still printed, with ``reason`` as a note, and the exit is 3."""

    def __init__(self, report: CouncilReport, reason: str) -> None:
        super().__init__(reason)
        self.report, self.reason = report, reason

    def noted(self) -> CouncilReport:
        """The report with the reason among its notes."""
        return self.report.model_copy(update={"notes": (*self.report.notes, self.reason)})


def settle_parked(
    cli: CliContext,
    state: Path | None,
    parked: Waiting,
    *,
    show: Progress | None = None,
    stopped: threading.Event | None = None,
) -> CouncilReport | None:
    """Settle ``parked`` once every question it waits on is answered; its report (which
    may wait again), or None while a question is unanswered. While the reviewers that
    asked go on, ``show`` displays their progress (closed when they settle), and
    ``stopped`` (Ctrl-C, SIGTERM) cancels the run as a review's interrupt does.

    A policy's confirmations are applied at once (:func:`~workers.coordinator.resume.finish`). A
    reviewer's question sends that reviewer again with the answer
    (:func:`~workers.coordinator.resume.resume_askers`): on Redis's workers, or on an embedded
    council in this process over the ``--state`` file, which keeps the waiting run.
    Raises :class:`~workers.settling.settle.RunNotFound` when the run's keys expired; its
    waiting entry is dropped first (an expired question never holds a session up);
    :class:`NotKept` when the run settled and its save failed.
    """
    settled: list[CouncilReport | None] = []
    try:
        return _settle_parked(cli, state, parked, show, stopped, settled)
    except StateNotSaved as exc:
        if not settled or settled[0] is None:
            raise
        raise NotKept(settled[0], f"This round is not kept: {exc}.") from None


def _settle_parked(
    cli: CliContext,
    state: Path | None,
    parked: Waiting,
    show: Progress | None,
    stopped: threading.Event | None,
    settled: list[CouncilReport | None],
) -> CouncilReport | None:
    """:func:`settle_parked`'s work; the report, once there is one, is also put in
    ``settled`` (so a save failing after it does not lose it)."""
    if not asked_by_reviewers(parked):
        with session_store(cli, state, save=True, session=parked.record.session) as sessions:
            settled.append(finish(sessions, parked))
        return settled[0]
    with state_stores(cli, state, save=False) as rt:
        gone = rt.runs.record(parked.record.run_id) is None
        left = pending_asks(rt.sessions, parked)
    if gone:
        with session_store(cli, state, save=True, session=parked.record.session) as sessions:
            sessions.drop_waiting(parked.record.session, parked.record.run_id)
        raise RunNotFound(parked.record.run_id)
    if left:
        return None
    try:
        if cli.distributed:
            from workers.app.celery_config import create_app

            rt = cli.runtime()
            return _resumed(create_app(rt.settings), rt, parked, show, stopped)
        from workers.coordinator.embedded import embedded_council

        threads = max(1, len(parked.record.participants))
        session = parked.record.session
        with embedded_council(with_state(cli, state), threads, session) as (app, embedded):
            settled.append(_resumed(app, embedded, parked, show, stopped))
        return settled[0]
    except RunNotFound:
        with session_store(cli, state, save=True, session=parked.record.session) as sessions:
            sessions.drop_waiting(parked.record.session, parked.record.run_id)
        raise


def _resumed(
    app: Any,
    rt: Runtime,
    parked: Waiting,
    show: Progress | None,
    stopped: threading.Event | None,
) -> CouncilReport | None:
    """``resume_askers`` (:mod:`workers.coordinator.resume`) with the progress shown and the
    stop heard."""
    try:
        return resume_askers(
            app,
            rt,
            parked,
            on_progress=lambda states: show.update(progress_view(states)) if show else None,
            stop_requested=stopped.is_set if stopped is not None else lambda: False,
        )
    finally:
        if show is not None:
            show.close()


def _stored_props(rt: Runtime, ask: PendingAsk) -> dict[str, object] | None:
    """The props the ask's ``props_ref`` names in its run's artifact store (a JSON
    object), or None: no ref, it no longer resolves, or it holds no object."""
    component = ask.ask.component
    if component is None or component.props_ref is None:
        return None
    artifact = rt.artifacts.get(ask.run, component.props_ref)
    if artifact is None or artifact.kind != "json":
        return None
    value = artifact.value()
    return dict(value) if isinstance(value, dict) else None


def _who() -> str | None:
    """Who answers from this terminal (the login name), when it can be told."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return None
