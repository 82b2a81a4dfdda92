"""What ``council review`` settles before and around a round: its session, where the
change starts (``--since-last``), the trusted baseline, and what settling marks it with.

Before the round is prepared (nothing sent yet): the session key, the session's last
reviewed head, open findings and dismissals when ``--since-last`` needs them, and the
baseline (an unreadable one is exit 2 here). Once the run's runtime is up, before the
run opens: the interdiff since the last reviewed head, the baseline text and whether the
round carries the earlier open findings are stored on the run
(:meth:`workers.stores.runs.RunStore.put_session_inputs`), for settling to mark the
round with (:mod:`workers.settling.session_marks`). With ``--since-last`` and no new change, no
round runs: :meth:`RoundPlan.carried_report` reports the open findings, which still gate.
Source: issue "CI outputs that forges accept".
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from council.change.diff import Change, parse_diff
from council.change.secret_masks import mask_change, masked_path
from council.errors import RepositoryError
from council.model.findings import Finding
from council.model.fingerprint import with_fingerprints
from council.model.report import NO_RUN, CouncilReport
from council.session.decisions import suppress
from council.session.earlier_rounds import carry
from workers.app.services import Runtime
from workers.app.settings import Settings
from workers.cli.context import CliContext
from workers.coordinator.baseline_source import BaselineSource, read_trusted_baseline
from workers.coordinator.ci_session import ci_session
from workers.coordinator.embedded import state_sessions
from workers.coordinator.preparation import ReviewOptions, Round
from workers.coordinator.since_last import SincePlan, full_change, interdiff, plan_since_last
from workers.git.repository import Repository
from workers.stores.session_memory import Dismissal, Reviewed
from workers.stores.sessions import SessionStore


@dataclass(frozen=True)
class RoundPlan:
    """The session of the round, its trusted base, where its change starts, its baseline."""

    session: str
    base: str
    """Where the pull request's diff starts, and trusted configuration (the roster and
    what it names) is read: the merge base of ``--base`` and the head, or ``--base``
    itself with ``--base-exact``. The baseline is read at ``--base``'s tip instead
    (:func:`~workers.coordinator.baseline_source.read_trusted_baseline`)."""
    since: SincePlan
    baseline: BaselineSource
    still_open: tuple[Finding, ...] = ()
    """With ``--since-last``: the findings still open after the session's last completed
    run (:meth:`~workers.stores.sessions.SessionStore.open_findings`)."""
    dismissals: Mapping[str, str] = field(default_factory=dict)
    """With ``--since-last``: the session's dismissals, fingerprint → reason."""
    dismissed: Mapping[str, Finding] = field(default_factory=dict)
    """With ``--since-last``: fingerprint → the finding dismissed, where the session
    kept it (a rewording of it stays dismissed, matched by agreement)."""
    notes: tuple[str, ...] = ()
    """The CLI's own notes for the round (where the change was read from)."""

    def options(self, repo: Path, base: str, head: str, roster: Path | None) -> ReviewOptions:
        """The coordinator's options for this plan (its notes go to the prompts too)."""
        return ReviewOptions(
            repo=repo,
            base=base,
            head=head,
            roster=roster,
            session=self.session,
            since=self.since.since,
            notes=(*self.notes, *self.since.notes, *self.baseline.notes),
        )

    def carried_report(self, text: str) -> CouncilReport | None:
        """The report of a ``--since-last`` round with nothing new to review (``text`` says
        why): no reviewer is asked, and the findings still open after the last round
        are carried (they still gate); one a dismissal or the baseline still covers
        (:func:`council.session.decisions.suppress`: by occurrence, not graver than what was
        accepted; a decision written before occurrences were kept covers none here, since
        no change is read to show its code predates it) is carried suppressed; each with
        its fingerprint.
        None when the round is not one (no ``--since-last``, or no earlier round to
        start after).
        """
        since = self.since.since
        if since is None:
            return None
        notes = (
            text,
            *self.since.notes,
            *self.baseline.notes,
            "no reviewer was asked; the findings of earlier rounds still open are carried",
        )
        report = CouncilReport(
            run_id=NO_RUN,
            session=self.session,
            base=since,
            head=self.since.head or since,
            status="settled",
            notes=notes,
        )
        carried = carry(report, self.still_open, Change())
        held = suppress(carried, self.baseline.parsed(), self.dismissals, self.dismissed)
        return with_fingerprints(held)


def plan_round(
    cli: CliContext,
    settings: Settings,
    repo: Path,
    base: str,
    head: str,
    *,
    session: str | None,
    since_last: bool,
    baseline: Path | None,
    exact_base: bool = False,
) -> RoundPlan:
    """The round's plan. Raises :class:`~council.errors.ConfigurationError` (exit 2) for
    a bad repository, ref or baseline; reaching Redis for ``--since-last`` may raise
    :class:`~workers.cli.context.Incomplete` (exit 3).

    The change starts at the merge base of ``base`` and ``head`` (what a forge shows as a
    pull request: three dots), unless ``exact_base`` (``--base-exact``: two dots).
    """
    repository = Repository(repo, max_changed_files=settings.max_changed_files)
    start, notes = _start_of_change(repository, base, head, exact_base)
    key, said = _session_key(repository, head, session)
    source = read_trusted_baseline(
        repo, start, head, baseline, max_changed_files=settings.max_changed_files, target=base
    )
    source.parsed()
    notes += said
    if not since_last:
        return RoundPlan(session=key, base=start, since=SincePlan(), baseline=source, notes=notes)
    reviewed, still_open, dismissals = _session_view(cli, settings, key)
    return RoundPlan(
        session=key,
        base=start,
        since=plan_since_last(repository, reviewed, head),
        baseline=source,
        still_open=still_open,
        dismissals={p: d.reason for p, d in dismissals.items()},
        dismissed={p: d.finding for p, d in dismissals.items() if d.finding is not None},
        notes=notes,
    )


def _start_of_change(
    repository: Repository, base: str, head: str, exact: bool
) -> tuple[str, tuple[str, ...]]:
    """Where the change starts, and a note saying so when it is not ``base`` itself.

    Why the merge base: when the base branch moved on after the branch left it, diffing
    against its tip shows the base's new commits reversed (a file main added appears
    deleted). Raises :class:`~council.errors.ConfigurationError` for an unknown ref or
    two commits with no common history.
    """
    base_sha = repository.resolve(base)
    if exact:
        return base, ()
    head_sha = repository.resolve(head)
    start = repository.merge_base(base_sha, head_sha)
    if start is None and repository.is_shallow():
        raise RepositoryError(
            f"{base} and {head} share no history in this shallow clone, so their merge base "
            "is not here to review from",
            "Fetch the history (`git fetch --unshallow`, or fetch-depth 0 in CI) and run "
            f"again; --base-exact would diff {head} against {base} itself, showing the "
            f"commits {base} gained since as reversed",
        )
    if start is None:
        raise RepositoryError(
            f"{base} and {head} share no history, so they have no merge base to review from",
            f"Pass --base-exact to diff {head} against {base} itself",
        )
    if start == base_sha:
        return base, ()
    return start, (
        f"reviewed from {start[:12]}, the merge base of {base} and {head} (as a pull "
        f"request shows it); {base} itself is at {base_sha[:12]} (--base-exact diffs "
        f"against it)",
    )


def _session_key(
    repository: Repository, head: str, given: str | None
) -> tuple[str, tuple[str, ...]]:
    """The round's session: ``--session``, else the CI's pull or merge request
    (:func:`workers.coordinator.ci_session.ci_session`), else the repository and the branch. A
    detached head with none of those gets a per-commit session, and a note says so.
    Raises :class:`~council.errors.ConfigurationError` for a blank ``--session``."""
    if given is not None:
        if not given.strip():
            raise RepositoryError(
                "--session is blank",
                "Give the session a name (for example the pull request: --session "
                "myrepo#pr-42), or leave --session out for the default",
            )
        return given, ()
    from_ci = ci_session(os.environ)
    if from_ci is not None:
        return from_ci, ()
    key = repository.default_session_key(head)
    if "#detached-" not in key:
        return key, ()
    return key, (
        "the head is detached and no CI pull-request variable names the change, so this "
        "round's session is this commit alone: dismissals and --since-last start over on "
        "every push; pass --session (e.g. --session myrepo#pr-42) to keep them",
    )


def _session_view(
    cli: CliContext, settings: Settings, session: str
) -> tuple[Reviewed | None, tuple[Finding, ...], dict[str, Dismissal]]:
    """The session's last completed run, the findings still open after it and its
    dismissals, from Redis or from the embedded state file."""
    if cli.distributed:
        store = cli.runtime().sessions
        return _view(store, session)
    with state_sessions(settings, save=False) as embedded:
        return _view(embedded, session)


def _view(
    store: SessionStore, session: str
) -> tuple[Reviewed | None, tuple[Finding, ...], dict[str, Dismissal]]:
    return store.reviewed(session), tuple(store.open_findings(session)), store.dismissals(session)


def store_session_inputs(rt: Runtime, round_: Round, plan: RoundPlan) -> Change:
    """Store the run's interdiff and baseline; return the change a pull request shows.

    Called with the run's runtime, before the run opens. The pull request's change is
    the round's own, except with ``--since-last``: then base..head is read again, so a
    line comment only names a line the pull request's diff shows. Both diffs, and the
    head tree's paths, are masked like the round's change (the spans name head-side
    lines, the same in every diff ending at the head; :mod:`council.change.secret_masks`).
    """
    record = round_.record
    repository = Repository(record.repository)
    reviewed = rt.sessions.reviewed(record.session)
    cap = rt.settings.max_change_bytes or round_.roster.max_change_bytes
    secrets = round_.secrets
    pull = None
    if plan.since.since is not None:
        pull = full_change(repository, plan.base, record.head, round_.roster, cap_bytes=cap)
        pull = mask_change(pull, secrets)
    since = interdiff(repository, reviewed, record.head, round_.roster, cap_bytes=cap)
    if since is not None and secrets:
        since = mask_change(parse_diff(since), secrets).text
    paths = repository.tree_paths(record.head)
    if paths is not None and secrets:
        paths = frozenset(masked_path(p, secrets) for p in paths)
    rt.runs.put_session_inputs(
        record.run_id,
        since=since,
        baseline=plan.baseline.text,
        ttl_s=rt.settings.run_retention_s,
        carry=plan.since.since is not None,
        paths=paths,
        pull=pull.text if pull is not None else None,
    )
    return pull if pull is not None else round_.change
