"""The console's reviewers page: each reviewer identity's scorecard, as ``council
outcomes`` prints it (:mod:`council.ranking.scorecard`), read from the track records in
Redis (``{prefix}records``, :mod:`workers.stores.track.records`). Plain values, no markup;
best estimated precision first. Source: docs/ranking.md "Scorecards".
"""

from __future__ import annotations

from dataclasses import dataclass

from council.ranking.scorecard import Scorecard, scorecard
from workers.app.services import Runtime
from workers.stores.track.records import RedisRecords


@dataclass(frozen=True)
class ScorecardRow:
    """One reviewer identity's figures, in words."""

    participant: str
    identity: str
    """The identity's key (``id``: the history known by the id only)."""
    findings: int
    confirmed: int
    dismissed: int
    acted: int
    precision: str
    """The posterior mean ± its standard deviation (``0.67 ± 0.18``)."""
    per_round: str
    """Findings a round (``1.5``), "—" when no round was counted."""
    cost_per_confirmed: str
    """US dollars per confirmed finding, "unpriced" when not known."""


def scorecard_rows(rt: Runtime) -> tuple[ScorecardRow, ...]:
    """Every track record Redis holds as a row, best estimated precision first."""
    cards = (scorecard(r) for r in RedisRecords(rt.client, rt.keys).all().values())
    ordered = sorted(cards, key=lambda c: (-c.precision, c.participant, c.identity))
    return tuple(_row(c) for c in ordered)


def _row(card: Scorecard) -> ScorecardRow:
    cost = card.cost_per_confirmed
    return ScorecardRow(
        participant=card.participant,
        identity=card.identity,
        findings=card.findings,
        confirmed=card.confirmed,
        dismissed=card.dismissed,
        acted=card.acted,
        precision=f"{card.precision:.2f} ± {card.spread:.2f}",
        per_round=f"{card.per_round:.1f}" if card.per_round is not None else "—",
        cost_per_confirmed=f"${cost:.2f}" if cost is not None else "unpriced",
    )
