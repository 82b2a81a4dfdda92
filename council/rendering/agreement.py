"""Agreement as the reports show it: "k of n", and the other tellings of a finding.

A consolidated finding (:func:`council.merging.consolidation.consolidate`) is one line, comment
or result, however many reviewers told it; what each of the others said is folded into
its body, so nothing a reviewer said is lost in any format. Pure. Source: docs/harvest.md §8.
"""

from __future__ import annotations

from typing import Any

from council.model.findings import ChangeAnchor, FileAnchor, Finding, Member

TELLING_CHARS = 600
"""The most characters of another telling's discussion folded into a comment or result
(the whole of it is in the JSON report's ``members``)."""


def agreement_text(finding: Finding) -> str:
    """``2 of 3`` (k reviewers raised it of n heard in full), or "" when not known."""
    got = finding.agreement
    return f"{got.k} of {got.n}" if got is not None else ""


def other_tellings(finding: Finding) -> tuple[Member, ...]:
    """The members after the first (the finding shows the first's own telling)."""
    return finding.members[1:] if finding.members else ()


def place_text(member: Member) -> str:
    """Where a telling points, plainly: ``app.py:12-14``, ``app.py``, ``the change``."""
    anchor = member.anchor
    if isinstance(anchor, ChangeAnchor):
        return "the change"
    if isinstance(anchor, FileAnchor):
        return anchor.path
    lines = f"{anchor.start_line}-{anchor.line}" if anchor.start_line else str(anchor.line)
    side = " (old side)" if anchor.side == "old" else ""
    return f"{anchor.path}:{lines}{side}"


def discussion_cut(member: Member, chars: int = TELLING_CHARS) -> str:
    """A telling's discussion, cut to ``chars`` with an ellipsis."""
    text = member.discussion.strip()
    return text if len(text) <= chars else text[:chars].rstrip() + "…"


def tellings_plain(finding: Finding) -> str:
    """The other tellings as plain text (SARIF messages, Code Quality bodies); "" if none.

    One paragraph each: ``Also told by owl (app.py:12-14, critical): subject``, then its
    discussion (cut to :data:`TELLING_CHARS`).
    """
    parts: list[str] = []
    for member in other_tellings(finding):
        facts = [place_text(member), *([member.severity] if member.severity else [])]
        head = f"Also told by {member.participant} ({', '.join(facts)}): {member.subject}"
        said = discussion_cut(member)
        parts.append(head + (f"\n{said}" if said else ""))
    return "\n\n".join(parts)


def agreement_properties(finding: Finding) -> dict[str, Any]:
    """``{"agreement": {"k", "n"}, "tellings": [...]}`` for a result's properties: the
    agreement and each member's participant, subject, anchor kind and severity."""
    properties: dict[str, Any] = {}
    if finding.agreement is not None:
        properties["agreement"] = {"k": finding.agreement.k, "n": finding.agreement.n}
    if finding.members:
        properties["tellings"] = [
            {
                "participant": m.participant,
                "subject": m.subject,
                "where": place_text(m),
                **({"severity": m.severity} if m.severity else {}),
            }
            for m in finding.members
        ]
    return properties
