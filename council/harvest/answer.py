"""The harvest of one answer: whatever a reviewer sent back, as findings and warnings.

Every findings list of an answer is read (a draft, a recap, a list the reviewer quoted
from the change, its final answer), numbered across the lists; an entry that a LATER
list repeats is dropped with its warnings (the model's final answer comes last), and
``several-lists`` says when the kept findings come from more than one list. At most
``max_entries`` entries are read; ``over-cap`` says how many were not.

Source: docs/harvest.md §3 (finding the JSON; §3.1 every candidate), §4 (reading each entry),
§6 (warning codes and order, the reading cap).
"""

from __future__ import annotations

from collections.abc import Sequence

from council.harvest.entries import read_entry
from council.harvest.locate import Located, locate
from council.merging.sameness import KeptFindings
from council.model.findings import Finding, Harvest, Read, Warning

ANSWER_MAX_ENTRIES = 1000
"""Entries read from one answer at most (docs/harvest.md §6); the rest are reported, once."""


def harvest(
    answer: str, read: Read | None = None, *, max_entries: int = ANSWER_MAX_ENTRIES
) -> Harvest:
    """Turn one reviewer's raw answer into findings, warnings and the truncation flag.

    Every candidate list is read (a rule that picks one lets a quoted list planted in the diff
    hide the reviewer's own answer), entries numbered ``findings[i]`` across candidates; one
    that :func:`~council.merging.sameness.says_the_same` as a finding kept from a LATER
    candidate is dropped with its warnings. Warnings: §3's answer-level ones, then
    ``several-lists``, ``over-cap`` (entries past ``max(max_entries, 0)`` are counted, never
    built), then entry by entry. ``read``'s witness goes on every anchor. Never raises
    (the text is untrusted); linear in ``len(answer)``. Source: docs/harvest.md §3.1, §4, §6.
    """
    return _read_located(locate(answer, max(0, max_entries)), read)


def harvest_entries(
    entries: Sequence[object], read: Read | None = None, *, max_entries: int = ANSWER_MAX_ENTRIES
) -> Harvest:
    """The harvest of one findings list a reader already holds decoded, read as
    :func:`harvest` reads an answer's one list: each entry by docs/harvest.md §4 (``at =
    findings[i]``), the first ``max_entries`` of them, ``over-cap`` for the rest (§6).

    Why: a reader that built the entries itself (a SARIF log's results,
    :class:`council.readers.sarif.SarifReading`) need not write them as text for the
    harvest to parse again. Never raises.
    """
    cap = max(0, max_entries)
    located = Located(tuple(entries[:cap]), unread=max(0, len(entries) - cap))
    return _read_located(located, read)


def _read_located(located: Located, read: Read | None) -> Harvest:
    """Read the entries :func:`~council.harvest.locate.locate` found (the body of
    :func:`harvest`: repeats, ``several-lists``, ``over-cap``, then the entries' own)."""
    witness = read.stamp if read is not None else None
    readings = [
        read_entry(entry, f"findings[{index}]", witness)
        for index, entry in enumerate(located.entries)
    ]
    repeats = _repeats([finding for finding, _ in readings], located.lists)
    findings: list[Finding] = []
    notes: list[Warning] = []
    sources: set[int] = set()
    for index, (finding, said) in enumerate(readings):
        if index in repeats:
            continue
        notes.extend(said)
        if finding is not None:
            findings.append(finding)
            if located.lists:
                sources.add(located.lists[index])
    warnings: list[Warning] = list(located.warnings)
    if len(sources) > 1:
        warnings.append(_several_lists(len(sources), len(repeats)))
    if located.unread:
        warnings.append(_over_cap(len(located.entries), located.unread))
    warnings.extend(notes)
    return Harvest(findings=tuple(findings), warnings=tuple(warnings), truncated=located.truncated)


def _repeats(found: Sequence[Finding | None], lists: Sequence[int]) -> set[int]:
    """The indices of the entries a LATER candidate repeats (docs/harvest.md §3.1).

    ``lists[i]`` is the candidate entry ``i`` came from (non-decreasing, text order);
    empty means one list, which has no repeats. Walks the candidates from the last to
    the first, checking each entry against the findings kept from the candidates after
    its own (:meth:`~council.merging.sameness.KeptFindings.repeats`), so repeats inside
    one candidate are never dropped. Linear: kept findings
    are indexed by folded subject.
    """
    dropped: set[int] = set()
    later = KeptFindings()
    end = len(lists)
    while end > 0:
        start = end - 1
        while start > 0 and lists[start - 1] == lists[end - 1]:
            start -= 1
        kept_here: list[Finding] = []
        for index in range(start, end):
            finding = found[index]
            if finding is None:
                continue
            if later.repeats(finding):
                dropped.add(index)
            else:
                kept_here.append(finding)
        for finding in kept_here:
            later.add(finding)
        end = start
    return dropped


def _several_lists(count: int, repeats: int) -> Warning:
    """``several-lists``: the kept findings come from ``count`` findings lists."""
    again = (
        f"; {repeats} entr{'y' if repeats == 1 else 'ies'} that a later list repeated "
        "were kept only once, in the later telling"
        if repeats
        else ""
    )
    return Warning(
        code="several-lists",
        at="answer",
        message=(
            f"The findings come from {count} findings lists in the answer, all of them "
            f"read{again}; a draft, a recap or a findings list the reviewer quoted (from "
            "the change itself, say) may be among them."
        ),
    )


def _over_cap(read: int, unread: int) -> Warning:
    """``over-cap``: the answer held more entries than the reading cap."""
    return Warning(
        code="over-cap",
        at="answer",
        message=(
            f"The answer held {read + unread} findings entries, more than the reading cap "
            f"of {read}; the first {read} were read and the {unread} after them were not."
        ),
    )
