"""What happens live adds to the track records: a filed round (findings, a round, its
cost), a person's verdicts (``council dismiss``, an answered ``confirm-finding`` ask), a
finding gone outdated (a weak "acted on"). Pure: the stores add them exactly once, keyed
by the run or the finding (:mod:`workers.stores.track.records`).
Source: docs/ranking.md "Track records".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from council.model.participant import Identity
from council.model.report import CouncilReport
from council.ranking.records import (
    TrackRecord,
    Verdict,
    identity_key,
    outcome_counts,
    raisers_of,
)


def as_records(
    counts: Mapping[str, Mapping[str, int]], identities: Mapping[str, Identity | None]
) -> list[TrackRecord]:
    """Counts by participant (:func:`outcome_counts`) as records of the identity each one
    holds in ``identities`` (the session's ledger; absent: its id-only history)."""
    return [
        TrackRecord.model_validate(
            {"participant": who, "identity": identity_key(identities.get(who)), **added}
        )
        for who, added in counts.items()
    ]


def round_records(
    report: CouncilReport, identities: Mapping[str, Identity | None]
) -> list[TrackRecord]:
    """What a filed round adds to its reviewers' records: the findings each one filed,
    one round, and its cost when priced. Only reviewers that answered (a failed or
    stopped one said nothing a person can judge); the judge is no reviewer."""
    out: list[TrackRecord] = []
    for p in report.participants:
        if p.role != "reviewer" or not p.heard_in_full:
            continue
        out.append(
            TrackRecord(
                participant=p.id,
                identity=identity_key(identities.get(p.id)),
                findings=p.findings,
                rounds=1,
                cost_usd=p.cost_usd or 0.0,
                priced=p.cost_usd is not None,
            )
        )
    return out


def judged_records(
    report: CouncilReport,
    verdicts: Mapping[int, Verdict],
    identities: Mapping[str, Identity | None],
) -> list[TrackRecord]:
    """What a person's verdicts on findings of ``report`` (finding id → verdict) add:
    for each finding's raisers, and the silent reviewers heard in full that round
    (:func:`outcome_counts`). A finding not in the report counts for no one."""
    heard = [p.id for p in report.participants if p.role == "reviewer" and p.heard_in_full]
    by_id = {f.id: f for f in report.open_findings if f.id is not None}
    out: list[TrackRecord] = []
    for fid, verdict in verdicts.items():
        finding = by_id.get(fid)
        if finding is None:
            continue
        out.extend(as_records(outcome_counts(verdict, raisers_of(finding), heard), identities))
    return out


def answered_verdicts(report: CouncilReport) -> dict[int, Verdict]:
    """The verdicts a person gave by answering the report's ``confirm-finding`` asks:
    finding id → ``confirmed`` for a "yes", ``dismissed`` for a "no"."""
    out: dict[int, Verdict] = {}
    for ask in report.asks:
        if not ask.confirms or ask.answer is None or ask.finding is None:
            continue
        if ask.answer.value in ("yes", "no"):
            out[ask.finding] = "confirmed" if ask.answer.value == "yes" else "dismissed"
    return out


def acted_records(
    report: CouncilReport, identity: Callable[[str], Identity | None]
) -> dict[int, list[TrackRecord]]:
    """What the earlier findings ``report`` marks outdated (the code at their anchor
    changed) add, by finding id: ``acted`` for each one's raisers, as the identity
    ``identity`` gives it (the session's ledger). Keyed so the store counts a finding
    once, whichever round or redelivery files it again."""
    out: dict[int, list[TrackRecord]] = {}
    for finding in report.outdated:
        raisers = raisers_of(finding)
        if finding.id is not None and raisers:
            counts = outcome_counts("acted", raisers, None)
            out[finding.id] = as_records(counts, {who: identity(who) for who in raisers})
    return out
