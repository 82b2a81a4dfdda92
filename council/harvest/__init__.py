"""The harvest: whatever a reviewer sent back, turned into findings and warnings.

Two principles decide every rule: one bad entry costs one finding, never the batch; and
no silent loss (every drop and degradation leaves a warning naming the entry). The
package is split by concept:

* :mod:`~council.harvest.scan` — the one linear pass over the text, and the lenient
  JSON decoder;
* :mod:`~council.harvest.fences` — closed Markdown fences;
* :mod:`~council.harvest.locate` — which JSON holds the findings (every candidate,
  salvage, bare array), under the reading cap, and the answer-level warnings;
* :mod:`~council.harvest.entries`, :mod:`~council.harvest.location`,
  :mod:`~council.harvest.fields` — reading one entry;
* :mod:`~council.harvest.paths` — the plain spelling of an anchor path;
* :mod:`~council.harvest.answer` — :func:`harvest` itself: the repeats across an
  answer's lists, ``several-lists`` and ``over-cap``;
* :mod:`~council.harvest.journal` — the journal reader and the fold.

Usage::

    h = harvest(answer, read)                  # max_entries=ANSWER_MAX_ENTRIES (1,000)
    h = fold_journal(h, read_journal(stored_entries), read)   # or also_recorded(h, values)

Source: docs/harvest.md §3-§6.
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
