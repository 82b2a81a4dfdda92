"""Driving the model reviewers against the fake servers: participants, requests, sinks.

:data:`BACKENDS` describes both model backends the same way (their fake, their reviewer,
where a request body keeps its tool replies), so one test runs over both.

Usage::

    with backend.fake(api_key=KEY) as server:
        server.script(Scenario(text=ANSWER))
        result = backend.reviewer().review(request(participant(backend, server)))
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from council.model.participant import Clocks, Participant
from council.roster.providers import ProviderEntry, ProviderRegistry
from reviewers.base import RateLimiter, Reviewer, ReviewRequest
from reviewers.models.anthropic_messages import AnthropicReviewer
from reviewers.models.openai_chat import OpenAIReviewer
from reviewers.models.retry import Backoff
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.server import FakeServer

KEY = "sk-test-0123456789abcdef"
"""The API key the fakes expect and the tests hand to the reviewers."""

FAST = Backoff(attempts=4, base_ms=20, cap_ms=100)
"""Retries with waits short enough for tests (ms)."""

SHORT = Clocks(backstop_ms=8000, idle_ms=1000, answer_ms=0)
"""Clocks for tests (ms): a 1 s idle clock, no wrap-up, a wall no healthy test reaches."""


class MemorySink:
    """An in-memory journal sink; ``refuse`` makes every append fail with that reason."""

    def __init__(self, refuse: str | None = None) -> None:
        self.entries: list[str] = []
        self.refuse = refuse
        self._lock = threading.Lock()

    def append(self, raw: str) -> str:
        if self.refuse is not None:
            return f"Not recorded ({self.refuse}); keep it for your final answer."
        with self._lock:
            self.entries.append(raw)
        return "Recorded."


@dataclass
class CountingLimiter:
    """A rate limiter that admits everything (or nothing) and records every call."""

    admit: bool = True
    acquired: list[tuple[str, int]] = field(default_factory=list)
    settled: list[tuple[str, int, int]] = field(default_factory=list)

    def acquire(self, key: str, tokens: int, deadline: float) -> bool:
        self.acquired.append((key, tokens))
        if not self.admit:
            time.sleep(max(0.0, min(0.2, deadline - time.monotonic())))
        return self.admit

    def correct(self, key: str, estimated: int, actual: int) -> None:
        self.settled.append((key, estimated, actual))


def held_by_worker(base_url: str, *key_envs: str, api: str = "openai") -> ProviderRegistry:
    """A worker's provider registry holding the fake at ``base_url`` once per key variable
    (providers ``fake-0``, ``fake-1``, ...), as an operator would list it."""
    entries = {
        f"fake-{i}": ProviderEntry(name=f"fake-{i}", api=api, base_url=base_url, key_env=env)
        for i, env in enumerate(key_envs)
    }
    return ProviderRegistry(source="(test registry)", providers=entries)


def registry_toml(base_url: str, *key_envs: str, api: str = "openai") -> str:
    """The TOML text of :func:`held_by_worker`'s registry, for a worker process's
    ``COUNCIL_PROVIDERS`` file."""
    return "".join(
        f'[providers.fake-{i}]\napi = "{api}"\nbase_url = "{base_url}"\nkey_env = "{env}"\n\n'
        for i, env in enumerate(key_envs)
    )


def _openai_replies(body: Mapping[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m.get("role") == "tool"]


def _anthropic_replies(body: Mapping[str, Any]) -> list[str]:
    replies: list[str] = []
    for message in body["messages"]:
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list):
            replies += [b["content"] for b in content if b.get("type") == "tool_result"]
    return replies


def _openai_texts(body: Mapping[str, Any], role: str) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == role and m.get("content")]


def _anthropic_texts(body: Mapping[str, Any], role: str) -> list[str]:
    texts: list[str] = []
    for message in body["messages"]:
        if message["role"] == role:
            texts += [b["text"] for b in message["content"] if b.get("type") == "text"]
    return texts


@dataclass(frozen=True)
class Backend:
    """One model backend as the tests see it."""

    name: str
    fake: type[FakeServer]
    make: Callable[[Backoff], Reviewer]
    tool_replies: Callable[[Mapping[str, Any]], list[str]]
    """The tool replies a recorded request body carries, in order."""
    texts: Callable[[Mapping[str, Any], str], list[str]]
    """The text of every message of a role ("user", "assistant") in a request body."""

    def reviewer(self, backoff: Backoff = FAST) -> Reviewer:
        """A reviewer of this backend with test-short retries."""
        return self.make(backoff)


BACKENDS: tuple[Backend, ...] = (
    Backend("openai", FakeOpenAI, OpenAIReviewer, _openai_replies, _openai_texts),
    Backend("anthropic", FakeAnthropic, AnthropicReviewer, _anthropic_replies, _anthropic_texts),
)


def participant(
    backend: Backend,
    server: FakeServer,
    *,
    clocks: Clocks = SHORT,
    tools: Sequence[str] | None = None,
    thinking: str | None = None,
    model: str = "fake-model",
    **options: Any,
) -> Participant:
    """A participant on ``backend`` pointed at ``server``, with the key in ``TEST_KEY``."""
    return Participant.model_validate(
        {
            "id": "p1",
            "backend": backend.name,
            "model": model,
            "thinking_level": thinking,
            "tools": list(tools) if tools is not None else None,
            "clocks": clocks,
            "options": {"base_url": server.base_url, "api_key_env": "TEST_KEY", **options},
        }
    )


def request(
    who: Participant,
    *,
    prompt: str = "Review this change.",
    sink: MemorySink | None = None,
    workdir: Path | None = None,
    cancel: threading.Event | None = None,
    limiter: RateLimiter | None = None,
    secrets: Mapping[str, str] | None = None,
) -> ReviewRequest:
    """A review request for ``who``, its key under ``TEST_KEY`` unless ``secrets`` says."""
    return ReviewRequest(
        participant=who,
        prompt=prompt,
        journal=sink if sink is not None else MemorySink(),
        workdir=workdir,
        cancel=cancel if cancel is not None else threading.Event(),
        secrets=secrets if secrets is not None else {"TEST_KEY": KEY},
        rate_limiter=limiter,
    )
