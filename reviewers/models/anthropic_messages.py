"""The ``anthropic`` backend: Anthropic's Messages API, streamed.

Through the official ``anthropic`` SDK, its retries off (:mod:`~reviewers.models.conversation`
retries, under our clocks): its public ``post`` on the async client sends the request and
judges the status, and :mod:`~reviewers.models.sse` reads the body raw into plain dicts,
because the SDK's pydantic object per event cost most of a busy worker's CPU. The loop,
tools, retries and clocks are shared with ``openai``; this module says only how the
Messages wire looks: content blocks (text, thinking, tool use), ``tool_result`` blocks in
the next user message, thinking blocks sent back with the turn that used tools. Roster
options: :data:`THINKING_BUDGETS`, :func:`max_tokens_of`, :func:`check_participant`.

Source: issue "Model reviewers"; Anthropic API reference, "Messages" (streaming events,
extended thinking with ``budget_tokens`` >= 1024 and < ``max_tokens``, tool use).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import anthropic
import httpx2
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

DEFAULT_BASE_URL = "https://api.anthropic.com"
"""Where requests go when the roster sets no ``base_url``."""

KEY_ENV = DEFAULT_KEY_ENV["anthropic"]
"""The environment variable holding the key when the roster sets no ``api_key_env``."""

THINKING_BUDGETS: dict[str, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 24576,
    "xhigh": 32768,
}
"""``thinking_level`` → extended thinking ``budget_tokens`` (``off`` = thinking disabled).

1024 is the API's smallest budget. A level missing here cannot be expressed and is
refused at roster time."""

ANSWER_TOKENS = 16384
"""Output tokens left for the answer besides the thinking budget, when ``max_tokens``
is not set by ``max_output_tokens``."""


def thinking_of(level: str | None) -> dict[str, Any] | None:
    """The ``thinking`` parameter for a level: None (not sent), disabled, or a budget.

    Raises KeyError for a level that has no budget (refused earlier by the check).
    """
    if level is None:
        return None
    if level == "off":
        return {"type": "disabled"}
    return {"type": "enabled", "budget_tokens": THINKING_BUDGETS[level]}


def max_tokens_of(participant: Participant) -> int:
    """``max_tokens`` of a request: ``max_output_tokens``, else the answer room plus the
    thinking budget (tokens)."""
    cap = participant.options.get("max_output_tokens")
    if cap is not None:
        return int(cap)
    return ANSWER_TOKENS + THINKING_BUDGETS.get(participant.thinking_level or "off", 0)


def check_participant(participant: Participant, where: str) -> None:
    """Refuse an ``anthropic`` participant the backend cannot run, before anything is sent.

    The common model options (:func:`~council.roster.backend_options.check_model_options`);
    a ``thinking_level`` with no budget; a ``max_output_tokens`` not above the level's
    thinking budget (the API requires ``budget_tokens < max_tokens``). Raises
    :class:`RosterError` at ``{where}.{field}``.
    """
    check_model_options(participant, where, "anthropic")
    level = participant.thinking_level
    if level is None or level == "off":
        return
    budget = THINKING_BUDGETS.get(level)
    if budget is None:
        raise RosterError(
            f"{where}.thinking_level",
            f"level {level!r} has no thinking budget on the anthropic backend",
            f"Choose one of off, {', '.join(THINKING_BUDGETS)}",
        )
    if max_tokens_of(participant) <= budget:
        raise RosterError(
            f"{where}.max_output_tokens",
            f"{max_tokens_of(participant)} is not above the thinking budget of level "
            f"{level!r} ({budget} tokens)",
            f"Raise max_output_tokens above {budget}, leave it out, or lower thinking_level",
        )


CACHE_BREAKPOINT: dict[str, str] = {"type": "ephemeral"}
"""The ``cache_control`` of the block that ends the part every reviewer shares."""


def prompt_blocks(prompt: str, shared: int) -> list[dict[str, Any]]:
    """The first message's text blocks: the first ``shared`` characters (every reviewer's
    part) as a block ending in a cache breakpoint, then the rest when there is any; one
    plain block when ``shared`` is 0 or beyond ``prompt``. Why: the Messages API caches
    only up to a marked block, so the second reviewer reads the first one's from cache.
    """
    if not 0 < shared <= len(prompt):
        return [{"type": "text", "text": prompt}]
    head = {"type": "text", "text": prompt[:shared], "cache_control": dict(CACHE_BREAKPOINT)}
    return [head, {"type": "text", "text": prompt[shared:]}] if shared < len(prompt) else [head]


class AnthropicMessages:
    """One conversation over the Messages API (a :class:`~reviewers.models.provider.Session`)."""

    def __init__(
        self,
        participant: Participant,
        key: str,
        prompt: str,
        tools: Sequence[ToolSpec],
        shared: int = 0,
    ) -> None:
        """The first message holds ``prompt`` (:func:`prompt_blocks`)."""
        options = participant.options
        self.key = key
        self.base_url = str(options.get("base_url", DEFAULT_BASE_URL))
        self.model = str(participant.model)
        self.max_tokens = max_tokens_of(participant)
        self.thinking = thinking_of(participant.thinking_level)
        self.messages: list[dict[str, Any]] = [
            {"role": "user", "content": prompt_blocks(prompt, shared)}
        ]
        self.tools = [
            {"name": s.name, "description": s.description, "input_schema": dict(s.parameters)}
            for s in tools
        ]

    def client(self) -> anthropic.AsyncAnthropic:
        """The SDK client for this base URL and key, shared on the running loop."""
        return sdk_client("anthropic", anthropic.AsyncAnthropic, self.base_url, self.key)

    async def stream(
        self, turn: StreamedTurn, timeout: httpx2.Timeout, *, answer_now: bool
    ) -> None:
        """Stream one message into ``turn`` (text, tool uses, thinking blocks, usage).

        The SDK's public ``post`` sends the request (auth, base URL, headers, timeout)
        and raises its status errors; the body is plain JSON already, so the typed
        ``create``'s parameter transform is skipped. The body's events are read here as
        the SDK reads them: unnamed events and ``ping`` skipped, an
        ``error`` event raised as an ``APIStatusError``. The turn is finished only when
        ``message_stop`` arrived: a body ending before it was truncated.
        """
        extra: dict[str, Any] = {}
        if self.tools:
            extra["tools"] = self.tools
            if answer_now:
                extra["tool_choice"] = {"type": "none"}
        if self.thinking is not None:
            extra["thinking"] = self.thinking
        reader = _MessageReader(turn)
        try:
            body = {
                "model": self.model,
                "max_tokens": self.max_tokens,
                "messages": self.messages,
                "stream": True,
                **extra,
            }
            stream = await self.client().post(
                "/v1/messages",
                cast_to=object,
                body=body,
                options={"timeout": timeout},
                stream=True,
                stream_cls=anthropic.AsyncStream[object],
            )
            async with stream:
                response = stream.response
                events = EventReader()
                async for piece in response.aiter_bytes():
                    for event in events.feed(piece):
                        name = event.event
                        if not name or name == "ping":
                            continue
                        if name == "error":
                            raise _stream_error(response, event.data)
                        if event.data:
                            reader.read(json.loads(event.data))
        finally:
            turn.extra = [reader.thinking[index] for index in sorted(reader.thinking)]

    def add_turn(self, turn: StreamedTurn) -> None:
        """The assistant's turn: thinking blocks, text, tool uses, in that order."""
        content: list[dict[str, Any]] = [dict(block) for block in turn.extra]
        text = turn.text_so_far()
        if text.strip():
            content.append({"type": "text", "text": text})
        for _, call in sorted(turn.calls.items()):
            content.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call)}
            )
        self.messages.append({"role": "assistant", "content": content})

    def add_text(self, text: str) -> None:
        """An interrupted turn's text, as the assistant's message."""
        self.messages.append({"role": "assistant", "content": [{"type": "text", "text": text}]})

    def add_tool_results(self, results: Sequence[tuple[str, str]]) -> None:
        """One user message holding a ``tool_result`` block per reply."""
        blocks = [
            {"type": "tool_result", "tool_use_id": call_id, "content": text}
            for call_id, text in results
        ]
        self.messages.append({"role": "user", "content": blocks})

    def add_user(self, text: str) -> None:
        """A text block for the user: appended to a trailing user message (tool results)."""
        block = {"type": "text", "text": text}
        if self.messages and self.messages[-1]["role"] == "user":
            self.messages[-1]["content"].append(block)
        else:
            self.messages.append({"role": "user", "content": [block]})

    def dump(self) -> list[JsonValue]:
        """The messages as plain JSON (a deep copy through JSON)."""
        return dumped_messages(self.messages)

    def load(self, messages: Sequence[JsonValue]) -> None:
        """The messages of a paused conversation, replacing these (each must be an
        object; ValueError otherwise)."""
        self.messages = loaded_messages(messages)

    def estimate_tokens(self) -> int:
        """Input estimated from the JSON size, plus ``max_tokens``."""
        chars = len(json.dumps(self.messages)) + len(json.dumps(self.tools))
        return estimate_tokens(chars, self.max_tokens)

    def trouble(self, error: BaseException) -> Trouble:
        """An SDK or transport error, judged: status errors by status, the rest by kind.

        An ``error`` event inside a 200 stream (``overloaded_error``) is retryable.
        """
        if isinstance(error, anthropic.APIStatusError):
            status = error.status_code
            message = error.api_message or error.message
            if status < 400:
                return Trouble(
                    f"the Anthropic API's stream reported an error: {message}", retryable=True
                )
            return status_trouble(
                "Anthropic", self.base_url, status, message, error.response.headers
            )
        if isinstance(error, anthropic.APIConnectionError | httpx2.TransportError):
            return transport_trouble("Anthropic", self.base_url, error)
        return unreadable_trouble("Anthropic", error)


class _MessageReader:
    """The Messages stream's events, plain dicts as ``json.loads`` made them, into a turn.

    ``message_start`` and ``message_delta`` set the usage (input counts cache reads and
    writes, each also counted apart: ``cached`` and ``cache_write``; output includes
    thinking); content blocks bring text, tool uses (their input
    JSON in pieces) and thinking blocks, kept in :attr:`thinking` by their index to be
    sent back with the turn; ``message_stop`` marks the turn finished. Every token,
    thinking ones included, keeps the idle clock alive.
    """

    def __init__(self, turn: StreamedTurn) -> None:
        self.turn = turn
        self.thinking: dict[int, dict[str, Any]] = {}
        self.counts = {"input": 0, "output": 0, "cached": 0, "reasoning": 0, "cache_write": 0}

    def read(self, event: Any) -> None:
        """One event, dispatched on its ``type`` (the kinds not listed are skipped)."""
        if not isinstance(event, dict):
            return
        kind = event.get("type")
        if kind == "content_block_delta":
            self._delta(event.get("index", 0), event.get("delta") or {})
        elif kind == "content_block_start":
            self._start(event.get("index", 0), event.get("content_block") or {})
        elif kind == "message_start":
            used = (event.get("message") or {}).get("usage") or {}
            cached = used.get("cache_read_input_tokens") or 0
            created = used.get("cache_creation_input_tokens") or 0
            self.counts["input"] = (used.get("input_tokens") or 0) + cached + created
            self.counts["cached"] = cached
            self.counts["cache_write"] = created
            self.counts["output"] = used.get("output_tokens") or 0
            self.turn.set_usage(**self.counts)
        elif kind == "message_delta":
            used = event.get("usage") or {}
            self.counts["output"] = used.get("output_tokens") or 0
            details = used.get("output_tokens_details")
            if details is not None:
                self.counts["reasoning"] = details.get("thinking_tokens") or 0
            self.turn.set_usage(**self.counts)
        elif kind == "message_stop":
            self.turn.finished = True

    def _start(self, index: int, block: Any) -> None:
        turn = self.turn
        kind = block.get("type")
        if kind == "text":
            turn.add_text(block.get("text") or "")
        elif kind == "tool_use":
            turn.calls[index] = PendingCall(id=block.get("id", ""), name=block.get("name", ""))
            turn.activity.touch()
        elif kind == "thinking":
            self.thinking[index] = {
                "type": "thinking",
                "thinking": block.get("thinking", ""),
                "signature": block.get("signature", ""),
            }
            turn.activity.touch()
        elif kind == "redacted_thinking":
            self.thinking[index] = {"type": "redacted_thinking", "data": block.get("data", "")}
            turn.activity.touch()

    def _delta(self, index: int, delta: Any) -> None:
        turn = self.turn
        kind = delta.get("type")
        if kind == "text_delta":
            turn.add_text(delta.get("text") or "")
            return
        if kind == "input_json_delta":
            call = turn.calls.get(index)
            if call is not None:
                call.arguments.append(delta.get("partial_json") or "")
        elif kind == "thinking_delta" and index in self.thinking:
            self.thinking[index]["thinking"] += delta.get("thinking") or ""
        elif kind == "signature_delta" and index in self.thinking:
            self.thinking[index]["signature"] = delta.get("signature", "")
        turn.activity.touch()


def _stream_error(response: httpx2.Response, data: str) -> anthropic.APIStatusError:
    """An ``error`` event inside a 200 stream (``overloaded_error``, ...), as the SDK's
    own stream raises it: an ``APIStatusError`` carrying the parsed body."""
    body: object = data
    try:
        body = json.loads(data)
        message = f"{body}"
    except ValueError:
        message = data or f"Error code: {response.status_code}"
    return anthropic.APIStatusError(message, response=response, body=body)


def _input(call: PendingCall) -> dict[str, Any]:
    """A tool use's input object from its streamed JSON (``{}`` when not an object)."""
    try:
        value = json.loads("".join(call.arguments) or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


PROVIDER = Api("anthropic", "Anthropic", KEY_ENV, check_participant, AnthropicMessages)
"""The Anthropic Messages API, as the conversation loop sees it."""


class AnthropicReviewer(ModelReviewer):
    """The ``anthropic`` backend's reviewer; ``backoff`` tunes its retries."""

    def __init__(self, backoff: Backoff | None = None) -> None:
        super().__init__(PROVIDER, backoff)
