"""A reviewer's scorecard: what its track record says, as ``council outcomes`` prints it.

Precision is the mean of a Beta(1 + confirmed + acted/2, 1 + dismissed) posterior, with
its standard deviation as the uncertainty: a reviewer judged twice is not "100%".
Source: docs/ranking.md "Scorecards".
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from council.ranking.likelihood import MODEL
from council.ranking.records import TrackRecord


class Scorecard(BaseModel):
    """One reviewer identity's figures."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    participant: str
    identity: str
    findings: int
    confirmed: int
    dismissed: int
    acted: int
    precision: float
    """The posterior mean of P(real | it raised it)."""
    spread: float
    """The posterior's standard deviation."""
    per_round: float | None
    """Findings per round; None when no round was counted."""
    cost_per_confirmed: float | None
    """US dollars per confirmed finding; None when no cost was known or none confirmed."""


def scorecard(record: TrackRecord) -> Scorecard:
    """The figures of one record."""
    a = 1.0 + record.confirmed + MODEL.acted_weight * record.acted
    b = 1.0 + record.dismissed
    mean = a / (a + b)
    spread = math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    return Scorecard(
        participant=record.participant,
        identity=record.identity,
        findings=max(record.findings, record.judged),
        confirmed=record.confirmed,
        dismissed=record.dismissed,
        acted=record.acted,
        precision=mean,
        spread=spread,
        per_round=record.findings / record.rounds if record.rounds else None,
        cost_per_confirmed=(
            record.cost_usd / record.confirmed if record.priced and record.confirmed else None
        ),
    )


def scorecard_lines(records: Iterable[TrackRecord]) -> list[str]:
    """One line per record, best estimated precision first; a line saying there is none."""
    cards = sorted((scorecard(r) for r in records), key=lambda c: (-c.precision, c.participant))
    if not cards:
        return [
            "no track records yet: import outcomes (council outcomes import FILE) or "
            "dismiss and confirm findings"
        ]
    lines = []
    for c in cards:
        per = f"{c.per_round:.1f}" if c.per_round is not None else "?"
        cost = (
            f"${c.cost_per_confirmed:.2f} a confirmed finding"
            if c.cost_per_confirmed is not None
            else "cost a confirmed finding: unpriced"
        )
        judged = c.confirmed + c.dismissed + c.acted
        precision = (
            f"precision {c.precision:.2f} ± {c.spread:.2f}"
            if judged
            else f"precision not measured yet (no finding judged; the prior {c.precision:.2f})"
        )
        lines.append(
            f"{c.participant} [{c.identity}]: {c.findings} findings, {c.confirmed} confirmed, "
            f"{c.dismissed} dismissed, {c.acted} acted on; {precision}; {per} findings a "
            f"round; {cost}"
        )
    return lines
