"""How likely a consolidated finding is real: a logistic model over who raised it, who was
heard and silent, their track records, this round's volume and what the tellings name.

The features (:data:`FEATURES`) keep the Dawid–Skene terms of each rater's reliability
(raisers' precision, heard silent reviewers' rates, Beta-smoothed from track records),
add the agreement count and share and how much each raiser said this round, and three
generic text marks (a code span, a line, a file). The weights are fitted by leaving one
repository out (bench/ranking.py); a shown script that ran adds a fixed term. Pure.
Source: docs/ranking.md "The likelihood".
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from council.model.findings import Finding
from council.ranking.records import TrackRecord, raisers_of

EPSILON = 1e-3
"""Rates are kept in [EPSILON, 1 - EPSILON]: no single count makes a term infinite."""


FEATURES: tuple[str, ...] = (
    "prior",
    "raisers",
    "silent",
    "volume",
    "agreement",
    "share",
    "told",
    "code",
    "line",
    "file",
)
"""The logistic model's features, in :attr:`Model.weights` order (docs/ranking.md "The
likelihood"): logit(π); Σ raisers' logit(precision) − logit(base_rate); Σ heard, silent
log((1−s)/(1−f)); Σ raisers' log(usual / this round's); log(raisers); raisers / heard;
log(fewest findings a raiser filed this round); then, each centred on the corpus' mean,
the share of tellings with a code span, naming a line, naming a file."""


@dataclass(frozen=True)
class Model:
    """The model's constants: the smoothing priors, and the logistic weights fitted by
    leaving one repository out (docs/ranking.md "Choosing the constants", bench/ranking.py)."""

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
    usual_findings: float = 3.0
    """Prior mean of a reviewer's findings per round."""
    usual_strength: float = 2.0
    """How many rounds that prior weighs as."""
    intercept: float = -0.476
    weights: tuple[float, ...] = (
        0.0,
        0.259,
        0.447,
        -0.046,
        1.219,
        0.512,
        -0.665,
        0.077,
        0.498,
        -0.401,
    )
    """One per :data:`FEATURES`; the prior and raisers weights are kept ≥ 0 (monotone)."""
    text_centre: tuple[float, float, float] = (0.116, 0.077, 0.084)
    """The corpus' mean code, line and file shares: a finding of unknown text scores 0."""


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
    # "its record": the counts are the reviewer's history, not this finding's fate.
    return (
        f"{record.participant} (its record: {record.dismissed} of {record.judged} judged "
        f"dismissed{', ' + str(record.acted) + ' acted on' if record.acted else ''})"
    )


CODE_SPAN = re.compile(r"`[^`\n]+`")
"""A code span: the telling quotes an identifier or expression."""
NAMES_LINE = re.compile(r"\b(?:lines?|L)\s*\d+|:\d+\b", re.IGNORECASE)
"""``line 12``, ``L12``, ``foo.py:12``."""
NAMES_FILE = re.compile(
    r"\b[\w/.-]+\.(?:py|pyi|ts|tsx|js|jsx|go|java|kt|rb|rs|c|h|cc|cpp|cs|php|swift|scala"
    r"|json|ya?ml|toml|sql|sh|md|html|css)\b"
)
"""A file name with a source or config extension (any repository's: no vocabulary)."""


def text_features(texts: Sequence[str], model: Model = MODEL) -> tuple[float, float, float]:
    """The shares of ``texts`` (one per telling) with a code span, naming a line, naming a
    file, each minus :attr:`Model.text_centre` (no texts: all 0, the corpus' mean)."""
    if not texts:
        return (0.0, 0.0, 0.0)
    shares = [
        sum(bool(pattern.search(t)) for t in texts) / len(texts)
        for pattern in (CODE_SPAN, NAMES_LINE, NAMES_FILE)
    ]
    return (
        shares[0] - model.text_centre[0],
        shares[1] - model.text_centre[1],
        shares[2] - model.text_centre[2],
    )


def features(
    raisers: Sequence[str],
    heard: Collection[str],
    records: Mapping[str, TrackRecord],
    told: Mapping[str, int] | None = None,
    texts: Sequence[str] = (),
    model: Model = MODEL,
) -> tuple[float, ...]:
    """The :data:`FEATURES` of a finding ``raisers`` raised (at least one counted)."""
    who_raised = list(dict.fromkeys(raisers))
    everyone = list(dict.fromkeys([*who_raised, *heard]))
    of = {who: records.get(who) or TrackRecord(participant=who, identity="") for who in everyone}
    pi = base_rate(list(of.values()), model)
    reference = _logit(model.base_rate)
    raised = sum(_logit(precision(of[who], pi, model)) - reference for who in who_raised)
    silent = 0.0
    for who in everyone:
        if who not in who_raised:
            s, f = rates(of[who], model.base_rate, model)
            silent += math.log(1.0 - s) - math.log(1.0 - f)
    this_round = [(told or {}).get(who) or usual(of[who], model) for who in who_raised]
    volume = sum(
        math.log(usual(of[who], model) / n) for who, n in zip(who_raised, this_round, strict=True)
    )
    k = max(1, len(who_raised))
    told_least = math.log(min(this_round)) if this_round else math.log(model.usual_findings)
    return (
        _logit(pi),
        raised,
        silent,
        volume,
        math.log(k),
        k / max(k, len(everyone)),
        told_least,
        *text_features(texts, model),
    )


def _rank(
    raisers: Sequence[str],
    heard: Collection[str],
    records: Mapping[str, TrackRecord],
    evidence: bool,
    told: Mapping[str, int] | None,
    texts: Sequence[str],
    model: Model,
) -> Rank:
    values = features(raisers, heard, records, told, texts, model)
    terms = model.intercept + sum(w * x for w, x in zip(model.weights, values, strict=True))
    if evidence:
        terms += model.evidence_log_odds
    value = 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, terms))))
    everyone = list(dict.fromkeys([*raisers, *heard]))
    of = {who: records.get(who) or TrackRecord(participant=who, identity="") for who in everyone}
    prior = tuple(who for who in dict.fromkeys(raisers) if of[who].judged == 0)
    why = "raised by " + ", ".join(_said(of[who]) for who in dict.fromkeys(raisers))
    silent = [who for who in everyone if who not in raisers]
    if silent:
        why += "; heard, not raised by " + ", ".join(silent)
    if evidence:
        why += "; a shown script ran"
    return Rank(likelihood=min(1.0, max(0.0, value)), why=why, prior=prior)


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
    reviewer filed this round (absent: its usual). Its text unknown: the text features
    are the corpus' mean. Never raises."""
    return _rank(raisers, heard, records, evidence, told, (), model)


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
    """:func:`rank` of a consolidated finding: its raisers, its evidence, its tellings'
    text."""
    return _rank(
        raisers_of(finding), heard, records, ran_a_script(finding), told, tellings(finding), model
    )


def tellings(finding: Finding) -> tuple[str, ...]:
    """Each telling's words: its subject and discussion (the members', else its own)."""
    told = finding.members or (finding,)
    return tuple(" ".join(part for part in (t.subject, t.discussion) if part) for t in told)
