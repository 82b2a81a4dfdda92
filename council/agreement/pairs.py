"""Which findings are compared, and their scores: blocking by file and lines, rare words.

Comparing every finding with every other is quadratic (100,000 findings are 5·10⁹ pairs).
Agreement (:mod:`council.agreement.relation`) never holds across files, nor between
lines further apart than :data:`~council.agreement.relation.WINDOW`, and needs shared
terms, so only these pairs are scored:

* line findings on one side of one file whose ranges are within the window: a sweep
  over the file's findings sorted by first line. Where more than :data:`DENSE` findings
  crowd one window, the sweep keeps only those sharing a rare term (below);
* a finding on a file but no line (or on the other side of the diff) with the file's
  findings that share a RARE term with it: one used by 2 to :data:`RARE_PER_REVIEWER` ×
  the number of reviewers findings of the consolidation (an inverted index over rare
  terms);
* a finding that names no file with every finding sharing a rare term, the same way.

A posting list holds at most that many findings, so the work is linear in the number
of findings. Pairs of one reviewer are never scored. Scores are integers in millionths
(:data:`SCALE`) so that sums later do not depend on the order they are added in.

Source: harvest.md §8; the brief of bench/agreement.py (blocking, no quadratic path).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Sequence

from council.agreement.relation import WINDOW, Place, Vocabulary, place_factor
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
        self.sets: dict[int, frozenset[Term]] = {}

    def termset(self, i: int) -> frozenset[Term]:
        got = self.sets.get(i)
        if got is None:
            got = self.sets[i] = frozenset(self.terms[i])
        return got

    def pair(self, i: int, j: int, factor: float) -> None:
        """Score the pair (``factor`` from the places, already known to be > 0)."""
        if self.reviewer[i] == self.reviewer[j]:
            return
        norms = self.norms[i] * self.norms[j]
        if not norms:
            return
        shared = self.termset(i).intersection(self.terms[j])
        if not shared:
            return
        value = round(math.fsum(map(self.squared, shared)) / norms * factor * SCALE)
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
    cap = max(2, RARE_PER_REVIEWER * reviewers)
    used = vocabulary.used

    def rare(term: Term) -> bool:
        return 2 <= used[term] <= cap

    scorer = _Scorer(terms, places, reviewer, vocabulary, round(threshold * SCALE / FLOOR_SHARE))
    by_path: dict[str, list[int]] = defaultdict(list)
    unplaced: list[int] = []
    for i, place in enumerate(places):
        if place.path is None:
            unplaced.append(i)
        else:
            by_path[place.path].append(i)
    for path in sorted(by_path):
        _score_file(scorer, by_path[path], rare)
        scorer.sets.clear()
    if unplaced:
        _score_by_rare_terms(scorer, unplaced, range(len(terms)), rare)
    return scorer.adjacency


def _score_file(scorer: _Scorer, members: list[int], rare: Callable[[Term], bool]) -> None:
    """Score the pairs of one file: the line sweep, then the loose findings by rare terms."""
    places = scorer.places
    lined = [i for i in members if places[i].first is not None and places[i].side == "new"]
    loose = [i for i in members if places[i].first is None or places[i].side != "new"]
    old = [i for i in loose if places[i].first is not None]
    for side in (lined, old):
        if len(side) > 1:
            _sweep(scorer, side, rare)
    if loose:
        _score_by_rare_terms(scorer, loose, members, rare)


def _score_by_rare_terms(
    scorer: _Scorer, askers: list[int], among: Sequence[int], rare: Callable[[Term], bool]
) -> None:
    """Score each of ``askers`` against the findings of ``among`` sharing a rare term.

    The posting lists are built only for the rare terms the askers use, scanning
    ``among`` with a C-level disjointness test; pairs of two askers are scored once.
    """
    terms, places = scorer.terms, scorer.places
    wanted: set[Term] = set()
    for i in askers:
        wanted.update(filter(rare, terms[i]))
    if not wanted:
        return
    postings: dict[Term, list[int]] = defaultdict(list)
    for j in among:
        own = terms[j]
        if not wanted.isdisjoint(own):
            for term in own:
                if term in wanted:
                    postings[term].append(j)
    asking = set(askers)
    for i in askers:
        seen: set[int] = set()
        for term in terms[i]:
            for j in postings.get(term, ()):
                if j == i or j in seen or (j in asking and j < i):
                    continue
                seen.add(j)
                factor = place_factor(places[i], places[j])
                if factor:
                    scorer.pair(i, j, factor)


def _sweep(scorer: _Scorer, side: list[int], rare: Callable[[Term], bool]) -> None:
    """Score line findings of one file and side whose ranges lie within the window."""
    places = scorer.places
    order = sorted(side, key=lambda i: (places[i].first, places[i].last, i))
    firsts = [places[i].first or 0 for i in order]
    for at, i in enumerate(order):
        place = places[i]
        end = bisect_right(firsts, (place.last or 0) + WINDOW, lo=at + 1)
        if end - at - 1 <= DENSE:
            for j in order[at + 1 : end]:
                scorer.pair(i, j, place_factor(place, places[j]))
        else:
            crowd = order[at + 1 : end]
            _score_by_rare_terms(scorer, [i], crowd, rare)
