"""A fake GitHub REST API: real HTTP on 127.0.0.1, the calls ``council publish`` makes,
every request recorded (without its credentials).

It holds pull requests of one repository with their reviews and issue comments, checks
the bearer token, pages comment and review lists (``per_page``, ``Link: rel="next"``),
and plays scripted failures first (:meth:`FakeGitHub.fail`), so tests can see rate
limits, refusals and GitHub's error bodies arrive over a real socket.

Usage::

    with FakeGitHub(token="t0k", repo="octo/app", pulls=(7,)) as github:
        github.fail(429, headers={"Retry-After": "1"})
        ...  # council publish github --api-url github.url ...
        assert [r.method for r in github.requests] == ["POST", "POST", "GET", "POST"]
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class Received:
    """One request: method, path, query, JSON body ({} when none), time of arrival."""

    method: str
    path: str
    query: dict[str, str]
    body: dict[str, Any]
    at: float
    authorized: bool


@dataclass(frozen=True)
class Failure:
    """A scripted answer played instead of the real one (``method`` None: any)."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=dict)
    method: str | None = None


@dataclass
class Pull:
    """One pull request's reviews and issue comments, as GitHub would list them."""

    reviews: list[dict[str, Any]] = field(default_factory=list)
    comments: list[dict[str, Any]] = field(default_factory=list)


class FakeGitHub:
    """The fake API server; ``url`` is its base URL (``http://127.0.0.1:PORT``)."""

    def __init__(self, *, token: str, repo: str, pulls: tuple[int, ...] = (1,)) -> None:
        self.token, self.repo = token, repo
        self.pulls: dict[int, Pull] = {n: Pull() for n in pulls}
        self.requests: list[Received] = []
        self._failures: deque[Failure] = deque()
        self._ids = 1000
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()

    def fail(
        self,
        status: int,
        *,
        headers: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
        method: str | None = None,
    ) -> None:
        """Answer the next request (of ``method``, when given) with this failure."""
        self._failures.append(Failure(status, headers or {}, body or {}, method))

    def mutations(self) -> list[Received]:
        """The requests that changed something (POST, PATCH, PUT), in order."""
        return [r for r in self.requests if r.method != "GET"]

    # -- serving --------------------------------------------------------------------------
    def answer(
        self, method: str, path: str, query: dict[str, str], body: dict[str, Any], auth: str
    ) -> tuple[int, dict[str, str], Any]:
        """The status, headers and JSON body for one request."""
        with self._lock:
            authorized = auth == f"Bearer {self.token}"
            self.requests.append(Received(method, path, query, body, time.monotonic(), authorized))
            failure = next((f for f in self._failures if f.method in (None, method)), None)
            if failure is not None:
                self._failures.remove(failure)
                return failure.status, failure.headers, failure.body
            if not authorized:
                return 401, {}, {"message": "Bad credentials"}
            return self._route(method, path, query, body)

    def _route(
        self, method: str, path: str, query: dict[str, str], body: dict[str, Any]
    ) -> tuple[int, dict[str, str], Any]:
        prefix = f"/repos/{self.repo}/"
        if not path.startswith(prefix):
            return 404, {}, {"message": "Not Found"}
        rest = path[len(prefix) :]
        if m := re.fullmatch(r"pulls/(\d+)/reviews", rest):
            pull = self.pulls.get(int(m[1]))
            if pull is None:
                return 404, {}, {"message": "Not Found"}
            if method == "GET":
                return self._page(pull.reviews, query, path)
            if body.get("event") not in ("COMMENT", "REQUEST_CHANGES", "APPROVE"):
                return 422, {}, {"message": "Unprocessable Entity", "errors": ["bad event"]}
            for comment in body.get("comments", []):
                if comment.get("line") == 999_999:
                    return (
                        422,
                        {},
                        {
                            "message": "Unprocessable Entity",
                            "errors": ["Line could not be resolved"],
                        },
                    )
            state = "CHANGES_REQUESTED" if body["event"] == "REQUEST_CHANGES" else "COMMENTED"
            review = {
                "id": self._next(),
                "state": state,
                "body": body.get("body", ""),
                "user": {"login": "github-actions[bot]", "type": "Bot"},
            }
            pull.reviews.append(review)
            return 200, {}, review
        if m := re.fullmatch(r"pulls/(\d+)/reviews/(\d+)/dismissals", rest):
            pull = self.pulls.get(int(m[1]))
            found = [r for r in (pull.reviews if pull else []) if r["id"] == int(m[2])]
            if not found or method != "PUT":
                return 404, {}, {"message": "Not Found"}
            found[0]["state"] = "DISMISSED"
            return 200, {}, found[0]
        if m := re.fullmatch(r"issues/(\d+)/comments", rest):
            pull = self.pulls.get(int(m[1]))
            if pull is None:
                return 404, {}, {"message": "Not Found"}
            if method == "GET":
                return self._page(pull.comments, query, path)
            comment = {
                "id": self._next(),
                "body": body.get("body", ""),
                "user": {"login": "github-actions[bot]", "type": "Bot"},
            }
            pull.comments.append(comment)
            return 201, {}, comment
        if (m := re.fullmatch(r"issues/comments/(\d+)", rest)) and method == "PATCH":
            for pull in self.pulls.values():
                for comment in pull.comments:
                    if comment["id"] == int(m[1]):
                        comment["body"] = body.get("body", "")
                        return 200, {}, comment
        return 404, {}, {"message": "Not Found"}

    def _page(
        self, items: list[dict[str, Any]], query: dict[str, str], path: str
    ) -> tuple[int, dict[str, str], Any]:
        per_page = int(query.get("per_page", "30"))
        page = int(query.get("page", "1"))
        chunk = items[(page - 1) * per_page : page * per_page]
        headers: dict[str, str] = {}
        if page * per_page < len(items):
            following = f"{self.url}{path}?per_page={per_page}&page={page + 1}"
            headers["Link"] = f'<{following}>; rel="next"'
        return 200, headers, chunk

    def _next(self) -> int:
        self._ids += 1
        return self._ids


def _handler(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read :attr:`FakeGitHub.requests`, not stderr."""

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = {}
            status, headers, answer = fake.answer(
                self.command,
                parts.path,
                query,
                body if isinstance(body, dict) else {},
                self.headers.get("Authorization", ""),
            )
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = _serve

    return Handler
