"""A model provider that cannot be reached: the failure names the API and its URL, and
says what happened (refused, unknown host) rather than "timed out"."""

from __future__ import annotations

import itertools
import socket

import pytest

from council.model.participant import Participant
from reviewers.models.retry import Backoff
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


def _chain(*errors: BaseException) -> BaseException:
    """``errors[0]`` caused by ``errors[1]``, caused by ``errors[2]`` ..."""
    for outer, inner in itertools.pairwise(errors):
        outer.__cause__ = inner
    return errors[0]


def test_a_stream_broken_after_it_started_is_not_blamed_on_base_url() -> None:
    import aiohttp
    import httpx2

    from reviewers.models.retry import transport_trouble

    cut = _chain(
        httpx2.ReadError("Response payload is not completed"),
        aiohttp.ClientPayloadError("Response payload is not completed"),
    )
    trouble = transport_trouble("OpenAI", "http://h/v1", cut)
    assert trouble.retryable
    assert trouble.message.startswith("the stream from the OpenAI API at http://h/v1 broke")
    assert "base_url" not in trouble.message


def test_a_connect_timeout_is_a_timeout_and_a_refusal_is_not() -> None:
    import httpx2

    from reviewers.models.retry import transport_trouble

    slow = _chain(httpx2.ConnectTimeout("timed out"), TimeoutError())
    assert "timed out" in transport_trouble("OpenAI", "http://h/v1", slow).message
    refused = _chain(httpx2.ConnectTimeout("no"), ConnectionRefusedError(111, "refused"))
    said = transport_trouble("OpenAI", "http://h/v1", refused).message
    assert "failed (ConnectionRefusedError" in said and "check base_url" in said
