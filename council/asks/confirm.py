"""``[policy] confirm``: a person confirms a finding before it may fail the gate.

A model can be wrong with great confidence. With ``confirm = "critical"`` in the
roster's ``[policy]``, every finding of the round at or above that severity that would
gate (open, not suppressed, not outside the filter) is put to a person as a
``confirm-finding`` ask instead of failing CI on the model's word alone: the run waits
(``waiting``), the CLI exits 4, and once every ask is answered the run settles: a finding
the person rejected is dismissed with their reason (it no longer gates, in this round and
the later ones), one they confirmed gates as usual.

Pure: the report in, the asks out; the answers in, the settled report and the dismissals
out. Source: docs/evidence-and-asks.md §2, docs/architecture.md "The run lifecycle".
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from council.asks.ask import Ask
from council.asks.component import PROPS_MAX_BYTES, Component
from council.asks.pending import Answer, PendingAsk
from council.model.findings import Finding, anchor_path, severity_rank
from council.model.fingerprint import fingerprint
from council.model.report import CouncilReport, RunStatus, Suppression
from council.round.gate import gate_tripped, parse_fail_on

CONFIRMABLE = ("critical", "medium", "minor")
"""The severities ``[policy] confirm`` may name."""


def ask_id(run_id: str, finding: int) -> str:
    """The id of the confirmation of ``finding`` in ``run_id``: stable, so filing the same
    run again asks the same question, and unguessable enough to be typed, not browsed."""
    digest = hashlib.sha256(f"{run_id}:{finding}".encode()).hexdigest()[:16]
    return f"ask_{digest}"


def confirmation_asks(report: CouncilReport, threshold: str) -> tuple[PendingAsk, ...]:
    """One ``confirm-finding`` ask per finding of this round that would fail a gate at
    ``threshold`` (severity at or above it, open, not suppressed, not filtered), in
    filing order. Raises ValueError for an unknown threshold."""
    level = parse_fail_on(threshold)
    floor = severity_rank(level)
    asks: list[PendingAsk] = []
    mine = {f.id for f in report.findings}
    for finding in gate_tripped(report.gated(fail_on=level)):
        if finding.id is None or finding.id not in mine:
            continue  # carried from an earlier round: it was settled then
        if severity_rank(finding.severity) < floor:
            continue
        asks.append(
            PendingAsk(
                id=ask_id(report.run_id, finding.id),
                run=report.run_id,
                finding=finding.id,
                ask=Ask(question=_question(finding), component=_component(finding)),
            )
        )
    return tuple(asks)


def _question(finding: Finding) -> str:
    path = anchor_path(finding.anchor)
    where = json.dumps(path, ensure_ascii=False) if path is not None else "the change"
    return (
        f"Is finding {finding.id} ({finding.severity}) a real problem that should fail "
        f"the gate? {finding.subject!r} in {where}"
    )


def _component(finding: Finding) -> Component:
    """The ``confirm-finding`` component, the finding in its props (its discussion cut
    so the props stay under :data:`PROPS_MAX_BYTES`)."""
    shown = finding.model_dump(
        mode="json",
        exclude_none=True,
        include={"id", "anchor", "label", "subject", "discussion", "severity", "raised_by"},
    )
    room = PROPS_MAX_BYTES // 2
    discussion = str(shown.get("discussion", ""))
    if len(discussion.encode()) > room:
        shown["discussion"] = discussion.encode()[:room].decode(errors="ignore") + " […]"
    return Component(component_id="confirm-finding", props={"finding": shown})


def waiting_report(report: CouncilReport, asks: tuple[PendingAsk, ...]) -> CouncilReport:
    """The report of a run waiting on ``asks``: status ``waiting``, the status it settles
    as once answered kept in ``resumes_as``."""
    return report.model_copy(
        update={"status": "waiting", "asks": asks, "resumes_as": report.status}
    )


def unanswered(report: CouncilReport, answers: Mapping[str, Answer]) -> list[PendingAsk]:
    """The asks of ``report`` without an answer in ``answers``."""
    return [a for a in report.asks if a.answer is None and a.id not in answers]


def answered_report(
    report: CouncilReport, answers: Mapping[str, Answer], settled_ms: int
) -> tuple[CouncilReport, dict[str, str]]:
    """The settled report once every ask is answered, and the dismissals to record
    (content fingerprint → the person's reason) for the findings a person rejected.

    A rejected finding is suppressed (source ``dismissed``, the person's reason); a
    confirmed one is left to gate. Raises ValueError when an ask is still unanswered.
    """
    left = unanswered(report, answers)
    if left:
        raise ValueError(f"{len(left)} ask(s) are not answered yet: {left[0].id} …")
    by_id = {f.id: f for f in report.findings if f.id is not None}
    suppressed = dict(report.suppressed)
    dismissals: dict[str, str] = {}
    asks: list[PendingAsk] = []
    for ask in report.asks:
        answer = ask.answer or answers[ask.id]
        asks.append(ask.model_copy(update={"answer": answer}))
        finding = by_id.get(ask.finding) if ask.finding is not None else None
        if not ask.confirms or answer.value != "no" or finding is None or finding.id is None:
            continue
        reason = answer.reason or "rejected by a person asked to confirm it"
        suppressed[finding.id] = Suppression(source="dismissed", reason=reason)
        dismissals[fingerprint(finding)] = reason
    status: RunStatus = report.resumes_as or "settled"
    settled = report.model_copy(
        update={
            "status": status,
            "asks": tuple(asks),
            "resumes_as": None,
            "suppressed": suppressed,
            "settled_ms": settled_ms,
        }
    )
    return settled, dismissals
