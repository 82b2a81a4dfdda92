"""The programs a participant submitted to its script tools in one turn: the rows.

A block is evidence only against a submission of the CURRENT turn: a script that ran an
hour ago, in an earlier turn, says nothing about the tree this answer reviewed, so the
earlier turns' rows are counted and never compared. One row per script-tool call
(``run_script``, a shell, a test run); a call reported twice (a provisional timeout,
then the final ok) keeps its LAST row.

:class:`TurnSubmissions` is built once per participant and turn and then reused for
every text of that turn (each finding's discussion, the answer's prose): it indexes the
comparable rows by length, so a lookup hashes only the rows that could equal a block.

Source: docs/evidence-and-asks.md §1 ("Rows", "Only rows of the current turn").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from council.evidence.outcomes import RunOutcome, exit_code_fits, exit_code_rule


class ScriptRow(BaseModel):
    """One script-tool call of a turn, as the runner reported it.

    JSON shape: ``{"tool_call_id", "tool", "dispatch", "outcome", "exit_code"?,
    "text"?}``; strict types (a dispatch of ``1.0`` or ``true`` is refused) and no other
    key. Raises pydantic's ``ValidationError`` for a value the runner could not have
    produced, including an exit code the outcome cannot carry
    (:func:`~council.evidence.outcomes.exit_code_fits`).
    Source: docs/evidence-and-asks.md §1.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    tool_call_id: str = Field(min_length=1)
    """The call's id as the model's tool call named it (``call_01``)."""

    tool: str = Field(min_length=1)
    """The script tool called (``run_script``, ``run_tests``)."""

    dispatch: int = Field(ge=1)
    """The call's position in the turn: 1 for the turn's first call, and so on."""

    outcome: RunOutcome
    exit_code: int | None = None
    """The process's exit code, only when the runner reported one."""

    text: str | None = None
    """The program exactly as submitted; absent when the runner kept none (such a row
    cannot be compared). ``""`` is the empty program."""

    @model_validator(mode="after")
    def _exit_code_fits_outcome(self) -> Self:
        if not exit_code_fits(self.outcome, self.exit_code):
            raise ValueError(
                f"exit_code {self.exit_code} does not fit outcome {self.outcome!r}: "
                f"{exit_code_rule(self.outcome)}"
            )
        return self


@dataclass(frozen=True)
class Submission:
    """The calls of the turn that submitted one program: the latest of them, and how
    many others did (``also_matches``)."""

    latest: ScriptRow
    also_matches: int


@dataclass(frozen=True)
class TurnSubmissions:
    """The current turn's rows (the last row per call, in first-report order), ready to
    be looked up, and how many calls of earlier turns there were (never compared).

    Usage::

        turn = TurnSubmissions.of(current_rows, earlier_rows)
        turn.find("make test")        # Submission | None

    Source: docs/evidence-and-asks.md §1.
    """

    rows: tuple[ScriptRow, ...] = ()
    """The current turn's rows; constructing keeps the last row per call."""

    earlier_turn_rows: int = 0
    """Calls of earlier turns (the last row per call counted once)."""

    _by_length: Mapping[int, tuple[tuple[str, ScriptRow], ...]] = field(
        init=False, repr=False, compare=False
    )
    """Comparable rows (those with a text), with their text, by its length in characters."""

    def __post_init__(self) -> None:
        rows = tuple(_last_per_call(self.rows))
        by_length: dict[int, list[tuple[str, ScriptRow]]] = {}
        for row in rows:
            if row.text is not None:
                by_length.setdefault(len(row.text), []).append((row.text, row))
        object.__setattr__(self, "rows", rows)
        index = {length: tuple(group) for length, group in by_length.items()}
        object.__setattr__(self, "_by_length", index)

    @classmethod
    def of(cls, current: Iterable[ScriptRow], earlier: Iterable[ScriptRow] = ()) -> Self:
        """The submissions of the turn whose rows are ``current``; ``earlier`` are the
        rows of the participant's earlier turns, only counted. Linear in the number of
        rows (no text is read here). Never raises."""
        return cls(rows=tuple(current), earlier_turn_rows=len(_last_per_call(earlier)))

    def find(self, program: str) -> Submission | None:
        """The calls of this turn that submitted exactly ``program``, or None.

        Exact means equal code point for code point (so byte for byte in UTF-8): no
        trim, no line-ending rewrite, no Unicode normalization, no nearest match.
        Several calls: the latest is the one with the greatest ``dispatch`` (the later
        row on a tie). Costs hashing ``program`` and each row of its length (a text's
        hash is computed once and cached by Python). Never raises.
        """
        return self.lookup((program,)).get(program)

    def lookup(self, programs: Iterable[str]) -> dict[str, Submission]:
        """:meth:`find` for several programs at once: each found one → its submission.

        Only the rows whose text is as long as one of ``programs`` are hashed, each once,
        so the cost is linear in the programs' and those rows' sizes. Never raises.
        """
        programs = tuple(programs)
        found: dict[str, tuple[ScriptRow, int]] = {}
        for length in {len(program) for program in programs}:
            for text, row in self._by_length.get(length, ()):
                seen = found.get(text)
                if seen is None:
                    found[text] = (row, 0)
                else:
                    latest = row if row.dispatch >= seen[0].dispatch else seen[0]
                    found[text] = (latest, seen[1] + 1)
        return {
            program: Submission(latest=found[program][0], also_matches=found[program][1])
            for program in programs
            if program in found
        }


def _last_per_call(rows: Iterable[ScriptRow]) -> list[ScriptRow]:
    """One row per ``tool_call_id``: the last reported, at the place the call was first
    reported."""
    kept: dict[str, ScriptRow] = {}
    for row in rows:
        kept[row.tool_call_id] = row  # a dict keeps the first insertion's place
    return list(kept.values())
