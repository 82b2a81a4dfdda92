"""Benchmark: does ranking by likelihood lead with what is real, on repositories it never saw?

On the agreement corpus (bench/agreement_corpus.py; 30 pull requests of 3 repositories,
12 tools, each issue labelled with the golden problem it matches), leave one repository
out: the outcomes of two repositories' pull requests are imported as track records (each
consolidated finding one line: golden member → ``confirmed``, none → ``dismissed``,
the council's other tools ``silent``), then the third repository's pull requests are
consolidated (each tool's issues one answer) and every finding ranked
(:func:`council.ranking.likelihood.rank_finding`). For 8 random three-tool councils
(fixed seed) and the whole 12-tool council, pooled over the three held-out folds:

* best member: the best single tool's F1 (chosen in hindsight on the held-out PRs);
* agreement: the findings raised by ≥ 2 tools;
* whole: every consolidated finding; leading: those with likelihood ≥ 0.5, and recall;
* ECE: expected calibration error of the likelihood (10 equal bins).

F1 on goldens: a golden is found when a finding of the set holds a member labelled with
it (recall over every golden of the pull requests); precision over the set's findings, a
finding correct when any member is labelled. The temperature is chosen per fold on the two
training repositories (each scored with records of the other one), never on the third.

Run: ``python bench/ranking.py``. Exits 0 unless it crashes; skipped when the corpus is
absent. Source: docs/ranking.md "Measured".
"""

from __future__ import annotations

import json
import math
import random
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.agreement_corpus import Pr, corpus_path, load  # noqa: E402
from council.merging.consolidation import consolidate  # noqa: E402
from council.model.findings import Finding, Origin  # noqa: E402
from council.ranking.likelihood import MODEL, Model, rank_finding  # noqa: E402
from council.ranking.outcomes import read_outcomes, records_from  # noqa: E402
from council.ranking.records import TrackRecord, raisers_of, summed  # noqa: E402

SEED = 21
COUNCILS = 8
LEADING_AT = 0.5
TEMPERATURES = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)
VOLUME_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
CUTS = tuple(round(0.1 + 0.05 * k, 2) for k in range(11))
BINS = 10


@dataclass
class Consolidated:
    """One pull request as one council reviewed it: its findings, whether each is real,
    the goldens each finds, who was heard."""

    repo: str
    findings: list[Finding]
    real: list[bool]
    found: list[set[str]]
    heard: list[str]
    goldens: int
    told: dict[str, int]


def consolidated(pr: Pr, council: Sequence[str], goldens: int) -> Consolidated:
    """The council's consolidation of one pull request; each telling's origin run id is
    its index, so every member's label is known again."""
    heard = [t for t in pr.roster if t in council]
    per = []
    for tool in heard:
        told = [
            f.model_copy(
                update={"origin": Origin(kind="reviewer", run_id=str(i), participant=tool)}
            )
            for i, f in enumerate(pr.findings)
            if pr.reviewers[i] == tool
        ]
        per.append((tool, told))
    merged = consolidate(per, heard=heard)
    found: list[set[str]] = []
    for f in merged:
        tellings = [m.origin for m in f.members] if f.members else [f.origin]
        labels = {pr.golden[int(o.run_id)] for o in tellings if o is not None and o.run_id}
        found.append({g for g in labels if g is not None})
    told = {tool: pr.reviewers.count(tool) for tool in heard}
    return Consolidated(pr.repo, merged, [bool(g) for g in found], found, heard, goldens, told)


def outcome_lines(prs: Sequence[Consolidated]) -> list[str]:
    """The training pull requests' outcomes as ``council outcomes import`` reads them."""
    lines = []
    for k, pr in enumerate(prs):
        for finding, real in zip(pr.findings, pr.real, strict=True):
            raisers = raisers_of(finding)
            line = {
                "round": k,
                "participant": list(raisers),
                "verdict": "confirmed" if real else "dismissed",
                "silent": [t for t in pr.heard if t not in raisers],
            }
            lines.append(json.dumps(line))
    return lines


def records_of(prs: Sequence[Consolidated]) -> dict[str, TrackRecord]:
    reading = read_outcomes(outcome_lines(prs))
    assert reading.bad == 0, reading.reasons
    added = records_from(reading.outcomes)
    return {who: r for (who, _), r in summed(added).items()}


def scored(
    prs: Sequence[Consolidated], records: dict[str, TrackRecord], model: Model
) -> list[float]:
    return [
        rank_finding(f, pr.heard, records, pr.told, model).likelihood
        for pr in prs
        for f in pr.findings
    ]


def log_loss(p: Sequence[float], y: Sequence[bool]) -> float:
    eps = 1e-6
    return -sum(
        math.log(max(eps, q)) if r else math.log(max(eps, 1 - q)) for q, r in zip(p, y, strict=True)
    ) / max(1, len(p))


def ece(p: Sequence[float], y: Sequence[bool]) -> float:
    """Expected calibration error: per equal-width bin, |mean likelihood − share real|,
    weighted by the bin's share of findings."""
    total = 0.0
    for b in range(BINS):
        inside = [(q, r) for q, r in zip(p, y, strict=True) if min(int(q * BINS), BINS - 1) == b]
        if inside:
            gap = abs(sum(q for q, _ in inside) - sum(r for _, r in inside)) / len(inside)
            total += gap * len(inside) / len(p)
    return total


def auc(p: Sequence[float], y: Sequence[bool]) -> float:
    """The chance a real finding ranks above a false one (ties count half)."""
    pos = [q for q, r in zip(p, y, strict=True) if r]
    neg = [q for q, r in zip(p, y, strict=True) if not r]
    if not pos or not neg:
        return 0.5
    wins = sum((a > b) + 0.5 * (a == b) for a in pos for b in neg)
    return wins / (len(pos) * len(neg))


def f1_of(chosen: Sequence[tuple[bool, set[str]]], goldens: int) -> tuple[float, float, float]:
    """(F1, precision, recall) of a set of findings, each (correct, goldens it finds)."""
    found = set().union(*(g for _, g in chosen)) if chosen else set()
    precision = sum(c for c, _ in chosen) / len(chosen) if chosen else 0.0
    recall = len(found) / goldens if goldens else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return f1, precision, recall


def best_member(prs: Sequence[Pr], council: Sequence[str], goldens: int) -> tuple[str, float]:
    """The best single tool of the council by F1 on ``prs`` (its raw issues)."""
    best = ("", -1.0)
    for tool in council:
        chosen = []
        for k, pr in enumerate(prs):
            for i, who in enumerate(pr.reviewers):
                if who == tool:
                    g = pr.golden[i]
                    chosen.append((g is not None, {f"{k}:{g}"} if g else set()))
        f1 = f1_of(chosen, goldens)[0]
        best = max(best, (tool, f1), key=lambda b: b[1])
    return best


def inner(train: dict[str, list[Consolidated]], model: Model) -> list[float]:
    """Each training repository's likelihoods, scored with the records of the other(s)."""
    p: list[float] = []
    for repo in sorted(train):
        rest = [c for r in sorted(train) if r != repo for c in train[r]]
        p += scored(train[repo], records_of(rest), model)
    return p


def choose_model(train: dict[str, list[Consolidated]]) -> tuple[Model, float]:
    """The temperature and volume weight of least log loss on the training repositories,
    each scored with the records of the other(s); and the cut of best F1 there."""
    prs = [c for r in sorted(train) for c in train[r]]
    y = [r for c in prs for r in c.real]

    def loss(tv: tuple[float, float]) -> float:
        return log_loss(inner(train, replace(MODEL, temperature=tv[0], volume_weight=tv[1])), y)

    t, v = min(((t, v) for t in TEMPERATURES for v in VOLUME_WEIGHTS), key=loss)
    model = replace(MODEL, temperature=t, volume_weight=v)
    p = inner(train, model)
    every = [x for k, c in enumerate(prs) for x in keyed(c, k)]
    total = sum(c.goldens for c in prs)

    def f1_at(cut: float) -> float:
        return f1_of([x for x, q in zip(every, p, strict=True) if q >= cut], total)[0]

    return model, max(CUTS, key=f1_at)


def keyed(c: Consolidated, k: int) -> list[tuple[bool, set[str]]]:
    return [(r, {f"{k}:{g}" for g in gs}) for r, gs in zip(c.real, c.found, strict=True)]


def run_council(prs: list[Pr], goldens: list[int], council: Sequence[str]) -> dict[str, float]:
    """One council's figures, pooled over the three held-out repositories."""
    done = [consolidated(pr, council, n) for pr, n in zip(prs, goldens, strict=True)]
    repos = sorted({pr.repo for pr in prs})
    likelihood: list[float] = [0.0] * sum(len(c.findings) for c in done)
    offsets = [0]
    for c in done:
        offsets.append(offsets[-1] + len(c.findings))
    temps = []
    cuts: list[float] = []
    volumes: list[float] = []
    cut_of: dict[str, float] = {}
    for repo in repos:
        train = {r: [c for c in done if c.repo == r] for r in repos if r != repo}
        model, cut = choose_model(train)
        temps.append(model.temperature)
        volumes.append(model.volume_weight)
        cuts.append(cut)
        records = records_of([c for cs in train.values() for c in cs])
        cut_of[repo] = cut
        for k, c in enumerate(done):
            if c.repo == repo:
                likelihood[offsets[k] : offsets[k + 1]] = scored([c], records, model)
    total = sum(goldens)
    every = [x for k, c in enumerate(done) for x in keyed(c, k)]
    agreed = [
        x
        for k, c in enumerate(done)
        for x, f in zip(keyed(c, k), c.findings, strict=True)
        if len(raisers_of(f)) >= 2
    ]
    leading = [x for x, q in zip(every, likelihood, strict=True) if q >= LEADING_AT]
    repo_of = [c.repo for c in done for _ in c.findings]
    tuned = [x for x, q, r in zip(every, likelihood, repo_of, strict=True) if q >= cut_of[r]]
    whole = f1_of(every, total)
    lead = f1_of(leading, total)
    return {
        "best": best_member(prs, council, total)[1],
        "agreed": f1_of(agreed, total)[0],
        "whole": whole[0],
        "whole_recall": whole[2],
        "leading": lead[0],
        "leading_recall": lead[2],
        "tuned": f1_of(tuned, total)[0],
        "cut": statistics.median(cuts),
        "ece": ece(likelihood, [x[0] for x in every]),
        "auc": auc(likelihood, [x[0] for x in every]),
        "temps": statistics.median(temps),
        "volume": statistics.median(volumes),
        "findings": len(every),
        "leading_n": len(leading),
    }


def main() -> None:
    path = corpus_path()
    if path is None:
        print("ranking: the agreement corpus is absent; skipped")
        return
    prs = load(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    goldens = [len(pr["golden"]) for pr in data["prs"]]
    tools = sorted({t for pr in prs for t in pr.roster})
    rng = random.Random(SEED)
    councils = [sorted(rng.sample(tools, 3)) for _ in range(COUNCILS)] + [tools]
    print(
        f"Ranking on {len(prs)} pull requests of {len({p.repo for p in prs})} repositories "
        f"({sum(goldens)} goldens), leave one repository out; leading = likelihood ≥ {LEADING_AT}"
    )
    head = f"{'council':<34}{'best':>6}{'agreed':>8}{'whole':>7}{'(R)':>6}{'leading':>9}{'(R)':>6}"
    print(
        head + f"{'ECE':>7}{'AUC':>6}{'T':>5}{'vol':>5}{'n':>6}{'lead':>6}{'at cut':>8}{'cut':>6}"
    )
    gains = []
    for council in councils:
        r = run_council(prs, goldens, council)
        gains.append(r["leading"] - r["best"])
        name = "all 12 tools" if len(council) == len(tools) else ",".join(council)
        print(
            f"{name:<34}{r['best']:>6.3f}{r['agreed']:>8.3f}{r['whole']:>7.3f}"
            f"{r['whole_recall']:>6.2f}{r['leading']:>9.3f}{r['leading_recall']:>6.2f}"
            f"{r['ece']:>7.3f}{r['auc']:>6.2f}{r['temps']:>5.1f}{r['volume']:>5.2f}{r['findings']:>6}{r['leading_n']:>6}"
            f"{r['tuned']:>8.3f}{r['cut']:>6.2f}"
        )
    print(
        f"leading − best member: median {statistics.median(gains):+.3f}, "
        f"min {min(gains):+.3f} (targets: median ≥ +0.08, min ≥ 0)"
    )


if __name__ == "__main__":
    main()
