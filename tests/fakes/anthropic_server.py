"""A fake Anthropic-compatible server: ``POST /v1/messages`` as an SSE stream.

Each scenario becomes message events: ``message_start`` (input usage), a thinking block
(``thinking_delta`` pieces and a ``signature_delta``) when the scenario thinks, a text
block of ``text_delta`` pieces, one ``tool_use`` block per tool call (``input_json_delta``
in two pieces), then the final events: ``message_delta`` (stop reason and output usage)
and ``message_stop``. Errors use Anthropic's body
``{"type": "error", "error": {"type", "message"}}``.

Usage::

    with FakeAnthropic(api_key="test-key") as server:
        client = anthropic.Anthropic(api_key="test-key", base_url=server.base_url)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from tests.fakes.scenario import Scenario
from tests.fakes.server import FakeServer, sse

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


class FakeAnthropic(FakeServer):
    """The Anthropic messages stream, scripted (see :class:`FakeServer`)."""

    PATH: ClassVar[str] = "/v1/messages"

    def credential(self, headers: Mapping[str, str]) -> str | None:
        """The value of ``x-api-key``, else the bearer token (what this SDK sends)."""
        if "x-api-key" in headers:
            return headers["x-api-key"]
        value = headers.get("authorization", "")
        return value[7:] if value.lower().startswith("bearer ") else None

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        """Anthropic's error body."""
        kind = _ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def render(
        self, scenario: Scenario, body: Mapping[str, Any]
    ) -> tuple[list[bytes], list[bytes]]:
        """Message events for the scenario, and its final events."""
        model = str(body.get("model", "fake-model"))
        usage = {
            "input_tokens": scenario.input_tokens,
            "cache_read_input_tokens": scenario.cached_tokens,
            "cache_creation_input_tokens": scenario.cache_write_tokens,
            "output_tokens": 1,
        }
        message: dict[str, Any] = {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        events = [sse({"type": "message_start", "message": message}, "message_start")]
        blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        if scenario.thinking:
            deltas = [
                {"type": "thinking_delta", "thinking": p}
                for p in scenario.pieces(scenario.thinking)
            ]
            deltas.append({"type": "signature_delta", "signature": "fake-signature"})
            blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas))
        if scenario.text:
            deltas = [{"type": "text_delta", "text": p} for p in scenario.pieces(scenario.text)]
            blocks.append(({"type": "text", "text": ""}, deltas))
        for number, call in enumerate(scenario.tool_calls):
            arguments = call.raw_arguments
            if arguments is None:
                arguments = json.dumps(dict(call.arguments))
            half = len(arguments) // 2
            deltas = [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in (arguments[:half], arguments[half:])
            ]
            start = {"type": "tool_use", "id": f"toolu_{number}", "name": call.name, "input": {}}
            blocks.append((start, deltas))
        for index, (start, deltas) in enumerate(blocks):
            events.append(
                sse(
                    {"type": "content_block_start", "index": index, "content_block": start},
                    "content_block_start",
                )
            )
            for delta in deltas:
                events.append(
                    sse(
                        {"type": "content_block_delta", "index": index, "delta": delta},
                        "content_block_delta",
                    )
                )
            events.append(sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
        out: dict[str, Any] = {"output_tokens": scenario.output_tokens}
        if scenario.reasoning_tokens:
            out["output_tokens_details"] = {"thinking_tokens": scenario.reasoning_tokens}
        reason = "tool_use" if scenario.tool_calls else "end_turn"
        final = [
            sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": reason, "stop_sequence": None},
                    "usage": out,
                },
                "message_delta",
            ),
            sse({"type": "message_stop"}, "message_stop"),
        ]
        return events, final
