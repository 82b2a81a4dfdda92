"""Which findings are compared, and their scores: blocking by file and lines, rare words.

All pairs would be quadratic (100,000 findings are 5·10⁹ pairs). Agreement never holds
across files nor beyond :data:`~council.merging.agreement.relation.WINDOW` lines and needs
shared terms, so only these are scored: line findings of one file and side within the
window (a sweep by first line; past :data:`DENSE` in one window, only those sharing a rare
term); a finding with no line, with its file's findings sharing a RARE term (used by at
most :data:`RARE_PER_REVIEWER` × reviewers findings); one naming no file, the same over
the whole consolidation. Posting lists are capped, so the work is linear; one reviewer's
pairs are never scored. A pair's score is exact (every shared term counts), in integer
millionths (:data:`SCALE`). Source: docs/harvest.md §8; the brief of bench/agreement.py.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import islice

from council.merging.agreement.relation import (
    LOOSE,
    NEAR_BONUS,
    WINDOW,
    Place,
    combined,
    least_shared,
    place_factor,
    prose_cosine,
)
from council.merging.agreement.words import Reading

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
cluster averages only by pulling them down, which dropping them does too (a little). A
pair whose cosine of all terms times its place factor is below it is dropped too,
whatever its prose: that is what lets a candidate be dropped before its prose is read."""

Adjacency = dict[int, dict[int, int]]
"""Finding → {other finding → score in millionths}, both directions, scored pairs only."""


class _Scorer:
    """Scores pairs and keeps those above the floor.

    ``read[i]``: finding i's reading (term ids, prose ids, ids of words it names only in
    code); ``squared``: term id → squared weight (integer); ``norms[i]``: the square root
    of finding i's sum of squared weights; ``prose_sums[i]``: the sum over its prose.
    """

    def __init__(
        self,
        read: Sequence[Reading[int]],
        places: Sequence[Place],
        reviewer: Sequence[int],
        squared: dict[int, int],
        norms: Sequence[float],
        prose_sums: Sequence[int],
        floor: int,
    ) -> None:
        self.read = read
        self.terms = [r.terms for r in read]
        self.places = places
        self.reviewer = reviewer
        self.squared = squared.__getitem__
        self.norms = norms
        self.prose_sums = prose_sums
        self.floor = floor
        self.adjacency: Adjacency = {}
        self.twins = twins_of(read, places)

    def value(self, i: int, j: int, whole: float, factor: float) -> int | None:
        """The score of a pair whose terms' cosine is ``whole`` and place factor
        ``factor`` (:func:`~council.merging.agreement.relation.combined` with
        :func:`~council.merging.agreement.relation.prose_cosine`, times the factor), in
        millionths; None when it or the cosine times the factor is under the floor (a
        score of 0 reaches a floor of 0)."""
        floor = self.floor
        if round(whole * factor * SCALE) < floor:
            return None
        sums, read = self.prose_sums, self.read
        least = least_shared(self.places[i], self.places[j])
        prose = prose_cosine(self.squared, read[i], sums[i], read[j], sums[j], least)
        value = round(combined(whole, prose) * factor * SCALE)
        return value if value >= floor else None

    def add(self, i: int, j: int, value: int) -> None:
        """Keep a pair's score, both directions."""
        adjacency = self.adjacency
        row = adjacency.get(i)
        if row is None:
            row = adjacency[i] = {}
        row[j] = value
        row = adjacency.get(j)
        if row is None:
            row = adjacency[j] = {}
        row[i] = value

    def keep(self, i: int, j: int, whole: float, factor: float) -> None:
        """Keep a pair (:meth:`add`) if its :meth:`value` reaches the floor."""
        value = self.value(i, j, whole, factor)
        if value is not None:
            self.add(i, j, value)

    def against(self, i: int, others: Sequence[int], factors: Sequence[float]) -> None:
        """Score finding ``i`` against each of ``others`` (their place factors aligned,
        each > 0), skipping its own reviewer's findings and empty ones."""
        norm = self.norms[i]
        if not norm:
            return
        own = set(self.terms[i])
        terms, norms, reviewer, squared = self.terms, self.norms, self.reviewer, self.squared
        who, keep, twins = reviewer[i], self.keep, self.twins
        if twins is None:
            for j, factor in zip(others, factors, strict=True):
                if reviewer[j] == who:
                    continue
                shared = sum(map(squared, own.intersection(terms[j])))
                if shared:
                    # cosine_of(shared, norm, norms[j]), inlined; norms[j] > 0 as j shares terms
                    keep(i, j, shared / (norm * norms[j]), factor)
            return
        # j's twins at the same factor score the same against i: scored once per call
        known: dict[tuple[int, float], int | None] = {}
        value_of, adjacency = self.value, self.adjacency
        mine = adjacency.get(i)
        for j, factor in zip(others, factors, strict=True):
            if reviewer[j] == who:
                continue
            twin = (twins[j], factor)
            if twin in known:
                value = known[twin]
            else:
                shared = sum(map(squared, own.intersection(terms[j])))
                value = known[twin] = (
                    value_of(i, j, shared / (norm * norms[j]), factor) if shared else None
                )
            if value is not None:  # self.add(i, j, value), inlined
                if mine is None:
                    mine = adjacency[i] = {}
                mine[j] = value
                theirs = adjacency.get(j)
                if theirs is None:
                    adjacency[j] = {i: value}
                else:
                    theirs[i] = value


def twins_of(read: Sequence[Reading[int]], places: Sequence[Place]) -> list[int] | None:
    """A number per finding, equal for findings read alike (terms, prose, parts) with the
    same rule (a model's telling: none), or None when no two are.

    Why: the score of a pair is a function of the two readings, their rules and the place
    factor alone, so a finding's twins score the same against any other at one factor;
    500 reviewers filing one finding are then scored once per finding, not per pair."""
    number: dict[tuple[object, ...], int] = {}
    twins = [
        number.setdefault((r.terms, r.prose, r.parts, p.rule), len(number))
        for r, p in zip(read, places, strict=True)
    ]
    return twins if len(number) < len(twins) else None


def scored_pairs(
    read: Sequence[Reading[int]],
    places: Sequence[Place],
    reviewer: Sequence[int],
    squared: dict[int, int],
    norms: Sequence[float],
    used: dict[int, int],
    threshold: float,
) -> Adjacency:
    """The scored pairs of a consolidation's findings, as an adjacency.

    ``read`` (each one's term ids, prose and words named only in code), ``places``,
    ``reviewer`` (a reviewer number per finding) and ``norms`` are aligned with the
    findings; ``squared`` weighs every term id used and ``used`` counts the findings
    using it (:class:`~council.merging.agreement.relation.Vocabulary`). Time and memory
    linear in the number of findings (see the module docstring). Never raises.
    """
    reviewers = len(set(reviewer))
    if reviewers < 2:
        return {}
    cap = RARE_PER_REVIEWER * reviewers
    floor = round(threshold * SCALE / FLOOR_SHARE)
    square = squared.__getitem__
    prose_sums = [sum(map(square, r.prose)) for r in read]
    scorer = _Scorer(read, places, reviewer, squared, norms, prose_sums, floor)
    terms = scorer.terms
    by_path: dict[str, list[int]] = {}
    unplaced: list[int] = []
    for i, place in enumerate(places):
        path = place.path
        if path is None:
            unplaced.append(i)
        else:
            members = by_path.get(path)
            if members is None:
                by_path[path] = [i]
            else:
                members.append(i)
    for path in sorted(by_path):
        _score_file(scorer, by_path[path], cap)
    if unplaced:
        _score_by_rare_terms(scorer, unplaced, range(len(terms)), cap, used)
    return scorer.adjacency


def _score_file(scorer: _Scorer, members: list[int], cap: int) -> None:
    """Score the pairs of one file: the line sweep, then the loose findings by rare terms."""
    places = scorer.places
    lined: list[int] = []
    old: list[int] = []
    loose: list[int] = []
    for i in members:
        place = places[i]
        if place.first is None:
            loose.append(i)
        elif place.side == "new":
            lined.append(i)
        else:
            old.append(i)
            loose.append(i)
    for side in (lined, old):
        if len(side) > 1:
            _sweep(scorer, side, cap)
    if loose:
        _score_by_rare_terms(scorer, loose, members, cap)


def _postings(
    terms: Sequence[tuple[int, ...]], among: Sequence[int], wanted: set[int]
) -> dict[int, list[int]]:
    """Term → the findings of ``among`` using it (in ``among``'s order), for the terms of
    ``wanted`` only (each finding's terms are intersected with ``wanted`` in C, so the
    cost is what is shared, not every term)."""
    postings: dict[int, list[int]] = {}
    for j in among:
        for term in wanted.intersection(terms[j]):
            listed = postings.get(term)
            if listed is None:
                postings[term] = [j]
            else:
                listed.append(j)
    return postings


def _score_by_rare_terms(
    scorer: _Scorer,
    askers: list[int],
    among: Sequence[int],
    cap: int,
    used: dict[int, int] | None = None,
) -> None:
    """Score each of ``askers`` against the findings of ``among`` sharing a rare term.

    Rare: used by at most ``cap`` findings of ``among`` (``used``: term → that count when
    the caller knows it, as for ``among`` = every finding; else counted here). ``among``
    and ``askers`` are in increasing order. A pair of two askers is scored once, from
    the earlier one's side: its posting lists are split into askers and the rest, and an
    asker walks only the askers after it (each such pair is found once, not twice).

    A candidate's rare shared terms are summed while it is found (an accumulator per
    asker). The terms too common to be looked up add at most their own weight, so a
    candidate whose rare sum plus that bound stays under the floor is dropped (exactly:
    the bound is never under the score); for the others the common shared terms are
    added from each finding's few common terms (kept once per finding), so no pair
    intersects whole term sets.
    """
    terms, places, squared = scorer.terms, scorer.places, scorer.squared
    wanted: set[int] = set()
    for i in askers:
        wanted.update(terms[i])
    if used is not None:
        common = {t for t in wanted if used[t] > cap}
        postings = _postings(terms, among, {t for t in wanted if 1 < used[t] <= cap})
    else:
        postings = _postings(terms, among, wanted)
        common = {t for t, listed in postings.items() if len(listed) > cap}
        for t in common:
            del postings[t]
    asking = set(askers)
    mine: dict[int, list[int]] = {}
    rest: dict[int, list[int]] = {}
    for term, listed in postings.items():
        if len(listed) > 1:
            split = [j for j in listed if j in asking]
            if split:
                mine[term] = split
            if len(split) < len(listed):
                rest[term] = [j for j in listed if j not in asking]
    del postings
    commons: dict[int, tuple[int, ...]] = {}
    norms, reviewer, floor, keep = scorer.norms, scorer.reviewer, scorer.floor, scorer.keep
    no_mine: list[int] = []
    for i in askers:
        norm = norms[i]
        if not norm:
            continue
        sums: dict[int, int] = {}
        get = sums.get
        for term in terms[i]:
            after = mine.get(term, no_mine)
            others = rest.get(term)
            start = bisect_right(after, i)
            if start == len(after) and others is None:
                continue
            weight = squared(term)
            for j in islice(after, start, None):
                sums[j] = get(j, 0) + weight
            if others is not None:
                for j in others:
                    sums[j] = get(j, 0) + weight
        if not sums:
            continue
        own = common.intersection(terms[i])
        bound = sum(map(squared, own))
        here, who = places[i], reviewer[i]
        plain = here.path is None and here.rule is None
        for j, shared in sums.items():
            if reviewer[j] == who:
                continue
            there = places[j]
            if plain and there.rule is None:
                # place_factor, inlined: no file here, no rule on either
                factor = 1.0 if there.path is None else LOOSE
            else:
                factor = place_factor(here, there)
                if not factor:
                    continue
            norms_ij = norm * norms[j]
            if bound:
                if round((shared + bound) / norms_ij * factor * SCALE) < floor:
                    continue
                theirs = commons.get(j)
                if theirs is None:
                    theirs = commons[j] = tuple(common.intersection(terms[j]))
                shared += sum(map(squared, own.intersection(theirs)))
            keep(i, j, shared / norms_ij, factor)  # cosine_of(shared, norm, norms[j])


def _sweep(scorer: _Scorer, side: list[int], cap: int) -> None:
    """Score line findings of one file and side whose ranges lie within the window.

    A finding with more than :data:`DENSE` others in its window is compared only with
    those sharing a term that at most ``cap`` findings of this side use (an index built
    once for the side, so a crowd costs ``cap`` per term, never the crowd's size).
    """
    places, terms = scorer.places, scorer.terms
    programs = any(places[i].rule is not None for i in side)
    order = sorted(side, key=lambda i: (places[i].first, places[i].last, i))
    firsts = [places[i].first or 0 for i in order]
    lasts = [places[i].last or 0 for i in order]
    index: dict[int, list[int]] | None = None
    for at, i in enumerate(order):
        last = lasts[at]
        end = bisect_right(firsts, last + WINDOW, lo=at + 1)
        if end == at + 1:
            continue
        if end - at - 1 > DENSE:
            if index is None:
                index = {}
                for k, j in enumerate(order):
                    for term in terms[j]:
                        listed = index.get(term)
                        if listed is None:
                            index[term] = [k]
                        else:
                            listed.append(k)
            near: set[int] = set()
            for term in terms[i]:
                listed = index[term]  # positions in increasing order
                if len(listed) <= cap:
                    lo = bisect_right(listed, at)
                    near.update(islice(listed, lo, bisect_left(listed, end, lo)))
            ks = sorted(near)
            others = list(map(order.__getitem__, ks))
            if programs:
                here = places[i]
                scorer.against(i, others, [place_factor(here, places[j]) for j in others])
                continue
            # place_factor, inlined as below, once per first line (a crowd has few)
            starts = list(map(firsts.__getitem__, ks))
            factor_at = {
                first: 1.0 + NEAR_BONUS * (1.0 - max(0, first - last) / WINDOW)
                for first in set(starts)
            }
            scorer.against(i, others, list(map(factor_at.__getitem__, starts)))
            continue
        others = order[at + 1 : end]
        if programs:
            here = places[i]
            placed = [(j, f) for j in others if (f := place_factor(here, places[j]))]
            scorer.against(i, [j for j, _ in placed], [f for _, f in placed])
            continue
        # place_factor, inlined: each j starts at or after i, on the same side, no rule
        factors = [
            1.0 + NEAR_BONUS * (1.0 - max(0, first - last) / WINDOW)
            for first in firsts[at + 1 : end]
        ]
        scorer.against(i, others, factors)
