"""Reading stored verdicts back: only what a writer could have produced.

A verdict decides what a report prints ("ran, exit 0") and whether a policy may hold a
critical finding below critical, so a stored one that was edited, corrupted or written
by something else must not be half-believed. The reader refuses any value the matcher
never writes, and counts what it refused (never a silent loss):

* not a JSON object, an unknown key, a missing key, or a ``null`` anywhere (a writer
  leaves an absent exit code out);
* ``block`` or ``dispatch`` not a whole number from 1 (``1.0``, ``"1"``, ``true`` are
  not), ``also_matches`` not a whole number from 0;
* a ``label`` outside ``ok failed error timeout not-run unmatched``, a ``reason``
  outside ``no-submission-this-turn over-size kept-out``;
* an exit code its label cannot carry (``ok`` with 1, ``failed`` with 0 or none,
  ``error``/``not-run`` with any), or any exit code on an unmatched block;
* an unmatched block that names a call (``tool_call_id``, ``tool``, ``dispatch``,
  ``also_matches``).

Usage::

    reading = read_verdicts(stored)        # stored: decoded JSON values, one per block
    reading.verdicts, reading.refused

Source: docs/evidence-and-asks.md §1 ("A reader of a stored verdict refuses …").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import ValidationError

from council.evidence.verdict import VERDICT, MatchedBlock, UnmatchedBlock


@dataclass(frozen=True)
class VerdictReading:
    """The verdicts read, in stored order, and how many stored values were refused."""

    verdicts: tuple[MatchedBlock | UnmatchedBlock, ...] = ()
    refused: int = 0


def read_verdict(value: object) -> MatchedBlock | UnmatchedBlock | None:
    """One stored verdict (a decoded JSON value), or None when a writer could not have
    produced it (module docstring). Never raises."""
    if not isinstance(value, dict) or None in value.values():
        return None
    try:
        return VERDICT.validate_python(value, strict=True)
    except ValidationError:
        return None


def read_verdicts(values: Iterable[object]) -> VerdictReading:
    """Every stored verdict of ``values`` that :func:`read_verdict` accepts, in order,
    and the count of those it refused. Never raises. Source: docs/evidence-and-asks.md §1.
    """
    verdicts: list[MatchedBlock | UnmatchedBlock] = []
    refused = 0
    for value in values:
        verdict = read_verdict(value)
        if verdict is None:
            refused += 1
        else:
            verdicts.append(verdict)
    return VerdictReading(verdicts=tuple(verdicts), refused=refused)
