"""What ``council review`` settles before and around a round: its session, where the
change starts (``--since-last``), the trusted baseline, and what settling marks it with.

Before the round is prepared (nothing sent yet): the session key, the session's last
reviewed head, open findings and dismissals when ``--since-last`` needs them, and the
baseline (an unreadable one is exit 2 here). Once the run's runtime is up, before the
run opens: the interdiff since the last reviewed head, the baseline text and whether the
round carries the earlier open findings are stored on the run
(:meth:`workers.stores.runs.RunStore.put_session_inputs`), for settling to mark the
round with (:mod:`workers.session_marks`). With ``--since-last`` and no new change, no round
runs: :meth:`RoundPlan.carried_report` reports the open findings, which still gate.
Source: issue "CI outputs that forges accept".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from council.diff import Change
from council.earlier_rounds import carry
from council.findings import Finding
from council.report.model import CouncilReport
from workers.baseline_source import BaselineSource, read_trusted_baseline
from workers.cli.context import CliContext
from workers.embedded import state_sessions
from workers.preparation import ReviewOptions, Round
from workers.repository import Repository
from workers.runtime import Runtime
from workers.settings import Settings
from workers.since_last import SincePlan, full_change, interdiff, plan_since_last
from workers.stores.sessions import Reviewed, SessionStore


@dataclass(frozen=True)
class RoundPlan:
    """The session of the round, its trusted base, where its change starts, its baseline."""

    session: str
    base: str
    """The BASE ref as given: trusted configuration and the pull request's diff start here."""
    since: SincePlan
    baseline: BaselineSource
    still_open: tuple[Finding, ...] = ()
    """With ``--since-last``: the findings still open after the session's last completed
    run (:meth:`~workers.stores.sessions.SessionStore.open_findings`)."""
    dismissals: Mapping[str, str] = field(default_factory=dict)
    """With ``--since-last``: the session's dismissals, fingerprint → reason."""

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

    def carried_report(self, text: str) -> CouncilReport | None:
        """The report of a ``--since-last`` round with nothing new to review (``text`` says
        why): no reviewer is asked, and the findings still open after the last round,
        less the dismissed and baselined ones, are carried (they still gate). None when
        the round is not one (no ``--since-last``, or no earlier round to start after).
        """
        since = self.since.since
        if since is None:
            return None
        accepted = {*self.dismissals, *self.baseline.parsed().reasons()}
        notes = (
            text,
            *self.since.notes,
            *self.baseline.notes,
            "no reviewer was asked; the findings of earlier rounds still open are carried",
        )
        report = CouncilReport(
            run_id="none",
            session=self.session,
            base=since,
            head=self.since.head or since,
            status="settled",
            notes=notes,
        )
        return carry(report, self.still_open, Change(), accepted)


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
    if not since_last:
        return RoundPlan(session=key, base=base, since=SincePlan(), baseline=source)
    reviewed, still_open, dismissals = _session_view(cli, settings, key)
    return RoundPlan(
        session=key,
        base=base,
        since=plan_since_last(repository, reviewed, head),
        baseline=source,
        still_open=still_open,
        dismissals=dismissals,
    )


def _session_view(
    cli: CliContext, settings: Settings, session: str
) -> tuple[Reviewed | None, tuple[Finding, ...], dict[str, str]]:
    """The session's last completed run, the findings still open after it and its
    dismissals, from Redis or from the embedded state file."""
    if cli.distributed:
        store = cli.runtime().sessions
        return _view(store, session)
    with state_sessions(settings, save=False) as embedded:
        return _view(embedded, session)


def _view(
    store: SessionStore, session: str
) -> tuple[Reviewed | None, tuple[Finding, ...], dict[str, str]]:
    dismissals = {p: d.reason for p, d in store.dismissals(session).items()}
    return store.reviewed(session), tuple(store.open_findings(session)), dismissals


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
        carry=plan.since.since is not None,
    )
    if plan.since.since is None:
        return round_.change
    return full_change(repository, plan.base, record.head, round_.roster)
