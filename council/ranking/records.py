"""Track records: what people did with each reviewer's findings, per identity.

A :class:`TrackRecord` is counts, nothing else: findings a person confirmed or dismissed
that the reviewer raised, those it was heard on and stayed silent about, findings that
went outdated because the code at their anchor changed (a weak "acted on"). Counts add,
so two stores' records merge by adding what each added. Pure: the stores keep them
(``workers.stores.records``). Source: docs/ranking.md "Track records".
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from council.model.findings import Finding
from council.model.participant import Identity

Verdict = Literal["confirmed", "dismissed", "acted"]
"""What a person did with a finding: confirmed it (a "yes" to ``confirm-finding``),
dismissed it (``council dismiss``, a "no"), or changed the code at its anchor (acted)."""

VERDICTS: tuple[Verdict, ...] = ("confirmed", "dismissed", "acted")

COUNTS: tuple[str, ...] = (
    "confirmed",
    "dismissed",
    "acted",
    "missed",
    "passed",
    "told_confirmed",
    "told_dismissed",
    "findings",
    "rounds",
)
"""The integer fields of a :class:`TrackRecord`, in the order a store keeps them."""


class TrackRecord(BaseModel):
    """One identity's counts (docs/ranking.md "Track records").

    ``confirmed``/``dismissed``/``acted``: findings it raised with that outcome.
    ``missed``/``passed``: confirmed/dismissed findings it was heard on and did NOT raise.
    ``told_confirmed``/``told_dismissed``: of its confirmed/dismissed, those recorded
    with the round's heard reviewers known (a live outcome, an imported line with
    ``silent``): only they, with ``missed``/``passed``, estimate how often it speaks up.
    ``findings``/``rounds``/``cost_usd``: what it filed, in how many rounds, at what cost.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    participant: str
    identity: str
    """:func:`identity_key` of the identity the counts belong to."""
    confirmed: int = Field(default=0, ge=0)
    dismissed: int = Field(default=0, ge=0)
    acted: int = Field(default=0, ge=0)
    missed: int = Field(default=0, ge=0)
    passed: int = Field(default=0, ge=0)
    told_confirmed: int = Field(default=0, ge=0)
    told_dismissed: int = Field(default=0, ge=0)
    findings: int = Field(default=0, ge=0)
    rounds: int = Field(default=0, ge=0)
    cost_usd: float = Field(default=0.0, ge=0.0)
    priced: bool = False
    """Whether some round's cost was known (``cost_usd`` means something)."""

    @property
    def judged(self) -> int:
        """Findings it raised that a person judged (confirmed, dismissed or acted on)."""
        return self.confirmed + self.dismissed + self.acted

    def plus(self, other: TrackRecord) -> TrackRecord:
        """This record with ``other``'s counts added (same identity)."""
        added: dict[str, object] = {
            name: getattr(self, name) + getattr(other, name) for name in COUNTS
        }
        added["cost_usd"] = self.cost_usd + other.cost_usd
        added["priced"] = self.priced or other.priced
        return self.model_copy(update=added)


ID_ONLY = "id"
"""The identity key of a history known only by participant id (an imported line that
names no identity): it stays with the id, whatever the id stands for later."""


def identity_key(identity: Identity | None) -> str:
    """A short stable key of what an id stands for: ``sha256`` of its canonical JSON,
    without the id (the record is looked up by both); :data:`ID_ONLY` for None."""
    if identity is None:
        return ID_ONLY
    fields = identity.model_dump(mode="json", exclude_none=True, exclude={"id"})
    digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()
    return digest[:16]


def raisers_of(finding: Finding) -> tuple[str, ...]:
    """The participants whose tellings a finding holds, in its order: its members', else
    its ``raised_by``, else its origin's participant (none for a person's own finding)."""
    if finding.members:
        return tuple(dict.fromkeys(m.participant for m in finding.members))
    if finding.raised_by:
        return finding.raised_by
    if finding.origin is not None and finding.origin.participant is not None:
        return (finding.origin.participant,)
    return ()


Records = Mapping[tuple[str, str], TrackRecord]
"""(participant id, identity key) → its record."""


def outcome_counts(
    verdict: Verdict, raisers: Iterable[str], heard: Iterable[str] | None
) -> dict[str, dict[str, int]]:
    """What one judged finding adds, participant → field → count: one for each raiser
    (its verdict, and ``told_*`` when ``heard`` is known), and ``missed``/``passed`` for
    each heard reviewer that did not raise it. An ``acted`` finding counts for raisers
    only (whether a silent reviewer would have helped is not known)."""
    raised = list(dict.fromkeys(raisers))
    out: dict[str, dict[str, int]] = {}
    for who in raised:
        counts: dict[str, int] = {verdict: 1}
        if heard is not None and verdict != "acted":
            counts[f"told_{verdict}"] = 1
        out[who] = counts
    if heard is not None and verdict != "acted":
        silent = "missed" if verdict == "confirmed" else "passed"
        for who in dict.fromkeys(heard):
            if who not in out:
                out[who] = {silent: 1}
    return out


def summed(records: Iterable[TrackRecord]) -> dict[tuple[str, str], TrackRecord]:
    """Records keyed by (participant, identity), several of one key added together."""
    out: dict[tuple[str, str], TrackRecord] = {}
    for record in records:
        key = (record.participant, record.identity)
        out[key] = out[key].plus(record) if key in out else record
    return out


def record_keys(identity: Identity | None) -> tuple[str, ...]:
    """The identity keys :func:`record_for` reads for a participant of ``identity``."""
    key = identity_key(identity)
    return (key,) if key == ID_ONLY else (key, ID_ONLY)


def record_for(records: Records, participant: str, identity: Identity | None) -> TrackRecord:
    """The history a participant brings to a round: the record of its identity plus the
    id-only history (imported lines naming no identity); an empty record when none."""
    empty = TrackRecord(participant=participant, identity=identity_key(identity))
    found = records.get((participant, identity_key(identity)), empty)
    if identity is not None and (participant, ID_ONLY) in records:
        found = found.plus(records[(participant, ID_ONLY)])
    return found
