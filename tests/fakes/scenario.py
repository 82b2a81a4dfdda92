"""What a fake model server answers to one request: a scripted scenario.

A :class:`Scenario` is provider-neutral: the OpenAI-compatible and the Anthropic-compatible
fakes render the same scenario in their own stream format (chat completion chunks, or
message events). Timing is part of the script, in milliseconds: a delay before the
response headers, a pause between streamed events, one stall, and a cut (the connection
closed before the final event).

Usage::

    Scenario(text='{"findings": []}')                        # a clean answer
    Scenario(text=ANSWER, interval_ms=50)                    # streamed slowly
    Scenario(text=ANSWER, stall_after=2, stall_ms=5000)      # 2 events, then silence
    Scenario(text=ANSWER, cut_after=3)                       # connection dropped mid-entry
    Scenario.error(429, retry_after="1")                     # rate limited, then ...
    Scenario(tool_calls=(ToolCall("read_file", {"path": "src/app.py"}),))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """One tool call the fake model makes: the tool's name and its arguments."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    """Arguments sent verbatim instead of ``arguments`` (to script malformed JSON)."""


@dataclass(frozen=True)
class Scenario:
    """One scripted response.

    * ``status``: an HTTP status other than 200 answers with the provider's error body
      (``message``) and ``headers`` (``Retry-After`` ...), no stream.
    * ``text``: the answer, streamed in pieces of ``chunk_chars`` characters;
      ``thinking``: reasoning streamed before it (Anthropic thinking block, OpenAI
      ``reasoning_content`` deltas).
    * ``tool_calls``: streamed after the text; the turn then ends for tool use.
    * ``delay_ms``: wait before the response headers (ms); ``interval_ms``: pause before
      every streamed event after the first (ms).
    * ``stall_after``/``stall_ms``: after that many events, stay silent that long (ms).
    * ``cut_after``: after that many events, drop the connection (no final event, no end
      of the chunked body); ``omit_final``: end the body cleanly but leave out the final
      events (a stream that just stops).
    * usage: the token counts the stream reports at its end (``cache_write_tokens``:
      Anthropic's ``cache_creation_input_tokens``; the OpenAI wire has none).
    """

    status: int = 200
    message: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    text: str = ""
    thinking: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    chunk_chars: int = 16
    delay_ms: int = 0
    interval_ms: int = 0
    stall_after: int | None = None
    stall_ms: int = 0
    cut_after: int | None = None
    omit_final: bool = False
    input_tokens: int = 100
    output_tokens: int = 20
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cache_write_tokens: int = 0

    @classmethod
    def error(
        cls, status: int, message: str = "", retry_after: str | None = None, delay_ms: int = 0
    ) -> Scenario:
        """An HTTP error answer, optionally with a ``Retry-After`` header."""
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        text = message or f"scripted error {status}"
        return cls(status=status, message=text, headers=headers, delay_ms=delay_ms)

    def pieces(self, text: str) -> list[str]:
        """``text`` cut into pieces of ``chunk_chars`` characters (none when empty)."""
        size = max(1, self.chunk_chars)
        return [text[i : i + size] for i in range(0, len(text), size)]
