"""The sections of the Markdown report that list findings, each finding shown once.

A finding whose anchor misses the diff (``report.off_diff``) is under "Not on a changed
line", one outside ``--filter`` under "Outside the filter", a suppressed one under
"Dismissed and baselined" (with a line "stays dismissed: matches #5 by agreement
(reworded), not by fingerprint" when its dismissal or baseline entry was matched by
agreement), the rest under "Findings", where a finding an earlier round already reported
is marked "(seen in an earlier round)", and one recognized by agreement says so ("#5 of
an earlier round, reworded: recognised by agreement, not by fingerprint"). Carried,
kept-from-gating and outdated findings get their own sections. A label says "blocking"
only for a finding that gates under the report's policy (:func:`gating_ids`). Each
section is "" when it has nothing to list. Pure; linear in the report's size; never
raises.

Source: docs/architecture.md "Reports, the CLI and the gate", docs/harvest.md §2 (anchors).
"""

from __future__ import annotations

from collections.abc import Collection

from council.change.diff_filter import FILTER_REASONS
from council.model.findings import Finding, severity_rank
from council.model.report import CouncilReport, Reworded
from council.rendering.escape import code, inline
from council.rendering.finding_text import brief, counted, finding_block, gating_ids
from council.rendering.ranked import (
    by_likelihood,
    leading_ids,
    less_likely_text,
    likelihood_text,
)
from council.round.gate import gate_tripped

OFF_DIFF_REASONS: dict[str, str] = {
    "file-absent": "the file is not in the diff on that side",
    "line-absent": "the line is not in the diff",
    "range-crosses-hunks": "the range spans more than one hunk of the diff",
    "range-inverted": "the range ends before it starts",
}
"""What each landing miss code of :func:`council.change.diff.landing` means, for people."""


def findings_section(report: CouncilReport, posted: Collection[int]) -> str:
    """The "Findings" section: this round's findings on the diff, neither suppressed nor
    filtered, most severe first; those in ``posted`` (ids already line comments) are
    counted, not repeated."""
    shown = [
        f
        for f in report.findings
        if f.id not in posted
        and f.id not in report.off_diff
        and f.id not in report.suppressed
        and f.id not in report.filtered
    ]
    count = sum(1 for f in report.findings if f.id in posted)
    if not shown and not count:
        return ""
    parts = ["### Findings"]
    if count:
        where = f"{counted(count, 'finding')} {'is' if count == 1 else 'are'}"
        parts.append(f"{where} posted as line comments on the diff and not repeated here.")
    seen, gating = set(report.seen), gating_ids(report)
    leading = leading_ids(report)
    ordered = by_likelihood(report, sorted(shown, key=_rank))
    blocks = [
        finding_block(
            f,
            seen=f.id in seen,
            missed=_joined(_recognized(report, f), likelihood_text(report, f)),
            gates=f.id in gating,
        )
        for f in ordered
        if f.id in leading
    ]
    folded = [
        finding_block(
            f,
            seen=f.id in seen,
            missed=_joined(_recognized(report, f), less_likely_text(report, f)),
            gates=False,
        )
        for f in ordered
        if f.id not in leading
    ]
    if folded:
        below = f"below likelihood {report.likely_at:.2f}"
        summary = f"{counted(len(folded), 'less likely finding')} ({below})"
        if not blocks:  # else the heading would stand over nothing but a closed list
            parts.append(
                f"No finding reaches likelihood {report.likely_at:.2f}: "
                f"{counted(len(folded), 'finding')} below, most likely first."
            )
        blocks += ["<details>", f"<summary>{summary}</summary>", *folded, "</details>"]
    return "\n\n".join([*parts, *blocks])


def _joined(*facts: str) -> str:
    return " · ".join(f for f in facts if f)


def _recognized(report: CouncilReport, finding: Finding) -> str:
    """For a finding recognised as an earlier one by agreement, not by its fingerprint:
    it kept that id (filing recognized it), or restates it under a new one."""
    earlier = report.seen_by_agreement.get(finding.id) if finding.id is not None else None
    if earlier is None:
        return ""
    if earlier == finding.id:
        return (
            f"#{earlier} of an earlier round, reworded: recognised by agreement, not by fingerprint"
        )
    return f"restates finding {earlier} of an earlier round (recognised by agreement)"


def _rank(finding: Finding) -> tuple[int, int]:
    """Findings are listed by severity, then by how many reviewers raised them."""
    return (-severity_rank(finding.severity), -finding.raisers)


def off_diff_section(report: CouncilReport) -> str:
    """The "Not on a changed line" section: findings whose anchor misses the diff, and why."""
    missed = [
        f
        for f in report.findings
        if f.id in report.off_diff and f.id not in report.suppressed and f.id not in report.filtered
    ]
    if not missed:
        return ""
    seen, gating = set(report.seen), gating_ids(report)
    ordered = sorted(missed, key=lambda f: -severity_rank(f.severity))
    lead = "Their anchors do not land on a line the diff shows, so they cannot be line comments."
    blocks = [
        finding_block(f, seen=f.id in seen, missed=_missed(report, f), gates=f.id in gating)
        for f in ordered
    ]
    return "\n\n".join(["### Not on a changed line", lead, *blocks])


def filtered_section(report: CouncilReport) -> str:
    """The findings ``--filter`` kept from gating and inline posting, each with why."""
    kept_out = [
        f for f in report.findings if f.id in report.filtered and f.id not in report.suppressed
    ]
    if not kept_out:
        return ""
    lead = (
        f"Outside the filter ({code(report.filter or 'added')}): listed here, never posted "
        "as line comments, never gating."
    )
    ordered = sorted(kept_out, key=lambda f: -severity_rank(f.severity))
    blocks = [
        finding_block(
            f, seen=False, missed="outside the filter: " + _filter_why(report, f), gates=False
        )
        for f in ordered
    ]
    return "\n\n".join(["### Outside the filter", lead, *blocks])


def unagreed_section(report: CouncilReport) -> str:
    """The findings ``--min-agreement`` kept from gating: listed (they are shown, and
    posted, where they belong), each with how many reviewers raised it, and how many at
    its severity when fewer (the gate decides on the tellings)."""
    tripped = {f.id for f in gate_tripped(report)}
    items = [
        f"- {brief(f, gates=False)} · raised by {_raised(f, report.unagreed[f.id])}"
        for f in report.open_findings
        if f.id is not None
        and f.id in report.unagreed
        and f.id not in report.suppressed
        and f.id not in tripped
    ]
    if not items:
        return ""
    lead = (
        f"Raised at their severity by fewer than {report.min_agreement} reviewers "
        f"(--min-agreement {report.min_agreement}): shown above, not gating."
    )
    return "\n".join(["### Kept from gating by agreement", "", lead, "", *items])


def _raised(finding: Finding, reach: int) -> str:
    """``2 reviewers``, or ``2 reviewers, 1 at critical`` when fewer rated it so."""
    raisers = max(finding.raisers, reach)
    said = counted(raisers, "reviewer")
    return said if reach >= raisers else f"{said}, {reach} at {finding.severity}"


def _filter_why(report: CouncilReport, finding: Finding) -> str:
    reason = report.filtered.get(finding.id, "") if finding.id is not None else ""
    return FILTER_REASONS.get(reason, reason)


def _missed(report: CouncilReport, finding: Finding) -> str:
    miss = report.off_diff.get(finding.id) if finding.id is not None else None
    if miss is None:
        return ""
    return f"not on a changed line: {OFF_DIFF_REASONS.get(miss, miss)}"


def open_carried(report: CouncilReport) -> list[Finding]:
    """The carried findings (``--since-last``) still open: those not dismissed or
    baselined since (those are listed with the suppressed)."""
    return [f for f in report.carried if f.id not in report.suppressed]


def carried_section(report: CouncilReport) -> str:
    """The "Still open from earlier rounds" section: carried findings (``--since-last``)."""
    shown = open_carried(report)
    if not shown:
        return ""
    lead = (
        "Findings of earlier rounds that this round did not review again: the new commits "
        "left their code as it was, so they still stand, and gate."
    )
    ordered = sorted(shown, key=lambda f: -severity_rank(f.severity))
    gating = gating_ids(report)
    blocks = [finding_block(f, gates=f.id in gating) for f in ordered]
    return "\n\n".join(["### Still open from earlier rounds", lead, *blocks])


def suppressed_section(report: CouncilReport) -> str:
    """The "Dismissed and baselined" section: suppressed findings, one line each, and why."""
    items: list[str] = []
    for finding in report.open_findings:
        entry = report.suppressed.get(finding.id) if finding.id is not None else None
        if entry is None:
            continue
        how = {"dismissed": "dismissed", "baseline": "baselined", "judge": "not upheld"}[
            entry.source
        ]
        why = inline(entry.reason) if entry.reason.strip() else "no reason given"
        items.append(f"- {brief(finding, gates=False)} · {how}: {why}")
        if entry.by_agreement is not None:
            items.append(f"  {_reworded(entry.source, entry.by_agreement)}")
        for member in (finding.members or ())[1:]:
            grade = f" ({member.severity})" if member.severity else ""
            items.append(
                f"  also told by {inline(member.participant)}{grade}: {inline(member.subject)}"
            )
    if not items:
        return ""
    lead = "Listed for the record; they neither gate nor post."
    return "\n".join(["### Dismissed and baselined", "", lead, "", *items])


def _reworded(source: str, matched: Reworded) -> str:
    """The line under a suppressed finding matched by agreement, not by fingerprint."""
    if source == "dismissed":
        which = f"#{matched.id}" if matched.id is not None else _entry_name(matched)
        return f"stays dismissed: matches {which} by agreement (reworded), not by fingerprint"
    return (
        f"stays baselined: matches the baseline entry {_entry_name(matched)} by agreement "
        "(reworded), not by fingerprint"
    )


def _entry_name(matched: Reworded) -> str:
    said = f" ({inline(matched.subject)})" if matched.subject.strip() else ""
    return f"{code(matched.fingerprint[:12])}{said}"


def outdated_section(report: CouncilReport) -> str:
    """The "Outdated" section: earlier findings whose code this change edited or removed."""
    if not report.outdated:
        return ""
    lead = "Findings of earlier rounds whose code this change edited or removed."
    items = [f"- {brief(f, gates=False)}" for f in report.outdated]
    return "\n".join(["### Outdated", "", lead, "", *items])
