"""What ``council review`` settles before and around a round: its session, where the
change starts (``--since-last``), the trusted baseline, and what settling marks it with.

Before the round is prepared (nothing sent yet): the session key, the session's last
reviewed head when ``--since-last`` needs it, and the baseline (an unreadable one is
exit 2 here). Once the run's runtime is up, before the run opens: the interdiff since
the last reviewed head and the baseline text are stored on the run
(:meth:`workers.stores.runs.RunStore.put_session_inputs`), for settling to mark the
round with (:mod:`workers.marking`). Source: issue "CI outputs that forges accept".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from council.diff import Change
from workers.baseline_source import BaselineSource, read_trusted_baseline
from workers.cli.context import CliContext
from workers.coordinator import ReviewOptions, Round
from workers.embedded import state_sessions
from workers.incremental import SincePlan, full_change, interdiff, plan_since_last
from workers.repository import Repository
from workers.runtime import Runtime
from workers.settings import Settings
from workers.stores.sessions import Reviewed


@dataclass(frozen=True)
class RoundPlan:
    """The session of the round, its trusted base, where its change starts, its baseline."""

    session: str
    base: str
    """The BASE ref as given: trusted configuration and the pull request's diff start here."""
    since: SincePlan
    baseline: BaselineSource

    def options(self, repo: Path, base: str, head: str, roster: Path | None) -> ReviewOptions:
        """The coordinator's options for this plan (its notes go to the prompts too)."""
        return ReviewOptions(
            repo=repo,
            base=base,
            head=head,
            roster=roster,
            session=self.session,
            since=self.since.since,
            notes=(*self.since.notes, *self.baseline.notes),
        )


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
) -> RoundPlan:
    """The round's plan. Raises :class:`~council.errors.ConfigurationError` (exit 2) for
    a bad repository, ref or baseline; reaching Redis for ``--since-last`` may raise
    :class:`~workers.cli.context.Incomplete` (exit 3)."""
    repository = Repository(repo)
    key = session or repository.default_session_key(head)
    source = read_trusted_baseline(repo, base, head, baseline)
    source.parsed()
    since = SincePlan()
    if since_last:
        since = plan_since_last(repository, session_reviewed(cli, settings, key), head)
    return RoundPlan(session=key, base=base, since=since, baseline=source)


def session_reviewed(cli: CliContext, settings: Settings, session: str) -> Reviewed | None:
    """The session's last completed run, from Redis or from the embedded state file."""
    if cli.distributed:
        return cli.runtime().sessions.reviewed(session)
    with state_sessions(settings, save=False) as store:
        return store.reviewed(session)


def store_session_inputs(rt: Runtime, round_: Round, plan: RoundPlan) -> Change:
    """Store the run's interdiff and baseline; return the change a pull request shows.

    Called with the run's runtime, before the run opens. The pull request's change is
    the round's own, except with ``--since-last``: then base..head is read again, so a
    line comment only names a line the pull request's diff shows.
    """
    record = round_.record
    repository = Repository(record.repository)
    reviewed = rt.sessions.reviewed(record.session)
    rt.runs.put_session_inputs(
        record.run_id,
        since=interdiff(repository, reviewed, record.head, round_.roster),
        baseline=plan.baseline.text,
        ttl_s=rt.settings.run_retention_s,
    )
    if plan.since.since is None:
        return round_.change
    return full_change(repository, plan.base, record.head, round_.roster)
