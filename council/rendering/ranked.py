"""Which findings lead a report: those that gate and those likely enough, by likelihood.

A report with no ranks (not ranked, or written before ranks existed) leads with every
finding, as before. Pure. Source: docs/ranking.md "The report leads with what is likely".
"""

from __future__ import annotations

from collections.abc import Sequence

from council.model.findings import Finding
from council.model.report import CouncilReport
from council.rendering.escape import inline
from council.rendering.finding_text import gating_ids


def likelihood_of(report: CouncilReport, finding: Finding) -> float | None:
    """The finding's likelihood, or None when the report did not rank it."""
    rank = report.ranks.get(finding.id) if finding.id is not None else None
    return None if rank is None else rank.likelihood


def leading_ids(report: CouncilReport) -> set[int]:
    """Ids of the open findings that lead: every one that gates, every one at or above
    ``report.likely_at``, and every one the report did not rank."""
    gating = gating_ids(report)
    out: set[int] = set()
    for f in report.open_findings:
        if f.id is None:
            continue
        p = likelihood_of(report, f)
        if f.id in gating or p is None or p >= report.likely_at:
            out.add(f.id)
    return out


def by_likelihood(report: CouncilReport, findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` most likely first (stable: unranked ones keep their order, after)."""
    return sorted(findings, key=lambda f: -(likelihood_of(report, f) or -1.0))


def likelihood_text(report: CouncilReport, finding: Finding) -> str:
    """``likelihood 0.72`` (with "a prior" when a raiser has no record), or ""."""
    rank = report.ranks.get(finding.id) if finding.id is not None else None
    if rank is None:
        return ""
    prior = f" (no track record yet for {', '.join(rank.prior)}: a prior)" if rank.prior else ""
    return inline(f"likelihood {rank.likelihood:.2f}{prior}")


def less_likely_text(report: CouncilReport, finding: Finding) -> str:
    """``less likely: raised by hawk (dismissed 7 of 10); ...`` for a folded finding."""
    rank = report.ranks.get(finding.id) if finding.id is not None else None
    if rank is None:
        return ""
    return inline(f"less likely ({rank.likelihood:.2f}): {rank.why}")
