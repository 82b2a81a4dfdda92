"""Agreement: whether two findings of DIFFERENT reviewers describe the same problem.

``says_the_same`` catches one reviewer repeating itself; two models never write the same
subject. ``score = words × place factor``. The words (:func:`combined`): the geometric
mean of two cosines of IDF-weighted terms (:mod:`~council.merging.agreement.words`; IDF
over the findings being consolidated, so a word every finding uses counts little;
identifiers :data:`IDENTIFIER_WEIGHT` times a word), one over every term, one over the
PROSE alone, so code both name (every reviewer quotes the change) cannot make two tellings
agree by itself. :func:`place_factor`: different files never agree; near lines weigh up
to :data:`NEAR_BONUS` more, lines past :data:`WINDOW` never agree; a line and a finding
without lines only on strong words (:data:`LOOSE`); a program's telling (``Place.rule``)
only on overlapping lines, and never with another rule. Two findings agree at
:data:`THRESHOLD`. :func:`agrees_with` only refuses findings of one participant; grouping
is :mod:`~council.merging.agreement.clusters`'.
Source: docs/harvest.md §8 (agreement across reviewers); bench/agreement.py measures it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Iterable, Sequence
from itertools import chain
from typing import Generic, NamedTuple, TypeVar

from council.merging.agreement.words import PHRASE, Reader, Reading, is_identifier
from council.merging.sameness import program_rule
from council.model.findings import ChangeAnchor, FileAnchor, Finding

K = TypeVar("K", bound=Hashable)
"""A term as a vocabulary counts it: a string or pair (:class:`Reader`) or an id
(:class:`~council.merging.agreement.words.Lexicon`)."""

THRESHOLD = 0.04
"""The score from which two findings agree (and the average a group must keep, see
:mod:`council.merging.agreement.clusters`). Chosen by leave-one-repository-out on the
agreement corpus (bench/agreement.py: a threshold chosen on two repositories, the highest
recall at precision ≥ 0.98 there, scored on the third): the folds choose 0.03 to 0.05;
on all three, 0.03 (P 0.983 / R 0.908) and 0.04 (P 0.984 / R 0.895) both qualify, and
0.04 is kept, the more precise, and the value the restatement match
(:func:`best_agreeing`) and recognition across rounds are calibrated at. Low as it
looks: most of a telling is its reviewer's own phrasing, so two tellings of one problem
often share only a few rare terms, and the one-finding-per-reviewer rule, the shared
prose words and the averaging keep precision."""

PROSE_SHARE = 0.5
"""The weight of the prose in the words' score (:func:`combined`): ``cos(all terms) ×
min(1, cos(prose) / cos(all terms))^s``; at 0.5 the geometric mean of the two cosines
while the prose agrees less. Why: tellings of different problems in one change name the
same functions and quote the same lines, so the cosine of all terms runs high between
them; two tellings of one problem also share words of their own (bench/agreement.py,
every held-out telling naming its pull request's code: precision 0.886 at 0, 0.966 at
0.5). 0 is the relation before prose counted, which the bench measures beside it."""

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

MIN_SHARED_WORDS = 2
"""Distinct words two models' tellings must share in their prose (each written as a word
by at least one of them) for their prose to count at all. Why: in a small round every
word is rare, so a single shared word ("user", "query") scores like agreement; a naming
nit and an SQL injection on one line share one word easily, one problem's tellings share
several. A program's telling needs one (:func:`least_shared`): it merges only on its own
lines, and an analyzer's message is short ("subprocess call with shell=True identified")."""

LOOSE = 0.5
"""The place factor of a finding with lines against one without (a file or the change
as a whole), of a file against the change, and of lines on the two sides of a diff: the
words must reach twice the threshold, 0.08, from which precision on the agreement corpus
is at least 0.99 in each repository (0.994, 1.000, 0.990). Why: "this file lacks type
annotations" next to "line 12 disables TLS verification" shares the file, not the
problem; only strong textual agreement says a vague telling and a precise one are one."""


class Place(NamedTuple):
    """Where a finding points: a file (None for the change as a whole), and lines; and,
    for a program's telling, the rule it reports.

    ``first``/``last`` are the line range (both None for a file or change anchor);
    ``side`` is the diff side the lines count on ("new" or "old"); ``rule`` is None for
    a model's telling, else :func:`~council.merging.sameness.program_rule`.
    """

    path: str | None
    side: str = "new"
    first: int | None = None
    last: int | None = None
    rule: str | None = None


def place_of(finding: Finding, program: bool = False) -> Place:
    """The place of a finding's anchor; with ``program``, the rule its program reports."""
    anchor = finding.anchor
    rule = program_rule(finding.subject) if program else None
    if isinstance(anchor, ChangeAnchor):
        return Place(None, rule=rule)
    if isinstance(anchor, FileAnchor):
        return Place(anchor.path, rule=rule)
    first = anchor.start_line if anchor.start_line is not None else anchor.line
    return Place(anchor.path, anchor.side, first, anchor.line, rule)


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

    * a program's telling (``rule`` set) against another of a different rule → 0; against
      any telling, only on one side of one file with overlapping lines → ``1 +
      NEAR_BONUS`` (two of one rule: also the same file with no lines on either, or no
      file on either → 1), else 0 (:func:`program_clash`);
    * different files → 0 (why: the same words about two files are two problems, as
      ``says_the_same`` holds; and blocking by file keeps consolidation linear);
    * neither names a file → 1 (compared on words alone); one only → :data:`LOOSE`;
    * same file, lines on both: gap ≤ :data:`WINDOW` → ``1 + NEAR_BONUS × (1 −
      gap / WINDOW)``; further → 0;
    * same file, no lines on either → 1; lines on one only, or on different sides →
      :data:`LOOSE`.
    """
    if a.rule is not None or b.rule is not None:
        if program_clash(a, b):
            return 0.0
        return 1.0 + NEAR_BONUS if a.first is not None else 1.0
    if a.path is None or b.path is None:
        return 1.0 if a.path == b.path else LOOSE
    if a.path != b.path:
        return 0.0
    gap = line_gap(a, b)
    if gap is None:
        return 1.0 if a.first is None and b.first is None else LOOSE
    if gap > WINDOW:
        return 0.0
    return 1.0 + NEAR_BONUS * (1.0 - gap / WINDOW)


def program_clash(a: Place, b: Place) -> bool:
    """Whether a program's telling and another may never be one finding: two of
    different rules; or places that are not one: for lines, one side of one file with
    overlapping ranges; two of one rule may also both name the same file without lines,
    or no file. False when neither is a program's (``rule`` None).

    Why: an analyzer reports one rule at one place; a model's telling on other lines (or
    on none) describes something else, and joined to the analyzer's it would move what
    gates, inflate agreement, or, across rounds, take its id.
    """
    if a.rule is None and b.rule is None:
        return False
    if a.rule is not None and b.rule is not None and a.rule != b.rule:
        return True
    if a.path != b.path:
        return True
    if a.first is None or b.first is None:
        both = a.rule is not None and b.rule is not None
        return not (both and a.first is None and b.first is None)
    return line_gap(a, b) != 0


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

    def words(self, a: Reading[K], b: Reading[K], least: int = MIN_SHARED_WORDS) -> float:
        """What two findings' words make of them: :func:`combined` of the cosine of
        their terms and :func:`prose_cosine` of their prose (``least``: the words it
        needs shared), 0 to 1."""
        whole = self.cosine(a.terms, b.terms)
        if PROSE_SHARE == 0.0:
            return whole
        square = self.weight_squared
        return combined(
            whole,
            prose_cosine(square, a, sum(map(square, a.prose)), b, sum(map(square, b.prose)), least),
        )


def norms_of(terms: Iterable[Collection[K]], squared: dict[K, int]) -> list[float]:
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


def prose_cosine(
    square: Callable[[K], int],
    a: Reading[K],
    sum_a: int,
    b: Reading[K],
    sum_b: int,
    least: int = MIN_SHARED_WORDS,
) -> float:
    """How much two findings' prose says alike, 0 to 1: the cosine of each one's prose
    extended by its words named only in code (``parts``) that the OTHER wrote as prose.

    ``square`` weighs a term (squared, in :data:`SQUARE_SCALE` units); ``sum_a``,
    ``sum_b``: the squared weights of each one's prose summed. Why the extension: "divides
    by zero" and ``ZeroDivisionError`` say one thing, one in words, one in a name; but a
    word both only name in code (both quote ``BuildIndex``) is the change's, and counts
    nothing here. 0 when fewer than ``least`` words are shared so. Integer
    sums, so the value does not depend on term order.
    """
    both = a.prose & b.prose
    named_a = a.parts & b.prose
    named_b = a.prose & b.parts
    named = len(named_a) + len(named_b)  # parts are words, never phrases
    if named + len(both) < least or not _has_words(both, least - named):
        return 0.0
    sum_named_a = sum(map(square, named_a))
    sum_named_b = sum(map(square, named_b))
    norms = (sum_a + sum_named_a) * (sum_b + sum_named_b)
    shared = sum(map(square, both)) + sum_named_a + sum_named_b
    return shared / math.sqrt(norms) if norms else 0.0


def least_shared(a: Place, b: Place) -> int:
    """The words two tellings' prose must share (:data:`MIN_SHARED_WORDS`; 1 when either
    is a program's)."""
    return 1 if a.rule is not None or b.rule is not None else MIN_SHARED_WORDS


def _has_words(terms: frozenset[K], wanted: int) -> bool:
    """Whether at least ``wanted`` of some prose terms are words (not phrases: a phrase id
    is at least :data:`~council.merging.agreement.words.PHRASE`, a phrase string a pair);
    stops at the ``wanted``-th."""
    for t in terms:
        if wanted <= 0:
            break
        if t < PHRASE if isinstance(t, int) else isinstance(t, str):
            wanted -= 1
    return wanted <= 0


def combined(whole: float, prose: float) -> float:
    """The words' score from the cosine of all terms (``whole``) and of the prose alone:
    ``whole × min(1, prose / whole)^PROSE_SHARE`` (at 0.5, their geometric mean while the
    prose agrees less than the whole). Prose that agrees less lowers the score; prose that
    agrees more never raises it (common words shared by different problems would). One
    formula for every caller, so a pair scores the same to the last bit wherever scored."""
    share = PROSE_SHARE
    if prose >= whole or share == 0.0:
        return whole
    if share == 0.5:
        return math.sqrt(whole * prose)
    return float(whole ** (1.0 - share) * prose**share)


def score(
    a: Finding,
    b: Finding,
    among: Sequence[Finding] = (),
    programs: tuple[bool, bool] = (False, False),
) -> float:
    """How strongly two findings describe the same problem: 0 up to ``1 + NEAR_BONUS``.

    :func:`combined` of the cosines of their terms and of their prose (weighed over
    ``a``, ``b`` and ``among``, the other findings being consolidated: pass them, since a
    word is rare or common only among others) times :func:`place_factor` (``programs``:
    whether each is a program's telling). Symmetric; never raises.
    """
    here, there = place_of(a, programs[0]), place_of(b, programs[1])
    factor = place_factor(here, there)
    if not factor:
        return 0.0
    read = Reader()
    told_a, told_b = read.read(a), read.read(b)
    vocabulary = Vocabulary([told_a.terms, told_b.terms, *map(read, among)])
    return vocabulary.words(told_a, told_b, least_shared(here, there)) * factor


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
    """The index of the candidate that ``finding`` restates best, or None: the highest
    cosine of all their terms (weighed over all of them) times :func:`place_factor`,
    reaching :data:`THRESHOLD`; ties: the first. Origins are not compared: used to
    recognise which filed finding a restatement (a judge's, a later round's) means.

    Why all terms, prose not asked for: the question is which finding it refers to, not
    whether two reviewers found one problem; a judge naming bandit's rule and line refers
    to bandit's finding. Linear in the candidates."""
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
