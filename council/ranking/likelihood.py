"""How likely a consolidated finding is real: naive Bayes over who raised it and who did not.

Each reviewer is a noisy rater with two rates (Dawid–Skene's per-rater reliability):
``s`` = P(raises it | real), ``f`` = P(raises it | not real). Given the council's base
rate ``π`` = P(real), the log-odds that a finding is real add one term per raiser,
``log(s/f)``, and one per reviewer heard that stayed silent, ``log((1-s)/(1-f))``; a shown
script that ran adds a fixed term. Rates are estimated from track records with Beta
smoothing, so a reviewer with no history gets the prior (and the note says so). The sum
of terms is shrunk by :attr:`Model.temperature` (reviewers are not independent, naive
Bayes over-counts them). Pure. Source: docs/ranking.md "The likelihood".
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from council.model.findings import Finding
from council.ranking.records import TrackRecord, raisers_of

EPSILON = 1e-3
"""Rates are kept in [EPSILON, 1 - EPSILON]: no single count makes a term infinite."""


@dataclass(frozen=True)
class Model:
    """The model's constants (docs/ranking.md "Choosing the constants": each chosen by
    leaving one repository out, bench/ranking.py)."""

    base_rate: float = 0.35
    """Prior mean of P(real) for a council with no history."""
    base_strength: float = 4.0
    """How many findings the base-rate prior weighs as."""
    precision_strength: float = 4.0
    """How many findings a reviewer's precision prior (centred on the base rate) weighs."""
    sensitivity: float = 0.4
    """Prior mean of P(raises it | real) for a reviewer never heard on a judged finding."""
    sensitivity_strength: float = 4.0
    acted_weight: float = 0.5
    """What a finding gone outdated counts as, in confirmed findings (a weak yes)."""
    evidence_log_odds: float = math.log(2.0)
    """Added when a telling shows a script that ran (not measured: the corpus has none)."""
    temperature: float = 1.0
    """The sum of terms is multiplied by this before the sigmoid, and by
    ``sqrt(reference_council / reviewers)`` in a council of more reviewers than that."""
    reference_council: int = 3
    """A council up to this size is not shrunk further (bench: 1.0 chosen at 3, 0.5 at 12)."""
    volume_weight: float = 0.25
    """How much a raiser saying more than usual this round lowers each of its findings:
    ``volume_weight * log(usual / this round's)`` per raiser."""
    usual_findings: float = 3.0
    """Prior mean of a reviewer's findings per round."""
    usual_strength: float = 2.0
    """How many rounds that prior weighs as."""


MODEL = Model()
"""The shipped constants."""


class Rank(BaseModel):
    """A finding's likelihood and the words that explain it (``CouncilReport.ranks``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    likelihood: float = Field(ge=0.0, le=1.0)
    """The estimated probability that a person treats the finding as real."""
    why: str = ""
    """One phrase: who raised it with what record, who was heard and silent."""
    prior: tuple[str, ...] = ()
    """Raisers with no track record: their terms are the prior's."""


def _clip(p: float) -> float:
    return min(1.0 - EPSILON, max(EPSILON, p))


def _logit(p: float) -> float:
    p = _clip(p)
    return math.log(p / (1.0 - p))


def base_rate(records: Collection[TrackRecord], model: Model = MODEL) -> float:
    """P(real) for a finding of this council: judged findings its reviewers were heard on
    (raised or not) that were confirmed, pooled, smoothed towards ``model.base_rate``."""
    real = sum(r.told_confirmed + r.missed for r in records)
    told = sum(r.told_confirmed + r.told_dismissed + r.missed + r.passed for r in records)
    return (real + model.base_rate * model.base_strength) / (told + model.base_strength)


def precision(record: TrackRecord, pi: float, model: Model = MODEL) -> float:
    """P(real | it raised it): its judged findings, smoothed towards ``pi``."""
    good = record.confirmed + model.acted_weight * record.acted
    judged = good + record.dismissed
    return (good + pi * model.precision_strength) / (judged + model.precision_strength)


def rates(record: TrackRecord, pi: float, model: Model = MODEL) -> tuple[float, float]:
    """(s, f): P(raises | real) and P(raises | not real). ``s`` from the real findings it
    was heard on; ``f`` from the false ones, its prior the ``f`` that makes ``s`` agree
    with its precision (odds(p) = odds(π)·s/f)."""
    s = (record.told_confirmed + model.sensitivity * model.sensitivity_strength) / (
        record.told_confirmed + record.missed + model.sensitivity_strength
    )
    s = _clip(s)
    p = _clip(precision(record, pi, model))
    f0 = _clip(s * (_clip(pi) / (1 - _clip(pi))) / (p / (1 - p)))
    f = (record.told_dismissed + f0 * model.sensitivity_strength) / (
        record.told_dismissed + record.passed + model.sensitivity_strength
    )
    return s, _clip(f)


def usual(record: TrackRecord, model: Model = MODEL) -> float:
    """Its findings per round, smoothed towards ``model.usual_findings``."""
    return (record.findings + model.usual_findings * model.usual_strength) / (
        record.rounds + model.usual_strength
    )


def _said(record: TrackRecord) -> str:
    if record.judged == 0:
        return f"{record.participant} (no track record yet: a prior)"
    return (
        f"{record.participant} (dismissed {record.dismissed} of {record.judged}"
        f"{', acted on ' + str(record.acted) if record.acted else ''})"
    )


def rank(
    raisers: Sequence[str],
    heard: Collection[str],
    records: Mapping[str, TrackRecord],
    *,
    evidence: bool = False,
    told: Mapping[str, int] | None = None,
    model: Model = MODEL,
) -> Rank:
    """The likelihood of a finding ``raisers`` raised, ``heard`` (the reviewers heard in
    full) heard, each one's record in ``records`` (participant → record; absent: empty).
    ``evidence``: a telling shows a script that ran; ``told``: how many findings each
    reviewer filed this round (absent: its usual). Never raises."""
    everyone = list(dict.fromkeys([*raisers, *heard]))
    of = {who: records.get(who) or TrackRecord(participant=who, identity="") for who in everyone}
    pi = base_rate(list(of.values()), model)
    terms = 0.0
    for who in dict.fromkeys(raisers):
        terms += _logit(precision(of[who], pi, model)) - _logit(pi)
        said = (told or {}).get(who)
        if said:
            terms += model.volume_weight * math.log(usual(of[who], model) / said)
    silent = [who for who in everyone if who not in raisers]
    for who in silent:
        s, f = rates(of[who], pi, model)
        terms += math.log(1.0 - s) - math.log(1.0 - f)
    if evidence:
        terms += model.evidence_log_odds
    shrink = model.temperature * min(1.0, math.sqrt(model.reference_council / len(everyone)))
    value = 1.0 / (1.0 + math.exp(-(_logit(pi) + shrink * terms)))
    prior = tuple(who for who in dict.fromkeys(raisers) if of[who].judged == 0)
    why = "raised by " + ", ".join(_said(of[who]) for who in dict.fromkeys(raisers))
    if silent:
        why += "; heard, not raised by " + ", ".join(silent)
    if evidence:
        why += "; a shown script ran"
    return Rank(likelihood=min(1.0, max(0.0, value)), why=why, prior=prior)


def ran_a_script(finding: Finding) -> bool:
    """Whether a telling of the finding shows a block a script call ran (ok or failed)."""
    verdicts = [*(finding.evidence or ())]
    for member in finding.members or ():
        verdicts.extend(member.evidence or ())
    return any(v.label in ("ok", "failed") for v in verdicts)


def rank_finding(
    finding: Finding,
    heard: Collection[str],
    records: Mapping[str, TrackRecord],
    told: Mapping[str, int] | None = None,
    model: Model = MODEL,
) -> Rank:
    """:func:`rank` of a consolidated finding: its raisers, its evidence."""
    return rank(
        raisers_of(finding),
        heard,
        records,
        evidence=ran_a_script(finding),
        told=told,
        model=model,
    )
