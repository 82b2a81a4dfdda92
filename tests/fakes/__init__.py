"""Fake model servers for tests and benchmarks: real HTTP on 127.0.0.1, scripted streams.

* :class:`FakeOpenAI` — an OpenAI-compatible ``/v1/chat/completions`` SSE stream;
* :class:`FakeAnthropic` — an Anthropic-compatible ``/v1/messages`` SSE stream;
* :class:`Scenario` / :class:`ToolCall` — what one request is answered with;
* :class:`Received` — one recorded request.

See :mod:`tests.fakes.server` for scripting and counters.
"""

from __future__ import annotations

from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scenario import Scenario, ToolCall
from tests.fakes.server import FakeServer, Received

__all__ = ["FakeAnthropic", "FakeOpenAI", "FakeServer", "Received", "Scenario", "ToolCall"]
