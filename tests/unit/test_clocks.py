"""Unit tests for checking and resolving clocks (council.model.clocks)."""

from __future__ import annotations

import pytest

from council.errors import RosterError
from council.model.clocks import (
    CEILING_MS,
    FLOOR_MS,
    check_clock,
    check_clock_table,
    resolve_clocks,
)
from council.model.participant import Clocks
from council.roster import parse_roster


def test_defaults_when_nothing_is_written() -> None:
    """With no clock written anywhere the defaults apply: 45, 15 and 5 minutes."""
    assert resolve_clocks({}, {}, "council", "reviewers[0]") == Clocks(
        backstop_ms=2_700_000, idle_ms=900_000, answer_ms=300_000
    )


def test_participant_overrides_round() -> None:
    """A participant's clock wins over the round's; unwritten ones come from the round."""
    got = resolve_clocks(
        {"backstop_ms": 600_000, "idle_ms": 200_000},
        {"idle_ms": 100_000},
        "council",
        "reviewers[0]",
    )
    assert got == Clocks(backstop_ms=600_000, idle_ms=100_000, answer_ms=300_000)


def test_idle_clamped_to_backstop_across_tables() -> None:
    """The round's idle clock longer than a participant's backstop is clamped, not refused."""
    got = resolve_clocks({"idle_ms": 900_000}, {"backstop_ms": 60_000}, "council", "judge")
    assert got.idle_ms == 60_000


def test_default_idle_clamped_to_short_backstop() -> None:
    """A short backstop clamps the default idle clock too."""
    assert resolve_clocks({}, {"backstop_ms": 120_000}, "council", "judge").idle_ms == 120_000


def test_answer_reserve_held_to_half_the_backstop() -> None:
    """A reserve over half the backstop is held to half; the soft deadline stays active."""
    got = resolve_clocks({}, {"backstop_ms": 60_000, "answer_ms": 50_000}, "council", "judge")
    assert got.answer_ms == 30_000
    assert got.soft_deadline_ms == 30_000


def test_answer_zero_switches_wrap_up_off() -> None:
    """answer_ms = 0 is allowed below the floor and means no soft deadline."""
    got = resolve_clocks({"answer_ms": 0}, {}, "council", "reviewers[0]")
    assert got.answer_ms == 0
    assert got.soft_deadline_ms is None


def test_bounds_are_inclusive() -> None:
    """Exactly the floor and exactly the ceiling are accepted."""
    assert check_clock(FLOOR_MS, "council.idle_ms") == FLOOR_MS
    assert check_clock(CEILING_MS, "council.backstop_ms") == CEILING_MS


@pytest.mark.parametrize(
    ("table", "path"),
    [
        ({"idle_ms": 30}, "reviewers[2].idle_ms"),
        ({"backstop_ms": 999}, "reviewers[2].backstop_ms"),
        ({"backstop_ms": CEILING_MS + 1}, "reviewers[2].backstop_ms"),
        ({"answer_ms": 1.5}, "reviewers[2].answer_ms"),
        ({"answer_ms": 600_000.0}, "reviewers[2].answer_ms"),
        ({"idle_ms": True}, "reviewers[2].idle_ms"),
        ({"idle_ms": "10m"}, "reviewers[2].idle_ms"),
        ({"backstop_ms": 0}, "reviewers[2].backstop_ms"),
        ({"idle_ms": 0}, "reviewers[2].idle_ms"),
        ({"answer_ms": -1}, "reviewers[2].answer_ms"),
        ({"backstop_ms": 60_000, "idle_ms": 60_001}, "reviewers[2].idle_ms"),
    ],
)
def test_bad_participant_clock_names_its_path(table: dict[str, object], path: str) -> None:
    """Every refused participant clock names reviewers[2].<field>."""
    with pytest.raises(RosterError) as caught:
        resolve_clocks({}, table, "council", "reviewers[2]")
    assert caught.value.path == path


def test_bad_round_clock_names_the_round_table() -> None:
    """A refused round clock names the round table's path."""
    with pytest.raises(RosterError) as caught:
        resolve_clocks({"backstop_ms": 45}, {}, "council", "reviewers[0]")
    assert caught.value.path == "council.backstop_ms"


def test_seconds_slip_says_milliseconds() -> None:
    """A value below the floor explains that clocks are milliseconds, not seconds."""
    with pytest.raises(RosterError) as caught:
        check_clock(30, "reviewers[2].idle_ms")
    assert "milliseconds, not seconds" in caught.value.fix
    assert "30000" in caught.value.fix


@pytest.mark.parametrize(
    ("value", "example"), [(-5, "write 5000 for 5 s"), (-5000, "write 5000 for 5 s")]
)
def test_negative_clock_must_be_positive(value: int, example: str) -> None:
    """A negative clock is refused as not positive, its example a positive duration
    (never "write -5000 for -5 s")."""
    with pytest.raises(RosterError) as caught:
        check_clock(value, "council.backstop_ms")
    assert "not a positive number of milliseconds" in caught.value.problem
    assert "must be a positive number of milliseconds" in caught.value.fix
    assert example in caught.value.fix
    assert "-5000" not in caught.value.fix and "-5 s" not in caught.value.fix


def test_zero_clock_must_be_positive() -> None:
    """A zero backstop is not positive; its example is not "write 0 for 0 s"."""
    with pytest.raises(RosterError) as caught:
        check_clock(0, "reviewers[0].backstop_ms")
    assert "must be a positive number of milliseconds" in caught.value.fix
    assert "write 0 for 0 s" not in caught.value.fix


def test_negative_roster_clock_through_parse_roster() -> None:
    """The user's case: ``backstop_ms = -5`` in a roster file."""
    text = '[council]\nbackstop_ms = -5\n[[reviewers]]\nid = "r"\nbackend = "replay"\n'
    text += 'answer = "a.json"\n'
    with pytest.raises(RosterError) as caught:
        parse_roster(text, "council.toml")
    assert caught.value.path == "council.backstop_ms"
    assert "write 5000 for 5 s" in str(caught.value)


def test_fractional_seconds_slip_says_milliseconds() -> None:
    """A small float is read as seconds in the fix."""
    with pytest.raises(RosterError) as caught:
        check_clock(1.5, "judge.answer_ms")
    assert "not seconds" in caught.value.fix and "1500" in caught.value.fix


def test_idle_equal_to_backstop_in_one_table_is_fine() -> None:
    """idle_ms equal to backstop_ms is not a contradiction."""
    assert check_clock_table({"backstop_ms": 60_000, "idle_ms": 60_000}, "council") == {
        "backstop_ms": 60_000,
        "idle_ms": 60_000,
    }


def test_contradiction_only_within_one_table() -> None:
    """Round idle over participant backstop is clamped, but within the round it is refused."""
    with pytest.raises(RosterError) as caught:
        resolve_clocks({"backstop_ms": 60_000, "idle_ms": 90_000}, {}, "council", "judge")
    assert caught.value.path == "council.idle_ms"


def test_other_keys_are_ignored() -> None:
    """Keys that are not clocks are not judged by the clock checker."""
    assert check_clock_table({"model": "x", "max_diff_bytes": 5}, "council") == {}
