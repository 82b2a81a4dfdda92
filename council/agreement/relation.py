"""Agreement: whether two findings of DIFFERENT reviewers describe the same problem.

``says_the_same`` (docs/harvest.md §5) catches one reviewer repeating itself word for word;
two models never write the same subject, so across reviewers a looser relation is
needed. It reads what a finding says and where:

* the words (:mod:`council.agreement.words`): the cosine of IDF-weighted term vectors,
  the IDF computed over the findings being consolidated, so a word every finding uses
  ("should", "function") counts for little and a name two findings share counts for
  much; identifiers count :data:`IDENTIFIER_WEIGHT` times a word;
* the place (:func:`place_factor`): different files never agree; on one file,
  overlapping or nearby lines weigh for (up to :data:`NEAR_BONUS` more), lines further
  apart than :data:`WINDOW` never agree; a finding that names no file (a change anchor)
  is compared on its words alone.

``score = cosine × place factor``; two findings agree when it reaches :data:`THRESHOLD`.
Which reviewer said what is the clustering's business (:mod:`council.agreement.clusters`:
one reviewer's findings never merge with each other); :func:`agrees_with` only refuses
two findings whose origins name the same participant.

Source: docs/harvest.md §8 (agreement across reviewers); bench/agreement.py measures it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import NamedTuple

from council.agreement.words import Reader, Term, is_identifier
from council.findings import ChangeAnchor, FileAnchor, Finding

THRESHOLD = 0.04
"""The score from which two findings agree (and the average a group must keep, see
:mod:`council.agreement.clusters`): the highest-recall threshold at precision ≥ 0.98 on
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


class Vocabulary:
    """How much each term weighs, from how many of the consolidated findings use it.

    ``weight(t)² = (ln((n + PRIOR_FINDINGS + 1) / df(t)) × k)²`` with ``k`` =
    :data:`IDENTIFIER_WEIGHT` for identifiers, 1 otherwise; a term no finding used counts
    as used once. Built once per consolidation from every finding's terms.
    """

    def __init__(self, documents: Iterable[Sequence[Term]]) -> None:
        listed = list(documents)
        counts: Counter[Term] = Counter(chain.from_iterable(listed))
        total = len(listed)
        self.findings = total
        """How many findings the weights were counted over."""
        self.used = counts
        """Term → how many findings use it."""
        self._top = math.log(total + PRIOR_FINDINGS + 1)
        self.squared: dict[Term, float] = {t: self._square(t, df) for t, df in counts.items()}
        """Term → its weight squared (what a dot product of binary vectors sums)."""

    def _square(self, term: Term, df: int) -> float:
        weight = self._top - math.log(df)
        if is_identifier(term):
            weight *= IDENTIFIER_WEIGHT
        return weight * weight

    def weight_squared(self, term: Term) -> float:
        """A term's weight squared (an unseen term counts as used by one finding)."""
        got = self.squared.get(term)
        return got if got is not None else self._square(term, 1)

    def norm(self, terms: Sequence[Term]) -> float:
        """The length of a finding's weighted vector (0 for no terms)."""
        return math.sqrt(math.fsum(map(self.weight_squared, terms)))

    def cosine(self, a: Sequence[Term], b: Sequence[Term]) -> float:
        """The cosine of two findings' weighted term vectors, 0 to 1 (0 if either is empty).

        Summed with ``math.fsum``, so the value does not depend on term order.
        """
        norms = self.norm(a) * self.norm(b)
        if not norms:
            return 0.0
        shared = set(a).intersection(b)
        return math.fsum(map(self.weight_squared, shared)) / norms


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
