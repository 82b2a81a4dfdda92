"""A finding in the Markdown report, as Conventional Comments: what one finding reads as.

``**issue (blocking):** subject`` (``blocking`` for a finding that gates under the
report's policy, ``non-blocking`` for a critical or minor one that does not, no
decoration otherwise: :func:`decoration`), then where, which id, who raised it
(agreement when several did), severity and confidence, then the discussion as a
blockquote (its text as text, its code blocks in council's fences, each script's verdict
after its block: :func:`~council.rendering.escape.block`), then what each other reviewer
told. The forge renderers
word labels and raisers the same way (:func:`label_text`, :func:`raised_text`), so a
line comment and the report agree. Pure; never raises.

Source: docs/harvest.md §2 (anchors), §8 (raised_by is agreement).
"""

from __future__ import annotations

from council.model.findings import ChangeAnchor, FileAnchor, Finding
from council.model.report import CouncilReport
from council.rendering.agreement import agreement_text, discussion_cut, other_tellings, place_text
from council.rendering.escape import block, code, inline
from council.rendering.evidence_text import verdict_notes
from council.round.gate import gate_tripped

DECORATIONS: dict[str | None, str] = {"critical": "blocking", "minor": "non-blocking"}
"""The Conventional Comments decoration a severity adds to a finding's label where no
gate is known (see :func:`decoration`)."""

SEEN_MARK = "(seen in an earlier round)"
"""The mark after the subject of a finding an earlier round of the session reported."""


def decoration(finding: Finding, gates: bool | None) -> str | None:
    """The Conventional Comments decoration of a finding's label: ``blocking`` when it
    gates (``gates``: it is among :func:`~council.round.gate.gate_tripped`'s), else
    ``non-blocking`` for a critical or minor finding, else none. ``gates`` None (no gate
    known): by severity alone (:data:`DECORATIONS`).

    Why: "blocking" on a finding that does not gate (outside ``--filter``, dismissed,
    baselined, under the threshold, raised by too few) tells a reader to act on what the
    gate let pass, and hides which findings did trip it.
    """
    if gates is None:
        return DECORATIONS.get(finding.severity)
    if gates:
        return "blocking"
    return "non-blocking" if finding.severity in DECORATIONS else None


def gating_ids(report: CouncilReport) -> frozenset[int | None]:
    """The ids of the findings that gate under the report's own policy (``report.gate``:
    :func:`~council.round.gate.gate_tripped`): the only ones a label calls "blocking".
    Computed once per rendering (linear in the report)."""
    return frozenset(f.id for f in gate_tripped(report))


def label_text(finding: Finding, gates: bool | None = None) -> str:
    """The label with its decoration (:func:`decoration`): ``issue (blocking)``,
    ``nitpick``."""
    said = decoration(finding, gates)
    return f"{finding.label} ({said})" if said else finding.label


def brief(finding: Finding, gates: bool | None = None) -> str:
    """One line for a finding listed, not shown: label, subject, where, id."""
    label = label_text(finding, gates)
    facts = [f"**{label}:** {inline(finding.subject)}", location_text(finding)]
    if finding.id is not None:
        facts.append(f"id {finding.id}")
    return " · ".join(facts)


def finding_block(
    finding: Finding, *, seen: bool = False, missed: str = "", gates: bool | None = None
) -> str:
    """A finding shown in full: its label (decorated as :func:`decoration` says, by
    ``gates``) and subject (``seen`` adds :data:`SEEN_MARK`), a line of facts
    (``missed``, when given, says why it is listed where it is), its discussion quoted,
    and each other telling."""
    facts = [location_text(finding)]
    if missed:
        facts.append(missed)
    if finding.id is not None:
        facts.append(f"id {finding.id}")
    who = raised_text(finding)
    if who:
        facts.append(who)
    if finding.severity is not None:
        facts.append(f"severity {finding.severity}")
    if finding.confidence is not None:
        facts.append(f"confidence {finding.confidence:.2f}")
    mark = f" {SEEN_MARK}" if seen else ""
    label = label_text(finding, gates)
    lines = [f"**{label}:** {inline(finding.subject)}{mark}", "", " · ".join(facts)]
    if finding.severity_note:
        lines += ["", f"*{inline(finding.severity_note)}*"]
    if finding.discussion.strip():
        lines.append("")
        shown = block(finding.discussion, verdict_notes(finding.evidence))
        lines += [f"> {line}" if line.strip() else ">" for line in shown]
    for member in other_tellings(finding):
        told = code(place_text(member)) + (f", {member.severity}" if member.severity else "")
        who = inline(member.participant)
        lines += ["", f"Also told by {who} ({told}): {inline(member.subject)}"]
        said = discussion_cut(member)
        if said:
            lines.append("")
            lines += [f"> {line}" if line.strip() else ">" for line in block(said)]
    return "\n".join(lines)


def location_text(finding: Finding) -> str:
    """Where a finding points: ``path:12-14`` (``(old side)`` when so), a whole file, or
    the whole change."""
    anchor = finding.anchor
    if isinstance(anchor, ChangeAnchor):
        return "whole change"
    if isinstance(anchor, FileAnchor):
        return f"{code(anchor.path)} (whole file)"
    lines = f"{anchor.start_line}-{anchor.line}" if anchor.start_line else str(anchor.line)
    side = " (old side)" if anchor.side == "old" else ""
    return f"{code(f'{anchor.path}:{lines}')}{side}"


def raised_text(finding: Finding) -> str:
    """Who raised a finding, as a phrase: ``raised by hawk, owl (2 of 3)`` (k of the n
    reviewers heard in full; ``2 reviewers agree`` when the agreement is not known).

    Empty when nothing is known. Why: a line comment and the report must name the
    raisers the same way; several raisers are agreement. Source: docs/harvest.md §8.
    """
    origin = finding.origin
    judge = origin.participant if origin and origin.kind == "judge" else None
    agreed = agreement_text(finding)
    if finding.raised_by:
        names = ", ".join(inline(name) for name in finding.raised_by)
        notes = []
        if agreed:
            notes.append(agreed)
        elif len(finding.raised_by) > 1:
            notes.append(f"{len(finding.raised_by)} reviewers agree")
        if judge:
            notes.append(f"judge {inline(judge)}")
        return f"raised by {names}" + (f" ({'; '.join(notes)})" if notes else "")
    if origin is None:
        return ""
    if origin.kind == "hand":
        return "filed by hand" + (f" ({inline(origin.participant)})" if origin.participant else "")
    if origin.participant is None:
        return f"raised by a {origin.kind}"
    suffix = " (judge)" if origin.kind == "judge" else ""
    suffix += f" ({agreed})" if agreed and origin.kind != "judge" else ""
    return f"raised by {inline(origin.participant)}{suffix}"


def counted(number: int, noun: str) -> str:
    """A count with its noun, plural unless one (``1 finding``, ``3 reviewers``); the
    report's sentences all count this way."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"
