"""What the fake forges share: real HTTP on 127.0.0.1, every request recorded without
its credentials, scripted failures played first, pages with ``Link: rel="next"``.

A fake (:class:`tests.fakes.github_api.FakeGitHub`, :class:`tests.fakes.gitlab_api.
FakeGitLab`) subclasses :class:`FakeForge` and implements :meth:`FakeForge.route`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

Answer = tuple[int, dict[str, str], Any]
"""A status, extra headers and a JSON body."""


@dataclass(frozen=True)
class Received:
    """One request: method, path, query, JSON body ({} when none), time of arrival, and
    whether it carried the fake's token."""

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
    path_contains: str | None = None


class FakeForge:
    """The fake API server; ``url`` is its base URL (``http://127.0.0.1:PORT``)."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self._failures: deque[Failure] = deque()
        self._ids = 1000
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.root = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.url = self.root

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
        path_contains: str | None = None,
    ) -> None:
        """Answer the next request (of ``method``, to a path holding ``path_contains``,
        when given) with this failure."""
        self._failures.append(Failure(status, headers or {}, body or {}, method, path_contains))

    def mutations(self) -> list[Received]:
        """The requests that changed something (POST, PATCH, PUT), in order."""
        return [r for r in self.requests if r.method != "GET" and not self.is_query(r)]

    def is_query(self, received: Received) -> bool:
        """Whether a POST only asks (GraphQL); such requests are not mutations."""
        return False

    # -- what a fake provides --------------------------------------------------------------
    def authorized(self, headers: Mapping[str, str]) -> bool:
        """Whether the request carries the fake's token."""
        raise NotImplementedError

    def unauthorized(self) -> Answer:
        """The answer to a request without the token."""
        return 401, {}, {"message": "401 Unauthorized"}

    def route(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        body: dict[str, Any],
        headers: Mapping[str, str],
    ) -> Answer:
        """The answer to an authorized request."""
        raise NotImplementedError

    # -- serving ---------------------------------------------------------------------------
    def answer(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        body: dict[str, Any],
        headers: Mapping[str, str],
    ) -> Answer:
        """The status, headers and JSON body for one request."""
        with self._lock:
            authorized = self.authorized(headers)
            self.requests.append(Received(method, path, query, body, time.monotonic(), authorized))
            failure = next(
                (
                    f
                    for f in self._failures
                    if f.method in (None, method)
                    and (f.path_contains is None or f.path_contains in path)
                ),
                None,
            )
            if failure is not None:
                self._failures.remove(failure)
                return failure.status, failure.headers, failure.body
            if not authorized:
                return self.unauthorized()
            return self.route(method, path, query, body, headers)

    def page(
        self, items: list[Any], query: dict[str, str], path: str
    ) -> tuple[list[Any], dict[str, str]]:
        """One page of ``items`` by ``per_page`` and ``page``, and its ``Link`` header."""
        per_page = int(query.get("per_page", "30"))
        page = int(query.get("page", "1"))
        chunk = items[(page - 1) * per_page : page * per_page]
        headers: dict[str, str] = {}
        if page * per_page < len(items):
            rest = "&".join(f"{k}={v}" for k, v in query.items() if k not in ("page", "per_page"))
            following = f"{self.root}{path}?per_page={per_page}&page={page + 1}"
            headers["Link"] = f'<{following}{"&" + rest if rest else ""}>; rel="next"'
        return chunk, headers

    def next_id(self) -> int:
        """A new object id."""
        self._ids += 1
        return self._ids


def _handler(fake: FakeForge) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read :attr:`FakeForge.requests`, not stderr."""

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = {}
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, extra, answer = fake.answer(
                self.command,
                parts.path,
                query,
                body if isinstance(body, dict) else {},
                headers,
            )
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = _serve

    return Handler
