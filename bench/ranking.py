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
* whole: every consolidated finding; leading: those with likelihood ≥ 0.5, precision, recall;
* ECE: expected calibration error of the likelihood (10 equal bins).

F1 on goldens: a golden is found when a finding of the set holds a member labelled with
it (recall over every golden of the pull requests); precision over the set's findings, a
finding correct when any member is labelled. Per fold, one logistic model for every council
(:data:`council.ranking.likelihood.FEATURES`, L2) is fitted on the two training
repositories' findings of the nine councils (each repository featured with the records of
the other one), never on the third; the shipped weights are the same fit on all three.

Run: ``python bench/ranking.py [--quick]`` (about 10 s: ``--quick`` changes nothing). Exits
0 unless it crashes; skipped when the corpus is absent. Source: docs/ranking.md "Measured".
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
from bench.headline import headline  # noqa: E402
from council.merging.consolidation import consolidate  # noqa: E402
from council.model.findings import Finding, Origin  # noqa: E402
from council.ranking.likelihood import (  # noqa: E402
    FEATURES,
    MODEL,
    Model,
    features,
    rank_finding,
    tellings,
    text_features,
)
from council.ranking.outcomes import read_outcomes, records_from  # noqa: E402
from council.ranking.records import TrackRecord, raisers_of, summed  # noqa: E402

SEED = 21
COUNCILS = 8
LEADING_AT = 0.5
L2 = 1.0
"""The logistic regression's penalty on each weight (not on the intercept)."""
MONOTONE = (FEATURES.index("prior"), FEATURES.index("raisers"))
"""Weights held ≥ 0: the likelihood never falls as a raiser's record improves."""
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


def rows(
    prs: Sequence[Consolidated], records: dict[str, TrackRecord], model: Model
) -> list[tuple[float, ...]]:
    """Each finding's features (:func:`council.ranking.likelihood.features`)."""
    return [
        features(raisers_of(f), pr.heard, records, pr.told, tellings(f), model)
        for pr in prs
        for f in pr.findings
    ]


def text_centre(prs: Sequence[Consolidated]) -> tuple[float, float, float]:
    """The mean code, line and file shares of the findings of ``prs``."""
    raw = replace(MODEL, text_centre=(0.0, 0.0, 0.0))
    every = [text_features(tellings(f), raw) for pr in prs for f in pr.findings]
    n = max(1, len(every))
    return (
        sum(x[0] for x in every) / n,
        sum(x[1] for x in every) / n,
        sum(x[2] for x in every) / n,
    )


def logistic(x: Sequence[Sequence[float]], y: Sequence[bool], fixed: set[int]) -> list[float]:
    """Intercept then weights of an L2-penalised logistic regression (Newton), the weights
    at indices ``fixed`` held at 0."""
    d = len(x[0]) + 1
    free = [i for i in range(d) if i - 1 not in fixed]
    w = [0.0] * d
    rows_ = [[1.0, *r] for r in x]
    for _ in range(25):
        g = [0.0] * d
        h = [[0.0] * d for _ in range(d)]
        for z, t in zip(rows_, y, strict=True):
            s = max(-50.0, min(50.0, sum(a * b for a, b in zip(w, z, strict=True))))
            q = 1.0 / (1.0 + math.exp(-s))
            for i in free:
                g[i] += (q - t) * z[i]
                for j in free:
                    h[i][j] += q * (1 - q) * z[i] * z[j]
        for i in free[1:] if free and free[0] == 0 else free:
            g[i] += L2 * w[i]
            h[i][i] += L2
        step = solve([[h[i][j] for j in free] for i in free], [g[i] for i in free])
        for i, dx in zip(free, step, strict=True):
            w[i] -= dx
    return w


def solve(a: list[list[float]], b: list[float]) -> list[float]:
    """x with a·x = b (Gauss–Jordan, partial pivoting)."""
    n = len(b)
    m = [[*row, v] for row, v in zip(a, b, strict=True)]
    for i in range(n):
        pivot = max(range(i, n), key=lambda r: abs(m[r][i]))
        m[i], m[pivot] = m[pivot], m[i]
        for r in range(n):
            if r != i and m[i][i]:
                f = m[r][i] / m[i][i]
                m[r] = [p - f * q for p, q in zip(m[r], m[i], strict=True)]
    return [m[i][n] / m[i][i] if m[i][i] else 0.0 for i in range(n)]


def fitted(train: dict[str, list[list[Consolidated]]]) -> Model:
    """The model fitted on the training repositories (repository → each council's pull
    requests there), pooled over the councils; each repository's findings featured with
    the records of the other(s). A prior or raisers weight fitted below 0 is held at 0
    (the likelihood stays monotone in a raiser's record)."""
    everything = [c for cs in train.values() for council in cs for c in council]
    model = replace(MODEL, text_centre=text_centre(everything))
    x: list[tuple[float, ...]] = []
    y: list[bool] = []
    for repo in sorted(train):
        for k, council in enumerate(train[repo]):
            rest = [c for r in sorted(train) if r != repo for c in train[r][k]]
            x += rows(council, records_of(rest), model)
            y += [r for c in council for r in c.real]
    fixed: set[int] = set()
    while True:
        w = logistic(x, y, fixed)
        negative = {i for i in MONOTONE if w[i + 1] < 0} - fixed
        if not negative:
            return replace(model, intercept=w[0], weights=tuple(w[1:]))
        fixed |= negative


def keyed(c: Consolidated, k: int) -> list[tuple[bool, set[str]]]:
    return [(r, {f"{k}:{g}" for g in gs}) for r, gs in zip(c.real, c.found, strict=True)]


def figures(
    prs: list[Pr], done: list[Consolidated], council: Sequence[str], likelihood: list[float]
) -> dict[str, float]:
    """One council's figures, pooled over the three held-out repositories."""
    total = sum(c.goldens for c in done)
    every = [x for k, c in enumerate(done) for x in keyed(c, k)]
    agreed = [
        x
        for k, c in enumerate(done)
        for x, f in zip(keyed(c, k), c.findings, strict=True)
        if len(raisers_of(f)) >= 2
    ]
    leading = [x for x, q in zip(every, likelihood, strict=True) if q >= LEADING_AT]
    whole = f1_of(every, total)
    lead = f1_of(leading, total)
    real = [x[0] for x in every]
    return {
        "best": best_member(prs, council, total)[1],
        "agreed": f1_of(agreed, total)[0],
        "whole": whole[0],
        "whole_recall": whole[2],
        "leading": lead[0],
        "leading_precision": lead[1],
        "leading_recall": lead[2],
        "ece": ece(likelihood, real),
        "auc": auc(likelihood, real),
        "findings": len(every),
        "leading_n": len(leading),
    }


def held_out(
    councils: list[list[Consolidated]],
) -> tuple[list[list[float]], dict[str, Model]]:
    """Each council's likelihoods, every repository scored by the model fitted on the
    other two (pooled over the councils) with the records of those two; and each fold's
    model."""
    repos = sorted({c.repo for c in councils[0]})
    likelihood = [[0.0] * sum(len(c.findings) for c in done) for done in councils]
    models: dict[str, Model] = {}
    for repo in repos:
        train = {
            r: [[c for c in done if c.repo == r] for done in councils] for r in repos if r != repo
        }
        model = models[repo] = fitted(train)
        for k, done in enumerate(councils):
            records = records_of([c for c in done if c.repo != repo])
            at = 0
            for c in done:
                n = len(c.findings)
                if c.repo == repo:
                    likelihood[k][at : at + n] = scored([c], records, model)
                at += n
    return likelihood, models


def main() -> None:
    if sys.argv[1:] not in ([], ["--quick"]):
        sys.exit("usage: python bench/ranking.py [--quick]  (it is quick already)")
    path = corpus_path()
    if path is None:
        print("ranking: the agreement corpus is absent; skipped")
        headline("ranking", "skipped: the agreement corpus is absent", "", "")
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
    done = [
        [consolidated(pr, council, n) for pr, n in zip(prs, goldens, strict=True)]
        for council in councils
    ]
    likelihood, models = held_out(done)
    head = f"{'council':<34}{'best':>6}{'agreed':>8}{'whole':>7}{'(R)':>6}{'leading':>9}"
    print(head + f"{'(P)':>6}{'(R)':>6}{'ECE':>7}{'AUC':>6}{'n':>6}{'lead':>6}{'gain':>8}")
    gains, eces = [], []
    for council, d, p in zip(councils, done, likelihood, strict=True):
        r = figures(prs, d, council, p)
        gains.append(r["leading"] - r["best"])
        eces.append(r["ece"])
        name = "all 12 tools" if len(council) == len(tools) else ",".join(council)
        print(
            f"{name:<34}{r['best']:>6.3f}{r['agreed']:>8.3f}{r['whole']:>7.3f}"
            f"{r['whole_recall']:>6.2f}{r['leading']:>9.3f}{r['leading_precision']:>6.2f}"
            f"{r['leading_recall']:>6.2f}{r['ece']:>7.3f}{r['auc']:>6.2f}{r['findings']:>6}"
            f"{r['leading_n']:>6}{gains[-1]:>+8.3f}"
        )
    pooled = ece([q for p in likelihood for q in p], [r for d in done for c in d for r in c.real])
    print(
        f"leading − best member: median {statistics.median(gains):+.3f}, "
        f"min {min(gains):+.3f} (targets: median ≥ +0.08, min ≥ 0); "
        f"ECE max {max(eces):.3f}, all councils pooled {pooled:.3f} (target ≤ 0.10)"
    )
    median = statistics.median(gains)
    headline(
        "ranking",
        f"leading findings' F1 less the best member's, median of {len(councils)} councils",
        f"{median:+.3f}",
        "the best single tool's F1, chosen in hindsight",
        None,
        ">= +0.08",
        median >= 0.08,
    )
    headline(
        "ranking",
        "calibration of the likelihood (ECE, held-out, pooled)",
        f"{pooled:.3f}",
        "a perfect calibration 0",
        None,
        "<= 0.10",
        pooled <= 0.10,
    )
    for repo, model in sorted(models.items()):
        print(f"fitted without {repo}: {weights(model)}")
    whole = {
        r: [[c for c in d if c.repo == r] for d in done] for r in sorted({c.repo for c in done[0]})
    }
    print(f"fitted on all three (shipped): {weights(fitted(whole))}")


def weights(model: Model) -> str:
    named = ", ".join(f"{n} {w:+.3f}" for n, w in zip(FEATURES, model.weights, strict=True))
    centre = ", ".join(f"{c:.3f}" for c in model.text_centre)
    return f"intercept {model.intercept:+.3f}, {named}; text centre ({centre})"


if __name__ == "__main__":
    main()
