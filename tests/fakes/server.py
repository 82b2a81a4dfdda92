"""A scripted fake model server: real HTTP on 127.0.0.1, SSE streams, every request recorded.

The provider fakes (:mod:`tests.fakes.openai_server`, :mod:`tests.fakes.anthropic_server`)
subclass :class:`FakeServer` and only say how a :class:`~tests.fakes.scenario.Scenario`
looks on their wire. The server runs a stdlib ``ThreadingHTTPServer`` on a thread of the
test process (one thread per connection, HTTP/1.1 keep-alive, a deep listen backlog), so
the real SDKs, other threads and other processes can all talk to it.

Scripting: :meth:`FakeServer.script` queues scenarios, played one per request in order
(a scenario may be a function of the request's JSON body, for a reply that depends on
what the client sent: a tool call quoting an earlier tool reply, say);
a queue per model name comes first, then the shared queue, then :attr:`FakeServer.default`.
Counters: :attr:`count`, :attr:`in_flight` and :attr:`max_in_flight` (requests received
whose response has not ended), and :attr:`requests` (path, headers without credentials,
JSON body, whether the key matched, arrival time).

Usage::

    with FakeOpenAI(api_key="test-key") as server:
        server.script(Scenario.error(429, retry_after="1"), Scenario(text=ANSWER))
        ...  # point a client at server.base_url
        assert server.count == 2 and server.requests[1].body["stream"] is True
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Self

from tests.fakes.scenario import Scenario

Scripted = Scenario | Callable[[Mapping[str, Any]], Scenario]
"""A scripted reply: a scenario, or a function making one from the request's JSON body."""

LISTEN_BACKLOG = 2048
"""Connections the kernel queues before accept; enough for a 500-stream benchmark."""

CREDENTIAL_HEADERS: tuple[str, ...] = ("authorization", "x-api-key", "api-key")
"""Headers never recorded (their values are credentials)."""


@dataclass(frozen=True)
class Received:
    """One request the fake received.

    ``headers`` has lower-case names and no credential headers; ``body`` is the parsed
    JSON body (``{}`` when it was not a JSON object); ``credential_ok`` says whether the
    request carried the server's ``api_key`` (None when the server checks none); ``at``
    is ``time.monotonic()`` at arrival.
    """

    path: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]
    credential_ok: bool | None
    at: float

    @property
    def model(self) -> str | None:
        """The ``model`` field of the body, when it is text."""
        model = self.body.get("model")
        return model if isinstance(model, str) else None


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = LISTEN_BACKLOG
    fake: FakeServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client that hung up (a stopped review) is not an error of the fake."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self.server.fake.serve(self, raw)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read the recorded requests instead."""


class FakeServer:
    """A fake model API; subclasses render scenarios in their provider's stream format.

    ``api_key``: when set, a request without it gets the provider's 401 (not scripted,
    no scenario used). ``default``: the scenario played when no script is left.
    """

    PATH: ClassVar[str] = "/"
    """The one path this API serves (POST)."""

    def __init__(self, api_key: str | None = None, default: Scenario | None = None) -> None:
        self.api_key = api_key
        self.default = default if default is not None else Scenario(text='{"findings": []}')
        self._lock = threading.Lock()
        self._shared: deque[Scripted] = deque()
        self._by_model: dict[str, deque[Scripted]] = {}
        self._requests: list[Received] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._closing = threading.Event()
        self._http: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> Self:
        """Listen on a free port of 127.0.0.1 and serve on a daemon thread."""
        http = _HTTPServer(("127.0.0.1", 0), _Handler)
        http.fake = self
        self._http = http
        self._closing.clear()
        self._thread = threading.Thread(
            target=http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; streams still playing end at their next pause."""
        self._closing.set()
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
        if self._thread is not None:
            self._thread.join(5)
        self._http = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` of the running server."""
        if self._http is None:
            raise RuntimeError("the fake server is not running; call start() first")
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    @property
    def base_url(self) -> str:
        """The ``base_url`` to give the provider's SDK (subclasses add ``/v1`` if needed)."""
        return self.url

    # -- scripting and counters --------------------------------------------------------

    def script(self, *scenarios: Scripted, model: str | None = None) -> None:
        """Queue scenarios, played one per request (only for ``model`` when given)."""
        with self._lock:
            if model is None:
                self._shared.extend(scenarios)
            else:
                self._by_model.setdefault(model, deque()).extend(scenarios)

    @property
    def pending(self) -> int:
        """Scripted scenarios not played yet."""
        with self._lock:
            return len(self._shared) + sum(len(q) for q in self._by_model.values())

    @property
    def requests(self) -> list[Received]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def count(self) -> int:
        """How many requests arrived."""
        with self._lock:
            return len(self._requests)

    @property
    def in_flight(self) -> int:
        """Requests received whose response has not ended yet."""
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        """The most requests in flight at once since the start (or the last reset)."""
        with self._lock:
            return self._max_in_flight

    def reset(self) -> None:
        """Forget recorded requests, scripts and the in-flight maximum."""
        with self._lock:
            self._requests.clear()
            self._shared.clear()
            self._by_model.clear()
            self._max_in_flight = self._in_flight

    # -- what subclasses provide -------------------------------------------------------

    def render(
        self, scenario: Scenario, body: Mapping[str, Any]
    ) -> tuple[list[bytes], list[bytes]]:
        """The SSE events of a scenario: (the stream's events, its final events)."""
        raise NotImplementedError

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        """The provider's JSON error body."""
        raise NotImplementedError

    def credential(self, headers: Mapping[str, str]) -> str | None:
        """The key a request carries (lower-case header names)."""
        raise NotImplementedError

    # -- serving -----------------------------------------------------------------------

    def serve(self, handler: _Handler, raw: bytes) -> None:
        """Record one request and play its scenario (called on the connection's thread)."""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        try:
            parsed = json.loads(raw) if raw else {}
        except ValueError:
            parsed = {}
        body: Mapping[str, Any] = parsed if isinstance(parsed, dict) else {}
        ok = None if self.api_key is None else self.credential(headers) == self.api_key
        received = Received(
            path=handler.path,
            headers={k: v for k, v in headers.items() if k not in CREDENTIAL_HEADERS},
            body=body,
            credential_ok=ok,
            at=time.monotonic(),
        )
        with self._lock:
            self._requests.append(received)
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            self._answer(handler, received)
        except (BrokenPipeError, ConnectionResetError):
            handler.close_connection = True  # the client went away: nothing to answer
        finally:
            with self._lock:
                self._in_flight -= 1

    def _next(self, model: str | None) -> Scripted:
        with self._lock:
            queue = self._by_model.get(model) if model is not None else None
            if queue:
                return queue.popleft()
            if self._shared:
                return self._shared.popleft()
            return self.default

    def _answer(self, handler: _Handler, received: Received) -> None:
        if received.path.split("?", 1)[0] != self.PATH:
            self._send_json(handler, 404, self.error_body(404, f"no route {received.path}"), {})
            return
        if received.credential_ok is False:
            self._send_json(handler, 401, self.error_body(401, "invalid api key"), {})
            return
        scripted = self._next(received.model)
        scenario = scripted if isinstance(scripted, Scenario) else scripted(received.body)
        if self._pause(scenario.delay_ms):
            return
        if scenario.status != 200:
            body = self.error_body(scenario.status, scenario.message)
            self._send_json(handler, scenario.status, body, scenario.headers)
            return
        events, final = self.render(scenario, received.body)
        self._stream(handler, scenario, events, final)

    def _pause(self, ms: int) -> bool:
        """Wait ``ms`` milliseconds; True when the server is stopping."""
        return ms > 0 and self._closing.wait(ms / 1000)

    def _send_json(
        self,
        handler: _Handler,
        status: int,
        body: Mapping[str, Any],
        headers: Mapping[str, str],
    ) -> None:
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _stream(
        self, handler: _Handler, scenario: Scenario, events: list[bytes], final: list[bytes]
    ) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        played = events if scenario.omit_final else events + final
        for index, event in enumerate(played):
            if scenario.cut_after is not None and index >= scenario.cut_after:
                handler.close_connection = True  # dropped: no final event, no last chunk
                return
            if index == scenario.stall_after and self._pause(scenario.stall_ms):
                handler.close_connection = True
                return
            if index > 0 and self._pause(scenario.interval_ms):
                handler.close_connection = True
                return
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
        handler.wfile.write(b"0\r\n\r\n")


def sse(data: Mapping[str, Any] | str, event: str | None = None) -> bytes:
    """One server-sent event: an optional ``event:`` line and one ``data:`` line."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event is not None else ""
    return f"{head}data: {text}\n\n".encode()
