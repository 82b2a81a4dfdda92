"""The model backends' own stream reading, byte by byte: odd chunking, CRLF, comments,
pings, and errors reported inside a 200 stream.

The fake servers (tests/fakes) always write tidy LF-separated events; here an
``httpx2.MockTransport`` under the real SDK clients plays exact bytes instead.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import httpx2
import pytest

from council.model.participant import Participant
from reviewers.models import anthropic_messages, openai_chat
from tests.fakes import FakeAnthropic, FakeOpenAI, FakeServer, Scenario, ToolCall
from tests.fakes.review import BACKENDS, KEY, Backend, participant, request

OPENAI, ANTHROPIC = BACKENDS
ANSWER = '{"findings": []}'
BASE = "http://model.test"

Bodies = list[list[bytes]]


class Played:
    """The bodies to play, one per request, and the requests seen (auth header kept)."""

    def __init__(self, bodies: Bodies) -> None:
        self.bodies = list(bodies)
        self.seen: list[httpx2.Request] = []

    def handler(self, sent: httpx2.Request) -> httpx2.Response:
        self.seen.append(sent)
        pieces = self.bodies.pop(0)

        async def body() -> AsyncIterator[bytes]:
            for piece in pieces:
                yield piece

        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body())


@pytest.fixture
def play(monkeypatch: pytest.MonkeyPatch) -> Callable[[Bodies], Played]:
    """Point both backends' SDK clients at a transport playing the given bodies."""

    def install(bodies: Bodies) -> Played:
        played = Played(bodies)
        transport = httpx2.MockTransport(played.handler)

        def fresh(_sdk: str, make: Callable[..., Any], url: str, key: str) -> Any:
            pool = httpx2.AsyncClient(transport=transport)
            return make(api_key=key, base_url=url, max_retries=0, http_client=pool)

        monkeypatch.setattr(openai_chat, "sdk_client", fresh)
        monkeypatch.setattr(anthropic_messages, "sdk_client", fresh)
        return played

    return install


class _At:
    """A stand-in for a fake server: ``participant`` only reads its base URL."""

    def __init__(self, url: str) -> None:
        self.base_url = url


def at(backend: Backend, **fields: Any) -> Participant:
    """A participant of ``backend`` whose SDK client talks to the played transport."""
    url = BASE + "/v1" if backend is OPENAI else BASE
    return participant(backend, cast(FakeServer, _At(url)), **fields)


def rendered(fake: FakeOpenAI | FakeAnthropic, scenario: Scenario, body: dict[str, Any]) -> bytes:
    """The whole body the fake would stream for ``scenario``."""
    events, final = fake.render(scenario, body)
    return b"".join(events + final)


def crumbs(body: bytes, size: int) -> list[bytes]:
    """``body`` in pieces of ``size`` bytes."""
    return [body[i : i + size] for i in range(0, len(body), size)]


OPENAI_USAGE = {"stream_options": {"include_usage": True}}
SCENARIO = Scenario(
    text=ANSWER,
    thinking="hmm",
    tool_calls=(),
    input_tokens=120,
    output_tokens=30,
    cached_tokens=100,
    reasoning_tokens=7,
)


@pytest.mark.parametrize("size", [1, 3, 7, 64])
def test_openai_body_in_odd_pieces_with_crlf_and_comments(
    play: Callable[[Bodies], Played], size: int
) -> None:
    """CRLF line endings, keep-alive comments and arbitrary chunking read as a tidy body."""
    body = rendered(FakeOpenAI(), SCENARIO, OPENAI_USAGE).replace(b"\n", b"\r\n")
    body = b": keep-alive\r\n\r\n" + body.replace(b"\r\n\r\n", b"\r\n\r\n: ping\r\n", 2)
    played = play([crumbs(body, size)])
    result = OPENAI.reviewer().review(request(at(OPENAI)))
    assert (result.answer, result.failure, result.stop) == (ANSWER, None, None)
    assert result.usage is not None
    assert (result.usage.input, result.usage.output) == (120, 30)
    assert (result.usage.cached, result.usage.reasoning) == (100, 7)
    assert played.seen[0].headers["authorization"] == f"Bearer {KEY}"
    assert str(played.seen[0].url) == BASE + "/v1/chat/completions"


def test_openai_tool_calls_in_odd_pieces(play: Callable[[Bodies], Played]) -> None:
    """Tool call deltas split anywhere still assemble into whole calls."""
    calls = (ToolCall("list_files", {}), ToolCall("grep", {"pattern": "x"}))
    first = rendered(FakeOpenAI(), Scenario(text="Looking.", tool_calls=calls), OPENAI_USAGE)
    second = rendered(FakeOpenAI(), Scenario(text=ANSWER), OPENAI_USAGE)
    played = play([crumbs(first, 5), crumbs(second, 5)])
    who = at(OPENAI, tools=["list_files", "grep"])
    result = OPENAI.reviewer().review(request(who))
    assert result.answer == ANSWER
    sent = json.loads(played.seen[1].content)
    assert sent["messages"][1]["tool_calls"] == [
        {"id": "call_0", "type": "function", "function": {"name": "list_files", "arguments": "{}"}},
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "grep", "arguments": '{"pattern": "x"}'},
        },
    ]


def test_openai_error_inside_the_stream_is_retried(play: Callable[[Bodies], Played]) -> None:
    """A chunk holding an error (a server failing mid-stream) retries the turn, noting why."""
    error = {"error": {"message": "The server had an error", "type": "server_error"}}
    broken = b'data: {"choices":[{"index":0,"delta":{"content":"{"}}]}\n\n'
    broken += b"data: " + json.dumps(error).encode() + b"\n\n"
    played = play([[broken], [rendered(FakeOpenAI(), Scenario(text=ANSWER), OPENAI_USAGE)]])
    result = OPENAI.reviewer().review(request(at(OPENAI)))
    assert result.answer == ANSWER and len(played.seen) == 2
    assert any(
        "the OpenAI API's stream reported an error: The server had an error" in note
        for note in result.notes
    )


def test_openai_unreadable_chunk_fails_without_retry(play: Callable[[Bodies], Played]) -> None:
    """A data line that is not JSON is not the network's fault: the review fails at once."""
    played = play([[b"data: {not json\n\n"]])
    result = OPENAI.reviewer().review(request(at(OPENAI)))
    assert result.failure is not None and "could not be read (JSONDecodeError" in result.failure
    assert len(played.seen) == 1


def test_openai_stream_without_finish_reason_is_retried(
    play: Callable[[Bodies], Played],
) -> None:
    """Text, then [DONE] with no finish_reason: truncated, so the turn is retried."""
    cut = b'data: {"choices":[{"index":0,"delta":{"content":"{\\"fi"}}]}\n\ndata: [DONE]\n\n'
    played = play([[cut], [rendered(FakeOpenAI(), Scenario(text=ANSWER), OPENAI_USAGE)]])
    result = OPENAI.reviewer().review(request(at(OPENAI)))
    assert result.answer == ANSWER and len(played.seen) == 2
    assert any("ended before its final event" in note for note in result.notes)


ANTHROPIC_BODY: dict[str, Any] = {"model": "fake-model"}


@pytest.mark.parametrize("size", [1, 4, 64])
def test_anthropic_body_in_odd_pieces_with_pings_and_cr(
    play: Callable[[Bodies], Played], size: int
) -> None:
    """Bare-CR line endings, ping events and comments in arbitrary chunks read as tidy."""
    body = rendered(FakeAnthropic(), SCENARIO, ANTHROPIC_BODY)
    ping = b'event: ping\ndata: {"type": "ping"}\n\n: comment\n\n'
    body = body.replace(b"event: content_block_stop", ping + b"event: content_block_stop")
    played = play([crumbs(body.replace(b"\n", b"\r"), size)])
    who = at(ANTHROPIC, thinking="low")
    result = ANTHROPIC.reviewer().review(request(who))
    assert (result.answer, result.failure, result.stop) == (ANSWER, None, None)
    assert result.usage is not None
    assert (result.usage.input, result.usage.output) == (220, 30)
    assert (result.usage.cached, result.usage.reasoning) == (100, 7)
    headers = {k.lower(): v for k, v in played.seen[0].headers.items()}
    assert FakeAnthropic().credential(headers) == KEY
    assert str(played.seen[0].url) == BASE + "/v1/messages"


def test_anthropic_error_event_is_retried(play: Callable[[Bodies], Played]) -> None:
    """An error event inside a 200 stream (overloaded) retries the turn with its message."""
    events, _ = FakeAnthropic().render(Scenario(text=ANSWER), ANTHROPIC_BODY)
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    broken = b"".join(events[:3]) + b"event: error\ndata: " + json.dumps(error).encode() + b"\n\n"
    played = play([[broken], [rendered(FakeAnthropic(), Scenario(text=ANSWER), ANTHROPIC_BODY)]])
    result = ANTHROPIC.reviewer().review(request(at(ANTHROPIC)))
    assert result.answer == ANSWER and len(played.seen) == 2
    assert any(
        "the Anthropic API's stream reported an error: Overloaded" in note for note in result.notes
    )
    assert result.usage is not None and result.usage.requests == 2


def test_anthropic_stream_cut_mid_event_is_retried(play: Callable[[Bodies], Played]) -> None:
    """A body ending inside the message_stop event (no blank line after it) is truncated."""
    whole = rendered(FakeAnthropic(), Scenario(text=ANSWER), ANTHROPIC_BODY)
    played = play([[whole[:-2]], [whole]])
    result = ANTHROPIC.reviewer().review(request(at(ANTHROPIC)))
    assert result.answer == ANSWER and len(played.seen) == 2
    assert any("ended before its final event" in note for note in result.notes)
