"""The openai backend: option checks, reasoning_effort, and the chat completions wire."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from council.errors import RosterError
from council.model.participant import THINKING_LEVELS, Clocks, Participant
from reviewers import check_options, key_env
from reviewers.models.openai_chat import EFFORTS, sdk_efforts
from tests.fakes import FakeOpenAI, Scenario, ToolCall
from tests.fakes.review import BACKENDS, KEY, participant, request

OPENAI = BACKENDS[0]
ANSWER = '{"findings": []}'


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    """A fake OpenAI-compatible server expecting the test key."""
    with FakeOpenAI(api_key=KEY) as fake:
        yield fake


def entry(**fields: Any) -> Participant:
    """An openai participant built from roster-like fields."""
    return Participant.model_validate({"id": "hawk", "backend": "openai", **fields})


def test_every_level_maps_to_an_effort_the_installed_sdk_knows() -> None:
    """Each thinking level has a reasoning_effort, and this SDK accepts all of them."""
    assert set(EFFORTS) == set(THINKING_LEVELS)
    assert set(EFFORTS.values()) <= sdk_efforts()
    for level in THINKING_LEVELS:
        check_options(entry(model="gpt-5", thinking_level=level))


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({}, "reviewers[hawk].model"),
        ({"model": "  "}, "reviewers[hawk].model"),
        ({"model": "m", "options": {"base_url": "ftp://x"}}, "reviewers[hawk].base_url"),
        ({"model": "m", "options": {"base_url": "http://"}}, "reviewers[hawk].base_url"),
        ({"model": "m", "options": {"base_url": "http://h:99999"}}, "reviewers[hawk].base_url"),
        ({"model": "m", "options": {"api_key_env": "1KEY"}}, "reviewers[hawk].api_key_env"),
        ({"model": "m", "options": {"api_key_env": "A-B"}}, "reviewers[hawk].api_key_env"),
        ({"model": "m", "options": {"max_turns": 0}}, "reviewers[hawk].max_turns"),
        ({"model": "m", "options": {"max_turns": True}}, "reviewers[hawk].max_turns"),
        (
            {"model": "m", "options": {"max_output_tokens": "9"}},
            "reviewers[hawk].max_output_tokens",
        ),
        ({"model": "m", "options": {"temperature": 0}}, "reviewers[hawk].temperature"),
        ({"model": "m", "tools": ["web_search"]}, "reviewers[hawk].tools"),
    ],
)
def test_bad_settings_are_refused_with_their_field(fields: dict[str, Any], path: str) -> None:
    """check_options refuses each bad setting at its own field path, before any send."""
    with pytest.raises(RosterError) as caught:
        check_options(entry(**fields))
    assert caught.value.path == path


def test_good_settings_pass() -> None:
    """A full, well-formed openai entry is accepted."""
    check_options(
        entry(
            model="gpt-5",
            thinking_level="high",
            tools=["read_file", "grep"],
            options={
                "base_url": "http://localhost:11434/v1",
                "api_key_env": "OLLAMA_KEY",
                "max_turns": 5,
                "max_output_tokens": 4096,
            },
        )
    )


def test_bad_settings_fail_the_review_without_sending(server: FakeOpenAI) -> None:
    """A review with a bad option fails naming the field; the server hears nothing."""
    who = participant(OPENAI, server, max_turns=0)
    result = OPENAI.reviewer().review(request(who))
    assert result.failure is not None and "reviewers[p1].max_turns" in result.failure
    assert server.count == 0


@pytest.mark.parametrize(
    ("level", "effort"), [("off", "none"), ("high", "high"), ("xhigh", "xhigh")]
)
def test_thinking_level_is_sent_as_reasoning_effort(
    server: FakeOpenAI, level: str, effort: str
) -> None:
    """thinking_level reaches the server as reasoning_effort."""
    OPENAI.reviewer().review(request(participant(OPENAI, server, thinking=level)))
    assert server.requests[0].body["reasoning_effort"] == effort


def test_request_shape_without_thinking_or_tools(server: FakeOpenAI) -> None:
    """No level, no tools: neither reasoning_effort nor tools is sent; usage is asked for."""
    who = participant(OPENAI, server, max_output_tokens=777)
    OPENAI.reviewer().review(request(who))
    body = server.requests[0].body
    assert "reasoning_effort" not in body and "tools" not in body
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 777


def test_tool_calls_are_sent_back_with_their_ids(server: FakeOpenAI) -> None:
    """The assistant's tool calls and the tool messages that answer them share their ids."""
    calls = (ToolCall("list_files", {}), ToolCall("grep", raw_arguments='{"pattern": '))
    server.script(Scenario(text="Looking.", tool_calls=calls), Scenario(text=ANSWER))
    who = participant(OPENAI, server, tools=["list_files", "grep"])
    result = OPENAI.reviewer().review(request(who))
    assert result.answer == ANSWER
    messages = server.requests[1].body["messages"]
    assistant = messages[1]
    assert assistant["role"] == "assistant" and assistant["content"] == "Looking."
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_0", "call_1"]
    assert assistant["tool_calls"][1]["function"] == {"name": "grep", "arguments": '{"pattern": '}
    tools = messages[2:]
    assert [m["tool_call_id"] for m in tools] == ["call_0", "call_1"]
    assert "not valid JSON" in tools[1]["content"]


def test_streamed_reasoning_keeps_the_idle_clock_alive(server: FakeOpenAI) -> None:
    """reasoning_content deltas count as tokens: a long think is not an idle stall."""
    clocks = Clocks(backstop_ms=8000, idle_ms=1000, answer_ms=0)
    server.script(Scenario(thinking="hmm " * 40, chunk_chars=4, interval_ms=60, text=ANSWER))
    result = OPENAI.reviewer().review(request(participant(OPENAI, server, clocks=clocks)))
    assert (result.answer, result.stop) == (ANSWER, None)


def test_key_env_names_the_variable_the_worker_reads() -> None:
    """key_env: the roster's api_key_env, else the backend's default; None without a key."""
    assert key_env(entry(model="m")) == "OPENAI_API_KEY"
    assert key_env(entry(model="m", options={"api_key_env": "MY_KEY"})) == "MY_KEY"
    claude = Participant.model_validate({"id": "o", "backend": "anthropic", "model": "c"})
    assert key_env(claude) == "ANTHROPIC_API_KEY"
    tool = Participant.model_validate({"id": "c", "backend": "command"})
    assert key_env(tool) is None
