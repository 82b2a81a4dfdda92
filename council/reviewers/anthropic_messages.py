"""The ``anthropic`` backend: Anthropic's Messages API, streamed.

Through the official ``anthropic`` SDK (its retries off:
:mod:`~council.reviewers.conversation` retries, under our clocks). The conversation loop,
tools, retries and clocks are shared with the ``openai`` backend; this module only says
how the Messages wire looks: message events, content blocks (text, thinking, tool use),
``tool_result`` blocks in the next user message, thinking blocks sent back with the turn
that used tools.

Roster::

    [[reviewers]]
    id = "owl"
    backend = "anthropic"
    model = "claude-sonnet-4-5"              # required
    thinking_level = "medium"                # extended thinking, 8192 tokens
    tools = ["read_file", "list_files", "grep", "record_finding"]
    base_url = "https://api.anthropic.com"   # the default
    api_key_env = "ANTHROPIC_API_KEY"        # the default; the worker passes its value
    max_turns = 20                           # tool loop bound (requests)
    max_output_tokens = 24576                # max_tokens (must exceed the thinking budget)

Source: issue "Model reviewers"; Anthropic API reference, "Messages" (streaming events,
extended thinking with ``budget_tokens`` >= 1024 and < ``max_tokens``, tool use).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, cast

import anthropic
import httpx2
from anthropic.types import (
    InputJSONDelta,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
    RedactedThinkingBlock,
    SignatureDelta,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
)

from council.errors import RosterError
from council.participant import Participant
from council.reviewers.conversation import ModelReviewer
from council.reviewers.http_pool import shared_client
from council.reviewers.options import DEFAULT_KEY_ENV, check_model_options
from council.reviewers.provider import estimate_tokens
from council.reviewers.retry import Backoff, Trouble, retry_after_ms, retryable_status
from council.reviewers.stream_watch import PendingCall, StreamedTurn
from council.reviewers.tools import ToolSpec

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

    The common model options (:func:`~council.reviewers.options.check_model_options`);
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


class AnthropicMessages:
    """One conversation over the Messages API (a :class:`~council.reviewers.provider.Session`)."""

    def __init__(
        self, participant: Participant, key: str, prompt: str, tools: Sequence[ToolSpec]
    ) -> None:
        options = participant.options
        self.client = anthropic.Anthropic(
            api_key=key,
            base_url=str(options.get("base_url", DEFAULT_BASE_URL)),
            max_retries=0,
            http_client=shared_client(),
        )
        self.model = str(participant.model)
        self.max_tokens = max_tokens_of(participant)
        self.thinking = thinking_of(participant.thinking_level)
        self.messages: list[dict[str, Any]] = [
            {"role": "user", "content": [{"type": "text", "text": prompt}]}
        ]
        self.tools = [
            {"name": s.name, "description": s.description, "input_schema": dict(s.parameters)}
            for s in tools
        ]

    def stream(self, turn: StreamedTurn, timeout: httpx2.Timeout, *, answer_now: bool) -> None:
        """Stream one message into ``turn`` (text, tool uses, thinking blocks, usage)."""
        extra: dict[str, Any] = {}
        if self.tools:
            extra["tools"] = self.tools
            if answer_now:
                extra["tool_choice"] = {"type": "none"}
        if self.thinking is not None:
            extra["thinking"] = self.thinking
        stream = self.client.messages.create(
            model=self.model,
            max_tokens=self.max_tokens,
            messages=cast(Any, self.messages),
            stream=True,
            timeout=timeout,
            **extra,
        )
        turn.attach(stream.response)
        counts = {"input": 0, "output": 0, "cached": 0, "reasoning": 0}
        thinking: dict[int, dict[str, Any]] = {}
        with stream:
            for event in stream:
                if isinstance(event, RawMessageStartEvent):
                    used = event.message.usage
                    cached = used.cache_read_input_tokens or 0
                    created = used.cache_creation_input_tokens or 0
                    counts["input"] = used.input_tokens + cached + created
                    counts["cached"] = cached
                    counts["output"] = used.output_tokens
                elif isinstance(event, RawContentBlockStartEvent):
                    self._start(turn, thinking, event)
                elif isinstance(event, RawContentBlockDeltaEvent):
                    self._delta(turn, thinking, event)
                elif isinstance(event, RawMessageDeltaEvent):
                    delta = event.usage
                    counts["output"] = delta.output_tokens
                    if delta.output_tokens_details is not None:
                        counts["reasoning"] = delta.output_tokens_details.thinking_tokens
                elif isinstance(event, RawMessageStopEvent):
                    turn.finished = True
                turn.set_usage(**counts)
        with turn.lock:
            turn.extra = [thinking[index] for index in sorted(thinking)]

    @staticmethod
    def _start(
        turn: StreamedTurn, thinking: dict[int, dict[str, Any]], event: RawContentBlockStartEvent
    ) -> None:
        block = event.content_block
        if isinstance(block, TextBlock):
            turn.add_text(block.text)
        elif isinstance(block, ToolUseBlock):
            with turn.lock:
                turn.calls[event.index] = PendingCall(id=block.id, name=block.name)
            turn.activity.touch()
        elif isinstance(block, ThinkingBlock):
            thinking[event.index] = {
                "type": "thinking",
                "thinking": block.thinking,
                "signature": block.signature,
            }
            turn.activity.touch()
        elif isinstance(block, RedactedThinkingBlock):
            thinking[event.index] = {"type": "redacted_thinking", "data": block.data}
            turn.activity.touch()

    @staticmethod
    def _delta(
        turn: StreamedTurn, thinking: dict[int, dict[str, Any]], event: RawContentBlockDeltaEvent
    ) -> None:
        delta = event.delta
        if isinstance(delta, TextDelta):
            turn.add_text(delta.text)
            return
        if isinstance(delta, InputJSONDelta):
            with turn.lock:
                call = turn.calls.get(event.index)
                if call is not None:
                    call.arguments.append(delta.partial_json)
        elif isinstance(delta, ThinkingDelta) and event.index in thinking:
            thinking[event.index]["thinking"] += delta.thinking
        elif isinstance(delta, SignatureDelta) and event.index in thinking:
            thinking[event.index]["signature"] = delta.signature
        turn.activity.touch()

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
            return Trouble(
                f"the Anthropic API answered HTTP {status}: {message}",
                retryable=retryable_status(status),
                status=status,
                retry_after_ms=retry_after_ms(error.response.headers, time.time()),
            )
        if isinstance(error, anthropic.APITimeoutError | httpx2.TimeoutException):
            return Trouble("the request to the Anthropic API timed out", retryable=True)
        if isinstance(error, anthropic.APIConnectionError | httpx2.TransportError):
            cause = error.__cause__ if error.__cause__ is not None else error
            return Trouble(
                f"the connection to the Anthropic API failed ({type(cause).__name__})",
                retryable=True,
            )
        return Trouble(
            f"the Anthropic API's stream could not be read ({type(error).__name__}: {error})",
            retryable=False,
        )


def _input(call: PendingCall) -> dict[str, Any]:
    """A tool use's input object from its streamed JSON (``{}`` when not an object)."""
    try:
        value = json.loads("".join(call.arguments) or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class AnthropicProvider:
    """The Anthropic Messages API (a :class:`~council.reviewers.provider.Provider`)."""

    backend = "anthropic"
    title = "Anthropic"
    key_env = KEY_ENV

    def check(self, participant: Participant, where: str) -> None:
        """:func:`check_participant`."""
        check_participant(participant, where)

    def open(
        self, participant: Participant, key: str, prompt: str, tools: Sequence[ToolSpec]
    ) -> AnthropicMessages:
        """A new conversation (no network until the first turn)."""
        return AnthropicMessages(participant, key, prompt, tools)


class AnthropicReviewer(ModelReviewer):
    """The ``anthropic`` backend's reviewer; ``backoff`` tunes its retries."""

    def __init__(self, backoff: Backoff | None = None) -> None:
        super().__init__(AnthropicProvider(), backoff)
