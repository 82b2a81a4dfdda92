"""What every forge client shares: paced mutations, bounded rate-limit waits, errors
that say what to do, and a token that is never shown.

A forge (:mod:`workers.forge.github`, :mod:`workers.forge.gitlab`) subclasses
:class:`ForgeClient` and says how its API signals a rate limit and what each refusal
means. The rules, for both: mutating requests are paced at least ``min_interval_s``
apart; a rate-limited answer is waited out as it says, at most ``max_wait_s`` per wait
and :data:`RETRIES` times, never forever; a mutation is not retried after a network
error or a 5xx (it may have been applied, and a duplicate is worse than a clear error).
The token travels in one header only; it is in no message, repr or log line. Runtime
layer (network).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, ClassVar, Literal, Self

import httpx2

Method = Literal["GET", "POST", "PATCH", "PUT"]

RETRIES = 3
"""Rate-limited attempts retried at most, per request."""

TIMEOUT_S = 30.0
"""Seconds to wait for the forge to connect or answer one request."""

MESSAGE_CHARS = 500
"""How much of the forge's error message is quoted."""


class PublishError(Exception):
    """Publishing failed; ``exit_code`` is what the CLI exits with, ``status`` the
    forge's HTTP status when it answered one."""

    exit_code = 2

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ForgeRefused(PublishError):
    """The forge refused the request (token, permissions, not found, invalid): exit 2."""

    exit_code = 2


class ForgeInvalid(ForgeRefused):
    """The forge refused the request's content (400, 422); the message is its own."""


class ForgeUnavailable(PublishError):
    """The forge could not be reached, failed, or rate-limited us past the bound: exit 3."""

    exit_code = 3


@dataclass
class Pacer:
    """Keeps mutating requests at least ``interval_s`` apart (the first never waits)."""

    interval_s: float = 1.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    _last: float | None = field(default=None, init=False)

    def wait(self) -> None:
        """Sleep until the interval since the previous mutation has passed, then mark now."""
        if self._last is not None:
            remaining = self._last + self.interval_s - self.clock()
            if remaining > 0:
                self.sleep(remaining)
        self._last = self.clock()


class ForgeClient(ABC):
    """A paced, rate-limit-aware JSON client for one forge API (a context manager).

    Subclasses set :attr:`forge` (its name in messages), :attr:`unavailable` (the
    exception class for exit 3) and implement :meth:`rate_limit_wait` and
    :meth:`refusal`. ``sleep``, ``clock`` and ``wall`` are injectable so tests run the
    waits instantly; ``transport`` lets a test answer without a socket.
    """

    forge: ClassVar[str] = "the forge"
    unavailable: ClassVar[type[ForgeUnavailable]] = ForgeUnavailable

    def __init__(
        self,
        *,
        api_url: str,
        headers: Mapping[str, str],
        min_interval_s: float,
        max_wait_s: float,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self._sleep, self._wall, self._max_wait = sleep, wall, max_wait_s
        self._pacer = Pacer(min_interval_s, sleep, clock)
        self._http = httpx2.Client(
            base_url=self.api_url, headers=dict(headers), timeout=TIMEOUT_S, transport=transport
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._http.close()

    # -- what a forge says -------------------------------------------------------------
    @abstractmethod
    def rate_limit_wait(self, response: httpx2.Response) -> float | None:
        """Seconds to wait when ``response`` is a rate limit, else None (each forge says
        it its own way: GitHub's ``x-ratelimit-*``, GitLab's ``RateLimit-*``)."""

    @abstractmethod
    def refusal(self, response: httpx2.Response, what: str, need: str) -> PublishError:
        """The error for a refused request (status 400 or more, not a rate limit);
        ``need`` names the permission the request needs."""

    # -- transport ---------------------------------------------------------------------
    def send(
        self,
        method: Method,
        path: str,
        what: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str | int] | None = None,
        need: str = "",
        mutating: bool | None = None,
    ) -> httpx2.Response:
        """One request, paced when it mutates, rate limits waited out; raises on failure.

        Every method but GET mutates unless ``mutating`` says otherwise (a GraphQL query
        is a POST that changes nothing)."""
        if mutating is None:
            mutating = method != "GET"
        for attempt in range(RETRIES + 1):
            if mutating:
                self._pacer.wait()
            try:
                response = self._http.request(method, path, json=body, params=params)
            except httpx2.HTTPError as exc:
                raise self.unavailable(
                    f"{what}: cannot reach {self.forge} at {self.api_url} "
                    f"({type(exc).__name__}: {exc}); check --api-url and the network"
                    + (
                        "; the request may have been applied, look before publishing again"
                        if mutating
                        else ""
                    )
                ) from None
            wait = self.rate_limit_wait(response)
            if wait is None:
                if response.status_code < 400:
                    return response
                raise self.refusal(response, what, need)
            if attempt == RETRIES or wait > self._max_wait:
                raise self.unavailable(
                    f"{what}: {self.forge}'s rate limit ({response.status_code}) asks to "
                    f"wait {wait:.0f} s more; nothing was applied, publish again later"
                )
            self._sleep(wait)
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    @staticmethod
    def json_object(response: httpx2.Response) -> dict[str, Any]:
        """The response's JSON object ({} when it is none)."""
        try:
            data = response.json()
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def json_list(self, response: httpx2.Response, what: str) -> list[dict[str, Any]]:
        """The response's JSON list of objects; exit 3 when it is not a list."""
        items = response.json() if response.content else []
        if not isinstance(items, list):
            raise self.unavailable(f"{what}: {self.forge} answered with something not a list")
        return [item for item in items if isinstance(item, dict)]


def quoted_message(response: httpx2.Response) -> str:
    """The forge's error message and its listed errors, shortened; the reason phrase
    else. Reads GitHub's ``message`` / ``errors`` and GitLab's ``message`` / ``error``."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return response.reason_phrase or ""
    parts: list[str] = []
    for key in ("message", "error"):
        value = data.get(key)
        if isinstance(value, str):
            parts.append(value.strip())
        elif isinstance(value, dict | list):
            parts.append(_flatten(value))
    errors = data.get("errors")
    for error in errors if isinstance(errors, list) else []:
        if isinstance(error, dict):
            parts.append(str(error.get("message") or error.get("code") or error).strip())
        else:
            parts.append(str(error).strip())
    text = "; ".join(p for p in parts if p) or (response.reason_phrase or "")
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"


def _flatten(value: dict[str, Any] | list[Any]) -> str:
    """GitLab's structured messages (``{"base": ["line_code can't be blank"]}``) as text."""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return "; ".join(
        f"{k}: {', '.join(str(x) for x in v) if isinstance(v, list) else v}"
        for k, v in value.items()
    )
