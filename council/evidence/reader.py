"""Reading stored verdicts back: only what a writer could have produced.

A verdict decides what a report prints and whether a policy may hold a critical finding
down, so an edited or corrupted one must not be half-believed. :func:`read_verdicts`
refuses, and counts (never a silent loss): a non-object, an unknown or missing key, a
``null`` (a writer leaves an absent exit code out); ``block`` or ``dispatch`` not a whole
number from 1, ``also_matches`` not one from 0 (``1.0``, ``"1"``, ``true`` are not); a
``label`` or ``reason`` no writer uses; an exit code its label cannot carry, or any on an
unmatched block; an unmatched block naming a call.
Source: docs/evidence-and-asks.md §1 ("Reading a stored verdict back refuses …").
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
