"""Both model backends, through the real SDKs, against scripted fake servers on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from council.harvest import harvest
from council.model.participant import Clocks
from reviewers.models.conversation import LAST_TURN, WRAP_UP
from reviewers.models.tools import NO_TREE
from tests.fakes import FakeServer, Scenario, ToolCall
from tests.fakes.review import (
    BACKENDS,
    KEY,
    Backend,
    CountingLimiter,
    MemorySink,
    participant,
    request,
)

ANSWER = json.dumps(
    {
        "findings": [
            {
                "location": {"kind": "line", "file": "src/app.py", "start": 2},
                "label": "issue",
                "subject": "the handle leaks",
                "severity": "medium",
            }
        ]
    }
)
FINDING = {"label": "issue", "subject": "recorded early", "location": {"kind": "global"}}


@pytest.fixture(params=BACKENDS, ids=[b.name for b in BACKENDS])
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each model backend in turn."""
    chosen: Backend = request.param
    return chosen


@pytest.fixture
def server(backend: Backend) -> Iterator[FakeServer]:
    """The backend's fake server, expecting :data:`KEY`."""
    with backend.fake(api_key=KEY) as fake:
        yield fake


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A small unpacked tree: src/app.py, README.md, and a symlink pointing out of it."""
    root = tmp_path / "tree"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("import os\nfh = open('x')\nprint(fh.read())\n")
    (root / "README.md").write_text("# demo\n")
    (tmp_path / "secret.txt").write_text("top secret\n")
    (root / "src" / "escape").symlink_to(tmp_path / "secret.txt")
    return root


def test_clean_answer(backend: Backend, server: FakeServer) -> None:
    """A clean stream is the answer; usage is the provider's; the key went in the header."""
    server.script(
        Scenario(
            text=ANSWER, input_tokens=120, output_tokens=30, cached_tokens=100, reasoning_tokens=7
        )
    )
    result = backend.reviewer().review(request(participant(backend, server)))
    assert (result.answer, result.stop, result.failure) == (ANSWER, None, None)
    assert result.usage is not None
    assert result.usage.model_dump() == {
        "input": 120 + (100 if backend.name == "anthropic" else 0),
        "output": 30,
        "cached": 100,
        "reasoning": 7,
        "requests": 1,
    }
    (sent,) = server.requests
    assert sent.credential_ok is True and sent.body["stream"] is True
    assert sent.body["model"] == "fake-model"
    assert backend.texts(sent.body, "user") == ["Review this change."]
    assert KEY not in json.dumps(dict(sent.headers))


def test_prose_around_json_is_kept_verbatim(backend: Backend, server: FakeServer) -> None:
    """Prose around the JSON is returned as is: the harvest, not the backend, reads it."""
    text = f"Here is my review.\n\n```json\n{ANSWER}\n```\nThat is all."
    server.script(Scenario(text=text, chunk_chars=5))
    result = backend.reviewer().review(request(participant(backend, server)))
    assert result.answer == text
    assert len(harvest(result.answer).findings) == 1


def test_stall_longer_than_idle_stops_idle(backend: Backend, server: FakeServer) -> None:
    """A stream silent for longer than idle_ms is stopped as idle, keeping the partial text."""
    server.script(Scenario(text=ANSWER, chunk_chars=10, stall_after=3, stall_ms=6000))
    started = time.monotonic()
    result = backend.reviewer().review(request(participant(backend, server)))
    took = time.monotonic() - started
    assert result.stop is not None and result.stop.limit == "idle"
    assert result.stop.budget_ms == 1000 and result.failure is None
    assert result.answer and ANSWER.startswith(result.answer)
    assert 0.9 < took < 2.5
    assert result.usage is not None and result.usage.requests == 1


def test_silence_before_the_headers_stops_idle(backend: Backend, server: FakeServer) -> None:
    """A server that never starts answering is stopped by the idle clock too."""
    server.script(Scenario(text=ANSWER, delay_ms=6000))
    started = time.monotonic()
    result = backend.reviewer().review(request(participant(backend, server)))
    assert result.stop is not None and result.stop.limit == "idle"
    assert time.monotonic() - started < 2.5


def test_wall_clock_stops_a_steady_stream(backend: Backend, server: FakeServer) -> None:
    """A stream still going at the backstop is stopped as wall-clock with its text so far."""
    clocks = Clocks(backstop_ms=1500, idle_ms=1000, answer_ms=0)
    server.script(Scenario(text="x" * 400, chunk_chars=4, interval_ms=30))
    started = time.monotonic()
    result = backend.reviewer().review(request(participant(backend, server, clocks=clocks)))
    assert result.stop is not None and result.stop.limit == "wall-clock"
    assert result.stop.budget_ms == 1500
    assert 1.4 < time.monotonic() - started < 2.5
    assert 0 < len(result.answer) < 400


def test_cancel_stops_at_once(backend: Backend, server: FakeServer) -> None:
    """Setting request.cancel mid-stream stops the review as cancelled, partial text kept."""
    cancel = threading.Event()
    server.script(Scenario(text="y" * 400, chunk_chars=4, interval_ms=30))
    threading.Timer(0.5, cancel.set).start()
    started = time.monotonic()
    result = backend.reviewer().review(request(participant(backend, server), cancel=cancel))
    assert result.stop is not None and result.stop.limit == "cancelled"
    assert result.stop.budget_ms is None
    assert time.monotonic() - started < 2.0
    assert result.answer.startswith("y")


def test_stream_cut_mid_entry_is_retried(backend: Backend, server: FakeServer) -> None:
    """A connection dropped before the final event restarts the turn; the retry answers."""
    server.script(Scenario(text=ANSWER, chunk_chars=8, cut_after=4), Scenario(text=ANSWER))
    result = backend.reviewer().review(request(participant(backend, server)))
    assert (result.answer, result.stop, result.failure) == (ANSWER, None, None)
    assert server.count == 2
    assert result.usage is not None and result.usage.requests == 2
    assert any("retried" in note for note in result.notes)


def test_stream_ending_without_final_event_is_retried(backend: Backend, server: FakeServer) -> None:
    """A body that ends cleanly but lacks the final event counts as truncated, and is retried."""
    server.script(Scenario(text=ANSWER, omit_final=True), Scenario(text=ANSWER))
    result = backend.reviewer().review(request(participant(backend, server)))
    assert result.answer == ANSWER and server.count == 2
    assert any("ended before its final event" in note for note in result.notes)


def test_429_honours_retry_after(backend: Backend, server: FakeServer) -> None:
    """A 429 with Retry-After: 1 is retried after one second, then the answer arrives."""
    server.script(Scenario.error(429, "slow down", retry_after="1"), Scenario(text=ANSWER))
    result = backend.reviewer().review(request(participant(backend, server)))
    first, second = server.requests
    assert result.answer == ANSWER and result.failure is None
    assert second.at - first.at >= 1.0
    assert any("HTTP 429: slow down" in n and "1000 ms" in n for n in result.notes)
    assert result.usage is not None and result.usage.requests == 2


def test_500_is_retried(backend: Backend, server: FakeServer) -> None:
    """A 500 is retried with backoff and the second answer is returned."""
    server.script(Scenario.error(500, "boom"), Scenario(text=ANSWER))
    result = backend.reviewer().review(request(participant(backend, server)))
    assert result.answer == ANSWER and server.count == 2


def test_retry_reasons_and_time_to_first_token_are_reported(
    backend: Backend, server: FakeServer
) -> None:
    """Each retry's reason comes back in order (an HTTP status, a stream without its
    final event), and the time to first token in ms: of the first request that
    streamed anything, measured from sending it (for the worker's metrics)."""
    server.script(
        Scenario.error(503, "busy"),
        Scenario(text=ANSWER, omit_final=True, delay_ms=150),
        Scenario(text=ANSWER),
    )
    result = backend.reviewer().review(request(participant(backend, server)))
    assert result.answer == ANSWER and server.count == 3
    assert result.retries == ("http-503", "incomplete-stream")
    assert result.first_token_ms is not None and 150 <= result.first_token_ms < 5000


def test_retries_are_bounded(backend: Backend, server: FakeServer) -> None:
    """A server failing every attempt fails the review after the backoff's attempts."""
    server.script(*[Scenario.error(503, "down for maintenance")] * 4)
    result = backend.reviewer().review(request(participant(backend, server)))
    assert result.failure is not None and "gave up after 4 attempts" in result.failure
    assert "HTTP 503: down for maintenance" in result.failure
    assert result.usage is not None and result.usage.requests == 4


def test_retry_after_past_the_wall_fails_at_once_saying_why(
    backend: Backend, server: FakeServer
) -> None:
    """A Retry-After longer than the time left, before the model said anything: a failure
    at once that names the provider's answer and the wall (not "stopped by the backstop
    clock", which read as if the review had run for backstop_ms)."""
    server.script(Scenario.error(429, "later", retry_after="3600"))
    started = time.monotonic()
    result = backend.reviewer().review(request(participant(backend, server)))
    assert result.stop is None
    assert result.failure is not None and "HTTP 429: later" in result.failure
    assert "would pass the wall (backstop_ms = " in result.failure
    assert time.monotonic() - started < 1.0


def test_retry_after_past_the_wall_keeps_what_was_streamed(
    backend: Backend, server: FakeServer
) -> None:
    """Once the model has said something, a retry that would pass the wall is a stop at
    the wall (docs/harvest.md §7): the text streamed before the cut is kept, the note says why."""
    server.script(
        Scenario(text=ANSWER, chunk_chars=8, cut_after=4),
        Scenario.error(429, "later", retry_after="3600"),
    )
    result = backend.reviewer().review(request(participant(backend, server)))
    assert result.failure is None
    assert result.stop is not None and result.stop.limit == "wall-clock"
    assert result.answer and ANSWER.startswith(result.answer)
    assert any("would pass the wall" in note for note in result.notes)


def test_401_fails_at_once_without_the_key(backend: Backend, server: FakeServer) -> None:
    """A 401 fails at once with the provider's message; the key it quotes is masked."""
    server.script(Scenario.error(401, f"Incorrect API key provided: {KEY}."))
    result = backend.reviewer().review(request(participant(backend, server)))
    assert result.failure is not None and "HTTP 401: Incorrect API key provided" in result.failure
    assert f"API at {server.base_url} answered" in result.failure
    assert "check the key in TEST_KEY" in result.failure
    assert KEY not in result.failure and "sk-test" not in result.failure
    assert server.count == 1 and result.stop is None
    assert result.usage is not None and result.usage.requests == 1


@pytest.mark.parametrize("status", [400, 403, 404, 422])
def test_other_4xx_fail_at_once(backend: Backend, server: FakeServer, status: int) -> None:
    """Any other 4xx is the request's fault: no retry, the provider's words in the failure."""
    server.script(Scenario.error(status, "model does not support reasoning_effort 'xhigh'"))
    result = backend.reviewer().review(request(participant(backend, server, thinking="xhigh")))
    assert result.failure is not None
    assert f"HTTP {status}: model does not support reasoning_effort 'xhigh'" in result.failure
    assert server.count == 1
    hints = {403: "check the key in TEST_KEY", 404: "check base_url"}
    assert (hints[status] in result.failure) if status in hints else "; check" not in result.failure


def test_missing_key_fails_before_sending(backend: Backend, server: FakeServer) -> None:
    """Without the key in request.secrets the review fails naming the variable; nothing is sent."""
    result = backend.reviewer().review(request(participant(backend, server), secrets={}))
    assert result.failure is not None and "set TEST_KEY in the environment" in result.failure
    assert "embedded mode" in result.failure  # where to set it when there is no worker
    assert server.count == 0
    assert result.usage is not None and result.usage.requests == 0


def test_every_tool_through_the_loop(backend: Backend, server: FakeServer, tree: Path) -> None:
    """The model's tool calls are answered from the tree and the journal; then it answers."""
    calls = (
        ToolCall("read_file", {"path": "src/app.py", "start_line": 2, "end_line": 2}),
        ToolCall("list_files", {}),
        ToolCall("grep", {"pattern": "open\\(", "path": "src"}),
        ToolCall("read_file", {"path": "../../etc/passwd"}),
        ToolCall("read_file", {"path": "src/escape"}),
        ToolCall("record_finding", {"finding": FINDING}),
    )
    server.script(Scenario(text="Let me look.", tool_calls=calls), Scenario(text=ANSWER))
    sink = MemorySink()
    tools = ["read_file", "list_files", "grep", "record_finding"]
    who = participant(backend, server, tools=tools)
    result = backend.reviewer().review(request(who, sink=sink, workdir=tree))
    assert result.answer == ANSWER and result.failure is None
    assert result.journal_entries == 1 and [json.loads(e) for e in sink.entries] == [FINDING]
    first, second = server.requests
    assert {t.get("name") or t["function"]["name"] for t in first.body["tools"]} == set(tools)
    replies = backend.tool_replies(second.body)
    assert replies[0] == "     2\tfh = open('x')\n[shown lines 2-2 of 3; read on with start_line=3]"
    assert replies[1] == "README.md\nsrc/app.py"
    assert replies[2] == "src/app.py:2: fh = open('x')"
    assert "outside the repository" in replies[3] and "outside the repository" in replies[4]
    assert "top secret" not in json.dumps(second.body)
    assert replies[5] == "Recorded."
    assert result.usage is not None and result.usage.requests == 2


def test_tools_without_a_tree_reply_so(backend: Backend, server: FakeServer) -> None:
    """With no pinned tree the file tools reply that files cannot be read; no crash."""
    server.script(
        Scenario(tool_calls=(ToolCall("read_file", {"path": "a.py"}),)), Scenario(text=ANSWER)
    )
    who = participant(backend, server, tools=["read_file"])
    result = backend.reviewer().review(request(who))
    assert result.answer == ANSWER
    assert backend.tool_replies(server.requests[1].body) == [NO_TREE]


def test_record_finding_refused_by_the_journal(backend: Backend, server: FakeServer) -> None:
    """A journal that refuses an entry makes the tool reply 'Not recorded (...)'."""
    server.script(
        Scenario(tool_calls=(ToolCall("record_finding", {"finding": FINDING}),)),
        Scenario(text=ANSWER),
    )
    who = participant(backend, server, tools=["record_finding"])
    result = backend.reviewer().review(request(who, sink=MemorySink(refuse="store down")))
    assert backend.tool_replies(server.requests[1].body) == [
        "Not recorded (store down); keep it for your final answer."
    ]
    assert result.journal_entries == 0 and result.answer == ANSWER


def test_journal_survives_a_retried_turn(backend: Backend, server: FakeServer) -> None:
    """A finding recorded before a cut stream stays in the journal after the retry."""
    server.script(
        Scenario(tool_calls=(ToolCall("record_finding", {"finding": FINDING}),)),
        Scenario(text=ANSWER, cut_after=2),
        Scenario(text=ANSWER),
    )
    sink = MemorySink()
    who = participant(backend, server, tools=["record_finding"])
    result = backend.reviewer().review(request(who, sink=sink))
    assert result.answer == ANSWER and server.count == 3
    assert len(sink.entries) == 1 and result.journal_entries == 1
    assert backend.tool_replies(server.requests[2].body) == ["Recorded."]


def test_max_turns_bounds_the_tool_loop(backend: Backend, server: FakeServer) -> None:
    """The last turn the loop allows is asked to answer without tools."""
    call = ToolCall("list_files", {})
    server.script(Scenario(text="more", tool_calls=(call,)), Scenario(text=ANSWER))
    who = participant(backend, server, tools=["list_files"], max_turns=2)
    result = backend.reviewer().review(request(who))
    assert result.answer == ANSWER and server.count == 2
    last = server.requests[1].body
    assert last["tool_choice"] in ("none", {"type": "none"})
    assert backend.texts(last, "user")[-1] == LAST_TURN


def test_max_turns_reached_with_calls_pending(backend: Backend, server: FakeServer) -> None:
    """A model that still calls tools on its last turn gets its text taken, with a note."""
    call = ToolCall("list_files", {})
    server.script(Scenario(text=ANSWER, tool_calls=(call,)))
    who = participant(backend, server, tools=["list_files"], max_turns=1)
    result = backend.reviewer().review(request(who))
    assert result.answer == ANSWER and server.count == 1
    assert any("max_turns (1)" in note for note in result.notes)


def test_wrap_up_at_the_soft_deadline(backend: Backend, server: FakeServer) -> None:
    """At the soft deadline the turn is cut and one wrap-up turn answers in the conversation."""
    clocks = Clocks(backstop_ms=4000, idle_ms=1000, answer_ms=2500)
    server.script(
        Scenario(text="Still reading " * 60, chunk_chars=7, interval_ms=20), Scenario(text=ANSWER)
    )
    started = time.monotonic()
    result = backend.reviewer().review(request(participant(backend, server, clocks=clocks)))
    took = time.monotonic() - started
    assert result.answer == ANSWER and result.stop is None and result.failure is None
    assert any("asked to wrap up at the soft deadline (1500 ms" in n for n in result.notes)
    assert 1.4 < took < 3.0
    wrap = server.requests[1].body
    assert backend.texts(wrap, "user")[-1] == WRAP_UP
    assert backend.texts(wrap, "assistant")[0].startswith("Still reading")
    # The wrap-up is not sent before the soft deadline, 1500 ms after the review started
    # (the first request may itself arrive late on a loaded machine: measure from the start).
    assert server.requests[1].at - started >= 1.4


def test_wrap_up_keeps_the_richer_fragment(backend: Backend, server: FakeServer) -> None:
    """When the text before the wrap-up holds more findings, it is the answer."""
    clocks = Clocks(backstop_ms=4000, idle_ms=1000, answer_ms=2500)
    slow = ANSWER + "\nNow checking the rest " + "." * 400
    server.script(
        Scenario(text=slow, chunk_chars=4, interval_ms=20), Scenario(text='{"findings": []}')
    )
    result = backend.reviewer().review(request(participant(backend, server, clocks=clocks)))
    assert result.answer.startswith(ANSWER)
    assert any("text from before the wrap-up was kept" in n for n in result.notes)


def test_wrap_up_that_fails_stops_at_the_soft_deadline(
    backend: Backend, server: FakeServer
) -> None:
    """A wrap-up the provider refuses leaves the fragment as a soft-deadline stop."""
    clocks = Clocks(backstop_ms=4000, idle_ms=1000, answer_ms=2500)
    server.script(
        Scenario(text="partial " * 200, chunk_chars=4, interval_ms=20),
        Scenario.error(400, "context too long"),
    )
    result = backend.reviewer().review(request(participant(backend, server, clocks=clocks)))
    assert result.stop is not None and result.stop.limit == "soft-deadline"
    assert result.stop.budget_ms == 1500 and result.answer.startswith("partial")
    assert any("wrap-up turn failed" in n and "context too long" in n for n in result.notes)


def test_rate_limiter_admits_each_request_once(backend: Backend, server: FakeServer) -> None:
    """Every request (retries too) is admitted ONCE under backend:model, then settled.

    The limiter holds that key to the model's and the provider's limits itself; a second
    acquire under the provider's name would count the request twice.
    """
    server.script(Scenario.error(500, "boom"), Scenario(text=ANSWER, input_tokens=50))
    limiter = CountingLimiter()
    result = backend.reviewer().review(request(participant(backend, server), limiter=limiter))
    assert result.answer == ANSWER
    keys = [key for key, _ in limiter.acquired]
    assert keys == [f"{backend.name}:fake-model"] * 2
    assert all(tokens > 0 for _, tokens in limiter.acquired)
    assert [(k, a) for k, _, a in limiter.settled][-1:] == [(f"{backend.name}:fake-model", 70)]


def test_rate_limiter_never_admitting_stops_at_the_wall(
    backend: Backend, server: FakeServer
) -> None:
    """A request never admitted before the wall is a wall-clock stop, and nothing is sent."""
    clocks = Clocks(backstop_ms=1000, idle_ms=1000, answer_ms=0)
    limiter = CountingLimiter(admit=False)
    who = participant(backend, server, clocks=clocks)
    result = backend.reviewer().review(request(who, limiter=limiter))
    assert result.stop is not None and result.stop.limit == "wall-clock"
    assert server.count == 0 and result.usage is not None and result.usage.requests == 0


def test_concurrent_reviews_share_the_pool(backend: Backend, server: FakeServer) -> None:
    """Thirty reviews at once all answer; the fake saw them in flight together."""
    server.default = Scenario(text=ANSWER, chunk_chars=20, interval_ms=50)
    results: list[str] = []
    lock = threading.Lock()

    def one() -> None:
        answer = backend.reviewer().review(request(participant(backend, server))).answer
        with lock:
            results.append(answer)

    threads = [threading.Thread(target=one) for _ in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert results == [ANSWER] * 30
    # A review ends at the final event; the fake's handler may still be closing the
    # response then, so its in-flight count reaches 0 a moment later.
    deadline = time.monotonic() + 5
    while server.in_flight and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.count == 30 and server.in_flight == 0 and server.max_in_flight >= 10


class BrokenLimiter:
    """A rate limiter whose store is down: every call raises."""

    def acquire(self, key: str, tokens: int, deadline: float) -> bool:
        raise ConnectionError("redis is down")

    def correct(self, key: str, estimated: int, actual: int) -> None:
        raise ConnectionError("redis is down")


def test_a_broken_rate_limiter_does_not_cost_the_review(
    backend: Backend, server: FakeServer
) -> None:
    """A limiter that raises is noted once and the request goes out without it."""
    server.script(Scenario(text=ANSWER))
    result = backend.reviewer().review(
        request(participant(backend, server), limiter=BrokenLimiter())
    )
    assert result.answer == ANSWER and result.failure is None
    assert result.notes == ("the rate limiter failed (ConnectionError); requests went without it",)
