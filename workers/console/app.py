"""The console's web application: pages, live updates, and answering asks.

Routes, each behind :class:`~workers.console.security.Guard` (the token, or 401): ``GET /``
(the runs and the questions waiting) and ``GET /runs/{run}`` (one run; 404 when Redis does
not hold it), each with its ``/events`` stream; ``GET /reviewers`` (each reviewer's
scorecard, :mod:`workers.console.scorecards`); ``POST /asks/{ask}/answer``
(:meth:`Console.answer`, which lists its statuses); ``GET /static/…``. Live updates are
server-sent events carrying each page part whose HTML changed; the asks part is not replaced
while the person is answering, and a stream ends after :data:`STREAM_S` (the browser
reconnects), so none is held forever. Every value is escaped (Jinja2 autoescape, no
``|safe``): finding text is model output. A Redis that does not answer gives 503.

Source: docs/evidence-and-asks.md §2.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast
from urllib.parse import parse_qs

import anyio.to_thread
import redis
from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from council.asks.pending import AnswerRefused
from workers.app.clock import now_ms
from workers.app.services import Runtime
from workers.console.answering import AskGone, answer_ask
from workers.console.registry import REGISTRY
from workers.console.scorecards import scorecard_rows
from workers.console.security import CSRF_FIELD, Access, Auth, Guard
from workers.console.views import IndexView, RunView, index_view, run_view

POLL_S = 1.0
"""Seconds between two renderings of a live stream's parts (a few Redis reads each)."""

STREAM_S = 300.0
"""Seconds one event stream lasts before it ends and the browser reconnects."""

RETRY_MS = 2000
"""Milliseconds the browser waits before reconnecting an ended or broken stream."""

KEEPALIVE_S = 15.0
"""Seconds without a change after which a stream sends a comment line (keeps proxies
from closing it)."""

FORM_MAX_BYTES = 64 * 1024
"""The largest answer form body accepted, in bytes."""

FORM_MAX_FIELDS = 1000
"""The most fields an answer form may have."""

STATIC = Path(__file__).parent / "static"
"""The stylesheet and the script."""


def templates() -> Environment:
    """The console's Jinja2 environment: its package templates, autoescape always on
    (every template, whatever its name), undefined names an error."""
    env = Environment(
        loader=PackageLoader("workers.console", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["registered"] = tuple(sorted(REGISTRY))
    return env


@dataclass
class Console:
    """The console over one runtime: renders pages and parts, answers asks.

    ``poll_s`` and ``stream_s`` are :data:`POLL_S` and :data:`STREAM_S` unless a test
    shortens them; once ``stopping`` is set (the server was asked to stop), every event
    stream ends at its next poll, so none holds the shutdown up.
    """

    rt: Runtime
    access: Access
    poll_s: float = POLL_S
    stream_s: float = STREAM_S
    stopping: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.env = templates()

    def render(self, name: str, **context: object) -> str:
        """The template ``name`` rendered with ``context`` (escaped)."""
        return self.env.get_template(name).render(**context)

    # -- pages ----------------------------------------------------------------------------
    def index(self, request: Request) -> Response:
        """The index page."""
        view = index_view(self.rt)
        parts = self._index_parts(view)
        return self._page("index.html", request, parts, events="/events", view=view)

    async def index_events(self, request: Request) -> Response:
        """The index's live stream."""
        return _event_stream(self._stream(self._index_parts))

    def run(self, request: Request) -> Response:
        """One run's page (404 when Redis does not hold it)."""
        run_id = request.path_params["run_id"]
        view = run_view(self.rt, run_id)
        if view is None:
            return self._missing(request, f"Redis holds no run {run_id!r} (unknown or expired).")
        return self._run_page(request, view)

    def reviewers(self, request: Request) -> Response:
        """The reviewers' scorecards (docs/ranking.md "Scorecards"); not live."""
        return self._page("reviewers.html", request, {}, events="", rows=scorecard_rows(self.rt))

    async def run_events(self, request: Request) -> Response:
        """One run's live stream."""
        run_id = request.path_params["run_id"]
        csrf = _auth(request).csrf
        return _event_stream(self._stream(lambda: self._run_parts(run_id, csrf)))

    async def answer(self, request: Request) -> Response:
        """Answer an ask: the same operation as ``council answer``, then the run settles
        once its last ask is answered (:func:`workers.console.answering.answer_ask`).

        Form: ``value`` (several joined with ``,``, for a ``finding-picker`` with
        ``multiple``), ``reason``, ``csrf``, ``against`` (the artifact ref the page rendered;
        the answer is refused as stale when the ask pins another). 303 to the run's page (a
        JSON object with ``Accept: application/json``); 400 with the page and the refusal for
        an answer that does not fit; 403 without the session's CSRF token; 404 for an ask no
        run waits on; 413 over :data:`FORM_MAX_BYTES`; 415 for a body that is not a
        urlencoded form.
        """
        auth = _auth(request)
        ask_id = request.path_params["ask_id"]
        form = await _form(request)
        if isinstance(form, Response):
            return form
        if auth.kind == "cookie" and not self.access.csrf_ok(auth.cookie, _one(form, CSRF_FIELD)):
            return self._problem(
                request,
                403,
                "The form's CSRF token is missing or belongs to another session: reload "
                "the page and answer again.",
            )
        value = ",".join(form.get("value", []))
        reason = _one(form, "reason")
        wants_json = "application/json" in request.headers.get("accept", "")
        try:
            done = await anyio.to_thread.run_sync(
                lambda: answer_ask(
                    self.rt.sessions,
                    ask_id,
                    value,
                    reason,
                    now_ms(),
                    artifacts=self.rt.artifacts,
                    against=_one(form, AGAINST_FIELD),
                )
            )
        except AskGone as gone:
            if wants_json:
                return JSONResponse({"error": "ask-gone", "message": str(gone)}, 404)
            return self._missing(request, f"{gone}.")
        except AnswerRefused as refused:
            why = str(refused)
            if wants_json:
                return JSONResponse({"error": "answer-refused", "message": why}, 400)
            return await anyio.to_thread.run_sync(lambda: self._refused(request, ask_id, why))
        if wants_json:
            return JSONResponse(
                {
                    "run": done.run_id,
                    "ask": done.ask_id,
                    "answer": done.answer.model_dump(mode="json", exclude_none=True),
                    "left": done.left,
                    "settled": done.settled.status if done.settled is not None else None,
                }
            )
        return RedirectResponse(f"/runs/{done.run_id}#ask-{done.ask_id}", status_code=303)

    # -- parts ----------------------------------------------------------------------------
    def _index_parts(self, view: IndexView | None = None) -> dict[str, str]:
        view = view if view is not None else index_view(self.rt)
        return {
            "runs": self.render("_runs.html", view=view),
            "index-asks": self.render("_index_asks.html", view=view),
        }

    def _run_parts(self, run_id: str, csrf: str, view: RunView | None = None) -> dict[str, str]:
        view = view if view is not None else run_view(self.rt, run_id)
        if view is None:
            gone = self.render("_gone.html", run_id=run_id)
            return {"live": gone, "asks": ""}
        return {
            "live": self.render("_live.html", run=view),
            "asks": self.render("_asks.html", run=view, csrf=csrf),
        }

    def _run_page(
        self, request: Request, view: RunView, error: str | None = None, status: int = 200
    ) -> Response:
        csrf = _auth(request).csrf
        parts = self._run_parts(view.record.run_id, csrf, view)
        return self._page(
            "run.html",
            request,
            parts,
            events=f"/runs/{view.record.run_id}/events",
            status=status,
            run=view,
            csrf=csrf,
            error=error,
        )

    def _refused(self, request: Request, ask_id: str, message: str) -> Response:
        found = next(
            (
                parked.record.run_id
                for name in self.rt.sessions.waiting_sessions()
                for parked in self.rt.sessions.waiting(name)
                if any(a.id == ask_id for a in parked.report.asks)
            ),
            None,
        )
        view = run_view(self.rt, found) if found is not None else None
        if view is None:
            return self._problem(request, 400, message)
        return self._run_page(request, view, error=message, status=400)

    def _page(
        self,
        name: str,
        request: Request,
        parts: Mapping[str, str],
        *,
        events: str,
        status: int = 200,
        **context: object,
    ) -> Response:
        digests = {part: _digest(html) for part, html in parts.items()}
        html = self.render(name, events=events, digests=digests, **context)
        return HTMLResponse(html, status_code=status)

    def _missing(self, request: Request, message: str) -> Response:
        return self._problem(request, 404, message)

    def _problem(self, request: Request, status: int, message: str) -> Response:
        html = self.render("problem.html", events="", status=status, message=message)
        return HTMLResponse(html, status_code=status)

    async def _stream(self, build: Callable[[], dict[str, str]]) -> AsyncIterator[str]:
        """The events of one stream: each part whose HTML changed since it was last sent
        (the page's own rendering counts as sent: the script compares digests)."""
        yield f"retry: {RETRY_MS}\n\n"
        sent: dict[str, str] = {}
        end = time.monotonic() + self.stream_s
        quiet_since = time.monotonic()
        while time.monotonic() < end and not self.stopping.is_set():
            try:
                parts = await anyio.to_thread.run_sync(build)
            except redis.RedisError:
                yield _event("trouble", "Redis does not answer; the page retries")
                quiet_since = time.monotonic()
            else:
                for part, html in parts.items():
                    digest = _digest(html)
                    if sent.get(part) != digest:
                        sent[part] = digest
                        body = {"part": part, "digest": digest, "html": html}
                        yield _event("part", json.dumps(body, ensure_ascii=False))
                        quiet_since = time.monotonic()
            if time.monotonic() - quiet_since >= KEEPALIVE_S:
                yield ": keepalive\n\n"
                quiet_since = time.monotonic()
            await anyio.sleep(self.poll_s)


def create_app(
    rt: Runtime,
    access: Access,
    *,
    poll_s: float = POLL_S,
    stream_s: float = STREAM_S,
    stopping: threading.Event | None = None,
) -> ASGIApp:
    """The console's ASGI application over ``rt``'s Redis, guarded by ``access``.

    ``poll_s``: seconds between live renderings; ``stream_s``: seconds an event stream
    lasts before the browser reconnects; ``stopping``: set when the server stops (the
    streams then end). Source: docs/evidence-and-asks.md §2.
    """
    console = Console(
        rt, access, poll_s=poll_s, stream_s=stream_s, stopping=stopping or threading.Event()
    )

    def unavailable(request: Request, exc: Exception) -> Response:
        return console._problem(
            request, 503, "Redis does not answer: the console shows what it holds once it is back."
        )

    app = Starlette(
        routes=[
            Route("/", console.index, methods=["GET"]),
            Route("/events", console.index_events, methods=["GET"]),
            Route("/runs/{run_id}", console.run, methods=["GET"]),
            Route("/runs/{run_id}/events", console.run_events, methods=["GET"]),
            Route("/reviewers", console.reviewers, methods=["GET"]),
            Route("/asks/{ask_id}/answer", console.answer, methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        exception_handlers={redis.RedisError: unavailable},
    )
    return Guard(app, access)


def _auth(request: Request) -> Auth:
    """What the guard found: how the request holds the token."""
    return cast(Auth, request.state.console_auth)


async def _form(request: Request) -> dict[str, list[str]] | Response:
    """The urlencoded form of a POST (field → its values), or the error response."""
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        return Response("answers are posted as a urlencoded form\n", status_code=415)
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > FORM_MAX_BYTES:
            return Response(f"the form is over {FORM_MAX_BYTES} bytes\n", status_code=413)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return Response("the form is not UTF-8\n", status_code=400)
    try:
        return parse_qs(text, keep_blank_values=True, max_num_fields=FORM_MAX_FIELDS)
    except ValueError:
        return Response(f"the form has over {FORM_MAX_FIELDS} fields\n", status_code=413)


AGAINST_FIELD = "against"
"""The form field holding the artifact ref the question was rendered from."""


def _one(form: Mapping[str, list[str]], name: str) -> str | None:
    values = form.get(name)
    return values[0] if values else None


def _digest(html: str) -> str:
    return hashlib.sha256(html.encode()).hexdigest()[:16]


def _event(name: str, data: str) -> str:
    """One server-sent event (``data`` holds no line break: JSON, or one line)."""
    return f"event: {name}\ndata: {' '.join(data.splitlines())}\n\n"


def _event_stream(events: AsyncIterator[str]) -> Response:
    return StreamingResponse(
        events, media_type="text/event-stream", headers={"x-accel-buffering": "no"}
    )
