"""The words of a finding as agreement compares them: terms, code identifiers, phrases.

Two reviewers who see one problem rarely write one sentence, but they name the same code
and share words and two-word phrases. A telling becomes a set of TERMS, the first character
saying the kind: ``"`name"`` an identifier, case folded (a backticked span's names, a
dotted path and its segments, snake_case, camelCase or digit-bearing names, ``name()``);
``"~stem"`` a word cut to :data:`STEM` letters, function words dropped (an identifier's
parts count as words too); a phrase, two consecutive words or identifiers. Its PROSE is
the part no code wrote: the words read as words and the phrases of two of them (never an
identifier, an identifier's parts, a code span's name); its PARTS, the words it has only
in the names it writes (``ZeroDivisionError``: zero, divisi, error). Quoted code is not
read at all (fenced blocks, code spans holding whitespace): reviewers quote the same lines
of the change whatever problem they describe.
Each raw token is read once per consolidation (cached); :class:`Lexicon` maps terms to
integers, which hash and count several times faster than strings. Pure.
Source: docs/harvest.md §8 (agreement: words, identifiers, prose).
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from itertools import chain, islice, repeat
from operator import add, itemgetter, mul
from typing import Generic, NamedTuple, TypeVar

from council.model.findings import Finding

STEM = 6
"""Letters kept of an ordinary word (prefix stemming): enough to tell "cache" from
"cancel", short enough to fold English inflections."""

READ_CHARS = 2_000
"""Characters of a discussion read (the subject is always read whole). The first
paragraphs say what the problem is; the rest argues the fix. Bounds the cost of one
finding."""

IDENTIFIER = "`"
"""First character of an identifier term."""

WORD = "~"
"""First character of a word or phrase term."""

_FUNCTION_WORDS = """
a an the and or but if then else of to in on at by for with from into onto as is are was
were be been being it its this that these those there here which who whom whose what
when where why how not no nor so than too very can could should would will shall may
might must do does did done doing have has had having we you they he she them our your
their my me us also just only such any all each every some more most other another same
own both either neither via per vs eg ie etc while whereas because since until unless
although though however thus hence therefore instead rather about above below over under
up down out off again further once i
"""

STOP_WORDS: frozenset[str] = frozenset(_FUNCTION_WORDS.split())
"""English function words: they say nothing about which problem a finding describes."""

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.M | re.S)
"""A fenced code block (a line opening with three backticks or tildes, up to the line
closing it, or to the end when none does)."""

_SPAN = re.compile(r"(`[^`\s]*`)|`[^`\n]*`")
"""An inline code span (paired left to right, as Markdown pairs them on one line): a
name (group 1: no whitespace inside), or quoted code."""


def _span(found: re.Match[str]) -> str:
    """A code span as it is read: a name stays, quoted code goes."""
    return found.group(1) or " "


def _marked(text: str) -> str:
    """The text as it is read: fenced code blocks and inline code spans holding
    whitespace (``q = build(name)``: quoted code) dropped; a span of one name
    (``parse_limit``) stays, read as an identifier. Why: the code a reviewer quotes is the
    change's, not the reviewer's words; two reviewers quoting one line say nothing alike
    by it."""
    if "```" in text or "~~~" in text:
        text = _FENCE.sub("\n", text)
    if "`" in text:
        text = _SPAN.sub(_span, text)
    return text


def text_of(finding: Finding) -> str:
    """What is read of a finding: its subject, then at most :data:`READ_CHARS` of its
    discussion, quoted code marked (:func:`_marked`)."""
    return _marked(f"{finding.subject}\n{finding.discussion[:READ_CHARS]}")


_TOKEN = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)*(?:\(\))?")
"""A name (possibly dotted, ``::`` or ``->`` joined, possibly a call)."""

_JOINERS = re.compile(r"\.|::|->")
_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")


def _is_identifier(token: str) -> bool:
    """Whether a name is shaped like code rather than prose.

    Code: an inner underscore, a joiner (``.``, ``::``, ``->``) between names of two or
    more characters (so "e.g" stays prose), a call ``()``, camelCase, or letters mixed
    with digits.
    """
    bare = token.removesuffix("()")
    if bare != token or "_" in bare.strip("_$") or "$" in bare:
        return True
    if _JOINERS.search(bare) is not None:
        return any(len(segment) > 1 for segment in _JOINERS.split(bare))
    if _CAMEL.search(bare) is not None:
        return True
    return any(c.isdigit() for c in bare) and any(c.isalpha() for c in bare)


def _word(text: str) -> str | None:
    """The word term of a piece of prose, or None for a function word or a lone letter."""
    folded = text.casefold()
    if len(folded) < 2 or folded in STOP_WORDS:
        return None
    return WORD + folded[:STEM]


def _read_identifier(name: str) -> tuple[tuple[str, ...], str]:
    """The terms of one identifier (itself, its segments, its parts as words) and the
    element it puts into a phrase (its own term)."""
    bare = name.removesuffix("()")
    folded = bare.casefold()
    terms: list[str] = [IDENTIFIER + folded]
    segments = _JOINERS.split(bare)
    if len(segments) > 1:
        terms.extend(IDENTIFIER + s.casefold() for s in segments if len(s) > 1)
    for segment in segments:
        for part in _PARTS.findall(segment):
            word = _word(part) if not part.isdigit() else None
            if word is not None:
                terms.append(word)
    return tuple(dict.fromkeys(terms)), IDENTIFIER + folded


class _Reading(dict[str, tuple[tuple[str, ...], tuple[str, ...]]]):
    """Raw token → (its terms, what it adds to the phrase sequence), read once per token.

    A dict whose misses read the token, so a whole finding is read by one ``map`` over its
    tokens. It holds one entry per distinct raw token: a round's vocabulary, some
    thousands of entries even for 100,000 findings.
    """

    def __missing__(self, token: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        got = self[token] = _read(token)
        return got


_EDGES = "\"'.,;:!?()[]{}<>*"
"""Punctuation stripped from both ends of a raw token before it is read."""


def _read(raw: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The terms of one raw (whitespace-separated) token and its phrase elements.

    A token with a backtick is code: every name in it is an identifier (a span with
    spaces inside reaches here in pieces, each piece touching a backtick counts as
    code, the words between as prose). Otherwise the names in it are read by shape.
    """
    code = "`" in raw
    terms: list[str] = []
    sequence: list[str] = []
    for name in _TOKEN.findall(raw.replace("`", " ") if code else raw.strip(_EDGES)):
        if name.casefold() in STOP_WORDS and (code or not _is_identifier(name)):
            continue
        if code or _is_identifier(name):
            own, element = _read_identifier(name)
            terms.extend(own)
            sequence.append(element)
        elif _JOINERS.search(name) is not None:
            words = [w for w in map(_word, _JOINERS.split(name)) if w is not None]
            terms.extend(words)
            sequence.extend(words)
        else:
            word = _word(name)
            if word is not None:
                terms.append(word)
                sequence.append(word)
    return tuple(dict.fromkeys(terms)), tuple(sequence)


Term = str | tuple[str, str]
"""A term: an identifier or word string (kind first), or a phrase: a pair of them."""

T = TypeVar("T", bound=Hashable)
"""A term as a reading holds it: a :data:`Term` (:class:`Reader`) or an id (:class:`Lexicon`)."""


class Reading(NamedTuple, Generic[T]):
    """One finding read: its ``terms``; its ``prose``, the words it wrote as words and the
    phrases of two of them; and its ``parts``, the words it has only as parts of the
    identifiers it names (``ZeroDivisionError`` → zero, divisi, error)."""

    terms: tuple[T, ...]
    prose: frozenset[T]
    parts: frozenset[T]


_TERMS = itemgetter(0)
_ELEMENTS = itemgetter(1)
_PROSE = itemgetter(2)
_WORDS = itemgetter(3)


class Reader:
    """Reads findings into terms, sharing one token cache across a consolidation.

    Usage::

        read = Reader()
        terms = [read(finding) for finding in findings]
    """

    def __init__(self) -> None:
        self._tokens = _Reading()

    def __call__(self, finding: Finding) -> tuple[Term, ...]:
        """The distinct terms of a finding's subject and discussion, first seen first.

        Identifier and word terms are strings; phrases are pairs of them. Never raises: an
        empty discussion, or a subject of function words alone, gives few or no terms.
        """
        return self.read(finding)[0]

    def read(self, finding: Finding) -> Reading[Term]:
        """The finding's terms (as :meth:`__call__`), its prose and its words named only
        in code (:class:`Reading`). Never raises."""
        read = list(map(self._tokens.__getitem__, text_of(finding).split()))
        sequence = list(chain.from_iterable(map(_ELEMENTS, read)))
        phrases = list(zip(sequence, islice(sequence, 1, None), strict=False))
        terms = tuple(dict.fromkeys(chain(chain.from_iterable(map(_TERMS, read)), phrases)))
        prose = {t for t in sequence if t.startswith(WORD)}
        prose.update(p for p in phrases if p[0].startswith(WORD) and p[1].startswith(WORD))
        words = {t for t in terms if isinstance(t, str) and t.startswith(WORD)}
        return Reading(terms, frozenset(prose), frozenset(words - prose))


def terms_of(finding: Finding) -> tuple[Term, ...]:
    """The terms of one finding (:class:`Reader`, with a cache of its own)."""
    return Reader()(finding)


def is_identifier(term: Term) -> bool:
    """Whether a term is a code identifier (phrases and words are not)."""
    return isinstance(term, str) and term.startswith(IDENTIFIER)


PHRASE = 1 << 32
"""A phrase's id is its first element's id × PHRASE + its second's. Element ids count
from 1 and stay below PHRASE (no consolidation holds 2³² distinct words), so a phrase
id is never an element's and two phrases share an id only if they are one phrase."""


class _IdReading(dict[str, tuple[tuple[int, ...], ...]]):
    """Raw token → (its term ids, its phrase elements' ids, the same with 0 for each
    element that is an identifier, the ids of its word terms), read once per token."""

    def __init__(self, lexicon: Lexicon) -> None:
        super().__init__()
        self._id = lexicon.id_of

    def __missing__(self, token: str) -> tuple[tuple[int, ...], ...]:
        terms, sequence = _read(token)
        ids = tuple(map(self._id, sequence))
        prose = tuple(i if e.startswith(WORD) else 0 for i, e in zip(ids, sequence, strict=True))
        words = tuple(self._id(t) for t in terms if t.startswith(WORD))
        got = self[token] = (tuple(map(self._id, terms)), ids, prose, words)
        return got


class Lexicon:
    """Reads a consolidation's findings into term ids: the terms of :class:`Reader`,
    each a small integer (phrases: :data:`PHRASE`).

    Why: a round's findings are read, counted and intersected term by term; an int hashes
    as itself and a set or count of ints costs a fraction of one of strings and pairs
    (a pair does not even cache its hash). One lexicon per consolidation: ids mean
    something only within it.

    Usage::

        lexicon = Lexicon()
        ids = [lexicon(finding) for finding in findings]
        lexicon.identifiers        # the ids that are code identifiers
    """

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._tokens = _IdReading(self)
        self.identifiers: set[int] = set()
        """The ids of identifier terms (they weigh more, see the relation)."""

    def id_of(self, term: str) -> int:
        """The id of an identifier or word term (a new one for a term not seen yet)."""
        got = self._ids.get(term)
        if got is None:
            got = self._ids[term] = len(self._ids) + 1
            if term.startswith(IDENTIFIER):
                self.identifiers.add(got)
        return got

    def __call__(self, finding: Finding) -> tuple[int, ...]:
        """The distinct term ids of a finding (the terms :class:`Reader` reads), in no
        particular order. Never raises."""
        return self.read(finding)[0]

    def read(self, finding: Finding) -> Reading[int]:
        """The finding's term ids (as :meth:`__call__`), with the ids of its prose and of
        its words named only in code, as :meth:`Reader.read` reads them. Never raises."""
        return self.read_text(text_of(finding))

    def read_text(self, text: str) -> Reading[int]:
        """:meth:`read` of a text as it is (nothing marked, nothing cut). Never raises.

        How, in bulk: each token's phrase elements come twice, as ids and as ids with 0
        for an identifier; consecutive elements of the second make a phrase id only when
        neither is 0, and what else they make (a word's id, ``x × PHRASE``) is either a
        prose word already or no term at all, which the intersection with the terms drops.
        """
        read = list(map(self._tokens.__getitem__, text.split()))
        sequence = list(chain.from_iterable(map(_ELEMENTS, read)))
        phrases = map(add, map(mul, sequence, repeat(PHRASE)), islice(sequence, 1, None))
        terms = set(chain(chain.from_iterable(map(_TERMS, read)), phrases))
        words = list(chain.from_iterable(map(_PROSE, read)))
        pairs = map(add, map(mul, words, repeat(PHRASE)), islice(words, 1, None))
        prose = frozenset(terms.intersection(chain(words, pairs)))
        named = frozenset(chain.from_iterable(map(_WORDS, read))).difference(prose)
        return Reading(tuple(terms), prose, named)
