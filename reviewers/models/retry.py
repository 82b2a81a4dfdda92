"""Retrying a model request: which troubles deserve another try, and how long to wait.

The SDKs' own retries are off (``max_retries=0``) so that every attempt is counted in the
usage, waits honour our clocks, and a retry restarts the whole turn. Worth retrying: HTTP
408, 429 and 5xx, a connection that failed or dropped, a stream that ended before its
final event. Not worth it: 401, 403 and every other 4xx (the request itself is wrong; the
provider's message says why). The wait is the server's ``Retry-After`` when it sent one,
else exponential backoff with full jitter (:meth:`Backoff.delay_ms`).

Source: issue "Model reviewers"; RFC 9110 §10.2.3 (Retry-After); the AWS Architecture
Blog, "Exponential Backoff And Jitter" (full jitter).
"""

from __future__ import annotations

import math
import random
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime


@dataclass(frozen=True)
class Trouble:
    """What went wrong with one request, as the retry loop needs it.

    ``message`` is a sentence for people (the provider's own words for an HTTP error);
    ``status`` the HTTP status when there was one; ``retry_after_ms`` the server's wait.
    """

    message: str
    retryable: bool
    status: int | None = None
    retry_after_ms: int | None = None


def retryable_status(status: int) -> bool:
    """Whether an HTTP status is worth another try: 408, 429 and every 5xx."""
    return status in (408, 429) or 500 <= status <= 599


def retry_after_ms(headers: Mapping[str, str], now: float) -> int | None:
    """The wait a server asked for, in ms, or None when it asked for none.

    Reads ``retry-after-ms`` (OpenAI's, milliseconds) first, then ``Retry-After``
    (RFC 9110: a number of seconds, or an HTTP date compared with ``now``, seconds
    since the epoch). A date in the past is 0; an unreadable value is None. Header
    names are looked up as given and lower-case (httpx's headers ignore case anyway).
    """
    for name, scale in (("retry-after-ms", 1.0), ("retry-after", 1000.0)):
        value = headers.get(name) or headers.get(name.title())
        if value is None:
            continue
        text = value.strip()
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if math.isfinite(number) and number >= 0:
            return math.ceil(number * scale)
        if scale == 1000.0:
            try:
                when = parsedate_to_datetime(text)
            except (TypeError, ValueError, IndexError):
                return None
            return max(0, math.ceil((when.timestamp() - now) * 1000))
    return None


@dataclass(frozen=True)
class Backoff:
    """How a failed request is retried (all durations in milliseconds).

    * ``attempts``: most requests for one turn, the first included;
    * ``base_ms``: the first retry waits up to this long; each next one up to twice as
      long, never more than ``cap_ms``.
    """

    attempts: int = 6
    base_ms: int = 1000
    cap_ms: int = 30_000

    def delay_ms(self, retry: int, server_ms: int | None, rng: random.Random) -> int:
        """The wait before retry number ``retry`` (1 = the first retry), in ms.

        ``server_ms`` (the server's ``Retry-After``) wins when given: the server knows
        when it will take us again. Otherwise full jitter: uniform in
        [0, min(cap_ms, base_ms·2^(retry-1))].
        """
        if server_ms is not None:
            return server_ms
        ceiling = min(self.cap_ms, self.base_ms * 2 ** max(0, retry - 1))
        return round(rng.uniform(0, ceiling))


def retry_reason(trouble: Trouble) -> str:
    """A short label for why a request was retried: ``http-<status>`` (``http-429``,
    ``http-503``) for an HTTP status, else ``transport`` (a connection that failed or
    broke). Few distinct values, so a metric may be labelled by it."""
    return f"http-{trouble.status}" if trouble.status is not None else "transport"


def transport_trouble(api: str, base_url: str, error: BaseException) -> Trouble:
    """A transport error (no HTTP status) of ``api`` at ``base_url``, judged: retryable,
    and said as a timeout only when the root cause was one.

    Why the root cause: the SDK's aiohttp transport reports a refused or unresolvable
    connection as a connect *timeout* (openai's copy maps ``ClientConnectionError`` to
    ``ConnectTimeout``); the chain of causes keeps what really happened.
    """
    chain = [error]
    while chain[-1].__cause__ is not None and len(chain) < 10:
        chain.append(chain[-1].__cause__)
    root = chain[-1]
    said = str(root).strip()
    detail = f"{type(root).__name__}: {said}" if said else type(root).__name__
    connecting = isinstance(root, ConnectionRefusedError | socket.gaierror) or any(
        "Connect" in type(link).__name__ for link in chain
    )
    if connecting and not isinstance(root, TimeoutError):
        return Trouble(
            f"the connection to the {api} API at {base_url} failed ({detail}); "
            f"check base_url and the network",
            retryable=True,
        )
    if isinstance(root, TimeoutError) or "Timeout" in type(root).__name__:
        return Trouble(f"the request to the {api} API at {base_url} timed out", retryable=True)
    return Trouble(f"the stream from the {api} API at {base_url} broke ({detail})", retryable=True)


def status_trouble(
    api: str, base_url: str, status: int, message: str, headers: Mapping[str, str]
) -> Trouble:
    """An HTTP error status from ``api`` at ``base_url``, judged by the status (see
    :func:`retryable_status`), with the server's ``Retry-After`` when it sent one;
    ``message`` is the provider's own words."""
    return Trouble(
        f"the {api} API at {base_url} answered HTTP {status}: {message}",
        retryable=retryable_status(status),
        status=status,
        retry_after_ms=retry_after_ms(headers, time.time()),
    )


def unreadable_trouble(api: str, error: BaseException) -> Trouble:
    """A stream ``api`` sent that could not be read (bad JSON, an odd shape): not worth
    another try, the same request would be answered the same way."""
    return Trouble(
        f"the {api} API's stream could not be read ({type(error).__name__}: {error})",
        retryable=False,
    )
