"""GitLab's REST API (v4), as far as ``council publish gitlab`` needs it.

A merge request's versions, diff threads and notes, and who the token is. The token is
``GITLAB_TOKEN`` (an access token with the ``api`` scope, sent as ``PRIVATE-TOKEN``) or else
``CI_JOB_TOKEN`` (``JOB-TOKEN``; most instances let a job token call few endpoints, notes
not among them, so the errors say to set ``GITLAB_TOKEN``), in that header only, never in a
message, repr or log line. Mutations are paced :data:`MIN_INTERVAL_S` apart; a 429 is waited
out as ``Retry-After`` (else ``RateLimit-Reset``) says, within :mod:`workers.forge.http`'s
bounds; a 400's own message is quoted. Source: GitLab REST "Merge requests", "Discussions"
(create a new thread in the merge request diff), "Notes", "Rate limits", "CI/CD job token".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal
from urllib.parse import quote

import httpx2

from workers.forge.http import (
    ForgeClient,
    ForgeInvalid,
    ForgeRefused,
    ForgeUnavailable,
    PublishError,
    quoted_message,
)

DEFAULT_API_URL = "https://gitlab.com/api/v4"
"""GitLab.com's API; a self-managed instance has ``https://HOST/api/v4`` (in a job:
``CI_API_V4_URL``)."""

MIN_INTERVAL_S = 0.2
"""Seconds at least between two mutating requests."""

MAX_WAIT_S = 60.0
"""Longest rate-limit wait honoured, in seconds."""

DEFAULT_WAIT_S = 60.0
"""The wait when a 429 names none."""

PER_PAGE = 100
"""Items per page when listing (GitLab's maximum)."""

MAX_PAGES = 50
"""Pages read at most when listing."""

TokenKind = Literal["GITLAB_TOKEN", "CI_JOB_TOKEN"]


class GitLabRefused(ForgeRefused):
    """GitLab refused the request (token, permissions, not found): exit 2."""


class GitLabInvalid(GitLabRefused, ForgeInvalid):
    """GitLab refused the request's content (400, 422), in its own words: exit 2."""


class GitLabUnavailable(ForgeUnavailable):
    """GitLab could not be reached, failed, or rate-limited us past the bound: exit 3."""


class GitLabClient(ForgeClient):
    """One merge request on GitLab's REST API (a context manager)."""

    forge = "GitLab"
    unavailable = GitLabUnavailable

    def __init__(
        self,
        token: str,
        *,
        token_kind: TokenKind,
        project: str,
        mr: int,
        api_url: str = DEFAULT_API_URL,
        min_interval_s: float = MIN_INTERVAL_S,
        max_wait_s: float = MAX_WAIT_S,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        if not project.strip():
            raise ValueError("--project is empty: pass the project's id or path (CI_PROJECT_ID)")
        self.project, self.mr, self.token_kind = project, mr, token_kind
        header = "PRIVATE-TOKEN" if token_kind == "GITLAB_TOKEN" else "JOB-TOKEN"
        super().__init__(
            api_url=api_url,
            headers={header: token, "User-Agent": "council-publish"},
            min_interval_s=min_interval_s,
            max_wait_s=max_wait_s,
            sleep=sleep,
            clock=clock,
            wall=wall,
            transport=transport,
        )
        self._mr_path = f"/projects/{quote(project, safe='')}/merge_requests/{mr}"

    def __repr__(self) -> str:
        return f"GitLabClient(project={self.project!r}, mr={self.mr}, api_url={self.api_url!r})"

    # -- the calls ----------------------------------------------------------------------
    def whoami(self) -> dict[str, Any]:
        """The token's user (``id``, ``username``)."""
        return self.json_object(self.send("GET", "/user", "asking GitLab who the token is"))

    def merge_request(self) -> dict[str, Any]:
        """The merge request (``sha``, ``diff_refs``)."""
        return self.json_object(self.send("GET", self._mr_path, "reading the merge request"))

    def versions(self) -> list[dict[str, Any]]:
        """The merge request's diff versions, newest first."""
        return list(self._pages(f"{self._mr_path}/versions", "listing the diff versions"))

    def discussions(self) -> list[dict[str, Any]]:
        """Every discussion (thread) of the merge request."""
        return list(self._pages(f"{self._mr_path}/discussions", "listing the discussions"))

    def create_discussion(self, body: str, position: Mapping[str, Any] | None) -> dict[str, Any]:
        """Start a thread, on a diff line when ``position`` is given."""
        payload: dict[str, Any] = {"body": body}
        if position is not None:
            payload["position"] = dict(position)
        return self.json_object(
            self.send("POST", f"{self._mr_path}/discussions", "starting a thread", body=payload)
        )

    def notes(self) -> list[dict[str, Any]]:
        """Every note of the merge request, oldest first."""
        return list(
            self._pages(
                f"{self._mr_path}/notes",
                "listing the notes",
                extra={"sort": "asc", "order_by": "created_at"},
            )
        )

    def create_note(self, body: str) -> int:
        """Add a note to the merge request; its id."""
        created = self.json_object(
            self.send(
                "POST", f"{self._mr_path}/notes", "adding the summary note", body={"body": body}
            )
        )
        return int(created.get("id", 0))

    def update_note(self, note_id: int, body: str) -> None:
        """Replace a note's body."""
        path = f"{self._mr_path}/notes/{note_id}"
        self.send("PUT", path, "updating the summary note", body={"body": body})

    # -- transport ----------------------------------------------------------------------
    def _pages(
        self, path: str, what: str, *, extra: Mapping[str, str] | None = None
    ) -> Iterator[dict[str, Any]]:
        url: str | None = path
        params: dict[str, str | int] | None = {"per_page": PER_PAGE, **(extra or {})}
        for _ in range(MAX_PAGES):
            if url is None:
                return
            response = self.send("GET", url, what, params=params)
            yield from self.json_list(response, what)
            following = response.links.get("next", {}).get("url")
            next_page = response.headers.get("x-next-page", "").strip()
            if following:
                url, params = following, None
            elif next_page.isdigit() and params is not None:
                params = {**params, "page": int(next_page)}
            else:
                url = None

    def rate_limit_wait(self, response: httpx2.Response) -> float | None:
        """Seconds to wait when ``response`` is a rate limit (429), else None."""
        if response.status_code != 429:
            return None
        retry_after = response.headers.get("retry-after", "").strip()
        if retry_after.isdigit():
            return float(retry_after)
        reset = response.headers.get("ratelimit-reset", "").strip()
        if reset.isdigit():
            return max(0.0, float(reset) - self._wall()) + 1.0
        return DEFAULT_WAIT_S

    def refusal(self, response: httpx2.Response, what: str, need: str) -> PublishError:
        """What a refusal means, and what to do about it."""
        status = response.status_code
        said = quoted_message(response)
        job = self.token_kind == "CI_JOB_TOKEN"
        job_fix = (
            "; CI_JOB_TOKEN may not write merge request notes on this GitLab: set the "
            "CI/CD variable GITLAB_TOKEN (masked) to a project access token with the "
            "`api` scope and the Reporter role"
            if job
            else ""
        )
        if status == 401:
            return GitLabRefused(
                f"{what}: GitLab refused the token (401 {said}): {self.token_kind} is "
                f"missing, expired or revoked{job_fix}",
                status=status,
            )
        if status == 403:
            return GitLabRefused(
                f"{what}: GitLab forbade it (403 {said}): the token in {self.token_kind} "
                "needs the `api` scope and at least the Reporter role on the project" + job_fix,
                status=status,
            )
        if status == 404:
            return GitLabRefused(
                f"{what}: project {self.project} merge request !{self.mr} was not found "
                "(404), or the token cannot see it; check --project and --mr, and the "
                f"token's access{job_fix}",
                status=status,
            )
        if status in (400, 422):
            return GitLabInvalid(f"{what}: GitLab refused it ({status}): {said}", status=status)
        if status >= 500:
            return GitLabUnavailable(
                f"{what}: GitLab failed ({status} {said}); try again later", status=status
            )
        return GitLabRefused(f"{what}: GitLab answered {status}: {said}", status=status)
