"""The progress display of the waiting CLI (workers.coordinator.progress)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from council.model.report import ParticipantState
from workers.coordinator.progress import (
    LiveProgress,
    ParticipantProgress,
    PlainProgress,
    Progress,
)


def _p(
    pid: str, state: ParticipantState, findings: int = 0, ms: int = 0, detail: str = ""
) -> ParticipantProgress:
    return ParticipantProgress(pid, state, findings, ms, detail)


def _states(*rows: ParticipantProgress) -> dict[str, ParticipantProgress]:
    return {row.participant: row for row in rows}


def _plain() -> tuple[PlainProgress, io.StringIO]:
    out = io.StringIO()
    return PlainProgress(out), out


def test_for_stream_picks_plain_for_a_non_terminal() -> None:
    """A StringIO is no TTY, so the plain display is chosen."""
    assert isinstance(Progress.for_stream(io.StringIO()), PlainProgress)


def test_for_stream_live_override() -> None:
    """live=True forces the live table, live=False the plain lines."""
    assert isinstance(Progress.for_stream(io.StringIO(), live=True), LiveProgress)
    assert isinstance(Progress.for_stream(io.StringIO(), live=False), PlainProgress)


def test_plain_prints_state_changes_only() -> None:
    """Repeated polls with the same states print nothing more, even as counts move."""
    progress, out = _plain()
    progress.update(_states(_p("hawk", "running", 0, 1_200)))
    progress.update(_states(_p("hawk", "running", 2, 5_000)))
    progress.update(_states(_p("hawk", "answered", 3, 14_000)))
    progress.update(_states(_p("hawk", "answered", 3, 14_000)))
    assert out.getvalue().splitlines() == [
        "council: hawk running (0 findings, 1.2 s)",
        "council: hawk answered (3 findings, 14.0 s)",
    ]


def test_plain_skips_first_pending_but_not_later_changes() -> None:
    """Waiting to start is not news; starting is."""
    progress, out = _plain()
    progress.update(_states(_p("hawk", "pending")))
    assert out.getvalue() == ""
    progress.update(_states(_p("hawk", "running", 0, 100)))
    assert out.getvalue().splitlines() == ["council: hawk running (0 findings, 0.1 s)"]


def test_plain_order_is_first_seen_order() -> None:
    """Lines of one update follow first-seen order, whatever order the mapping has."""
    progress, out = _plain()
    progress.update(_states(_p("hawk", "running"), _p("owl", "running")))
    progress.update(_states(_p("owl", "answered"), _p("hawk", "failed"), _p("kite", "running")))
    names = [line.split()[1] for line in out.getvalue().splitlines()]
    assert names == ["hawk", "owl", "hawk", "owl", "kite"]


def test_plain_detail_and_singular() -> None:
    """The detail follows the counts on one line; one finding is singular."""
    progress, out = _plain()
    progress.update(_states(_p("owl", "stopped", 1, 60_000, "stopped by\nthe idle clock")))
    line = out.getvalue()
    assert line.startswith("council: owl stopped (1 finding, 60.0 s)")
    assert "the idle clock" in line
    assert line.count("\n") == 1


def test_plain_update_after_close_raises() -> None:
    """A closed display refuses updates."""
    progress, _ = _plain()
    progress.close()
    progress.close()
    with pytest.raises(RuntimeError):
        progress.update(_states(_p("hawk", "running")))


def test_context_manager_closes() -> None:
    """Leaving the with block closes the display."""
    with Progress.for_stream(io.StringIO(), live=False) as progress:
        progress.update(_states(_p("hawk", "running")))
    with pytest.raises(RuntimeError):
        progress.update(_states(_p("hawk", "answered")))


def test_live_smoke() -> None:
    """The live table draws every participant and keeps the final states on close."""
    out = io.StringIO()
    progress = LiveProgress(Console(file=out, force_terminal=True, width=100))
    try:
        progress.update(_states(_p("hawk", "running", 0, 1_000), _p("owl", "pending")))
        progress.update(
            _states(_p("hawk", "answered", 3, 14_000), _p("owl", "failed", detail="[bold]x"))
        )
    finally:
        progress.close()
    text = out.getvalue()
    assert "hawk" in text
    assert "answered" in text
    assert "failed" in text
    assert "[bold]x" in text
    assert "\x1b[" in text
    with pytest.raises(RuntimeError):
        progress.update(_states(_p("hawk", "answered")))


def test_live_close_without_update_draws_nothing() -> None:
    """A display closed before its first update writes nothing."""
    out = io.StringIO()
    LiveProgress(Console(file=out, force_terminal=True)).close()
    assert out.getvalue() == ""


def test_for_stream_live_writes_to_the_given_stream() -> None:
    """A forced live display writes its table to the stream it was built for."""
    out = io.StringIO()
    progress = Progress.for_stream(out, live=True)
    try:
        progress.update(_states(_p("hawk", "running")))
    finally:
        progress.close()
    assert "hawk" in out.getvalue()


def test_plain_says_who_is_still_waiting_after_a_silent_minute() -> None:
    """No state change for a minute while reviewers work: one line names who is still at
    it and how far; the next one only after another silent minute; none once all are done."""
    clock = [0]
    out = io.StringIO()
    progress = PlainProgress(out, clock=lambda: clock[0], heartbeat_ms=60_000)
    progress.update(_states(_p("hawk", "running", 0, 0), _p("owl", "pending")))
    clock[0] = 59_999
    progress.update(_states(_p("hawk", "running", 2, 59_999), _p("owl", "pending")))
    assert out.getvalue().splitlines() == ["council: hawk running (0 findings, 0.0 s)"]
    clock[0] = 60_000
    progress.update(_states(_p("hawk", "running", 3, 60_000), _p("owl", "pending")))
    clock[0] = 90_000
    progress.update(_states(_p("hawk", "running", 3, 90_000), _p("owl", "pending")))
    assert out.getvalue().splitlines()[1:] == [
        "council: still waiting on 2 of 2: hawk running (3 findings, 60.0 s), "
        "owl pending (0 findings, 0.0 s)"
    ]
    clock[0] = 200_000
    progress.update(_states(_p("hawk", "answered", 4, 150_000), _p("owl", "failed")))
    clock[0] = 400_000
    progress.update(_states(_p("hawk", "answered", 4, 150_000), _p("owl", "failed")))
    assert out.getvalue().splitlines()[2:] == [
        "council: hawk answered (4 findings, 150.0 s)",
        "council: owl failed (0 findings, 0.0 s)",
    ]
