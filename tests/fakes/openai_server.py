"""A fake OpenAI-compatible server: ``POST /v1/chat/completions`` as an SSE stream.

Each scenario becomes chat completion chunks: a role chunk, ``reasoning_content`` deltas
for thinking (as vLLM and others stream it), ``content`` deltas for the text, tool call
deltas (name first, arguments in two pieces), then the final events: the chunk with
``finish_reason``, a usage chunk (when the request asked for ``include_usage``) and
``data: [DONE]``. Errors use OpenAI's body ``{"error": {"message", "type", "code"}}``.

Usage::

    with FakeOpenAI(api_key="test-key") as server:
        client = openai.OpenAI(api_key="test-key", base_url=server.base_url)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from tests.fakes.scenario import Scenario
from tests.fakes.server import FakeServer, sse

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_exceeded",
}


class FakeOpenAI(FakeServer):
    """The OpenAI chat completions stream, scripted (see :class:`FakeServer`)."""

    PATH: ClassVar[str] = "/v1/chat/completions"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, as the OpenAI SDK wants it."""
        return self.url + "/v1"

    def credential(self, headers: Mapping[str, str]) -> str | None:
        """The bearer token of ``Authorization``."""
        value = headers.get("authorization", "")
        return value[7:] if value.lower().startswith("bearer ") else None

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        """OpenAI's error body."""
        kind = _ERROR_TYPES.get(status, "server_error")
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}

    def render(
        self, scenario: Scenario, body: Mapping[str, Any]
    ) -> tuple[list[bytes], list[bytes]]:
        """Chat completion chunks for the scenario, and its final events."""
        model = str(body.get("model", "fake-model"))

        def chunk(delta: Mapping[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            return sse(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": model,
                    "choices": [choice],
                }
            )

        events = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"reasoning_content": p}) for p in scenario.pieces(scenario.thinking)]
        events += [chunk({"content": p}) for p in scenario.pieces(scenario.text)]
        for index, call in enumerate(scenario.tool_calls):
            arguments = call.raw_arguments
            if arguments is None:
                arguments = json.dumps(dict(call.arguments))
            head = {"name": call.name, "arguments": ""}
            start = {"index": index, "id": f"call_{index}", "type": "function", "function": head}
            events.append(chunk({"tool_calls": [start]}))
            half = len(arguments) // 2
            for piece in (arguments[:half], arguments[half:]):
                events.append(
                    chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                )
        finish = "tool_calls" if scenario.tool_calls else "stop"
        final = [chunk({}, finish)]
        options = body.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage"):
            usage = {
                "prompt_tokens": scenario.input_tokens,
                "completion_tokens": scenario.output_tokens,
                "total_tokens": scenario.input_tokens + scenario.output_tokens,
                "prompt_tokens_details": {"cached_tokens": scenario.cached_tokens},
                "completion_tokens_details": {"reasoning_tokens": scenario.reasoning_tokens},
            }
            final.append(
                sse(
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion.chunk",
                        "created": 0,
                        "model": model,
                        "choices": [],
                        "usage": usage,
                    }
                )
            )
        final.append(sse("[DONE]"))
        return events, final
