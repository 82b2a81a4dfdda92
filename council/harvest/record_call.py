"""What a reviewer hands to ``record_finding`` (or ``council record``), made into entries.

The recorder stores any object as given (shape is judged at harvest, not argued with
mid-run), accepts a list or a JSON string of either, and replies in one sentence. It never
raises into the reviewer's loop. Source: docs/harvest.md §1.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Recording:
    """The entries to store (compact JSON texts) and how many items were not objects."""

    entries: tuple[str, ...]
    rejected: int


def split_recorded(value: object) -> Recording:
    """Turn a recorded value into journal entries.

    An object is one entry; a list gives one entry per object item (the rest are counted
    as rejected); a string is read as JSON text of either (a string that is not JSON, or
    is JSON of anything else, is one rejected item).
    """
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return Recording((), 1)
        if isinstance(value, str):
            return Recording((), 1)
    items = value if isinstance(value, list) else [value]
    entries = tuple(_compact(v) for v in items if isinstance(v, dict))
    return Recording(entries, len(items) - len(entries))


def reply(stored: int, rejected: int, failure: str | None = None) -> str:
    """The one-sentence reply of docs/harvest.md §1 for a recording."""
    if failure is not None:
        return f"Not recorded ({failure}); keep it for your final answer."
    if stored == 0:
        return "Nothing was recorded: a finding has to be a JSON object."
    if rejected == 0 and stored == 1:
        return "Recorded."
    if rejected == 0:
        return f"Recorded {stored} of them."
    return f"Recorded {stored} of them; the other {rejected} were not objects."


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
