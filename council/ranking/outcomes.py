"""Outcomes to import: one judged finding a line of JSON (``council outcomes import``).

A line: ``{"participant": "hawk", "verdict": "confirmed"}``; ``participant`` may be a
list (every reviewer whose telling the finding held), ``verdict`` is ``confirmed``,
``dismissed`` or ``acted``; optional ``subject`` (what it said, for people), ``silent``
(reviewers heard in that round that did NOT raise it) and ``identity`` (what the id
stood for, :class:`~council.model.participant.Identity`'s JSON without ``id``). One bad
line costs that line (counted, its number kept, the first few reasons kept); lines are
read one at a time, so memory is bounded by the longest line (:data:`MAX_LINE`).
Source: docs/ranking.md "Importing outcomes".
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from council.model.participant import Identity
from council.ranking.records import (
    ID_ONLY,
    VERDICTS,
    TrackRecord,
    Verdict,
    identity_key,
    outcome_counts,
)

MAX_LINE = 64 * 1024
"""The longest line read (bytes of UTF-8); a longer one is a bad line."""

KEPT_REASONS = 5
"""How many bad lines' reasons a reading keeps (their count is always exact)."""


class Outcome(BaseModel):
    """One judged finding."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    participants: tuple[str, ...] = Field(min_length=1)
    verdict: Verdict
    subject: str = ""
    silent: tuple[str, ...] | None = None
    identity: Identity | None = None
    round: str | None = None


@dataclass
class Reading:
    """What a file gave: the outcomes, and the bad lines (count, first reasons)."""

    outcomes: list[Outcome] = field(default_factory=list)
    bad: int = 0
    reasons: list[str] = field(default_factory=list)

    def refuse(self, number: int, reason: str) -> None:
        self.bad += 1
        if len(self.reasons) < KEPT_REASONS:
            self.reasons.append(f"line {number}: {reason}")


def _names(value: object, key: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise ValueError(f"{key!r} must be a participant id or a non-empty list of them")
    if not all(isinstance(n, str) and n.strip() for n in items):
        raise ValueError(f"{key!r} must hold participant ids (non-empty strings)")
    return tuple(dict.fromkeys(n.strip() for n in items))


def outcome_of(line: str) -> Outcome:
    """The outcome one line states. Raises ValueError saying what is wrong and what a
    line should look like."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError('not a JSON object; write {"participant": ID, "verdict": "confirmed"}')
    unknown = set(data) - {"participant", "verdict", "subject", "silent", "identity", "round"}
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(sorted(unknown))}")
    if "participant" not in data:
        raise ValueError("no 'participant': name the reviewer whose finding was judged")
    verdict = data.get("verdict")
    if verdict not in VERDICTS:
        raise ValueError(f"'verdict' must be one of {', '.join(VERDICTS)}, not {verdict!r}")
    participants = _names(data["participant"], "participant")
    given = data.get("silent")
    silent = None if given is None else () if given == [] else _names(given, "silent")
    subject = data.get("subject", "")
    if not isinstance(subject, str):
        raise ValueError("'subject' must be a string")
    identity = data.get("identity")
    if identity is not None:
        if len(participants) > 1:
            raise ValueError("'identity' names what ONE id stood for; give one participant")
        if not isinstance(identity, dict):
            raise ValueError("'identity' must be an object (backend, model, ...)")
        try:
            identity = Identity.model_validate({**identity, "id": participants[0]})
        except ValidationError as exc:
            raise ValueError(f"'identity' is not one: {exc.errors()[0]['msg']}") from None
    within = data.get("round")
    if within is not None and not isinstance(within, str | int):
        raise ValueError("'round' must be a string or a number naming the round")
    return Outcome(
        round=None if within is None else str(within),
        participants=participants,
        verdict=verdict,
        subject=subject,
        silent=None if silent is None else tuple(s for s in silent if s not in participants),
        identity=identity,
    )


def read_outcomes(lines: Iterable[str | bytes]) -> Reading:
    """Every outcome of ``lines`` (blank lines skipped); bad lines counted, never fatal."""
    reading = Reading()
    for number, raw in enumerate(lines, start=1):
        if len(raw) > MAX_LINE:
            reading.refuse(number, f"longer than {MAX_LINE} bytes")
            continue
        line = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
        if not line.strip():
            continue
        try:
            reading.outcomes.append(outcome_of(line))
        except ValueError as exc:
            reading.refuse(number, str(exc))
    return reading


def increments(outcome: Outcome) -> list[TrackRecord]:
    """What one imported outcome adds to each reviewer's record (its identity's, else
    the id's alone): :func:`~council.ranking.records.outcome_counts` as records."""
    heard = None if outcome.silent is None else (*outcome.participants, *outcome.silent)
    key = identity_key(outcome.identity)
    added: list[TrackRecord] = []
    for who, counts in outcome_counts(outcome.verdict, outcome.participants, heard).items():
        ident = key if who == outcome.participants[0] else ID_ONLY
        added.append(TrackRecord.model_validate({"participant": who, "identity": ident, **counts}))
    return added


def records_from(outcomes: Iterable[Outcome]) -> list[TrackRecord]:
    """Every increment of ``outcomes``, with each line naming a ``round`` also counting
    the findings its raisers filed and, once per (participant, round), the round."""
    added: list[TrackRecord] = []
    rounds: set[tuple[str, str]] = set()
    for outcome in outcomes:
        added.extend(increments(outcome))
        if outcome.round is None:
            continue
        for who in outcome.participants:
            added.append(TrackRecord(participant=who, identity=ID_ONLY, findings=1))
        for who in (*outcome.participants, *(outcome.silent or ())):
            if (who, outcome.round) not in rounds:
                rounds.add((who, outcome.round))
                added.append(TrackRecord(participant=who, identity=ID_ONLY, rounds=1))
    return added
