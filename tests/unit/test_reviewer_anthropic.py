"""The anthropic backend: option checks, thinking budgets, and the Messages wire."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from council.errors import RosterError
from council.model.participant import THINKING_LEVELS, Clocks, Participant
from reviewers import check_options
from reviewers.models.anthropic_messages import ANSWER_TOKENS, THINKING_BUDGETS
from reviewers.models.conversation import WRAP_UP
from tests.fakes import FakeAnthropic, Scenario, ToolCall
from tests.fakes.review import BACKENDS, KEY, participant, request

ANTHROPIC = BACKENDS[1]
ANSWER = '{"findings": []}'


@pytest.fixture
def server() -> Iterator[FakeAnthropic]:
    """A fake Anthropic-compatible server expecting the test key."""
    with FakeAnthropic(api_key=KEY) as fake:
        yield fake


def entry(**fields: Any) -> Participant:
    """An anthropic participant built from roster-like fields."""
    return Participant.model_validate({"id": "owl", "backend": "anthropic", **fields})


def test_every_level_is_expressible_by_default() -> None:
    """Each thinking level has a budget (or is off) and passes the check."""
    assert set(THINKING_BUDGETS) | {"off"} == set(THINKING_LEVELS)
    for level in THINKING_LEVELS:
        check_options(entry(model="claude", thinking_level=level))


def test_a_budget_the_output_cap_cannot_hold_is_refused() -> None:
    """max_output_tokens at or below the level's budget is refused before anything is sent."""
    with pytest.raises(RosterError) as caught:
        check_options(
            entry(model="claude", thinking_level="medium", options={"max_output_tokens": 8192})
        )
    assert caught.value.path == "reviewers[owl].max_output_tokens"
    assert "8192" in str(caught.value)
    check_options(
        entry(model="claude", thinking_level="medium", options={"max_output_tokens": 8193})
    )


def test_missing_model_is_refused() -> None:
    """The anthropic backend needs a model."""
    with pytest.raises(RosterError) as caught:
        check_options(entry(), where="judge")
    assert caught.value.path == "judge.model"


@pytest.mark.parametrize(
    ("level", "thinking", "max_tokens"),
    [
        (None, None, ANSWER_TOKENS),
        ("off", {"type": "disabled"}, ANSWER_TOKENS),
        ("minimal", {"type": "enabled", "budget_tokens": 1024}, ANSWER_TOKENS + 1024),
        ("medium", {"type": "enabled", "budget_tokens": 8192}, ANSWER_TOKENS + 8192),
        ("high", {"type": "enabled", "budget_tokens": 24576}, ANSWER_TOKENS + 24576),
    ],
)
def test_thinking_level_is_sent_as_a_budget(
    server: FakeAnthropic, level: str | None, thinking: dict[str, Any] | None, max_tokens: int
) -> None:
    """thinking_level reaches the server as thinking with its budget, max_tokens above it."""
    ANTHROPIC.reviewer().review(request(participant(ANTHROPIC, server, thinking=level)))
    body = server.requests[0].body
    assert body.get("thinking") == thinking
    assert body["max_tokens"] == max_tokens


def test_thinking_blocks_go_back_with_the_tool_turn(server: FakeAnthropic) -> None:
    """A turn that thought and used a tool is sent back whole: thinking, text, tool_use."""
    call = ToolCall("list_files", {"dir": "src"})
    server.script(
        Scenario(thinking="let me see", text="Listing.", tool_calls=(call,)),
        Scenario(text=ANSWER),
    )
    who = participant(ANTHROPIC, server, thinking="low", tools=["list_files"])
    result = ANTHROPIC.reviewer().review(request(who))
    assert result.answer == ANSWER
    assistant = server.requests[1].body["messages"][1]
    assert assistant["content"] == [
        {"type": "thinking", "thinking": "let me see", "signature": "fake-signature"},
        {"type": "text", "text": "Listing."},
        {"type": "tool_use", "id": "toolu_0", "name": "list_files", "input": {"dir": "src"}},
    ]
    reply = server.requests[1].body["messages"][2]
    assert reply["role"] == "user"
    assert reply["content"][0]["tool_use_id"] == "toolu_0"


class HoldAfterFirstRequest:
    """A rate limiter that admits the first request, then nothing until ``until``."""

    def __init__(self, until: float) -> None:
        self.until = until
        self.calls = 0

    def acquire(self, key: str, tokens: int, deadline: float) -> bool:
        self.calls += 1
        if self.calls > 1 and time.monotonic() < self.until:
            time.sleep(max(0.0, min(deadline, self.until) - time.monotonic()))
            return False
        return True

    def correct(self, key: str, estimated: int, actual: int) -> None:
        """Nothing to correct."""


def test_wrap_up_text_joins_the_tool_results(server: FakeAnthropic) -> None:
    """A soft deadline passing while the next turn waits for admission asks for the wrap-up,
    as a text block beside the tool results."""
    clocks = Clocks(backstop_ms=4000, idle_ms=1000, answer_ms=2500)
    server.script(Scenario(tool_calls=(ToolCall("list_files", {}),)), Scenario(text=ANSWER))
    limiter = HoldAfterFirstRequest(until=time.monotonic() + 1.7)
    who = participant(ANTHROPIC, server, clocks=clocks, tools=["list_files"])
    result = ANTHROPIC.reviewer().review(request(who, limiter=limiter))
    assert result.answer == ANSWER
    body = server.requests[1].body
    last = body["messages"][-1]
    assert last["role"] == "user"
    assert [b["type"] for b in last["content"]] == ["tool_result", "text"]
    assert last["content"][1]["text"] == WRAP_UP
    assert body["tool_choice"] == {"type": "none"}


def test_streamed_thinking_keeps_the_idle_clock_alive(server: FakeAnthropic) -> None:
    """thinking deltas count as tokens: a long think is not an idle stall."""
    server.script(Scenario(thinking="hmm " * 40, chunk_chars=4, interval_ms=60, text=ANSWER))
    result = ANTHROPIC.reviewer().review(request(participant(ANTHROPIC, server)))
    assert (result.answer, result.stop) == (ANSWER, None)
