"""Checking and resolving the three clocks of a participant (all in milliseconds).

A roster writes clocks in two tables: the round's (``[council]``) and a participant's own
(``[[reviewers]]``, ``[judge]``); a participant's values override the round's, and the
defaults of :class:`~council.model.participant.Clocks` fill what neither wrote. Every value is
checked where it is written, so a refusal names the field path and the fix.

Usage::

    resolve_clocks({"backstop_ms": 600_000}, {"idle_ms": 120_000}, "council", "reviewers[0]")
    # Clocks(backstop_ms=600000, idle_ms=120000, answer_ms=300000)

Source: docs/identity-and-clocks.md "Clocks".
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from council.errors import RosterError
from council.model.participant import Clocks

FLOOR_MS = 1_000
"""The smallest clock, in milliseconds: smaller values are almost surely seconds."""

CEILING_MS = 8 * 60 * 60 * 1_000
"""The largest clock, in milliseconds (8 hours)."""

CLOCK_FIELDS: tuple[str, ...] = ("backstop_ms", "idle_ms", "answer_ms")
"""The clock keys a roster table may hold, in the order they are checked."""


def check_clock(value: object, path: str) -> int:
    """One clock value, checked: a whole number of milliseconds in [1000, 8 h].

    Why: a clock written as ``30`` almost surely meant seconds and would stop every
    reviewer at once; a float or a string is a slip, not a duration to guess at. A TOML
    boolean is not a number. ``answer_ms = 0`` is the one value below the floor that is
    allowed (it switches the wrap-up off). A negative or zero clock is refused as not
    positive, its example keeping the magnitude written (``-5``: "write 5000 for 5 s",
    never "-5000 for -5 s"). ``path`` names the field (``reviewers[2].idle_ms``).
    Raises :class:`~council.errors.RosterError`.
    Source: docs/identity-and-clocks.md "Clocks".
    """
    name = path.rsplit(".", 1)[-1]
    if isinstance(value, bool) or not isinstance(value, int):
        fix = (
            f"Write {name} as a whole number of milliseconds, not seconds or text: "
            f"{name} = 600000 is 10 minutes"
        )
        if isinstance(value, float) and math.isfinite(value) and 0 < value < FLOOR_MS:
            fix = (
                f"Clocks are whole milliseconds, not seconds: write {name} = "
                f"{round(value * 1000)} for {value} s"
            )
        raise RosterError(path, f"{value!r} is not a whole number of milliseconds", fix)
    if value == 0 and name == "answer_ms":
        return 0
    allowed_zero = " (or 0 to switch the wrap-up off)" if name == "answer_ms" else ""
    if value <= 0:
        # No sign slip is worth guessing at: say what a clock is, with an example that
        # keeps the magnitude written (-5 → 5000 for 5 s; -5000 → 5000 for 5 s).
        size = -value
        example = "write 600000 for 10 minutes"
        if 0 < size < FLOOR_MS:
            example = f"write {size * 1000} for {size} s"
        elif FLOOR_MS <= size <= CEILING_MS:
            example = f"write {size} for {size / 1000:g} s"
        raise RosterError(
            path,
            f"{value} is not a positive number of milliseconds",
            f"A clock must be a positive number of milliseconds, {FLOOR_MS} to {CEILING_MS}: "
            f"{example}{allowed_zero}",
        )
    if value < FLOOR_MS:
        raise RosterError(
            path,
            f"{value} is below the floor of {FLOOR_MS} ms",
            f"Clocks are in milliseconds, not seconds: write {value * 1000} for {value} s"
            f"{allowed_zero}",
        )
    if value > CEILING_MS:
        raise RosterError(
            path,
            f"{value} ms is above the ceiling of {CEILING_MS} ms (8 hours)",
            f"Write at most {CEILING_MS}",
        )
    return value


def check_clock_table(table: Mapping[str, object], where: str) -> dict[str, int]:
    """The clocks one roster table writes, each checked; keys it does not write are absent.

    Why: ``idle_ms > backstop_ms`` written in the same table is a contradiction the
    author must resolve (the idle clock could never fire), so it is refused rather than
    clamped. Other keys of the table are ignored here (the roster reader judges them).
    ``where`` is the table's path (``council``, ``reviewers[2]``, ``judge``). Raises
    :class:`~council.errors.RosterError` naming ``{where}.{field}``.
    Source: docs/identity-and-clocks.md "Clocks".
    """
    written = {
        name: check_clock(table[name], f"{where}.{name}") for name in CLOCK_FIELDS if name in table
    }
    if "idle_ms" in written and "backstop_ms" in written:
        idle, backstop = written["idle_ms"], written["backstop_ms"]
        if idle > backstop:
            raise RosterError(
                f"{where}.idle_ms",
                f"idle_ms ({idle} ms) is longer than backstop_ms ({backstop} ms) in the same "
                f"table, so the idle clock could never fire",
                f"Lower idle_ms to at most {backstop}, or raise backstop_ms",
            )
    return written


def resolve_clocks(
    round_table: Mapping[str, object],
    participant_table: Mapping[str, object],
    where_round: str,
    where_participant: str,
) -> Clocks:
    """The clocks one participant runs under: its own over the round's over the defaults.

    Both tables are checked (:func:`check_clock_table`). Then, across tables, the idle
    clock is clamped to the backstop (a participant's short backstop under the round's
    long idle clock is not a contradiction anyone wrote), and the answer reserve is held
    to half the backstop (the soft deadline stays active: one rule, not two). All values
    are milliseconds. Raises :class:`~council.errors.RosterError` naming the field path.
    Source: docs/identity-and-clocks.md "Clocks".
    """
    merged: dict[str, int] = dict(Clocks().model_dump())
    merged.update(check_clock_table(round_table, where_round))
    merged.update(check_clock_table(participant_table, where_participant))
    backstop = merged["backstop_ms"]
    return Clocks(
        backstop_ms=backstop,
        idle_ms=min(merged["idle_ms"], backstop),
        answer_ms=min(merged["answer_ms"], backstop // 2),
    )
