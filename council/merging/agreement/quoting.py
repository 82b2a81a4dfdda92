"""Code quoted from the change: what a line finding copies from the lines it points at.

Reviewers quote the line they comment on, in code blocks and spans (never read, see
:mod:`~council.merging.agreement.words`) or plainly ("the line q = "SELECT … WHERE name="
+ name builds the query"); a naming nit and an SQL injection on one line then share every
word of that line. So, when the change is known, for a model's line finding (the lines it
points at: its range and :data:`CONTEXT` lines either side, as the change shows them on
the new side):

* a run of :data:`RUN` or more whitespace-separated tokens of its text that stands in that
  order on those lines is not read at all (:func:`unquoted`);
* a word it writes that is also a word of those lines ("name" for ``WHERE name =``) is
  one of its ``parts``, not its prose (:func:`demoted`): it names the code. It still
  matches another telling that writes it as a word of its own, so an analyzer's message
  ("shell=True identified") and a model saying "shell" about ``shell=True`` still agree.

An analyzer's telling is left as it is: its message is its rule's, not a quote. Pure.
Source: docs/harvest.md §8 (agreement: quoted code).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from council.change.diff import Change
from council.change.secret_masks import added_lines_of
from council.merging.agreement.relation import Place
from council.merging.agreement.words import PHRASE, Lexicon, Reading

RUN = 3
"""Tokens in a row that make a quote (a line of fewer tokens, at least two, is quoted
by all of them): two words of a line in a row are still prose ("shell=True identified")."""

CONTEXT = 2
"""Lines either side of a finding's range it may quote (the statement around the line)."""

SPAN = 40
"""Lines of one finding's range read at most."""

_EDGES = "\"'`.,;:!?()[]{}<>*"
"""Punctuation a quoted token may gain or lose at its ends (quotes, backticks, commas)."""

Grams = frozenset[tuple[str, ...]]
"""The runs of a piece of code, each a tuple of normalized tokens."""


def _norm(token: str) -> str:
    """A token as quotes are compared: edge punctuation off, case folded (a token of
    punctuation alone stays as it is)."""
    return token.strip(_EDGES).casefold() or token


def code_lines(change: Change) -> dict[str, dict[int, str]]:
    """New-side path → line number → text, for every line the change shows on the new
    side (added and context lines)."""
    return {
        changed.path: dict(added_lines_of(changed, context=True))
        for changed in change.files
        if changed.status != "deleted" and not changed.binary
    }


def grams_of(lines: Sequence[str]) -> Grams:
    """Every run of :data:`RUN` consecutive tokens of each line (of all its tokens, for
    a line of two), normalized: what a quote of these lines holds."""
    grams: set[tuple[str, ...]] = set()
    for line in lines:
        tokens = list(map(_norm, line.split()))
        size = min(RUN, len(tokens))
        if size < 2:
            continue
        grams.update(tuple(tokens[k : k + size]) for k in range(len(tokens) - size + 1))
    return frozenset(grams)


def unquoted(text: str, grams: Grams) -> str:
    """``text`` without the runs of its tokens that stand among ``grams`` (each a quote of
    the code); the rest joined by single spaces. Never raises."""
    if not grams:
        return text
    tokens = text.split()
    normed = [_norm(t) for t in tokens]
    quoted = [False] * len(tokens)
    for size in sorted({len(g) for g in grams}):
        for k in range(len(tokens) - size + 1):
            if tuple(normed[k : k + size]) in grams:
                quoted[k : k + size] = [True] * size
    if not any(quoted):
        return text
    return " ".join(t for t, q in zip(tokens, quoted, strict=True) if not q)


class Quote(NamedTuple):
    """The code one line finding points at: its runs of tokens (:func:`grams_of`) and
    the ids of its words (identifiers' parts included)."""

    grams: Grams
    words: frozenset[int]


def quotes_of(
    places: Sequence[Place], change: Change | None, lexicon: Lexicon
) -> list[Quote | None]:
    """For each place, the code it points at (:class:`Quote`), or None: for a file, the
    change as a whole, old-side lines, a program's telling, or no ``change``. Read once
    per distinct range. Never raises."""
    if change is None:
        return [None] * len(places)
    lines = code_lines(change)
    cache: dict[tuple[str, int, int], Quote] = {}
    out: list[Quote | None] = []
    for place in places:
        shown = lines.get(place.path) if place.path is not None else None
        if (
            not shown
            or place.rule is not None
            or place.side != "new"
            or place.first is None
            or place.last is None
        ):
            out.append(None)
            continue
        key = (place.path or "", place.first, place.last)
        got = cache.get(key)
        if got is None:
            first = max(1, min(place.first, place.last) - CONTEXT)
            last = min(max(place.first, place.last) + CONTEXT, first + SPAN)
            code = [shown[n] for n in range(first, last + 1) if n in shown]
            read = lexicon.read_text("\n".join(code))
            words = frozenset(t for t in read.terms if t < PHRASE and t not in lexicon.identifiers)
            got = cache[key] = Quote(grams_of(code), words)
        out.append(got)
    return out


def demoted(read: Reading[int], words: frozenset[int]) -> Reading[int]:
    """``read`` with its prose words that are among ``words`` (the code's) moved to its
    parts, and its prose phrases holding one of them dropped."""
    named = read.prose & words
    if not named:
        return read
    prose = frozenset(
        t
        for t in read.prose
        if t not in named and (t < PHRASE or (t // PHRASE not in named and t % PHRASE not in named))
    )
    return read._replace(prose=prose, parts=read.parts | named)
