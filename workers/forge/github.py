"""GitHub's REST API, as far as ``council publish github`` needs it.

Reviews, issue comments and check runs on one pull request, and who the token is:
``GET /user`` answers a personal or OAuth token; an App installation token (Actions'
``GITHUB_TOKEN``) gets 403 there, so GraphQL's ``viewer`` is asked (the App's bot; some
servers leave out ``[bot]``, which :meth:`Identity.owns` allows). Mutations are
:data:`MIN_INTERVAL_S` apart, since the secondary rate limit punishes bursts; a rate-limited
403 or 429 is waited out as ``Retry-After``, else ``x-ratelimit-reset``, else a minute says,
within the bounds of :mod:`workers.forge.http` (which also keeps the token out of every
message). Source: GitHub REST "Create a review for a pull request", "Update a review", "List
comments for a pull request review", "Dismiss a review", "Issue comments", "Check runs",
"Rate limits for the REST API" (secondary limits: one second between mutative requests).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2

from workers.forge.http import (
    RETRIES,
    ForgeClient,
    ForgeInvalid,
    ForgeRefused,
    ForgeUnavailable,
    Pacer,
    PublishError,
    quoted_message,
)

__all__ = [
    "DEFAULT_API_URL",
    "RETRIES",
    "GitHubClient",
    "GitHubInvalid",
    "GitHubRefused",
    "GitHubUnavailable",
    "Identity",
    "Pacer",
    "PublishError",
    "check_repo",
]

DEFAULT_API_URL = "https://api.github.com"
"""GitHub.com's API; GitHub Enterprise Server has ``https://HOST/api/v3``."""

MIN_INTERVAL_S = 1.0
"""Seconds at least between two mutating requests (GitHub: "at least one second")."""

MAX_WAIT_S = 60.0
"""Longest rate-limit wait honoured, in seconds; a longer one is an error saying when."""

SECONDARY_WAIT_S = 60.0
"""The wait when a rate-limit response names none (GitHub: "at least one minute")."""

PER_PAGE = 100
"""Items per page when listing (GitHub's maximum)."""

MAX_PAGES = 50
"""Pages read at most when listing (5,000 comments or reviews)."""

PULLS = "pull-requests: write"
"""The permission reviews and pull-request comments need (workflow ``permissions:``)."""

CHECKS = "checks: write"
"""The permission check runs need; only a GitHub App token has it."""

_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_VIEWER = "query { viewer { login } }"


class GitHubRefused(ForgeRefused):
    """GitHub refused the request (token, permissions, not found, invalid): exit 2."""


class GitHubInvalid(GitHubRefused, ForgeInvalid):
    """GitHub refused the request's content (422); the message is GitHub's: exit 2."""


class GitHubUnavailable(ForgeUnavailable):
    """GitHub could not be reached, failed, or rate-limited us past the bound: exit 3."""


@dataclass(frozen=True)
class Identity:
    """Who the token acts as: a login, and whether it is a GitHub App's bot."""

    login: str
    app: bool = False

    def owns(self, item: Mapping[str, Any]) -> bool:
        """Whether a review, comment or check run (its ``user``) was posted by us.

        Logins match without case. A bot's login ends in ``[bot]`` on REST; GraphQL may
        name it without, so ``NAME`` also owns what ``NAME[bot]`` of type Bot posted
        (no person's login can hold brackets, so no person matches either way).
        """
        user = item.get("user")
        if not isinstance(user, dict) or not isinstance(user.get("login"), str):
            return False
        theirs = user["login"].lower()
        mine = self.login.lower()
        if theirs == mine:
            return True
        return user.get("type") == "Bot" and theirs == f"{mine}[bot]"

    @property
    def app_slug(self) -> str | None:
        """The App's slug for a bot login (``github-actions`` of ``github-actions[bot]``)."""
        if not self.app:
            return None
        return self.login.removesuffix("[bot]")


def check_repo(repo: str) -> tuple[str, str]:
    """``OWNER/NAME`` split in two; ValueError naming the expected shape otherwise."""
    if not _REPO.fullmatch(repo) or repo.split("/")[1] in (".", ".."):
        raise ValueError(f"--repo {repo!r} is not OWNER/NAME (e.g. octo-org/octo-repo)")
    owner, name = repo.split("/")
    return owner, name


class GitHubClient(ForgeClient):
    """One pull request on GitHub's REST API, paced and with errors that say what to do.

    ``sleep``, ``clock`` (monotonic) and ``wall`` (epoch seconds) are injectable so
    tests run the waits instantly; ``transport`` lets a test answer without a socket.
    Use as a context manager (the connection pool is closed on exit).
    """

    forge = "GitHub"
    unavailable = GitHubUnavailable

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
        self.repo, self.pr = f"{owner}/{name}", pr
        super().__init__(
            api_url=api_url,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": "council-publish",
            },
            min_interval_s=min_interval_s,
            max_wait_s=max_wait_s,
            sleep=sleep,
            clock=clock,
            wall=wall,
            transport=transport,
        )

    def __repr__(self) -> str:
        return f"GitHubClient(repo={self.repo!r}, pr={self.pr}, api_url={self.api_url!r})"

    @property
    def graphql_url(self) -> str:
        """GraphQL's endpoint: ``/graphql`` on GitHub.com, ``/api/graphql`` on GitHub
        Enterprise Server (whose REST API is ``/api/v3``)."""
        if self.api_url.endswith("/api/v3"):
            return self.api_url.removesuffix("/v3") + "/graphql"
        return self.api_url + "/graphql"

    # -- who, and where ------------------------------------------------------------------
    def whoami(self) -> Identity:
        """Who the token acts as: ``GET /user``, else (an App's token) GraphQL's viewer."""
        try:
            user = self.json_object(self.send("GET", "/user", "asking GitHub who the token is"))
        except GitHubRefused as exc:
            if exc.status != 403:
                raise
        else:
            login = user.get("login")
            if isinstance(login, str) and login:
                return Identity(login, app=user.get("type") == "Bot")
        answer = self.json_object(
            self.send(
                "POST",
                self.graphql_url,
                "asking GitHub's GraphQL API who the App token is",
                body={"query": _VIEWER},
                mutating=False,
            )
        )
        data = answer.get("data")
        viewer = data.get("viewer") if isinstance(data, dict) else None
        login = viewer.get("login") if isinstance(viewer, dict) else None
        if not isinstance(login, str) or not login:
            said = quoted_errors(answer)
            raise GitHubRefused(
                "cannot tell who the token in GITHUB_TOKEN is: GET /user refused it and "
                f"GraphQL's viewer did not answer ({said or 'no login'}); without that, "
                "council cannot find its own review and summary, so nothing was posted"
            )
        return Identity(login, app=True)

    def pull(self) -> dict[str, Any]:
        """The pull request (``head.sha`` is its head commit now)."""
        path = f"/repos/{self.repo}/pulls/{self.pr}"
        return self.json_object(self.send("GET", path, "reading the pull request", need=PULLS))

    # -- reviews -------------------------------------------------------------------------
    def create_review(self, review: Mapping[str, Any]) -> dict[str, Any]:
        """Create one review (the body ``render_github_review`` wrote); GitHub's answer."""
        path = f"/repos/{self.repo}/pulls/{self.pr}/reviews"
        return self.json_object(
            self.send("POST", path, "creating the review", body=review, need=PULLS)
        )

    def reviews(self) -> list[dict[str, Any]]:
        """Every review of the pull request, oldest first."""
        return list(
            self._pages(f"/repos/{self.repo}/pulls/{self.pr}/reviews", "listing the reviews")
        )

    def update_review(self, review_id: int, body: str) -> None:
        """Replace a review's body (the only part of a submitted review REST can edit)."""
        path = f"/repos/{self.repo}/pulls/{self.pr}/reviews/{review_id}"
        self.send("PUT", path, f"updating review {review_id}", body={"body": body}, need=PULLS)

    def review_comments(self, review_id: int) -> list[dict[str, Any]]:
        """The line comments of one review."""
        path = f"/repos/{self.repo}/pulls/{self.pr}/reviews/{review_id}/comments"
        return list(self._pages(path, f"listing the line comments of review {review_id}"))

    def dismiss_review(self, review_id: int, message: str) -> None:
        """Dismiss one review (it stops requesting changes), saying why."""
        path = f"/repos/{self.repo}/pulls/{self.pr}/reviews/{review_id}/dismissals"
        body = {"message": message, "event": "DISMISS"}
        self.send("PUT", path, f"dismissing review {review_id}", body=body, need=PULLS)

    # -- the summary comment -------------------------------------------------------------
    def comments(self) -> list[dict[str, Any]]:
        """Every issue comment of the pull request, oldest first."""
        path = f"/repos/{self.repo}/issues/{self.pr}/comments"
        return list(self._pages(path, "listing the comments"))

    def update_comment(self, comment_id: int, body: str) -> None:
        """Replace an issue comment's body."""
        path = f"/repos/{self.repo}/issues/comments/{comment_id}"
        self.send("PATCH", path, "updating the summary comment", body={"body": body}, need=PULLS)

    def create_comment(self, body: str) -> int:
        """Add an issue comment to the pull request; its id."""
        path = f"/repos/{self.repo}/issues/{self.pr}/comments"
        created = self.json_object(
            self.send("POST", path, "adding the summary comment", body={"body": body}, need=PULLS)
        )
        return int(created.get("id", 0))

    # -- check runs ----------------------------------------------------------------------
    def check_runs(self, head_sha: str, name: str) -> list[dict[str, Any]]:
        """Every check run called ``name`` on a commit (all of them, not only the latest)."""
        path = f"/repos/{self.repo}/commits/{head_sha}/check-runs"
        return list(
            self._pages(
                path,
                "listing the check runs",
                key="check_runs",
                extra={"check_name": name, "filter": "all"},
                need=CHECKS,
            )
        )

    def create_check_run(self, run: Mapping[str, Any]) -> dict[str, Any]:
        """Create a check run; GitHub's answer (its ``id``)."""
        path = f"/repos/{self.repo}/check-runs"
        return self.json_object(
            self.send("POST", path, "creating the check run", body=run, need=CHECKS)
        )

    def update_check_run(self, run_id: int, run: Mapping[str, Any]) -> dict[str, Any]:
        """Update a check run (annotations given are appended to those it has)."""
        path = f"/repos/{self.repo}/check-runs/{run_id}"
        return self.json_object(
            self.send("PATCH", path, f"updating check run {run_id}", body=run, need=CHECKS)
        )

    # -- transport -----------------------------------------------------------------------
    def _pages(
        self,
        path: str,
        what: str,
        *,
        key: str | None = None,
        extra: Mapping[str, str] | None = None,
        need: str = PULLS,
    ) -> Iterator[dict[str, Any]]:
        url: str | None = path
        params: dict[str, str | int] | None = {"per_page": PER_PAGE, **(extra or {})}
        for _ in range(MAX_PAGES):
            if url is None:
                return
            response = self.send("GET", url, what, params=params, need=need)
            if key is None:
                yield from self.json_list(response, what)
            else:
                items = self.json_object(response).get(key)
                yield from (
                    (i for i in items if isinstance(i, dict)) if isinstance(items, list) else ()
                )
            following = response.links.get("next", {}).get("url")
            url, params = (following, None) if following else (None, None)

    def rate_limit_wait(self, response: httpx2.Response) -> float | None:
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
        if response.status_code == 429 or "rate limit" in quoted_message(response).lower():
            return SECONDARY_WAIT_S
        return None

    def refusal(self, response: httpx2.Response, what: str, need: str) -> PublishError:
        """What a refusal means, and what to do about it."""
        status = response.status_code
        said = quoted_message(response)
        if status == 401:
            return GitHubRefused(
                f"{what}: GitHub refused the token (401 {said}): GITHUB_TOKEN is missing, "
                "expired or wrong",
                status=status,
            )
        if status == 403 and not need:
            return GitHubRefused(
                f"{what}: GitHub forbade it (403 {said}): check the token in GITHUB_TOKEN "
                "and its access to the repository",
                status=status,
            )
        if status == 403:
            fix = (
                "check runs need a GitHub App token (GITHUB_TOKEN in Actions, with "
                "`permissions: checks: write`); a personal access token cannot create them"
                if need == CHECKS
                else f"a workflow needs `permissions: {need}`; a pull request from a fork "
                "gets a read-only token"
            )
            return GitHubRefused(
                f"{what}: GitHub forbade it (403 {said}): the token in GITHUB_TOKEN lacks "
                f"the permission {need}: {fix}",
                status=status,
            )
        if status == 404:
            return GitHubRefused(
                f"{what}: {self.repo} pull request #{self.pr} was not found (404), or the "
                "token cannot see it; check --repo and --pr, and the token's access",
                status=status,
            )
        if status == 422:
            return GitHubInvalid(f"{what}: GitHub refused it (422): {said}", status=status)
        if status >= 500:
            return GitHubUnavailable(
                f"{what}: GitHub failed ({status} {said}); try again later", status=status
            )
        return GitHubRefused(f"{what}: GitHub answered {status}: {said}", status=status)


def quoted_errors(answer: Mapping[str, Any]) -> str:
    """GraphQL's ``errors`` messages, joined."""
    errors = answer.get("errors")
    if not isinstance(errors, list):
        return ""
    return "; ".join(str(e.get("message", e)) if isinstance(e, dict) else str(e) for e in errors)
