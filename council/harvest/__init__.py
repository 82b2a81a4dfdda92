"""The harvest: whatever a reviewer sent back, turned into findings and warnings.

One bad entry costs one finding, never the batch; nothing is lost silently (every drop and
degradation leaves a warning naming the entry). Source: docs/harvest.md §3-§6.

* :mod:`~council.harvest.scan`, :mod:`~council.harvest.fences`: the one linear pass;
* :mod:`~council.harvest.locate`: which JSON holds the findings, under the reading cap;
* :mod:`~council.harvest.entries` (with ``location``, ``fields``, ``paths``): one entry;
* :mod:`~council.harvest.answer`: :func:`harvest` (``max_entries`` 1,000 by default);
* :mod:`~council.harvest.journal`: :func:`read_journal`, :func:`fold_journal`.
"""

from __future__ import annotations

from council.harvest.answer import ANSWER_MAX_ENTRIES, harvest, harvest_entries
from council.harvest.journal import (
    DEFAULT_CAPS,
    JournalCaps,
    JournalEntry,
    JournalProblem,
    JournalReading,
    also_recorded,
    fold_journal,
    read_journal,
)

__all__ = [
    "ANSWER_MAX_ENTRIES",
    "DEFAULT_CAPS",
    "JournalCaps",
    "JournalEntry",
    "JournalProblem",
    "JournalReading",
    "also_recorded",
    "fold_journal",
    "harvest",
    "harvest_entries",
    "read_journal",
]
