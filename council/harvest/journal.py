"""Folding a reviewer's journal into its harvest: the reader with caps, and the fold.

A reviewer records a finding the moment it is sure of it, then repeats it in its answer;
the journal also keeps what a reviewer that died before answering had found.
:func:`read_journal` decodes the stored strings under two caps (entries, UTF-8 bytes per
entry) and reports what it could not or may not read; :func:`fold_journal` keeps an entry
(read at ``recorded[i]``) only when no kept finding says the same (the answer, written
after the investigation, wins), and withdraws ``said-nothing`` when the journal added
something; :func:`also_recorded` folds entries already decoded.
Source: docs/harvest.md §5.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from council.harvest.entries import read_entry
from council.harvest.scan import NOT_JSON, decode
from council.merging.sameness import KeptFindings
from council.model.findings import Finding, Harvest, Read, Warning, WarningCode


@dataclass(frozen=True)
class JournalCaps:
    """How much of one participant's journal the harvest reads (docs/harvest.md §5).

    Why caps: the journal is written by the reviewer as it goes and could be huge; what
    is past a cap stays in the store and is reported, never silently dropped.
    """

    max_entries: int = 100
    """Entries read, counted from the first; the rest are left in the store, reported once."""

    max_entry_bytes: int = 65536
    """UTF-8 bytes per entry (64 KiB); a larger entry is left in the store, reported."""


DEFAULT_CAPS = JournalCaps()
"""The caps of docs/harvest.md §5: 100 entries, 64 KiB per entry."""


@dataclass(frozen=True)
class JournalEntry:
    """One readable journal entry: its index in the WHOLE journal list, and its value.

    ``value`` is the decoded JSON, any shape (judged when folded). Source: docs/harvest.md §5.
    """

    index: int
    value: object


@dataclass(frozen=True)
class JournalProblem:
    """A reader warning and the journal index it belongs to, for the fold's ordering.

    For the count cap the index is the first one past the cap, so that warning follows
    those of every entry read. Source: docs/harvest.md §5 ("warnings follow journal order").
    """

    index: int
    warning: Warning


@dataclass(frozen=True)
class JournalReading:
    """What :func:`read_journal` could read, and what it reports, both in journal order.

    Source: docs/harvest.md §5.
    """

    entries: tuple[JournalEntry, ...] = ()
    problems: tuple[JournalProblem, ...] = ()

    @property
    def warnings(self) -> tuple[Warning, ...]:
        """The reader's warnings alone, in journal order (docs/harvest.md §5)."""
        return tuple(problem.warning for problem in self.problems)


def read_journal(raw: Sequence[str | bytes], caps: JournalCaps = DEFAULT_CAPS) -> JournalReading:
    """Decode stored journal entries under the caps, keeping each one's journal index.

    ``raw`` is the journal list as stored (strings or UTF-8 bytes), every attempt's in
    attempt order. Each of the first ``caps.max_entries`` entries is either readable, or
    reported at ``recorded[i]``: ``journal-over-cap`` when it is over
    ``caps.max_entry_bytes`` UTF-8 bytes, ``journal-unreadable`` when it is not JSON
    (nor UTF-8). Over-size and unreadable entries take their place in the count; the
    entries past it are reported ONCE, at ``journal`` (``journal-over-cap``), after the
    others. JSON is read with the harvest's leniency. Never raises.

    Source: docs/harvest.md §5 (the journal caps).
    """
    entries: list[JournalEntry] = []
    problems: list[JournalProblem] = []
    for index, stored in enumerate(raw):
        if index >= caps.max_entries:
            left = len(raw) - index
            message = (
                f"The journal holds {len(raw)} entries; the {left} after the first "
                f"{caps.max_entries} were left unread in the store."
            )
            problems.append(JournalProblem(index, _warning("journal-over-cap", "journal", message)))
            break
        at = f"recorded[{index}]"
        size = _utf8_size(stored)
        if size > caps.max_entry_bytes:
            message = (
                f"{at} is {size} bytes of UTF-8, over the cap of {caps.max_entry_bytes} "
                "bytes per entry; it was left unread in the store."
            )
            problems.append(JournalProblem(index, _warning("journal-over-cap", at, message)))
            continue
        value = _decoded(stored)
        if value is NOT_JSON:
            message = f"{at} is not a JSON value; it could not be read and was skipped."
            problems.append(JournalProblem(index, _warning("journal-unreadable", at, message)))
            continue
        entries.append(JournalEntry(index, value))
    return JournalReading(tuple(entries), tuple(problems))


def fold_journal(h: Harvest, reading: JournalReading, read: Read | None = None) -> Harvest:
    """Fold a journal reading into an answer's harvest (docs/harvest.md §5).

    Each readable entry is read like an answer entry with ``at = recorded[i]``; it is
    kept (after the answer's findings, in journal order) unless a finding already kept
    repeats it (:meth:`council.merging.sameness.KeptFindings.repeats`: same words, at least
    as grave, a place saying as much): the answer's telling wins, and journal repeats
    collapse into the first; the same words at another line are another occurrence. A
    collapsed entry's reading warnings are not reported (nothing of it was lost); a
    dropped entry's are. Warnings:
    the answer's first (``said-nothing`` withdrawn when at least one journal finding was
    added), then the reader's and the entries' merged in journal order. ``truncated``
    stays the answer's. Never raises.
    """
    witness = read.stamp if read is not None else None
    kept = KeptFindings(h.findings)
    added: list[Finding] = []
    tail: list[Warning] = []
    for item in _in_journal_order(reading):
        if isinstance(item, JournalProblem):
            tail.append(item.warning)
            continue
        finding, notes = read_entry(item.value, f"recorded[{item.index}]", witness)
        if finding is not None and kept.repeats(finding):
            continue
        tail.extend(notes)
        if finding is not None:
            kept.add(finding)
            added.append(finding)
    head = [w for w in h.warnings if not (added and w.code == "said-nothing")]
    return Harvest(findings=(*h.findings, *added), warnings=(*head, *tail), truncated=h.truncated)


def also_recorded(h: Harvest, recorded: Sequence[object], read: Read | None = None) -> Harvest:
    """Fold already-decoded journal entries into a harvest, ``at = recorded[i]``.

    ``recorded`` holds the entries as ``record_finding`` received them (decoded JSON
    values, any shape). The same fold as :func:`fold_journal`, without caps. Never
    raises. Source: docs/harvest.md §5.
    """
    entries = tuple(JournalEntry(index, value) for index, value in enumerate(recorded))
    return fold_journal(h, JournalReading(entries), read)


def _in_journal_order(reading: JournalReading) -> list[JournalEntry | JournalProblem]:
    """Entries and reader problems merged by journal index (each index holds one)."""
    merged: list[JournalEntry | JournalProblem] = [*reading.entries, *reading.problems]
    merged.sort(key=lambda item: item.index)
    return merged


def _utf8_size(stored: object) -> int:
    """The UTF-8 size of a stored entry, in bytes (a lone surrogate counts its 3 bytes)."""
    if isinstance(stored, bytes | bytearray | memoryview):
        return len(stored) if not isinstance(stored, memoryview) else stored.nbytes
    if isinstance(stored, str):
        return len(stored.encode("utf-8", "surrogatepass"))
    return 0


def _decoded(stored: object) -> object:
    """One stored entry decoded as JSON, or NOT_JSON (invalid UTF-8, or not a str/bytes)."""
    if isinstance(stored, bytes | bytearray | memoryview):
        try:
            stored = bytes(stored).decode("utf-8")
        except UnicodeDecodeError:
            return NOT_JSON
    if not isinstance(stored, str):
        return NOT_JSON
    return decode(stored)


def _warning(code: WarningCode, at: str, message: str) -> Warning:
    """A journal reader warning."""
    return Warning(code=code, at=at, message=message)
