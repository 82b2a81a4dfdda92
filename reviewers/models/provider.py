"""What a model API must provide to the shared conversation loop: a session per review.

The loop (:mod:`~reviewers.models.conversation`) owns turns, tools, retries, clocks and
usage; a :class:`Provider` only knows its wire. Its :class:`Session` keeps the messages in
the provider's own shape and streams one request into a
:class:`~reviewers.models.stream_watch.StreamedTurn`. Implemented by
:mod:`~reviewers.models.openai_chat` and :mod:`~reviewers.models.anthropic_messages`.

Source: docs/architecture.md "Layers" (one adapter per backend), issue "Model reviewers".
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import httpx2
from pydantic import JsonValue

from council.model.participant import Participant
from council.roster.tool_catalog import ToolSpec
from reviewers.models.retry import Trouble
from reviewers.models.stream_watch import StreamedTurn

CHARS_PER_TOKEN = 4
"""Characters per token when estimating a request for the rate limiter."""


class Session(Protocol):
    """One conversation with a provider: its messages, and how to stream the next turn."""

    async def stream(
        self, turn: StreamedTurn, timeout: httpx2.Timeout, *, answer_now: bool
    ) -> None:
        """Send the conversation and stream the reply into ``turn`` (a coroutine on the
        review's loop; cancelled when a clock fires).

        ``answer_now``: ask for an answer without tool calls. Raises the SDK's errors.
        """
        ...

    def add_turn(self, turn: StreamedTurn) -> None:
        """Append a completed assistant turn (its text, tool calls and extra blocks)."""
        ...

    def add_text(self, text: str) -> None:
        """Append the text of an interrupted turn as the assistant's."""
        ...

    def add_tool_results(self, results: Sequence[tuple[str, str]]) -> None:
        """Append the replies (call id, text) to the last turn's tool calls."""
        ...

    def add_user(self, text: str) -> None:
        """Append a user message (merged into a trailing user message when needed)."""
        ...

    def estimate_tokens(self) -> int:
        """Tokens the next request may cost (input estimate plus the output cap)."""
        ...

    def dump(self) -> list[JsonValue]:
        """The conversation's messages in the provider's wire shape, as plain JSON (a
        copy): what a review paused on a person's question keeps."""
        ...

    def load(self, messages: Sequence[JsonValue]) -> None:
        """Replace the conversation's messages with ``messages`` (from :meth:`dump`):
        a paused review goes on where it stopped."""
        ...

    def trouble(self, error: BaseException) -> Trouble:
        """What an error raised by :meth:`stream` means for the retry loop."""
        ...


class Provider(Protocol):
    """A model API: its name, its option check, and a session per review."""

    backend: str
    """The roster's backend name (``openai``)."""
    title: str
    """The API's name for people (``OpenAI``)."""
    key_env: str
    """The environment variable named by default for the key."""

    def check(self, participant: Participant, where: str) -> None:
        """Refuse bad settings (RosterError at ``{where}.{field}``)."""
        ...

    def open(
        self,
        participant: Participant,
        key: str,
        prompt: str,
        tools: Sequence[ToolSpec],
        shared: int = 0,
    ) -> Session:
        """A new conversation holding ``prompt`` as its first message (no network);
        its first ``shared`` characters are every reviewer's (a cache breakpoint's place)."""
        ...


@dataclass
class Api:
    """A :class:`Provider` made of its parts: the names, the option check (raises
    RosterError at ``{where}.{field}``) and the session class. Each backend module
    describes its API with one of these rather than writing the class out again."""

    backend: str
    title: str
    key_env: str
    checker: Callable[[Participant, str], None]
    session: Callable[[Participant, str, str, Sequence[ToolSpec], int], Session]

    def check(self, participant: Participant, where: str) -> None:
        """Refuse bad settings (RosterError at ``{where}.{field}``)."""
        self.checker(participant, where)

    def open(
        self,
        participant: Participant,
        key: str,
        prompt: str,
        tools: Sequence[ToolSpec],
        shared: int = 0,
    ) -> Session:
        """A new conversation (no network until the first turn)."""
        return self.session(participant, key, prompt, tools, shared)


def estimate_tokens(chars: int, output_cap: int) -> int:
    """A request's token estimate: ``chars`` of input at :data:`CHARS_PER_TOKEN`, plus
    the output cap (tokens)."""
    return math.ceil(chars / CHARS_PER_TOKEN) + output_cap


def dumped_messages(messages: Sequence[dict[str, Any]]) -> list[JsonValue]:
    """A provider session's messages as plain JSON (a deep copy through JSON): what a
    paused conversation keeps (:class:`council.asks.paused.Paused`)."""
    copied: list[JsonValue] = json.loads(json.dumps(list(messages)))
    return copied


def loaded_messages(messages: Sequence[JsonValue]) -> list[dict[str, Any]]:
    """The stored messages of a paused conversation, deep-copied, for a session to go
    on from. Raises ValueError when one is not a JSON object."""
    loaded: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, dict):
            raise ValueError("a stored message is not a JSON object")
        loaded.append(json.loads(json.dumps(message)))
    return loaded
