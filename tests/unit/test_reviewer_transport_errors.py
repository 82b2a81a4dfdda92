"""A model provider that cannot be reached: the failure names the API and its URL, and
says what happened (refused, unknown host) rather than "timed out"."""

from __future__ import annotations

import socket

import pytest

from council.participant import Participant
from council.reviewers.retry import Backoff
from tests.fakes.review import BACKENDS, SHORT, Backend, request

ONE_TRY = Backoff(attempts=1, base_ms=1, cap_ms=1)


def _closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _pointed_at(backend: Backend, url: str) -> Participant:
    return Participant.model_validate(
        {
            "id": "p1",
            "backend": backend.name,
            "model": "fake-model",
            "clocks": SHORT,
            "options": {"base_url": url, "api_key_env": "TEST_KEY"},
        }
    )


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
def test_a_refused_connection_names_the_url_and_is_not_a_timeout(backend: Backend) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result = backend.reviewer(ONE_TRY).review(request(_pointed_at(backend, url)))
    assert result.failure is not None
    assert f"API at {url} failed" in result.failure
    assert "Refused" in result.failure and "timed out" not in result.failure
    assert "check base_url" in result.failure


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
def test_an_unknown_host_names_the_url(backend: Backend) -> None:
    url = "http://council-no-such-host.invalid/v1"
    result = backend.reviewer(ONE_TRY).review(request(_pointed_at(backend, url)))
    assert result.failure is not None
    assert f"API at {url} failed" in result.failure and "timed out" not in result.failure
