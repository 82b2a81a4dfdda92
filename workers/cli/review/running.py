"""``council review`` once its arguments are parsed: one round of the roster's council on
a change, and its gate (the command and its options: :mod:`workers.cli.review`).

It plans the round, settles or stops at a run waiting on a person, refuses what cannot
run here (:mod:`workers.cli.check`), runs it on workers or embedded, hearing Ctrl-C and
SIGTERM (:func:`stop_signals`), and exits with the gate's code (see its ``--help``).
``--timeout`` is in seconds, as click takes it; the waiter counts milliseconds.
Source: docs/architecture.md "Reports, the CLI and the gate".
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any

import click
import redis

from council.change.diff import Change
from council.errors import ConfigurationError, IdentityRefused, IncompleteError
from council.model.report import CouncilReport
from council.rendering.escape import for_log
from council.rendering.github_review import Post
from council.round.gate import (
    EXIT_WAITING,
    INCOMPLETE_STATUSES,
    exit_code,
    gate_summary,
    parse_fail_on,
)
from workers.app.durability import Durability, confirm, refusal
from workers.app.logging import redact_text
from workers.app.services import Runtime
from workers.app.settings import Settings
from workers.cli.answers import NotKept, settle_parked
from workers.cli.check import (
    budgeted,
    cannot_run,
    checkout_top,
    gated,
    refuse_tracked_state,
    refused,
    runnable,
    with_sandbox_note,
)
from workers.cli.context import CliContext, Incomplete, UsageProblem, session_store, with_state
from workers.cli.outputs import emit, head_sha, nothing_to_review, plan_outputs
from workers.coordinator.dispatch import judge_sender, open_and_dispatch
from workers.coordinator.embedded import embedded_council
from workers.coordinator.preparation import NothingToReview, Round, prepare
from workers.coordinator.progress import Progress, progress_view
from workers.coordinator.resume import asked_by_reviewers, finish
from workers.coordinator.round_plan import RoundPlan, plan_round, store_session_inputs
from workers.coordinator.waiting import Waiter
from workers.settling.settle import RunNotFound
from workers.stores.sessions import Waiting
from workers.stores.state_file import StateNotSaved


def review_round(
    cli: CliContext,
    repo: Path,
    base: str,
    base_exact: bool,
    head: str,
    roster: Path | None,
    json_out: Path | None,
    markdown_out: Path | None,
    formats: tuple[str, ...],
    output: Path | None,
    since_last: bool,
    baseline_path: Path | None,
    fail_on: str,
    quorum: int | None,
    filter_mode: str,
    min_agreement: int | None,
    post: Post,
    min_likelihood: float | None,
    max_cost_usd: float | None,
    without_keys: bool,
    timeout: float | None,
    session: str | None,
    state: Path | None,
    progress: bool,
) -> None:
    """``council review`` once its arguments are parsed
    (:func:`~workers.cli.review.review_command`)."""
    checkout = checkout_top(repo)
    outputs = plan_outputs(formats, output, json_out, markdown_out, checkout=checkout)
    outputs = replace(outputs, post=post)
    settings = with_state(cli, state)
    mode = "distributed" if cli.distributed else "embedded"
    if mode == "embedded":
        refuse_tracked_state(repo, head, settings)
    plan: RoundPlan | None = None
    try:
        plan = plan_round(
            cli,
            settings,
            repo,
            base,
            head,
            session=session,
            since_last=since_last,
            baseline=baseline_path,
            exact_base=base_exact,
        )
        _settle_waiting(cli, state, plan.session, outputs, fail_on, progress, head_sha(repo, head))
        options = replace(plan.options(repo, plan.base, head, roster), without_keys=without_keys)
        round_ = prepare(settings, options, mode=mode)
    except NothingToReview as done:
        shas = {"head": head_sha(repo, head), "base": head_sha(repo, plan.base if plan else base)}
        sys.exit(nothing_to_review(str(done), plan, outputs, fail_on=fail_on, **shas))
    except ConfigurationError as exc:
        raise UsageProblem(str(exc)) from None
    except IncompleteError as exc:  # the secret scan ran out of time: nothing was sent
        raise Incomplete(str(exc)) from None
    problems, _ = runnable(round_, mode, settings)
    if problems:  # embedded mode runs every reviewer here: refuse before anything is sent
        raise UsageProblem(cannot_run(problems, round_.notes))
    round_ = gated(
        with_sandbox_note(round_, settings, mode),
        quorum,
        filter_mode,
        fail_on,
        min_agreement,
        min_likelihood,
    )
    round_ = budgeted(round_, max_cost_usd)
    for note in round_.notes:
        click.echo(for_log(f"council: note: {note}", one_line=True), err=True)
    show = Progress.for_stream(sys.stderr) if progress else None
    try:
        report, change, unsaved = _run_council(cli, settings, round_, plan, show, timeout)
    except IdentityRefused as exc:
        raise refused(exc, round_.record.session, state if mode == "embedded" else None) from None
    finally:
        if show is not None:
            show.close()
    if unsaved is not None:
        report = report.model_copy(update={"notes": (*report.notes, unsaved)})
    emit(report, outputs, change=change)
    click.echo(gate_summary(report), err=True)
    if unsaved is not None:
        raise Incomplete(unsaved)
    sys.exit(exit_code(report))


def _run_council(
    cli: CliContext,
    settings: Settings,
    round_: Round,
    plan: RoundPlan,
    show: Progress | None,
    timeout: float | None,
) -> tuple[CouncilReport, Change, str | None]:
    """Run the round on Redis's workers or an embedded council: its report, change, and
    why the embedded state file could not be saved after it settled (None when it was).

    A settled round whose save failed (a full disk) still has its report written: the
    caller adds the reason as a note and exits 3. Raises IdentityRefused (the caller
    names the way out), UsageProblem for an unreadable embedded state file, Incomplete
    (exit 3) for Redis trouble, a timeout, or a second interrupt.
    """
    mode = "distributed" if cli.distributed else "embedded"
    settled: list[tuple[CouncilReport, Change]] = []
    try:
        with stop_signals() as stopped:
            if mode == "distributed":
                report, change = _run(cli.runtime(), round_, plan, stopped, show, timeout, app=None)
                return report, change, None
            session = round_.record.session
            with embedded_council(settings, len(round_.working), session) as (app, rt):
                settled.append(_run(rt, round_, plan, stopped, show, timeout, app=app))
            return (*settled[0], None)
    except StateNotSaved as exc:
        if not settled:
            raise Incomplete(str(exc)) from None
        return (*settled[0], f"This round is not kept: {exc}.")
    except IdentityRefused:
        raise
    except ConfigurationError as exc:  # the embedded state file cannot be read
        raise UsageProblem(str(exc)) from None
    except (IncompleteError, redis.RedisError) as exc:
        raise Incomplete(redact_text(str(exc))) from None
    except KeyboardInterrupt:
        raise Incomplete(_abandoned(round_.record.run_id, mode)) from None


def _settle_waiting(
    cli: CliContext,
    state: Path | None,
    session: str,
    outputs: Any,
    fail_on: str,
    progress: bool = True,
    head: str | None = None,
) -> None:
    """Before a new round: a run of the session waiting on a person settles now when
    every question is answered (its report is the output), or the review stops at it
    again (exit 4: an unanswered ask never passes the gate). Returns when none waits.

    A waiting run of ANOTHER head than ``head`` (the pull request moved on) never gives
    this review its exit: its answered confirmations are applied (a rejected finding's
    dismissal is kept in the session), it is set aside (:func:`_supersede`), and the
    review goes on to the new head. Else a push after an answer would exit with the old
    head's gate, and the new commits would never be reviewed."""
    with session_store(cli, state, save=False) as sessions:
        waiting = sessions.waiting(session)
    if not waiting:
        return  # the usual case: nothing written, not even an empty state file
    parked = waiting[0]
    if head is not None and parked.record.head and parked.record.head != head:
        _supersede(cli, state, waiting, head)
        return
    show = Progress.for_stream(sys.stderr) if progress else None
    unkept: NotKept | None = None
    try:
        with stop_signals() as stopped:
            report = settle_parked(cli, state, parked, show=show, stopped=stopped)
    except RunNotFound as gone:
        click.echo(f"council: {gone}; its questions went with it, reviewing anew", err=True)
        return
    except NotKept as exc:
        unkept, report = exc, exc.noted()
    record = parked.record
    policy = {"fail_on": parse_fail_on(fail_on), "quorum": record.gate.quorum}
    if report is None:
        with session_store(cli, state, save=False) as sessions:
            given = sessions.answers(record.session)
        asks = tuple(
            a
            if a.answer is not None or a.id not in given
            else a.model_copy(update={"answer": given[a.id]})
            for a in parked.report.asks
        )
        shown = parked.report.model_copy(update={"asks": asks}).gated(**policy)
        left = len([a for a in asks if a.answer is None])
        click.echo(
            f"council: run {record.run_id} of this session waits on a person ({left} "
            "question(s) to answer); answer them (council asks lists them), then run this "
            "again",
            err=True,
        )
        emit(shown, outputs, change=None)
        click.echo(gate_summary(shown), err=True)
        sys.exit(EXIT_WAITING)
    click.echo(
        f"council: run {record.run_id} waited on a person and every question is answered: "
        "it settles now with the answers; run this again to review later commits",
        err=True,
    )
    report = report.gated(**policy)
    emit(report, outputs, change=None)
    click.echo(gate_summary(report), err=True)
    if unkept is not None:
        raise Incomplete(unkept.reason)
    sys.exit(exit_code(report))


def _supersede(cli: CliContext, state: Path | None, waiting: list[Waiting], head: str) -> None:
    """Set aside the session's runs waiting at another head than ``head``: a run whose
    questions are all confirmations, all answered, settles with them (their dismissals
    stay in the session); any other is dropped from the waiting runs (its questions were
    about code the pull request has moved past; the new round asks again what still
    needs a person). Said on stderr, one line per run."""
    session = waiting[0].record.session if waiting else None
    with session_store(cli, state, save=True, session=session) as sessions:
        for parked in waiting:
            record = parked.record
            if record.head == head:
                continue
            settled = None if asked_by_reviewers(parked) else finish(sessions, parked)
            if settled is None:
                sessions.drop_waiting(record.session, record.run_id)
                what = "set aside with its questions"
            else:
                what = "settled with its answers"
            click.echo(
                f"council: run {record.run_id} waited on a person at {record.head[:12]}; the "
                f"change is now at {head[:12]}: {what}, and the new head is reviewed",
                err=True,
            )


def _abandoned(run_id: str, mode: str) -> str:
    """What a run abandoned at the second interrupt leaves behind, in ``mode``.

    Distributed: the run is in Redis and its reviewers on workers, which may still be
    running. Embedded: the run, its reviewers and its state lived in this process and
    end with it; nothing of the run is kept to show.
    """
    head = f"run {run_id} was abandoned at the second interrupt, before it settled"
    if mode == "distributed":
        return (
            f"{head}; reviewers on workers may still be running until they see the "
            f"cancellation (see `council show {run_id}`)"
        )
    return (
        f"{head}; in embedded mode its reviewers ran in this process and were told to "
        "stop, and nothing of the run was filed in the session: run the review again"
    )


def _run(
    rt: Runtime,
    round_: Round,
    plan: RoundPlan,
    stopped: threading.Event,
    show: Progress | None,
    timeout: float | None,
    *,
    app: Any,
) -> tuple[CouncilReport, Change]:
    """Open, dispatch and wait for the round; its report and the pull request's change.
    With ``COUNCIL_DURABILITY`` (distributed mode), a Redis that cannot give it is refused
    before anything is written, and a settled run's filing must be confirmed durable
    (:mod:`workers.app.durability`), or exit 3."""
    setting = rt.settings.durability
    wanted = Durability.parse(setting) if rt.mode == "distributed" else None
    if wanted is not None:
        why = refusal(rt.client, wanted, setting)
        if why is not None:
            raise Incomplete(why)
    if app is None:
        from workers.app.celery_config import create_app

        app = create_app(rt.settings)
    change = store_session_inputs(rt, round_, plan)
    open_and_dispatch(app, rt, round_)
    n = len(round_.participants)
    click.echo(
        f"council: run {round_.record.run_id} ({n} participant{'s' if n != 1 else ''}, "
        f"{rt.mode} mode, session {round_.record.session})",
        err=True,
    )
    if setting and wanted is None:
        click.echo(
            f"council: COUNCIL_DURABILITY={setting} has no effect in embedded mode (there is "
            "no Redis to confirm it); the session is kept in the embedded state file",
            err=True,
        )
    waiter = Waiter(
        rt=rt,
        record=round_.record,
        on_progress=lambda states: show.update(progress_view(states)) if show else None,
        stop_requested=stopped.is_set,
        timeout_ms=int(timeout * 1000) if timeout is not None else None,
        dispatch_judge=judge_sender(app, round_.judge.backend) if round_.judge else None,
    )
    report = waiter.wait()
    if wanted is not None and report.status not in INCOMPLETE_STATUSES:
        run_id, wait_ms = round_.record.run_id, rt.settings.durability_timeout_ms
        why = confirm(rt.client, rt.keys, run_id, wanted, wait_ms)
        if why is not None:
            raise Incomplete(
                f"run {run_id} settled {report.status}, but its filing is not confirmed "
                f"durable as COUNCIL_DURABILITY={setting} asks ({wanted.describe()}): {why}"
            )
    return report, change


@contextlib.contextmanager
def stop_signals() -> Iterator[threading.Event]:
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
