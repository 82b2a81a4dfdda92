"""``council review`` and ``council check``."""

from __future__ import annotations

import contextlib
import os
import shlex
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
from council.change.diff_filter import DEFAULT_FILTER, FILTER_MODES
from council.errors import ConfigurationError, IdentityRefused, IncompleteError
from council.model.participant import Participant
from council.model.report import CouncilReport
from council.rendering.escape import for_log
from council.roster.backend_options import BASE_DIR, RECORDED
from council.round.gate import (
    DEFAULT_FAIL_ON,
    EXIT_WAITING,
    FAIL_ON,
    exit_code,
    gate_summary,
    min_agreement_problem,
    parse_fail_on,
)
from council.session.ledger import Ledger, attributed_ids
from reviewers.programs.process import program_trouble
from reviewers.programs.program_search import find_program, interpreter_bin
from workers.app.logging import redact_text
from workers.app.services import Runtime
from workers.app.settings import Settings
from workers.cli.answers import settle_parked
from workers.cli.context import CliContext, Incomplete, UsageProblem, session_store, with_state
from workers.cli.outputs import (
    FORMAT_OPTION,
    emit,
    head_sha,
    json_option,
    nothing_to_review,
    output_option,
    plan_outputs,
    refuse_link,
)
from workers.coordinator.dispatch import judge_sender, open_and_dispatch
from workers.coordinator.embedded import default_state_path, embedded_council, state_sessions
from workers.coordinator.preparation import NothingToReview, ReviewOptions, Round, prepare
from workers.coordinator.progress import Progress, progress_view
from workers.coordinator.resume import asked_by_reviewers, finish
from workers.coordinator.round_plan import RoundPlan, plan_round, store_session_inputs
from workers.coordinator.waiting import Waiter
from workers.execution.backend_request import sandbox_outlook
from workers.git.repository import Repository
from workers.settling.settle import RunNotFound
from workers.stores.sessions import Waiting

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
_state_option = click.option(
    "--state",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Embedded mode: the file sessions are kept in (default: the cache directory).",
)


@click.command("review")
@_repo_option
@click.option(
    "--base",
    required=True,
    help="The branch the change goes into (e.g. origin/main, HEAD~3): the change is read "
    "from the merge base of BASE and HEAD, as a pull request shows it.",
)
@click.option(
    "--base-exact",
    is_flag=True,
    help="Diff against BASE itself instead of the merge base (two dots, not three).",
)
@click.option("--head", default="HEAD", show_default=True, help="The ref the change ends at.")
@_roster_option
@json_option("Also write the whole report as JSON to this file.")
@click.option(
    "--markdown",
    "markdown_out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the Markdown report to this file instead of stdout.",
)
@FORMAT_OPTION
@output_option(
    "Write each --format into this directory (council.md, council.json, "
    "council.sarif, github-review.json, github-checks.json, gl-code-quality-report.json, "
    "gitlab-discussions.json) and council-run.json (run id, head, SHA-256 of each). It "
    "must be new, empty or an earlier run's outputs (replaced)."
)
@click.option(
    "--since-last",
    is_flag=True,
    help="Review only the commits after the session's last reviewed head (the whole "
    "change when there is none, or a force push rewrote it); earlier findings still "
    "open are carried into the report and gate.",
)
@click.option(
    "--baseline",
    "baseline_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Baseline JSON to use instead of .council-baseline.json in the BASE ref's tree.",
)
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_ON),
    default=DEFAULT_FAIL_ON,
    show_default=True,
    help="Exit 1 when an open finding (this round's, or one carried by --since-last) is at "
    "or above this severity.",
)
@click.option(
    "--quorum",
    type=click.IntRange(min=0),
    help="Exit 3 when fewer reviewers than this were heard in full (answered, and their "
    "whole answer was read); 0 switches the count off. Default: the roster's [council] "
    "quorum, else every reviewer not marked optional = true must be heard in full (a "
    "reviewer that failed, stopped or answered nothing readable fails closed: exit 3).",
)
@click.option(
    "--filter",
    "filter_mode",
    type=click.Choice(FILTER_MODES),
    default=DEFAULT_FILTER,
    show_default=True,
    help="Which findings gate and post inline: added (a line finding touching an added "
    "line, a finding on a changed file, a change-level one), diff_context (any line the "
    "diff shows), file (anywhere in a changed file), nofilter (all). The rest is listed, "
    "marked, never gating; a finding on a path that exists nowhere never gates.",
)
@click.option(
    "--min-agreement",
    type=click.IntRange(min=1),
    metavar="K",
    help="A finding gates only when at least K reviewers raised it (the others are listed "
    "and posted, marked, never gating). Default: the roster's [council] min_agreement, "
    "else 1.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Bound the whole council; on it the run settles as timeout (exit 3).",
)
@click.option(
    "--session",
    help="Session key (default: in GitHub Actions the repository and pull request number, "
    "in GitLab CI the project and merge request IID, else the repository and the branch).",
)
@_state_option
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
    timeout: float | None,
    session: str | None,
    state: Path | None,
    progress: bool,
) -> None:
    """Review the change of HEAD since it left BASE (their merge base) with the roster's
    council.

    Prints a Markdown report on stdout (or writes each --format into --output DIR) and
    exits 0 (passed), 1 (a finding at or above --fail-on), 2 (usage or configuration
    error; nothing sent), 3 (the council could not complete: Redis unreachable,
    --timeout, a reviewer not heard in full — unless optional or within --quorum) or 4
    (waiting on a person: [policy] confirm; answer with council answer, run again).
    Findings dismissed in the session or in the BASE ref's .council-baseline.json are
    listed but never gate; findings outside --filter are listed but never gate.

    \b
    Examples:
      council review --repo . --base HEAD~1 --roster examples/council.toml --json out.json
      council review --base origin/main --format markdown --format sarif \\
        --format github-review --output out   # then: council publish github --from out
    """
    checkout = _checkout(repo)
    outputs = plan_outputs(formats, output, json_out, markdown_out, checkout=checkout)
    settings = with_state(cli, state)
    mode = "distributed" if cli.distributed else "embedded"
    if mode == "embedded":
        _refuse_tracked_state(repo, head, settings)
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
        round_ = prepare(settings, plan.options(repo, plan.base, head, roster), mode=mode)
    except NothingToReview as done:
        sys.exit(
            nothing_to_review(str(done), plan, outputs, fail_on=fail_on, head=head_sha(repo, head))
        )
    except ConfigurationError as exc:
        raise UsageProblem(str(exc)) from None
    problems, _ = _runnable(round_, mode)
    if problems:  # embedded mode runs every reviewer here: refuse before anything is sent
        raise UsageProblem(_cannot_run(problems))
    round_ = _gated(
        _with_sandbox_note(round_, settings, mode), quorum, filter_mode, fail_on, min_agreement
    )
    quorum = round_.record.quorum
    for note in round_.notes:
        click.echo(for_log(f"council: note: {note}", one_line=True), err=True)
    show = Progress.for_stream(sys.stderr) if progress else None
    try:
        report, change = _run_council(cli, settings, round_, plan, show, timeout)
    except IdentityRefused as exc:
        raise _refused(exc, round_.record.session, state if mode == "embedded" else None) from None
    finally:
        if show is not None:
            show.close()
    emit(report, outputs, fail_on=fail_on, quorum=quorum, change=change)
    threshold = parse_fail_on(fail_on)
    click.echo(gate_summary(report, threshold, quorum), err=True)
    sys.exit(exit_code(report, threshold, quorum=quorum))


def _gated(
    round_: Round,
    quorum: int | None,
    filter_mode: str,
    fail_on: str,
    min_agreement: int | None = None,
) -> Round:
    """The round with what its gate reads recorded on the run: the quorum (``--quorum``,
    else the roster's; None: every reviewer not optional), the ``--filter`` mode, the
    ``--min-agreement`` (else ``[council] min_agreement``), the ``[policy] confirm``
    severity and ``[policy] unverified_scripts``, and the ``--fail-on`` (``council
    resume`` gates with it). Raises UsageProblem for a quorum or a min-agreement above
    the roster."""
    if quorum is None:
        quorum = round_.roster.quorum
    elif quorum > len(round_.participants):
        raise UsageProblem(
            f"--quorum {quorum} asks for more answers than the roster has reviewers "
            f"({len(round_.participants)}); lower --quorum or add reviewers"
        )
    if min_agreement is None:
        min_agreement = round_.roster.min_agreement
    elif problem := min_agreement_problem(min_agreement, len(round_.participants)):
        raise UsageProblem(problem)
    gated = {
        "quorum": quorum,
        "filter": filter_mode,
        "confirm": round_.roster.confirm,
        "unverified_scripts": round_.roster.unverified_scripts,
        "fail_on": fail_on,
        "min_agreement": min_agreement,
    }
    return replace(round_, record=round_.record.model_copy(update=gated))


def _run_council(
    cli: CliContext,
    settings: Settings,
    round_: Round,
    plan: RoundPlan,
    show: Progress | None,
    timeout: float | None,
) -> tuple[CouncilReport, Change]:
    """Run the round on Redis's workers or an embedded council; its report and change.

    Raises IdentityRefused (the caller names the way out), UsageProblem for an unreadable
    embedded state file, Incomplete (exit 3) for Redis trouble, a timeout, or a second
    interrupt.
    """
    mode = "distributed" if cli.distributed else "embedded"
    try:
        with stop_signals() as stopped:
            if mode == "distributed":
                return _run(cli.runtime(), round_, plan, stopped, show, timeout, app=None)
            with embedded_council(settings, len(round_.participants)) as (app, rt):
                return _run(rt, round_, plan, stopped, show, timeout, app=app)
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
    try:
        with stop_signals() as stopped:
            report = settle_parked(cli, state, parked, show=show, stopped=stopped)
    except RunNotFound as gone:
        click.echo(f"council: {gone}; its questions went with it, reviewing anew", err=True)
        return
    record = parked.record
    threshold = parse_fail_on(fail_on)
    if report is None:
        with session_store(cli, state, save=False) as sessions:
            given = sessions.answers(record.session)
        asks = tuple(
            a
            if a.answer is not None or a.id not in given
            else a.model_copy(update={"answer": given[a.id]})
            for a in parked.report.asks
        )
        shown = parked.report.model_copy(update={"asks": asks})
        left = len([a for a in asks if a.answer is None])
        click.echo(
            f"council: run {record.run_id} of this session waits on a person ({left} "
            "question(s) to answer); answer them (council asks lists them), then run this "
            "again",
            err=True,
        )
        emit(shown, outputs, fail_on=fail_on, quorum=record.quorum, change=None)
        click.echo(gate_summary(shown, threshold, record.quorum), err=True)
        sys.exit(EXIT_WAITING)
    click.echo(
        f"council: run {record.run_id} waited on a person and every question is answered: "
        "it settles now with the answers; run this again to review later commits",
        err=True,
    )
    emit(report, outputs, fail_on=fail_on, quorum=record.quorum, change=None)
    click.echo(gate_summary(report, threshold, record.quorum), err=True)
    sys.exit(exit_code(report, threshold, quorum=record.quorum))


def _supersede(cli: CliContext, state: Path | None, waiting: list[Waiting], head: str) -> None:
    """Set aside the session's runs waiting at another head than ``head``: a run whose
    questions are all confirmations, all answered, settles with them (their dismissals
    stay in the session); any other is dropped from the waiting runs (its questions were
    about code the pull request has moved past; the new round asks again what still
    needs a person). Said on stderr, one line per run."""
    with session_store(cli, state, save=True) as sessions:
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


def _checkout(repo: Path) -> Path | None:
    """The top of the repository ``--repo`` names, or None when it cannot be read
    (``prepare`` then says why)."""
    try:
        return Repository(repo).path
    except ConfigurationError:
        return None


def _refuse_tracked_state(repo: Path, head: str, settings: Settings) -> None:
    """Refuse (exit 2) an embedded state file that git tracks in the reviewed repository,
    or one reached through a symbolic link (:func:`~workers.cli.outputs.refuse_link`:
    the file itself, or a link inside the checkout on its way).

    The state file holds the sessions: finding ids, identities, dismissals and the head
    the last round reviewed. One committed in the repository (in the index a checkout
    wrote, or in the head's tree; see :meth:`Repository.tracked`) is the change's own,
    and a pull request could forge what its review trusts. The CI recipes keep the state
    outside the checkout (``$RUNNER_TEMP``, the CI cache directory). A path outside any
    repository, or a repository that cannot be read (``prepare`` says why), passes.
    """
    path = settings.state_path or default_state_path()
    try:
        repository = Repository(repo)
        tracked = repository.tracked(path, head)
    except ConfigurationError:
        refuse_link("--state", path)
        return
    if tracked is None:
        refuse_link("--state", path, repository.path)
        return
    raise UsageProblem(
        f"the state file {path} is tracked by git in {repository.path} (as {tracked!r}): "
        f"a change under review could commit forged sessions there (dismissals, the head "
        f"the last round reviewed), so council will not load it. Keep the state outside "
        f"the checkout: pass --state with a path outside the repository, e.g. --state "
        f'"$RUNNER_TEMP/council-state/state.json" in GitHub Actions (see deploy/ci/)'
    )


def _refused(exc: IdentityRefused, session: str, state: Path | None) -> UsageProblem:
    """The refusal, with the release command spelt out for this session (and state file)."""
    release = f"council release {shlex.quote(session)} {exc.participant}"
    if state is not None:
        release += f" --state {shlex.quote(str(state))}"
    text, short = str(exc), f"`council release SESSION {exc.participant}`"
    text = text.replace(short, f"`{release}`") if short in text else f"{text} (`{release}`)"
    return UsageProblem(text)


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
    """Open, dispatch and wait for the round; its report and the pull request's change."""
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
    waiter = Waiter(
        rt=rt,
        record=round_.record,
        on_progress=lambda states: show.update(progress_view(states)) if show else None,
        stop_requested=stopped.is_set,
        timeout_ms=int(timeout * 1000) if timeout is not None else None,
        dispatch_judge=judge_sender(app, round_.judge.backend) if round_.judge else None,
    )
    return waiter.wait(), change


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


@click.command("check")
@_repo_option
@click.option("--base", default="HEAD~1", show_default=True, help="The ref the change starts from.")
@click.option("--head", default="HEAD", show_default=True, help="The ref the change ends at.")
@_roster_option
@click.option("--session", help="Session whose ledger the identity claims are checked against.")
@_state_option
@click.pass_obj
def check_command(
    cli: CliContext,
    repo: Path,
    base: str,
    head: str,
    roster: Path | None,
    session: str | None,
    state: Path | None,
) -> None:
    """Validate the roster and the identity claims; print each participant's prompt.

    Sends nothing and writes nothing. Exit 2 on a roster error or a refused claim.

    \b
    Example:
      council check --roster examples/council.toml --base HEAD~1
    """
    mode = "distributed" if cli.distributed else "embedded"
    settings = with_state(cli, state)
    if mode == "embedded":
        _refuse_tracked_state(repo, head, settings)
    try:
        round_ = prepare(settings, ReviewOptions(repo, base, head, roster, session), mode=mode)
    except NothingToReview as done:
        click.echo(f"roster OK; {done}.")
        return
    except ConfigurationError as exc:
        raise UsageProblem(str(exc)) from None
    problems, warnings = _runnable(round_, mode)
    if problems:
        raise UsageProblem(_cannot_run(problems))
    everyone = (*round_.participants, *((round_.judge,) if round_.judge else ()))
    unsandboxed, failing = sandbox_outlook(settings, mode, everyone, ran=False)
    warnings += [w for w in (unsandboxed, failing) if w is not None]
    ledger, attributed = _ledger_for(cli, settings, round_.record.session)
    try:
        ledger.claim_round(round_.roster.claims(), attributed)
    except IdentityRefused as exc:
        raise _refused(exc, round_.record.session, state if mode == "embedded" else None) from None
    for p in round_.participants:
        click.echo(f"===== {p.id} ({p.role}, backend {p.backend}) =====")
        if p.backend == "sarif":
            click.echo("(a sarif reviewer runs its analyzer on the head tree; it reads no prompt)")
        else:
            click.echo(for_log(round_.prompts[p.id]))
    if round_.judge is not None:
        j = round_.judge
        click.echo(f"===== {j.id} (judge, backend {j.backend}) =====")
        click.echo(
            "(the judge's prompt is built after the reviewers are filed: the change, the "
            "filed findings, and its lens" + (f" (persona {j.persona})" if j.persona else "") + ")"
        )
    for note in round_.notes:
        click.echo(for_log(f"note: {note}", one_line=True))
    for warning in warnings:
        click.echo(for_log(f"warning: {warning}", one_line=True))
    judged = " and a judge" if round_.judge is not None else ""
    click.echo(
        f"roster OK: {len(round_.participants)} reviewer(s){judged}; identity claims hold in "
        f"session {round_.record.session!r} (against what is attributed, a review may still "
        f"be refused if findings are filed meanwhile)."
    )


def _with_sandbox_note(round_: Round, settings: Settings, mode: str) -> Round:
    """The round with the run note of an unsandboxed embedded run, when it is one; a
    warning on stderr when its reviewer programs will fail for want of a sandbox (see
    :func:`~workers.execution.backend_request.sandbox_outlook`)."""
    everyone = (*round_.participants, *((round_.judge,) if round_.judge else ()))
    note, warning = sandbox_outlook(settings, mode, everyone)
    if warning is not None:
        click.echo(f"council: warning: {warning}", err=True)
    if note is None:
        return round_
    notes = (note, *round_.notes)
    record = round_.record.model_copy(update={"notes": (note, *round_.record.notes)})
    return replace(round_, notes=notes, record=record)


def _runnable(round_: Round, mode: str) -> tuple[list[str], list[str]]:
    """What would make a participant fail on THIS machine: ``(problems, warnings)``.

    Programs named by an absolute path and replay files must be there, and be what they
    should (an executable file, a readable file). In embedded mode every reviewer runs
    here, so these are problems (``council check`` exits 2); in distributed mode a
    worker's host may differ, so they are warnings. The same holds for a program found
    neither beside council's interpreter nor on PATH, and for a model reviewer whose API
    key variable is unset: in embedded mode this machine is the worker, so a reviewer
    that cannot run is refused before anything is sent instead of failing the gate later.
    Relative programs are checked by :func:`~workers.coordinator.preparation.prepare` where it reads
    them.
    """
    from reviewers import BUILT_BACKENDS, key_env

    problems: list[str] = []
    warnings: list[str] = []

    def here(subject: str, what: str, fix: str) -> None:
        if mode == "embedded":
            problems.append(f"{subject} {what}; {fix}")
        else:
            warnings.append(
                f"{subject} {what} on this machine; a worker where it is the same fails "
                f"this participant ({fix})"
            )

    for p in (*round_.participants, *((round_.judge,) if round_.judge else ())):
        name = key_env(p)
        if name and not os.environ.get(name):
            here(
                f"{p.id}: its API key variable {name}",
                "is not set",
                f"export {name} before running council (the roster names the variable, "
                "never the key)",
            )
        if p.backend not in BUILT_BACKENDS:
            warnings.append(
                f"{p.id}: backend {p.backend!r} is not built in this version; it will fail"
            )
        program = p.options.get("program")
        if p.backend in ("command", "sarif") and isinstance(program, str):
            if "/" not in program and find_program(program, os.environ.get("PATH")) is None:
                here(
                    f"{p.id}: program {program!r}",
                    f"is found neither beside council's interpreter ({interpreter_bin()}) "
                    "nor on PATH",
                    "install it into council's virtualenv (pip install) or on PATH, or set "
                    "program to its absolute path",
                )
            elif program.startswith("/"):
                cannot = _program_trouble(Path(program))
                if cannot:
                    here(f"{p.id}: program {program!r}", *cannot)
        for key, path in _replay_files(p):
            unreadable = _file_trouble(path)
            if unreadable:
                here(
                    f"{p.id}: replay {key} file '{path}'",
                    unreadable,
                    f"write it there, or set {key} to its path (a relative path is read "
                    "beside an explicit --roster, else from the base tree)",
                )
    return problems, warnings


def _cannot_run(problems: list[str]) -> str:
    """The usage error for reviewers that cannot run here (see :func:`_runnable`)."""
    return (
        "a reviewer cannot run on this machine (embedded mode runs every reviewer here):\n"
        + "\n".join(f"  {problem}" for problem in problems)
    )


def _replay_files(p: Participant) -> list[tuple[str, Path]]:
    """A replay participant's files (``answer``, ``journal``) where the backend reads them:
    as given when absolute, else under its ``base_dir``. One read from the base tree
    already (``options["recorded"]``) is not on disk, and not listed."""
    if p.backend != "replay":
        return []
    out: list[tuple[str, Path]] = []
    recorded = p.options.get(RECORDED)
    for key in ("answer", "journal"):
        value = p.options.get(key)
        if not isinstance(value, str) or (isinstance(recorded, dict) and key in recorded):
            continue
        path = Path(value).expanduser()
        if not path.is_absolute():
            path = Path(str(p.options.get(BASE_DIR) or ".")) / path
        out.append((key, path))
    return out


def _program_trouble(path: Path) -> tuple[str, str] | None:
    """Why the program at an absolute ``path`` cannot run here, and the fix; None if it can."""
    trouble = program_trouble(path)
    if trouble == "directory":
        return "is a directory, not a program", "set program to the executable file inside it"
    if trouble == "missing":
        return "does not exist", "install it there, or set program to the path of an executable"
    if trouble == "not-executable":
        return "is not executable", f"run chmod +x {shlex.quote(str(path))}"
    return None


def _file_trouble(path: Path) -> str | None:
    """Why the file at ``path`` cannot be read here, or None."""
    if path.is_dir():
        return "is a directory, not a file"
    if not path.is_file():
        return "does not exist"
    if not os.access(path, os.R_OK):
        return "cannot be read"
    return None


def _ledger_for(cli: CliContext, settings: Settings, session: str) -> tuple[Ledger, set[str]]:
    """The session's ledger and the ids its findings are attributed to, from Redis or
    from the embedded state file."""
    if cli.distributed:
        sessions = cli.runtime().sessions
        return sessions.ledger(session), attributed_ids(sessions.findings(session))
    try:
        with state_sessions(settings, save=False) as store:
            return store.ledger(session), attributed_ids(store.findings(session))
    except ConfigurationError as exc:
        raise UsageProblem(str(exc)) from None
