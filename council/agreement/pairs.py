"""Which findings are compared, and their scores: blocking by file and lines, rare words.

Comparing every finding with every other is quadratic (100,000 findings are 5·10⁹ pairs).
Agreement (:mod:`council.agreement.relation`) never holds across files, nor between
lines further apart than :data:`~council.agreement.relation.WINDOW`, and needs shared
terms, so only these pairs are scored:

* line findings on one side of one file whose ranges are within the window: a sweep
  over the file's findings sorted by first line. Where more than :data:`DENSE` findings
  crowd one window, the sweep keeps only those sharing a rare term (below);
* a finding on a file but no line (or on the other side of the diff) with the file's
  findings that share a RARE term with it: one used by at most :data:`RARE_PER_REVIEWER`
  × the number of reviewers findings of that file (an inverted index over rare terms);
* a finding that names no file with every finding sharing a term rare over the whole
  consolidation, the same way.

A posting list holds at most that many findings, so the work is linear in the number
of findings. Pairs of one reviewer are never scored. Scores are integers in millionths
(:data:`SCALE`) so that sums later do not depend on the order they are added in.

Source: docs/harvest.md §8; the brief of bench/agreement.py (blocking, no quadratic path).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Sequence

from council.agreement.relation import NEAR_BONUS, WINDOW, Place, Vocabulary, place_factor
from council.agreement.words import Term

SCALE = 1_000_000
"""Scores are kept as integers: round(score × SCALE)."""

RARE_PER_REVIEWER = 2
"""A term used by more findings (of a file, or of the whole consolidation for findings
with no file) than this many per reviewer cannot mark one problem: each reviewer tells a
problem about once, twice leaves room for a neighbouring problem naming the same code."""

DENSE = 64
"""Findings within one line window past which the sweep compares only those sharing a
rare term (10,000 findings on one line must not be 10⁸ comparisons)."""

FLOOR_SHARE = 4
"""Scores below threshold / FLOOR_SHARE are dropped as nothing: they would weigh on
cluster averages only by pulling them down, which dropping them does too (a little)."""

Adjacency = dict[int, dict[int, int]]
"""Finding → {other finding → score in millionths}, both directions, scored pairs only."""


class _Scorer:
    """Scores pairs and keeps those above the floor."""

    def __init__(
        self,
        terms: Sequence[Sequence[Term]],
        places: Sequence[Place],
        reviewer: Sequence[int],
        vocabulary: Vocabulary,
        floor: int,
    ) -> None:
        self.terms = terms
        self.places = places
        self.reviewer = reviewer
        self.squared = vocabulary.squared.__getitem__
        self.norms = [math.sqrt(math.fsum(map(self.squared, t))) for t in terms]
        self.floor = floor
        self.adjacency: Adjacency = {}

    def pair(self, i: int, j: int, factor: float) -> None:
        """Score the pair (``factor`` from the places, already known to be > 0)."""
        if self.reviewer[i] == self.reviewer[j]:
            return
        norms = self.norms[i] * self.norms[j]
        if not norms:
            return
        shared = set(self.terms[i]).intersection(self.terms[j])
        if shared:
            self.keep(i, j, round(math.fsum(map(self.squared, shared)) / norms * factor * SCALE))

    def keep(self, i: int, j: int, value: int) -> None:
        """Keep a scored pair if it reaches the floor."""
        if value >= self.floor:
            self.adjacency.setdefault(i, {})[j] = value
            self.adjacency.setdefault(j, {})[i] = value


def scored_pairs(
    terms: Sequence[Sequence[Term]],
    places: Sequence[Place],
    reviewer: Sequence[int],
    vocabulary: Vocabulary,
    threshold: float,
) -> Adjacency:
    """The scored pairs of a consolidation's findings, as an adjacency.

    ``terms``, ``places`` and ``reviewer`` (a reviewer number per finding) are aligned
    with the findings. Time and memory linear in the number of findings (see the module
    docstring). Never raises.
    """
    reviewers = len(set(reviewer))
    if reviewers < 2:
        return {}
    cap = RARE_PER_REVIEWER * reviewers
    scorer = _Scorer(terms, places, reviewer, vocabulary, round(threshold * SCALE / FLOOR_SHARE))
    by_path: dict[str, list[int]] = defaultdict(list)
    unplaced: list[int] = []
    for i, place in enumerate(places):
        if place.path is None:
            unplaced.append(i)
        else:
            by_path[place.path].append(i)
    for path in sorted(by_path):
        _score_file(scorer, by_path[path], cap)
    if unplaced:
        _score_by_rare_terms(scorer, unplaced, range(len(terms)), cap)
    return scorer.adjacency


def _score_file(scorer: _Scorer, members: list[int], cap: int) -> None:
    """Score the pairs of one file: the line sweep, then the loose findings by rare terms."""
    places = scorer.places
    lined = [i for i in members if places[i].first is not None and places[i].side == "new"]
    loose = [i for i in members if places[i].first is None or places[i].side != "new"]
    old = [i for i in loose if places[i].first is not None]
    for side in (lined, old):
        if len(side) > 1:
            _sweep(scorer, side, cap)
    if loose:
        _score_by_rare_terms(scorer, loose, members, cap)


def _score_by_rare_terms(
    scorer: _Scorer, askers: list[int], among: Sequence[int], cap: int
) -> None:
    """Score each of ``askers`` against the findings of ``among`` sharing a rare term.

    Rare: used by at most ``cap`` findings of ``among``. Each finding of ``among`` is
    intersected (in C) with the terms the askers use, so counting and the posting lists
    cost what is shared, not every term; pairs of two askers are scored once.
    """
    terms, places = scorer.terms, scorer.places
    wanted: set[Term] = set()
    for i in askers:
        wanted.update(terms[i])
    postings: dict[Term, list[int]] = defaultdict(list)
    for j in among:
        for term in wanted.intersection(terms[j]):
            postings[term].append(j)
    asking = set(askers)
    for i in askers:
        seen: set[int] = set()
        for term in terms[i]:
            listed = postings.get(term)
            if listed is None or len(listed) > cap:
                continue
            for j in listed:
                if j == i or j in seen or (j in asking and j < i):
                    continue
                seen.add(j)
                factor = place_factor(places[i], places[j])
                if factor:
                    scorer.pair(i, j, factor)


def _sweep(scorer: _Scorer, side: list[int], cap: int) -> None:
    """Score line findings of one file and side whose ranges lie within the window.

    A finding with more than :data:`DENSE` others in its window is compared only with
    those sharing a term that at most ``cap`` findings of this side use (an index built
    once for the side, so a crowd costs ``cap`` per term, never the crowd's size).
    """
    places, terms, reviewer, norms = scorer.places, scorer.terms, scorer.reviewer, scorer.norms
    squared, keep, fsum = scorer.squared, scorer.keep, math.fsum
    order = sorted(side, key=lambda i: (places[i].first, places[i].last, i))
    firsts = [places[i].first or 0 for i in order]
    lasts = [places[i].last or 0 for i in order]
    index: dict[Term, list[int]] | None = None
    for at, i in enumerate(order):
        place = places[i]
        last = lasts[at]
        end = bisect_right(firsts, last + WINDOW, lo=at + 1)
        if end - at - 1 <= DENSE:
            if end == at + 1 or not norms[i]:
                continue
            own, who, norm = set(terms[i]), reviewer[i], norms[i]
            for k in range(at + 1, end):
                j = order[k]
                if reviewer[j] == who or not norms[j]:
                    continue
                shared = own.intersection(terms[j])
                if shared:
                    # place_factor, inlined: j starts at or after i, on the same side
                    near = 1.0 + NEAR_BONUS * (1.0 - max(0, firsts[k] - last) / WINDOW)
                    value = fsum(map(squared, shared)) / (norm * norms[j]) * near * SCALE
                    keep(i, j, round(value))
            continue
        if index is None:
            index = defaultdict(list)
            for k, j in enumerate(order):
                for term in scorer.terms[j]:
                    index[term].append(k)
        seen: set[int] = set()
        for term in scorer.terms[i]:
            listed = index[term]
            if len(listed) > cap:
                continue
            for k in listed:
                if at < k < end and k not in seen:
                    seen.add(k)
                    j = order[k]
                    scorer.pair(i, j, place_factor(place, places[j]))
