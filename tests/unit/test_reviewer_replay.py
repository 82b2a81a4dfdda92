"""The replay backend: a recorded answer and journal, played back under the clocks."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from council.errors import RosterError
from council.model.backend_result import ReviewResult
from council.model.participant import Clocks, Participant
from reviewers.base import ReviewRequest
from reviewers.programs.replay import ReplayReviewer, check_options

SHORT = Clocks(backstop_ms=2000, idle_ms=1000, answer_ms=0)
ANSWER = '{"findings": [{"subject": "leaks a file handle", "label": "issue"}]}'


class MemorySink:
    """An in-memory journal sink that remembers what arrived, and when."""

    def __init__(self) -> None:
        self.entries: list[str] = []
        self.arrived: list[float] = []

    def append(self, raw: str) -> str:
        self.entries.append(raw)
        self.arrived.append(time.monotonic())
        return "Recorded."


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    """A directory holding answer.txt and journal.jsonl (three entries, a blank line)."""
    (tmp_path / "answer.txt").write_text(ANSWER)
    (tmp_path / "journal.jsonl").write_text('{"n": 1}\n\n{"n": 2}\r\n{"n": 3}')
    return tmp_path


def replay(
    options: dict[str, Any], clocks: Clocks = SHORT, sink: MemorySink | None = None
) -> tuple[ReviewResult, MemorySink, float]:
    """Run the replay backend; return its result, its sink and the seconds it took."""
    participant = Participant(id="rec", backend="replay", clocks=clocks, options=options)
    sink = sink or MemorySink()
    started = time.monotonic()
    request = ReviewRequest(participant=participant, prompt="", journal=sink)
    result = ReplayReviewer().review(request)
    return result, sink, time.monotonic() - started


def test_answer_is_returned(recording: Path) -> None:
    """The answer file's text is the answer, with no stop or failure."""
    result, _, _ = replay({"answer": "answer.txt", "base_dir": str(recording)})
    assert result.answer == ANSWER
    assert result.stop is None and result.failure is None


def test_answer_bytes_decoded_with_replacement(tmp_path: Path) -> None:
    """An answer that is not valid UTF-8 is decoded with replacement characters."""
    (tmp_path / "a.txt").write_bytes(b"caf\xe9")
    result, _, _ = replay({"answer": str(tmp_path / "a.txt")})
    assert result.answer == "caf\ufffd"


def test_journal_forwarded_in_order_before_the_answer(recording: Path) -> None:
    """Each non-empty journal line reaches the sink in order; blank lines are skipped."""
    options = {"answer": "answer.txt", "journal": "journal.jsonl", "base_dir": str(recording)}
    result, sink, _ = replay(options)
    assert sink.entries == ['{"n": 1}', '{"n": 2}', '{"n": 3}']
    assert result.journal_entries == 3


def test_relative_paths_without_base_dir_use_the_current_directory(
    recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without base_dir, relative paths resolve against the current directory."""
    monkeypatch.chdir(recording)
    result, _, _ = replay({"answer": "answer.txt"})
    assert result.answer == ANSWER


def test_latency_spreads_the_journal(recording: Path) -> None:
    """With latency_ms, entries arrive spread over it and the answer comes at its end."""
    options = {
        "answer": "answer.txt",
        "journal": "journal.jsonl",
        "latency_ms": 800,
        "base_dir": str(recording),
    }
    started = time.monotonic()
    result, sink, took = replay(options)
    assert result.answer == ANSWER
    assert 0.75 < took < 1.5
    offsets = [at - started for at in sink.arrived]
    assert offsets == sorted(offsets)
    assert 0.1 < offsets[0] < 0.4 and 0.5 < offsets[2] < 0.8


def test_cancel_interrupts_the_latency(recording: Path) -> None:
    """request.cancel stops a replay waiting out its latency, as cancelled."""
    participant = Participant(
        id="rec",
        backend="replay",
        clocks=SHORT,
        options={"answer": "answer.txt", "latency_ms": 1500, "base_dir": str(recording)},
    )
    request = ReviewRequest(participant=participant, prompt="", journal=MemorySink())
    threading.Timer(0.2, request.cancel.set).start()
    started = time.monotonic()
    result = ReplayReviewer().review(request)
    assert result.stop is not None and result.stop.limit == "cancelled"
    assert result.answer == ""
    assert time.monotonic() - started < 1.0


def test_latency_past_the_backstop_stops_at_the_wall(recording: Path) -> None:
    """latency_ms over backstop_ms → wall-clock stop at the backstop, entries so far kept."""
    options = {
        "answer": "answer.txt",
        "journal": "journal.jsonl",
        "latency_ms": 2400,
        "base_dir": str(recording),
    }
    clocks = Clocks(backstop_ms=1500, idle_ms=1500, answer_ms=0)
    result, sink, took = replay(options, clocks=clocks)
    assert result.stop is not None
    assert (result.stop.limit, result.stop.budget_ms) == ("wall-clock", 1500)
    assert result.answer == ""
    assert sink.entries == ['{"n": 1}', '{"n": 2}']
    assert result.journal_entries == 2
    assert 1.45 < took < 2.0


def test_a_silent_gap_longer_than_idle_stops_as_idle(recording: Path) -> None:
    """A replay silent longer than idle_ms (no journal) stops as idle, like a live one."""
    options = {"answer": "answer.txt", "latency_ms": 1800, "base_dir": str(recording)}
    result, _, took = replay(options)
    assert result.stop is not None
    assert (result.stop.limit, result.stop.budget_ms) == ("idle", 1000)
    assert 0.95 < took < 1.5


def test_missing_answer_file_fails_naming_the_path(tmp_path: Path) -> None:
    """A missing answer file is a failure that names the resolved path."""
    result, sink, _ = replay({"answer": "nope.txt", "base_dir": str(tmp_path)})
    assert result.failure == f"replay answer file '{tmp_path / 'nope.txt'}' not found"
    assert sink.entries == []


def test_missing_journal_file_fails_before_forwarding(recording: Path) -> None:
    """A missing journal file is a failure naming it; nothing is forwarded."""
    options = {"answer": "answer.txt", "journal": "gone.jsonl", "base_dir": str(recording)}
    result, sink, _ = replay(options)
    assert result.failure is not None and "gone.jsonl" in result.failure
    assert sink.entries == []


@pytest.mark.parametrize(
    ("options", "path"),
    [
        ({}, "reviewers[2].answer"),
        ({"answer": ""}, "reviewers[2].answer"),
        ({"answer": "a", "journal": 3}, "reviewers[2].journal"),
        ({"answer": "a", "latency_ms": 1.5}, "reviewers[2].latency_ms"),
        ({"answer": "a", "latency_ms": True}, "reviewers[2].latency_ms"),
        ({"answer": "a", "latency_ms": -1}, "reviewers[2].latency_ms"),
        ({"answer": "a", "anwser": "b"}, "reviewers[2].anwser"),
    ],
)
def test_check_options_names_the_field(options: dict[str, Any], path: str) -> None:
    """Bad replay options are refused with the field path."""
    with pytest.raises(RosterError) as caught:
        check_options(options, "reviewers[2]")
    assert caught.value.path == path


def test_bad_options_at_review_time_are_a_failure() -> None:
    """A replay without answer fails (never raises) when asked to review."""
    result, _, _ = replay({})
    assert result.failure is not None and "reviewers[rec].answer" in result.failure
