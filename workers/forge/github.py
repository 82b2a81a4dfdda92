"""GitHub's REST API, as far as ``council publish github`` needs it.

Five calls, on one pull request::

    POST  /repos/{o}/{r}/pulls/{n}/reviews                      create the round's review
    GET   /repos/{o}/{r}/pulls/{n}/reviews                      find council's earlier ones
    PUT   /repos/{o}/{r}/pulls/{n}/reviews/{id}/dismissals      dismiss a stale "changes"
    GET   /repos/{o}/{r}/issues/{n}/comments                    find the summary comment
    PATCH /repos/{o}/{r}/issues/comments/{id}  (else POST .../issues/{n}/comments)

GitHub's rules for integrations, followed here: mutating requests are paced at least
:data:`MIN_INTERVAL_S` apart (its secondary rate limit punishes bursts); a 403 or 429
that is a rate limit is waited out as the response says (``Retry-After``, else
``x-ratelimit-reset`` when ``x-ratelimit-remaining`` is 0, else one minute), at most
:data:`MAX_WAIT_S` per wait and :data:`RETRIES` times, never forever. A mutation is not
retried after a network error or a 5xx: it may have been applied, and a second review
is worse than a clear error. Errors say what to do: 401 the token, 403 its permissions,
404 the repository or pull request, 422 GitHub's own message.

The token is sent in the ``Authorization`` header only and never appears in a message,
a repr or a log line. Runtime layer (network). Source: GitHub REST "Create a review for
a pull request", "Dismiss a review", "Issue comments", "Rate limits for the REST API"
(secondary limits: one second between mutative requests).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Self

import httpx2

DEFAULT_API_URL = "https://api.github.com"
"""GitHub.com's API; GitHub Enterprise Server has ``https://HOST/api/v3``."""

MIN_INTERVAL_S = 1.0
"""Seconds at least between two mutating requests (GitHub: "at least one second")."""

MAX_WAIT_S = 60.0
"""Longest rate-limit wait honoured, in seconds; a longer one is an error saying when."""

RETRIES = 3
"""Rate-limited attempts retried at most, per request."""

SECONDARY_WAIT_S = 60.0
"""The wait when a rate-limit response names none (GitHub: "at least one minute")."""

PER_PAGE = 100
"""Items per page when listing (GitHub's maximum)."""

MAX_PAGES = 50
"""Pages read at most when listing (5,000 comments or reviews)."""

TIMEOUT_S = 30.0
"""Seconds to wait for GitHub to connect or answer one request."""

MESSAGE_CHARS = 500
"""How much of GitHub's error message is quoted."""

_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


class PublishError(Exception):
    """Publishing failed; ``exit_code`` is what the CLI exits with."""

    exit_code = 2


class GitHubRefused(PublishError):
    """GitHub refused the request (token, permissions, not found, invalid): exit 2."""

    exit_code = 2


class GitHubInvalid(GitHubRefused):
    """GitHub refused the request's content (422); the message is GitHub's: exit 2."""


class GitHubUnavailable(PublishError):
    """GitHub could not be reached, failed, or rate-limited us past the bound: exit 3."""

    exit_code = 3


@dataclass
class Pacer:
    """Keeps mutating requests at least ``interval_s`` apart (the first never waits)."""

    interval_s: float = MIN_INTERVAL_S
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


def check_repo(repo: str) -> tuple[str, str]:
    """``OWNER/NAME`` split in two; ValueError naming the expected shape otherwise."""
    if not _REPO.fullmatch(repo) or repo.split("/")[1] in (".", ".."):
        raise ValueError(f"--repo {repo!r} is not OWNER/NAME (e.g. octo-org/octo-repo)")
    owner, name = repo.split("/")
    return owner, name


class GitHubClient:
    """One pull request on GitHub's REST API, paced and with errors that say what to do.

    ``sleep``, ``clock`` (monotonic) and ``wall`` (epoch seconds) are injectable so
    tests run the waits instantly; ``transport`` lets a test answer without a socket.
    Use as a context manager (the connection pool is closed on exit).
    """

    def __init__(
        self,
        token: str,
        *,
        repo: str,
        pr: int,
        api_url: str = DEFAULT_API_URL,
        min_interval_s: float = MIN_INTERVAL_S,
        max_wait_s: float = MAX_WAIT_S,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        owner, name = check_repo(repo)
        self.repo, self.pr, self.api_url = f"{owner}/{name}", pr, api_url.rstrip("/")
        self._sleep, self._wall, self._max_wait = sleep, wall, max_wait_s
        self._pacer = Pacer(min_interval_s, sleep, clock)
        self._http = httpx2.Client(
            base_url=self.api_url,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": "council-publish",
            },
            timeout=TIMEOUT_S,
            transport=transport,
        )

    def __repr__(self) -> str:
        return f"GitHubClient(repo={self.repo!r}, pr={self.pr}, api_url={self.api_url!r})"

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._http.close()

    # -- the calls ----------------------------------------------------------------------
    def create_review(self, review: Mapping[str, Any]) -> int:
        """Create one review (the body ``render_github_review`` wrote); its id."""
        path = f"/repos/{self.repo}/pulls/{self.pr}/reviews"
        created = self._json(self._send("POST", path, "creating the review", body=review))
        return int(created.get("id", 0))

    def reviews(self) -> list[dict[str, Any]]:
        """Every review of the pull request, oldest first."""
        path = f"/repos/{self.repo}/pulls/{self.pr}/reviews"
        return list(self._pages(path, "listing the reviews"))

    def dismiss_review(self, review_id: int, message: str) -> None:
        """Dismiss one review (it stops requesting changes), saying why."""
        path = f"/repos/{self.repo}/pulls/{self.pr}/reviews/{review_id}/dismissals"
        body = {"message": message, "event": "DISMISS"}
        self._send("PUT", path, f"dismissing review {review_id}", body=body)

    def comments(self) -> list[dict[str, Any]]:
        """Every issue comment of the pull request, oldest first."""
        path = f"/repos/{self.repo}/issues/{self.pr}/comments"
        return list(self._pages(path, "listing the comments"))

    def update_comment(self, comment_id: int, body: str) -> None:
        """Replace an issue comment's body."""
        path = f"/repos/{self.repo}/issues/comments/{comment_id}"
        self._send("PATCH", path, "updating the summary comment", body={"body": body})

    def create_comment(self, body: str) -> int:
        """Add an issue comment to the pull request; its id."""
        path = f"/repos/{self.repo}/issues/{self.pr}/comments"
        created = self._json(
            self._send("POST", path, "adding the summary comment", body={"body": body})
        )
        return int(created.get("id", 0))

    # -- transport ----------------------------------------------------------------------
    def _pages(self, path: str, what: str) -> Iterator[dict[str, Any]]:
        url: str | None = path
        params: dict[str, int] | None = {"per_page": PER_PAGE}
        for _ in range(MAX_PAGES):
            if url is None:
                return
            response = self._send("GET", url, what, params=params)
            items = response.json() if response.content else []
            if not isinstance(items, list):
                raise GitHubUnavailable(f"{what}: GitHub answered with something not a list")
            yield from (item for item in items if isinstance(item, dict))
            following = response.links.get("next", {}).get("url")
            url, params = (following, None) if following else (None, None)

    def _send(
        self,
        method: Literal["GET", "POST", "PATCH", "PUT"],
        path: str,
        what: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, int] | None = None,
    ) -> httpx2.Response:
        """One request, paced when it mutates, rate limits waited out; raises on failure."""
        mutating = method != "GET"
        for attempt in range(RETRIES + 1):
            if mutating:
                self._pacer.wait()
            try:
                response = self._http.request(method, path, json=body, params=params)
            except httpx2.HTTPError as exc:
                raise GitHubUnavailable(
                    f"{what}: cannot reach GitHub at {self.api_url} ({type(exc).__name__}: "
                    f"{exc}); check --api-url and the network"
                    + (
                        "; the request may have been applied, look before publishing again"
                        if mutating
                        else ""
                    )
                ) from None
            wait = self._rate_limit_wait(response)
            if wait is None:
                return self._checked(response, what)
            if attempt == RETRIES or wait > self._max_wait:
                raise GitHubUnavailable(
                    f"{what}: GitHub's rate limit ({response.status_code}) asks to wait "
                    f"{wait:.0f} s more; nothing was applied, publish again later"
                )
            self._sleep(wait)
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    def _rate_limit_wait(self, response: httpx2.Response) -> float | None:
        """Seconds to wait when ``response`` is a rate limit, else None."""
        if response.status_code not in (403, 429):
            return None
        headers = response.headers
        retry_after = headers.get("retry-after", "").strip()
        if retry_after.isdigit():
            return float(retry_after)
        reset = headers.get("x-ratelimit-reset", "").strip()
        if headers.get("x-ratelimit-remaining") == "0" and reset.isdigit():
            return max(0.0, float(reset) - self._wall()) + 1.0
        if response.status_code == 429 or "rate limit" in _message(response).lower():
            return SECONDARY_WAIT_S
        return None

    def _checked(self, response: httpx2.Response, what: str) -> httpx2.Response:
        status = response.status_code
        if status < 400:
            return response
        said = _message(response)
        if status == 401:
            raise GitHubRefused(
                f"{what}: GitHub refused the token (401 {said}): GITHUB_TOKEN is missing, "
                "expired or wrong"
            )
        if status == 403:
            raise GitHubRefused(
                f"{what}: GitHub forbade it (403 {said}): the token lacks permission. A "
                "workflow needs `permissions: pull-requests: write`; a pull request from a "
                "fork gets a read-only token"
            )
        if status == 404:
            raise GitHubRefused(
                f"{what}: {self.repo} pull request #{self.pr} was not found (404), or the "
                "token cannot see it; check --repo and --pr, and the token's access"
            )
        if status == 422:
            raise GitHubInvalid(f"{what}: GitHub refused it (422): {said}")
        if status >= 500:
            raise GitHubUnavailable(f"{what}: GitHub failed ({status} {said}); try again later")
        raise GitHubRefused(f"{what}: GitHub answered {status}: {said}")

    @staticmethod
    def _json(response: httpx2.Response) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}


def _message(response: httpx2.Response) -> str:
    """GitHub's error message and its listed errors, shortened; the reason phrase else."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return response.reason_phrase or ""
    parts = [str(data.get("message", "")).strip()]
    for error in data.get("errors", []) if isinstance(data.get("errors"), list) else []:
        if isinstance(error, dict):
            parts.append(str(error.get("message") or error.get("code") or error).strip())
        else:
            parts.append(str(error).strip())
    text = "; ".join(p for p in parts if p) or (response.reason_phrase or "")
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"
