"""Choosing which JSON in an answer holds the findings: candidate, salvage or bare array.

A model may answer twice (a draft, then the final answer), quote a findings list it read
in the change, wrap its answer, stop in the middle of an entry, forget the wrapper or
break the JSON with a trailing comma. This module applies docs/harvest.md §3 to what
:func:`council.harvest.scan.scan` found and returns the raw entries to read (every
candidate's, in text order: nothing is chosen away), which candidate each came from, the
answer-level warnings (always first in a harvest), whether the answer was cut off, and
how many entries the reading cap left unread.

Source: docs/harvest.md §3.1-§3.4, §6 (``over-cap``).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from council.harvest.fences import fence_contents
from council.harvest.scan import Candidate, FindingsArray, Scan, decode, held, scan
from council.model.findings import Warning, WarningCode


@dataclass(frozen=True)
class Located:
    """The entries an answer's findings list(s) hold, as decoded JSON values.

    ``entries`` are at most the reading cap's worth, in text order; ``lists`` says, for
    each entry, which candidate it came from (its index among the candidates), or is
    empty when every entry came from one list (salvage, a bare array); ``unread`` is how
    many entries past the cap were not read (docs/harvest.md §6, ``over-cap``).
    ``warnings`` are answer-level (``at = "answer"``), in the order a harvest reports
    them; ``truncated`` is true when the entries are what survived a cut-off list, so a
    missing finding means *unknown*, not *nothing to report*. Source: docs/harvest.md §2, §3.
    """

    entries: tuple[object, ...]
    warnings: tuple[Warning, ...] = ()
    truncated: bool = False
    lists: tuple[int, ...] = ()
    unread: int = 0


def locate(answer: str, cap: int | None = None) -> Located:
    """Find the findings list(s) of one answer by the rules of docs/harvest.md §3.

    Every candidate's entries, in text order, with the candidate each came from (``lists``;
    repeats are :func:`council.harvest.answer.harvest`'s business); else salvage, when the best
    array outside them has STRICTLY more whole entries or there is no candidate (``cut-off`` if
    the text ended inside it, else ``malformed-json``); else a complete bare array
    (``bare-array``); else ``said-nothing``, ``no-findings-array`` or ``no-json``. ``cap``
    (None: none): the first ``cap`` entries are returned, ``unread`` counts the rest, and the
    winner is chosen on the full counts. Linear; never raises.
    """
    if not answer.strip():
        return Located((), (_answer("said-nothing", "The answer is blank: nothing was said."),))
    found = scan(answer, cap)
    candidates = found.candidates
    listed = sum(candidate.count for candidate in candidates)
    walk = _best_walk(found, candidates)
    if walk is not None and (not candidates or walk.count > listed):
        return _salvaged(walk, cap)
    if candidates:
        return _read_all(candidates, listed, cap)
    return _without_findings_list(answer, found, cap)


def _read_all(candidates: tuple[Candidate, ...], listed: int, cap: int | None) -> Located:
    """Every candidate's entries, one list in text order, up to the cap (docs/harvest.md §3.1)."""
    room = listed if cap is None else min(cap, listed)
    entries: list[object] = []
    lists: list[int] = []
    for index, candidate in enumerate(candidates):
        if len(entries) >= room:
            break
        taken = candidate.entries[: room - len(entries)]
        entries.extend(taken)
        lists.extend([index] * len(taken))
    return Located(tuple(entries), lists=tuple(lists), unread=listed - len(entries))


def _best_walk(found: Scan, candidates: tuple[Candidate, ...]) -> FindingsArray | None:
    """The findings array outside every candidate with the most whole entries (ties: later).

    An array inside a candidate belongs to it (its own list, or a ``previous_round``
    nested in it) and is never salvaged past it. Counted past the reading cap too.
    """
    starts = [candidate.start for candidate in candidates]
    best: FindingsArray | None = None
    for array in found.arrays:
        index = bisect_right(starts, array.at) - 1
        if index >= 0 and array.at < candidates[index].end:
            continue
        if best is None or array.count >= best.count:
            best = array
    return best


def _salvaged(walk: FindingsArray, cap: int | None) -> Located:
    """The entries of a salvaged findings array, with ``cut-off`` or ``malformed-json``.

    Over the cap, only the first ``cap`` entries are returned and the message says so
    (``over-cap``, added by the harvest, says how many were left).
    """
    whole = walk.count
    entries = tuple(walk.entries[:cap] if cap is not None else walk.entries)
    unread = whole - len(entries)
    held_entries = f"{whole} whole entr{'y' if whole == 1 else 'ies'}"
    read = f"the first {len(entries)} of them were read" if unread else "they were read"
    if walk.ending == "open":
        if whole == 0:
            said = "The answer was cut off before its first finding was complete; "
        else:
            said = f"The answer was cut off inside its findings list after {held_entries}; "
            said += f"{read}, and "
        message = said + "whatever came after the cut is unknown."
        return Located(entries, (_answer("cut-off", message),), truncated=True, unread=unread)
    if walk.ending == "stopped":
        message = (
            f"The answer's findings list stops being valid JSON after {held_entries}; "
            f"{read} and the rest of the list was not."
        )
    else:
        message = (
            "The answer's JSON is malformed (the object around its findings list is not "
            f"valid JSON); its findings list held {held_entries}, and {read} anyway."
        )
    return Located(entries, (_answer("malformed-json", message),), unread=unread)


def _without_findings_list(answer: str, found: Scan, cap: int | None) -> Located:
    """No candidate and no findings array: a bare array, or say why nothing was read."""
    spans = sorted([*fence_contents(answer), (0, len(answer))], key=lambda span: span[1])
    bare: list[object] | None = None
    holds_object = found.findings_not_a_list
    for start, end in spans:
        chunk = answer[start:end].strip()
        if not chunk or chunk[0] not in "[{":
            continue
        value = decode(chunk, cap)
        if isinstance(value, list) and (bare is None or held(value) >= held(bare)):
            bare = value
        elif isinstance(value, dict):
            holds_object = True
    if bare is not None:
        items = held(bare)
        entries = tuple(bare[:cap] if cap is not None else bare)
        read = f"the first {len(entries)} of them" if len(entries) < items else "they"
        message = (
            'The answer is a bare JSON array without the {"findings": ...} wrapper; it '
            f"holds {items} item(s), and {read} were read as the findings list."
        )
        return Located(entries, (_answer("bare-array", message),), unread=items - len(entries))
    if holds_object:
        message = (
            'The answer holds JSON, but no object in it has a "findings" list, so no '
            "findings could be read from it."
        )
        return Located((), (_answer("no-findings-array", message),))
    message = "The answer holds no JSON that could be read, so no findings were taken from it."
    return Located((), (_answer("no-json", message),))


def _answer(code: WarningCode, message: str) -> Warning:
    """An answer-level warning."""
    return Warning(code=code, at="answer", message=message)
