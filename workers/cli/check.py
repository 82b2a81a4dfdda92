"""``council check``, and the checks ``council review`` makes before it sends anything.

A round is refused (exit 2, :class:`~workers.cli.context.UsageProblem`) before a
reviewer runs when it could only fail: a program or replay file missing or unusable on
this machine, an API key variable unset (in embedded mode this machine is the worker;
in distributed mode these are warnings), an embedded state file the reviewed change
could have written, a ``--quorum`` or ``--min-agreement`` above the roster, a refused
identity claim. ``council check`` runs them alone and prints each participant's prompt;
it sends and writes nothing.

Source: docs/identity-and-clocks.md "Identity and the ledger", docs/architecture.md "Layers".
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import click

from council.errors import ConfigurationError, IdentityRefused, IncompleteError
from council.model.gate_policy import GatePolicy
from council.model.participant import Participant, unit_id
from council.rendering.escape import for_log
from council.roster.backend_options import BASE_DIR, PROVIDER_OPTION, RECORDED
from council.roster.provider_rules import ProviderRefused, for_worker
from council.round.budget import BUDGETED_BACKENDS, unpriced
from council.round.gate import min_agreement_problem, parse_fail_on
from council.session.ledger import Ledger, attributed_ids
from reviewers.models.spending import output_cap
from reviewers.programs.process import program_trouble
from reviewers.programs.program_search import find_program, interpreter_bin
from workers.app.providers import load_providers
from workers.app.settings import Settings
from workers.cli.context import CliContext, Incomplete, UsageProblem, with_state
from workers.cli.options import REPO_OPTION, ROSTER_OPTION, STATE_OPTION
from workers.cli.outputs import refuse_link
from workers.coordinator.embedded import default_state_path, state_sessions
from workers.coordinator.preparation import NothingToReview, ReviewOptions, Round, prepare
from workers.coordinator.trusted_inputs import BASE_ROSTER_USED
from workers.execution.backend_request import sandbox_outlook
from workers.git.repository import Repository


@click.command("check")
@REPO_OPTION
@click.option("--base", default="HEAD~1", show_default=True, help="The ref the change starts from.")
@click.option("--head", default="HEAD", show_default=True, help="The ref the change ends at.")
@ROSTER_OPTION
@click.option("--session", help="Session whose ledger the identity claims are checked against.")
@STATE_OPTION
@click.option(
    "--without-keys",
    is_flag=True,
    help="Leave out the reviewers (and the judge) that need an API key, as council review "
    "--without-keys does, saying so: a lint job or a fork's pull request has no keys.",
)
@click.pass_obj
def check_command(
    cli: CliContext,
    repo: Path,
    base: str,
    head: str,
    roster: Path | None,
    session: str | None,
    state: Path | None,
    without_keys: bool,
) -> None:
    """Validate the roster and the identity claims; print each participant's prompt.

    Sends nothing and writes nothing. Exit 2 on a roster error, a reviewer that cannot
    run here (a missing API key: see --without-keys) or a refused claim.

    \b
    Example:
      council check --roster examples/council.toml --base HEAD~1
    """
    mode = "distributed" if cli.distributed else "embedded"
    settings = with_state(cli, state)
    if mode == "embedded":
        refuse_tracked_state(repo, head, settings)
    try:
        options = ReviewOptions(
            repo, base, head, roster, session, without_keys=without_keys, roster_on_disk=True
        )
        round_ = prepare(settings, options, mode=mode)
    except NothingToReview as done:
        click.echo(f"roster OK; {done}.")
        return
    except ConfigurationError as exc:
        raise UsageProblem(str(exc)) from None
    except IncompleteError as exc:  # the secret scan ran out of time
        raise Incomplete(str(exc)) from None
    problems, warnings = runnable(round_, mode, settings)
    if problems:
        raise UsageProblem(cannot_run(problems))
    everyone = (*round_.participants, *((round_.judge,) if round_.judge else ()))
    unsandboxed, failing = sandbox_outlook(settings, mode, everyone, ran=False)
    warnings += [w for w in (unsandboxed, failing) if w is not None]
    ledger, attributed = _ledger_for(cli, settings, round_.record.session)
    try:
        ledger.claim_round(round_.roster.claims(), attributed)
    except IdentityRefused as exc:
        raise refused(exc, round_.record.session, state if mode == "embedded" else None) from None
    for p in round_.participants:
        click.echo(f"===== {p.id} ({p.role}, backend {p.backend}) =====")
        if p.backend == "sarif":
            click.echo("(a sarif reviewer runs its analyzer on the head tree; it reads no prompt)")
        elif p.id in round_.slices:  # its change is over its context budget
            n = round_.slices[p.id]
            click.echo(f"(sent in {n} slices, one task each; the first slice's prompt:)")
            click.echo(for_log(round_.prompts[unit_id(p.id, 1)].text))
        else:
            click.echo(for_log(round_.prompts[p.id].text))
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


def gated(
    round_: Round,
    quorum: int | None,
    filter_mode: str,
    fail_on: str,
    min_agreement: int | None = None,
    min_likelihood: float | None = None,
) -> Round:
    """The round with its gate policy (:class:`GatePolicy`: ``--fail-on``, the quorum,
    ``--filter``, the min-agreement) and ``[policy]`` recorded on the run; the report it
    settles to carries the same policy, and ``council resume`` gates with it. The quorum
    is ``--quorum``, else the roster's (None: every reviewer not optional); the
    min-agreement ``--min-agreement``, else ``[council] min_agreement``; ``--min-likelihood``
    only when given. Raises
    UsageProblem for a quorum or a min-agreement above the roster."""
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
    gate = GatePolicy(
        fail_on=parse_fail_on(fail_on),
        quorum=quorum,
        min_agreement=min_agreement,
        filter=filter_mode,
        min_likelihood=min_likelihood,
    )
    policy = {
        "gate": gate,
        "confirm": round_.roster.confirm,
        "unverified_scripts": round_.roster.unverified_scripts,
        "likely_at": round_.roster.likely_at,
    }
    return replace(round_, record=round_.record.model_copy(update=policy))


def budgeted(round_: Round, max_cost_usd: float | None) -> Round:
    """The round with its cost budget recorded on the run: ``--max-cost-usd``, else the
    roster's ``[council] max_cost_usd`` (None: no budget). Raises UsageProblem (exit 2,
    nothing sent) for a model participant, judge included, without a price in
    ``[prices]``: its requests could not be estimated. One without an output cap is given
    :data:`BUDGET_OUTPUT_TOKENS` (a note says so). A budget too small for any request is
    not refused: those reviewers stop as ``budget``.
    Source: docs/guide.md "A cost budget"."""
    limit = max_cost_usd if max_cost_usd is not None else round_.roster.max_cost_usd
    if limit is None:
        return round_
    everyone = [*round_.participants, *([round_.judge] if round_.judge is not None else [])]
    missing = unpriced(everyone, round_.roster.prices)
    if missing:
        raise UsageProblem(
            f"a cost budget (max_cost_usd = {limit}) needs a price for every model "
            f"participant, and {', '.join(missing)} has none: add "
            '[prices."<backend>:<model>"] with input and output (USD per million tokens) '
            "to the roster"
        )
    uncapped = [
        p.id
        for p in everyone
        if p.backend in BUDGETED_BACKENDS and p.model is not None and output_cap(p) is None
    ]
    record = round_.record.model_copy(update={"max_cost_usd": limit})
    if not uncapped:
        return replace(round_, record=record)
    # A request is estimated before it is sent, so its output needs a bound: a reviewer
    # that sets none is given one under a budget (said), rather than refused.
    note = (
        f"cost budget: {', '.join(uncapped)} set no max_output_tokens, so each of their "
        f"requests is capped at {BUDGET_OUTPUT_TOKENS} output tokens (set max_output_tokens "
        "in the roster to choose another bound)"
    )
    record = record.model_copy(update={"notes": (*record.notes, note)})
    return replace(
        round_,
        record=record,
        notes=(*round_.notes, note),
        participants=tuple(_capped(p, uncapped) for p in round_.participants),
        judge=_capped(round_.judge, uncapped) if round_.judge is not None else None,
    )


BUDGET_OUTPUT_TOKENS = 16_384
"""The output cap (tokens a request) a reviewer without ``max_output_tokens`` is given
under a cost budget, so its requests can be estimated before they are sent."""


def _capped(participant: Participant, uncapped: list[str]) -> Participant:
    if participant.id not in uncapped:
        return participant
    options = {**participant.options, "max_output_tokens": BUDGET_OUTPUT_TOKENS}
    return participant.model_copy(update={"options": options})


def with_sandbox_note(round_: Round, settings: Settings, mode: str) -> Round:
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


def runnable(
    round_: Round, mode: str, settings: Settings | None = None
) -> tuple[list[str], list[str]]:
    """What would make a participant fail on THIS machine: ``(problems, warnings)``.

    In embedded mode a model reviewer is checked as this machine's provider registry
    (from ``settings``) runs it: a ``provider`` it does not hold is a problem, and a
    keyless one needs no variable. In distributed mode a reviewer naming a ``provider``
    is the workers' to judge: its key is not looked for here.

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

    registry = None
    if mode == "embedded" and settings is not None:
        try:
            registry = load_providers(settings, os.environ)
        except ConfigurationError as exc:
            problems.append(str(exc))
    for p in (*round_.participants, *((round_.judge,) if round_.judge else ())):
        run = p
        if registry is not None:
            try:
                run = for_worker(p, registry, embedded=True)
            except ProviderRefused as exc:
                problems.append(str(exc))
                continue
        name = key_env(run)
        if mode != "embedded" and p.options.get(PROVIDER_OPTION) is not None:
            name = None
        if name and not os.environ.get(name):
            here(
                f"{p.id}: its API key variable {name}",
                "is not set",
                f"export {name} before running council (the roster names the variable, "
                "never the key), or pass --without-keys to leave it out",
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


def cannot_run(problems: list[str], notes: Sequence[str] = ()) -> str:
    """The usage error for reviewers that cannot run here (see :func:`runnable`), with
    the round's notes saying the roster was read from the base ref (the file a person
    looks at may not be the one read)."""
    roster = [n for n in notes if BASE_ROSTER_USED in n]
    return (
        "a reviewer cannot run on this machine (embedded mode runs every reviewer here):\n"
        + "\n".join(f"  {problem}" for problem in problems)
        + "".join(f"\nnote: {n}" for n in roster)
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


def checkout_top(repo: Path) -> Path | None:
    """The top of the repository ``--repo`` names, or None when it cannot be read
    (``prepare`` then says why)."""
    try:
        return Repository(repo).path
    except ConfigurationError:
        return None


def refuse_tracked_state(repo: Path, head: str, settings: Settings) -> None:
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


def refused(exc: IdentityRefused, session: str, state: Path | None) -> UsageProblem:
    """The refusal, with the release command spelt out for this session (and state file)."""
    release = f"council release {shlex.quote(session)} {exc.participant}"
    if state is not None:
        release += f" --state {shlex.quote(str(state))}"
    text, short = str(exc), f"`council release SESSION {exc.participant}`"
    text = text.replace(short, f"`{release}`") if short in text else f"{text} (`{release}`)"
    return UsageProblem(text)


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
