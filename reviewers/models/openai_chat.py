"""The ``openai`` backend: any OpenAI-compatible chat completions server, streamed.

Anything serving ``POST {base_url}/chat/completions`` with SSE, through the official
``openai`` SDK, its retries off (:mod:`~reviewers.models.conversation` retries, under our
clocks). Its async client (on :mod:`~reviewers.models.stream_loop`'s loop) sends the
request and judges its status; :mod:`~reviewers.models.sse` reads the body raw into plain
dicts, because the SDK's pydantic object per chunk cost most of a busy worker's CPU. The
loop, tools, retries and clocks are shared with ``anthropic``; this module says only how
the OpenAI wire looks (``max_output_tokens`` is sent as ``max_completion_tokens``).

Source: issue "Model reviewers"; OpenAI API reference, "Create chat completion"
(streaming, ``stream_options.include_usage``, ``reasoning_effort``, tool calls).
"""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator, Sequence
from typing import Any

import httpx2
import openai
from openai.types.shared.reasoning_effort import ReasoningEffort
from pydantic import JsonValue

from council.errors import RosterError
from council.model.participant import Participant
from council.roster.backend_options import DEFAULT_KEY_ENV, check_model_options
from council.roster.tool_catalog import ToolSpec
from reviewers.models.conversation import ModelReviewer
from reviewers.models.http_pool import sdk_client
from reviewers.models.provider import Api, dumped_messages, estimate_tokens, loaded_messages
from reviewers.models.retry import (
    Backoff,
    Trouble,
    status_trouble,
    transport_trouble,
    unreadable_trouble,
)
from reviewers.models.sse import EventReader
from reviewers.models.stream_watch import PendingCall, StreamedTurn

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where requests go when the roster sets no ``base_url``."""

KEY_ENV = DEFAULT_KEY_ENV["openai"]
"""The environment variable holding the key when the roster sets no ``api_key_env``."""

EFFORTS: dict[str, str] = {
    "off": "none",
    "minimal": "minimal",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "xhigh",
}
"""``thinking_level`` → ``reasoning_effort``; sent only when the installed SDK knows it."""

REASONING_FIELDS: tuple[str, ...] = ("reasoning_content", "reasoning")
"""Delta fields in which compatible servers (vLLM, Ollama, ...) stream reasoning tokens."""


def sdk_efforts() -> frozenset[str]:
    """The ``reasoning_effort`` values the installed SDK's types accept."""

    def literals(kind: object) -> Iterator[str]:
        for arg in typing.get_args(kind):
            if isinstance(arg, str):
                yield arg
            else:
                yield from literals(arg)

    return frozenset(literals(ReasoningEffort))


def check_participant(participant: Participant, where: str) -> None:
    """Refuse an ``openai`` participant the backend cannot run, before anything is sent.

    The common model options (:func:`~council.roster.backend_options.check_model_options`),
    and a ``thinking_level`` whose ``reasoning_effort`` the installed SDK does not know.
    Raises :class:`RosterError` at ``{where}.{field}``.
    """
    check_model_options(participant, where, "openai")
    level = participant.thinking_level
    if level is None:
        return
    known = sdk_efforts()
    effort = EFFORTS.get(level)
    if effort is None or effort not in known:
        usable = [name for name, value in EFFORTS.items() if value in known]
        raise RosterError(
            f"{where}.thinking_level",
            f"the installed OpenAI SDK cannot send reasoning_effort for level {level!r}",
            f"Choose one of {', '.join(usable)}, or upgrade the openai package",
        )


class OpenAIChat:
    """One conversation over chat completions (a :class:`~reviewers.models.provider.Session`)."""

    def __init__(
        self,
        participant: Participant,
        key: str,
        prompt: str,
        tools: Sequence[ToolSpec],
        shared: int = 0,
    ) -> None:
        """``shared`` is unused: the automatic prefix cache needs only the prompt's order."""
        options = participant.options
        self.key = key
        self.base_url = str(options.get("base_url", DEFAULT_BASE_URL))
        self.model = str(participant.model)
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        self.tools = [
            {
                "type": "function",
                "function": {
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": dict(spec.parameters),
                },
            }
            for spec in tools
        ]
        level = participant.thinking_level
        self.effort = EFFORTS.get(level) if level is not None else None
        cap = options.get("max_output_tokens")
        self.max_output = int(cap) if cap is not None else None

    def client(self) -> openai.AsyncOpenAI:
        """The SDK client for this base URL and key, shared on the running loop."""
        return sdk_client("openai", openai.AsyncOpenAI, self.base_url, self.key)

    async def stream(
        self, turn: StreamedTurn, timeout: httpx2.Timeout, *, answer_now: bool
    ) -> None:
        """Stream one chat completion into ``turn`` (text, tool calls, usage, finish).

        The SDK's public ``post`` sends the request (auth, base URL, headers, timeout)
        and raises its status errors; the body is plain JSON already, so the typed
        ``create``'s parameter transform (a tenth of a busy worker's CPU, measured) is
        skipped. The body's events are read here, up to ``data: [DONE]`` (or its end).
        The turn is finished only when a ``finish_reason`` arrived: a body ending before
        it was truncated.
        """
        extra: dict[str, Any] = {}
        if self.tools:
            extra["tools"] = self.tools
            if answer_now:
                extra["tool_choice"] = "none"
        if self.effort is not None:
            extra["reasoning_effort"] = self.effort
        if self.max_output is not None:
            extra["max_completion_tokens"] = self.max_output
        body = {
            "model": self.model,
            "messages": self.messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            **extra,
        }
        stream = await self.client().post(
            "/chat/completions",
            cast_to=object,
            body=body,
            options={"timeout": timeout},
            stream=True,
            stream_cls=openai.AsyncStream[object],
        )
        async with stream:
            response = stream.response
            reader = EventReader()
            async for piece in response.aiter_bytes():
                for event in reader.feed(piece):
                    if event.data.startswith("[DONE]"):
                        return
                    _read_chunk(turn, response, json.loads(event.data))

    def add_turn(self, turn: StreamedTurn) -> None:
        """The assistant's turn with its tool calls."""
        calls = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": "".join(call.arguments)},
            }
            for _, call in sorted(turn.calls.items())
        ]
        text = turn.text_so_far()
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = calls
        self.messages.append(message)

    def add_text(self, text: str) -> None:
        """An interrupted turn's text, as the assistant's message."""
        self.messages.append({"role": "assistant", "content": text})

    def add_tool_results(self, results: Sequence[tuple[str, str]]) -> None:
        """One ``tool`` message per reply."""
        for call_id, text in results:
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})

    def add_user(self, text: str) -> None:
        """A user message."""
        self.messages.append({"role": "user", "content": text})

    def dump(self) -> list[JsonValue]:
        """The messages as plain JSON (a deep copy through JSON)."""
        return dumped_messages(self.messages)

    def load(self, messages: Sequence[JsonValue]) -> None:
        """The messages of a paused conversation, replacing these (each must be an
        object; ValueError otherwise)."""
        self.messages = loaded_messages(messages)

    def estimate_tokens(self) -> int:
        """Input estimated from the JSON size, plus ``max_output_tokens`` when set."""
        chars = len(json.dumps(self.messages)) + len(json.dumps(self.tools))
        return estimate_tokens(chars, self.max_output or 0)

    def trouble(self, error: BaseException) -> Trouble:
        """An SDK or transport error, judged: status errors by status, the rest by kind."""
        if isinstance(error, openai.APIStatusError):
            status = error.status_code
            body = error.body
            said = body.get("message") if isinstance(body, dict) else None
            message = said if isinstance(said, str) and said else error.message
            return status_trouble("OpenAI", self.base_url, status, message, error.response.headers)
        if isinstance(error, openai.APIConnectionError | httpx2.TransportError):
            return transport_trouble("OpenAI", self.base_url, error)
        if isinstance(error, openai.APIError):
            return Trouble(f"the OpenAI API's stream reported an error: {error}", retryable=True)
        return unreadable_trouble("OpenAI", error)


def _read_chunk(turn: StreamedTurn, response: httpx2.Response, chunk: Any) -> None:
    """One chat completion chunk, a plain dict as ``json.loads`` made it, into ``turn``.

    Text and refusal deltas are the answer; reasoning deltas (``reasoning_content``,
    ``reasoning``) only keep the idle clock alive; tool call deltas are assembled by their
    ``index``; a ``finish_reason`` marks the turn finished; the usage chunk (sent after it
    for ``include_usage``) sets the usage. A chunk holding an ``error`` (a server failing
    mid-stream) raises the SDK's ``APIError``, as the SDK's own stream does.
    """
    if not isinstance(chunk, dict):
        return
    error = chunk.get("error")
    if error:
        said = error.get("message") if isinstance(error, dict) else None
        message = said if isinstance(said, str) and said else "An error occurred during streaming"
        raise openai.APIError(message, response.request, body=error)
    usage = chunk.get("usage")
    if usage:
        prompt = usage.get("prompt_tokens_details") or {}
        completion = usage.get("completion_tokens_details") or {}
        turn.set_usage(
            input=usage.get("prompt_tokens") or 0,
            output=usage.get("completion_tokens") or 0,
            cached=prompt.get("cached_tokens") or 0,
            reasoning=completion.get("reasoning_tokens") or 0,
        )
    for choice in chunk.get("choices") or ():
        if choice.get("index", 0) != 0:
            continue
        delta = choice.get("delta") or {}
        turn.add_text(delta.get("content") or "")
        turn.add_text(delta.get("refusal") or "")
        for name in REASONING_FIELDS:
            if delta.get(name):
                turn.activity.touch()
                break
        for call in delta.get("tool_calls") or ():
            index = call.get("index", 0)
            pending = turn.calls.setdefault(index, PendingCall())
            pending.id = call.get("id") or pending.id or f"call_{index}"
            function = call.get("function")
            if function is not None:
                pending.name += function.get("name") or ""
                pending.arguments.append(function.get("arguments") or "")
            turn.activity.touch()
        if choice.get("finish_reason") is not None:
            turn.finished = True


PROVIDER = Api("openai", "OpenAI", KEY_ENV, check_participant, OpenAIChat)
"""The OpenAI chat completions API, as the conversation loop sees it."""


class OpenAIReviewer(ModelReviewer):
    """The ``openai`` backend's reviewer; ``backoff`` tunes its retries (tests shorten it)."""

    def __init__(self, backoff: Backoff | None = None) -> None:
        super().__init__(PROVIDER, backoff)
