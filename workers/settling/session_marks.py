"""Marking a round against its session while it settles: seen, outdated, carried, suppressed.

Reads what the session remembers and applies the pure rules: ``seen`` and ``outdated``
(:func:`council.session.earlier_rounds.mark_round`, the latter on the interdiff the CLI
stored), the open findings a ``--since-last`` round carries
(:func:`council.session.earlier_rounds.carry`: untouched, not dismissed or raised again;
they gate), and dismissals and the baseline (:func:`council.session.decisions.suppress`;
dismissals win). It also reads the session's recall (:mod:`council.session.remembered`), so
recognized findings keep their ids. Read once, before the settling transaction: two rounds
of one session settling at once may both show a repeat as new; nothing is lost.
Source: docs/architecture.md "State in Redis" (sessions), issue "CI outputs that forges
accept".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from council.change.diff import Change, parse_diff
from council.model.findings import Finding
from council.model.occurrence import AddedLines, CodeReader, stamp
from council.model.report import CouncilReport
from council.session.baseline import Baseline, read_baseline
from council.session.decisions import suppress
from council.session.earlier_rounds import carry, mark_round
from workers.app.services import Runtime
from workers.stores.run_inputs import SettleInputs
from workers.stores.run_record import RunRecord
from workers.stores.sessions import SessionStore


@dataclass(frozen=True)
class SessionMarks:
    """What the session says about a round: applied with :meth:`apply`."""

    earlier: tuple[Finding, ...] = ()
    """The findings still open after the last completed run (checked for outdated code,
    and carried when ``carry``)."""
    fingerprints: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    """Every fingerprint a completed round of the session reported → the ids it was
    reported under (:func:`council.session.earlier_rounds.seen_by_fingerprint`)."""
    since: Change | None = None
    """The interdiff since the last reviewed head; None when this clone lacked it."""
    baseline: Baseline = field(default_factory=Baseline)
    dismissals: Mapping[str, str] = field(default_factory=dict)
    """Fingerprint → the reason a person gave when dismissing it."""
    dismissed: Mapping[str, Finding] = field(default_factory=dict)
    """Fingerprint → the finding dismissed, for the dismissals that kept it."""
    recall: tuple[Finding, ...] = ()
    """The findings the session remembers (:func:`council.session.remembered.recalled`), or those
    still open after the last completed run when it kept none yet."""
    carry: bool = False
    """The round reviews only the commits after the last reviewed head (``--since-last``)."""

    def apply(
        self,
        report: CouncilReport,
        pull: Change | None = None,
        code: CodeReader | None = None,
        added: AddedLines | None = None,
    ) -> CouncilReport:
        """The report with ``seen``, ``outdated``, ``carried`` and ``suppressed`` filled.

        Without an interdiff nothing can be said to be outdated, so none is listed, and
        none is carried (the CLI reviews the whole change then). ``pull``: the pull
        request's change, what a decision written before occurrences were kept can be
        shown to cover (:func:`council.session.decisions.untouched`), and a decision that
        kept no block (:mod:`council.session.stale`). ``code``: the head tree, where a
        carried finding's block is read again (its code is as it was filed; the lines
        around it may not be); ``added``: the pull request's added lines. Decisions are
        applied at the report's gate. Never raises.
        """
        earlier = self.earlier if self.since is not None else ()
        marked = mark_round(
            report, earlier, self.fingerprints, self.since or Change(), recognizing=self.earlier
        )
        if self.carry and self.since is not None:
            marked = carry(marked, earlier, self.since)
            if code is not None and marked.carried:
                carried = tuple(stamp(marked.carried, code, added, blocks_only=True))
                marked = marked.model_copy(update={"carried": carried})
        return suppress(marked, self.baseline, self.dismissals, self.dismissed, change=pull)


def session_marks(
    rt: Runtime, record: RunRecord, inputs: SettleInputs | None = None
) -> SessionMarks:
    """Read the session's marks for the run ``record`` from Redis (the run's own inputs
    from ``inputs`` when the caller read them already).

    A stored baseline was read by the CLI before the run (an unreadable one refused it
    with exit 2), so it reads here; should it not, the run is marked without it rather
    than left unsettled.
    """
    sessions, session = rt.sessions, record.session
    earlier = tuple(sessions.open_findings(session))
    dismissals = sessions.dismissals(session)
    inputs = inputs or rt.runs.settle_inputs(record.run_id, session)
    since, baseline_text = inputs.since, inputs.baseline
    try:
        baseline = read_baseline(baseline_text) if baseline_text else Baseline()
    except ValueError:
        baseline = Baseline()
    return SessionMarks(
        earlier=earlier,
        fingerprints=sessions.reported_ids(session),
        since=parse_diff(since) if since is not None else None,
        baseline=baseline,
        dismissals={p: d.reason for p, d in dismissals.items()},
        dismissed={p: d.finding for p, d in dismissals.items() if d.finding is not None},
        recall=recall_of(sessions, session, earlier, inputs),
        carry=inputs.carry,
    )


def recall_of(
    sessions: SessionStore,
    session: str,
    still_open: Sequence[Finding] | None = None,
    inputs: SettleInputs | None = None,
) -> tuple[Finding, ...]:
    """The findings ``session`` remembers for recognition (``session:{s}:recall``), or,
    in a session written before the memory was kept, those still open after its last
    completed run (``still_open`` when the caller read them already; the recall from
    ``inputs`` when they were read with the session)."""
    told = inputs is not None and inputs.next_id is not None
    recall = inputs.recall if inputs is not None and told else sessions.recall(session)
    if recall is not None:
        return tuple(recall)
    return tuple(still_open if still_open is not None else sessions.open_findings(session))
