"""Agreement: whether two findings of DIFFERENT reviewers describe the same problem.

``says_the_same`` catches one reviewer repeating itself; two models never write the same
subject. ``score = cosine × place factor``: the cosine of IDF-weighted terms
(:mod:`~council.merging.agreement.words`; IDF over the findings being consolidated, so a
word every finding uses counts little; identifiers :data:`IDENTIFIER_WEIGHT` times a word),
and :func:`place_factor` (different files never agree; near lines weigh up to
:data:`NEAR_BONUS` more, lines past :data:`WINDOW` never agree; a change anchor is compared
on words alone). Two findings agree at :data:`THRESHOLD`. :func:`agrees_with` only refuses
findings of one participant; grouping is :mod:`~council.merging.agreement.clusters`'.
Source: docs/harvest.md §8 (agreement across reviewers); bench/agreement.py measures it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Hashable, Iterable, Sequence
from itertools import chain
from typing import Generic, NamedTuple, TypeVar

from council.merging.agreement.words import Reader, is_identifier
from council.model.findings import ChangeAnchor, FileAnchor, Finding

K = TypeVar("K", bound=Hashable)
"""A term as a vocabulary counts it: a string or pair (:class:`Reader`) or an id
(:class:`~council.merging.agreement.words.Lexicon`)."""

THRESHOLD = 0.04
"""The score from which two findings agree (and the average a group must keep, see
:mod:`council.merging.agreement.clusters`): the highest-recall threshold at precision ≥ 0.98 on
the agreement corpus, the rule bench/agreement.py cross-validates (chosen on half the
pull requests, measured on the other half, both ways, and each repository left out).
Low as it looks: most of a telling is its reviewer's own phrasing, so two tellings of
one problem often share only a few rare terms, and the one-finding-per-reviewer rule
and the averaging keep precision."""

IDENTIFIER_WEIGHT = 1.5
"""How many times a code identifier weighs what an ordinary word of the same rarity
weighs: a name (``santizeAnchors``) pins the problem to code, a word only describes.
An identifier also brings its segments and its parts as words, so it already counts
several times; 1.5 is the middle of the plateau the cross-validation finds (1.0 to 1.75
recall alike; 2 and more let shared names of different problems merge them)."""

PRIOR_FINDINGS = 20
"""Findings assumed to exist besides the ones consolidated, none using any of their
terms: the IDF of a term used by ``df`` of ``n`` findings is ``ln((n + 20 + 1) / df)``.
Over a handful of findings plain IDF is noise (a word used by two of three findings would
count for nearly nothing); over thousands the prior vanishes. Also why a word that the
many tellings of one problem share still counts."""

WINDOW = 20
"""Lines: two line anchors on one file further apart than this (the gap between their
ranges) point at different code and never agree."""

NEAR_BONUS = 0.5
"""How much overlapping lines raise the score (× 1.5), falling linearly to nothing at a
gap of :data:`WINDOW` lines."""


class Place(NamedTuple):
    """Where a finding points: a file (None for the change as a whole), and lines.

    ``first``/``last`` are the line range (both None for a file or change anchor);
    ``side`` is the diff side the lines count on ("new" or "old").
    """

    path: str | None
    side: str = "new"
    first: int | None = None
    last: int | None = None


def place_of(finding: Finding) -> Place:
    """The place of a finding's anchor."""
    anchor = finding.anchor
    if isinstance(anchor, ChangeAnchor):
        return Place(None)
    if isinstance(anchor, FileAnchor):
        return Place(anchor.path)
    first = anchor.start_line if anchor.start_line is not None else anchor.line
    return Place(anchor.path, anchor.side, first, anchor.line)


def line_gap(a: Place, b: Place) -> int | None:
    """Lines between two ranges on one side of one file (0 when they overlap or touch),
    or None when either has no lines or they count lines on different sides."""
    if a.first is None or b.first is None or a.last is None or b.last is None:
        return None
    if a.side != b.side:
        return None
    return max(0, a.first - b.last, b.first - a.last)


def place_factor(a: Place, b: Place) -> float:
    """What the places make of the words: 0 (never agree) up to ``1 + NEAR_BONUS``.

    * either names no file → 1 (compared on words alone);
    * different files → 0 (why: the same words about two files are two problems, as
      ``says_the_same`` holds; and blocking by file keeps consolidation linear);
    * same file, lines on both: gap ≤ :data:`WINDOW` → ``1 + NEAR_BONUS × (1 −
      gap / WINDOW)``; further → 0;
    * same file, lines on one only, or on different sides → 1.
    """
    if a.path is None or b.path is None:
        return 1.0
    if a.path != b.path:
        return 0.0
    gap = line_gap(a, b)
    if gap is None:
        return 1.0
    if gap > WINDOW:
        return 0.0
    return 1.0 + NEAR_BONUS * (1.0 - gap / WINDOW)


SQUARE_SCALE = 1 << 24
"""Squared weights are integers, ``round(weight² × 2²⁴)``: a sum of them is exact
whatever order a set gives its terms in, so a score never depends on the order the
findings came in (and costs a plain ``sum``, not ``math.fsum``). 2⁻²⁴ is far below any
difference a threshold in millionths can see."""


def squares_by_df(findings: int, dfs: Iterable[int], factor: float) -> dict[int, int]:
    """df → the squared weight (:data:`SQUARE_SCALE` units) of a term used by ``df`` of
    ``findings`` findings, ``factor`` times a word's (:data:`IDENTIFIER_WEIGHT` for an
    identifier, 1 otherwise), for each df given."""
    top = math.log(findings + PRIOR_FINDINGS + 1)
    squares: dict[int, int] = {}
    for df in dfs:
        weight = top - math.log(df)
        if factor != 1.0:
            weight *= factor
        squares[df] = round(weight * weight * SQUARE_SCALE)
    return squares


class Vocabulary(Generic[K]):
    """How much each term weighs, from how many of the consolidated findings use it.

    ``weight(t)² = (ln((n + PRIOR_FINDINGS + 1) / df(t)) × k)²`` with ``k`` =
    :data:`IDENTIFIER_WEIGHT` for identifiers, 1 otherwise; a term no finding used counts
    as used once. Built once per consolidation from every finding's terms: strings and
    pairs (:class:`~council.merging.agreement.words.Reader`), or term ids
    (:class:`~council.merging.agreement.words.Lexicon`) with ``identifiers`` the ids of
    identifiers. Squares are integers in :data:`SQUARE_SCALE` units.
    """

    def __init__(
        self, documents: Iterable[Sequence[K]], identifiers: Collection[K] | None = None
    ) -> None:
        listed = documents if isinstance(documents, list) else list(documents)
        counts: Counter[K] = Counter(chain.from_iterable(listed))
        total = len(listed)
        self.findings = total
        """How many findings the weights were counted over."""
        self.used = counts
        """Term → how many findings use it."""
        words = squares_by_df(total, set(counts.values()), 1.0)
        self.squared: dict[K, int] = dict(
            zip(counts, map(words.__getitem__, counts.values()), strict=True)
        )
        """Term → its weight squared (what a dot product of binary vectors sums)."""
        named: Iterable[K] = (
            [t for t in counts if _is_identifier(t)] if identifiers is None else identifiers
        )
        dfs = {t: df for t in named if (df := counts.get(t))}
        squares = squares_by_df(total, set(dfs.values()), IDENTIFIER_WEIGHT)
        for term, df in dfs.items():
            self.squared[term] = squares[df]
        self._unseen = squares_by_df(total, (1,), 1.0)[1]
        self._unseen_identifier = squares_by_df(total, (1,), IDENTIFIER_WEIGHT)[1]

    def weight_squared(self, term: K) -> int:
        """A term's weight squared, in :data:`SQUARE_SCALE` units (an unseen term counts as
        used by one finding)."""
        got = self.squared.get(term)
        if got is not None:
            return got
        return self._unseen_identifier if _is_identifier(term) else self._unseen

    def norm(self, terms: Sequence[K]) -> float:
        """The length of a finding's weighted vector (0 for no terms)."""
        return math.sqrt(sum(map(self.weight_squared, terms)) / SQUARE_SCALE)

    def cosine(self, a: Sequence[K], b: Sequence[K]) -> float:
        """The cosine of two findings' weighted term vectors, 0 to 1 (0 if either is empty).

        Exact integer sums, so the value does not depend on term order: it is
        :func:`cosine_of` the shared squares and the two norms.
        """
        square = self.weight_squared
        shared = sum(map(square, set(a).intersection(b)))
        return cosine_of(shared, math.sqrt(sum(map(square, a))), math.sqrt(sum(map(square, b))))


def norms_of(terms: Iterable[Sequence[K]], squared: dict[K, int]) -> list[float]:
    """Each finding's norm: the square root of its terms' squared weights summed (in
    :data:`SQUARE_SCALE` units, as :func:`cosine_of` takes it). Every term must be in
    ``squared``."""
    square = squared.__getitem__
    return [math.sqrt(sum(map(square, t))) for t in terms]


def _is_identifier(term: Hashable) -> bool:
    """Whether a string or pair term is an identifier (ids say so through the lexicon)."""
    return isinstance(term, str) and is_identifier(term)


def cosine_of(shared: int, norm_a: float, norm_b: float) -> float:
    """The cosine from the sum of shared squared weights and the square roots of each
    finding's sum (all in :data:`SQUARE_SCALE` units, which cancel); 0 when a norm is 0.
    One formula for every caller, so :func:`score` and :func:`~council.merging.agreement.cluster`
    give a pair the same value to the last bit."""
    norms = norm_a * norm_b
    return shared / norms if norms else 0.0


def score(a: Finding, b: Finding, among: Sequence[Finding] = ()) -> float:
    """How strongly two findings describe the same problem: 0 up to ``1 + NEAR_BONUS``.

    The cosine of their words (weighed over ``a``, ``b`` and ``among``, the other
    findings being consolidated: pass them, since a word is rare or common only among
    others) times :func:`place_factor`. Symmetric; never raises.
    """
    factor = place_factor(place_of(a), place_of(b))
    if not factor:
        return 0.0
    read = Reader()
    terms_a, terms_b = read(a), read(b)
    vocabulary = Vocabulary([terms_a, terms_b, *map(read, among)])
    return vocabulary.cosine(terms_a, terms_b) * factor


def agrees_with(a: Finding, b: Finding, among: Sequence[Finding] = ()) -> bool:
    """Whether two findings of different reviewers describe the same problem.

    True when :func:`score` reaches :data:`THRESHOLD`, and their origins do not name the
    same participant (one reviewer's two findings are two claims, docs/harvest.md §8).
    ``among``: the other findings being consolidated, which weigh the words. Never raises.
    """
    one = a.origin.participant if a.origin is not None else None
    other = b.origin.participant if b.origin is not None else None
    if one is not None and one == other:
        return False
    return score(a, b, among) >= THRESHOLD


def best_agreeing(finding: Finding, candidates: Sequence[Finding]) -> int | None:
    """The index of the candidate that agrees best with ``finding`` (the highest
    :func:`score`, weighed over all of them, reaching :data:`THRESHOLD`; ties: the
    first), or None. Origins are not compared: used to recognise a restatement (a
    judge's, a later round's) of a finding already filed. Linear in the candidates."""
    read = Reader()
    own = read(finding)
    terms = [read(c) for c in candidates]
    vocabulary = Vocabulary([own, *terms])
    here = place_of(finding)
    best: tuple[float, int] | None = None
    for at, candidate in enumerate(candidates):
        factor = place_factor(here, place_of(candidate))
        if not factor:
            continue
        value = vocabulary.cosine(own, terms[at]) * factor
        if value >= THRESHOLD and (best is None or value > best[0]):
            best = (value, at)
    return best[1] if best is not None else None
