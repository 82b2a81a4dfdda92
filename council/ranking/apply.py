"""Rank a settled report: a likelihood on every open finding (``CouncilReport.ranks``).

Pure. The heard reviewers are the report's reviewers heard in full; each one's findings
this round is its summary's count. Source: docs/ranking.md "The likelihood".
"""

from __future__ import annotations

from collections.abc import Mapping

from council.model.report import CouncilReport
from council.ranking.likelihood import MODEL, Model, rank_finding
from council.ranking.records import TrackRecord


def ranked(
    report: CouncilReport,
    records: Mapping[str, TrackRecord],
    *,
    likely_at: float | None = None,
    model: Model = MODEL,
) -> CouncilReport:
    """``report`` with a rank for each open finding that has an id (``records``:
    participant → the record it brings); ``likely_at`` replaces the report's when given."""
    reviewers = [p for p in report.participants if p.role == "reviewer"]
    heard = [p.id for p in reviewers if p.heard_in_full]
    told = {p.id: p.findings for p in reviewers}
    ranks = {
        f.id: rank_finding(f, heard, records, told, model)
        for f in report.open_findings
        if f.id is not None
    }
    update: dict[str, object] = {"ranks": ranks}
    if likely_at is not None:
        update["likely_at"] = likely_at
    return report.model_copy(update=update)
