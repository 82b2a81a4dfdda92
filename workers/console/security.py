"""Who may use the console: its token, the session cookie it sets, CSRF, the headers.

The console can answer what a run waits on, so every request needs
``COUNCIL_CONSOLE_TOKEN``: as ``Authorization: Bearer`` (no CSRF token needed: a browser never
adds that header by itself), or once as ``?token=`` on a GET, which sets a session cookie (a
MAC keyed by the token, never the token; valid :data:`SESSION_S` seconds) and reloads the
address without it. A form carries a CSRF token, the MAC of that cookie; a POST with the
cookie but without it is 403, anything else unauthenticated 401. Every response gets
:data:`SECURITY_HEADERS`. Why each choice: docs/security.md "The console".

Source: docs/evidence-and-asks.md §2 (a person answers an ask; the console is one front
end for ``council answer``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote, urlencode

from markupsafe import escape
from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_ENV = "COUNCIL_CONSOLE_TOKEN"
"""Where the console's token comes from (the environment only: never a flag, which
would show it in the process list)."""

TOKEN_MIN_CHARS = 16
"""The shortest token the console starts with (a guessable token guards nothing)."""

COOKIE = "council_console"
"""The session cookie's name."""

SESSION_S = 12 * 3600
"""Seconds a session cookie is valid after it was issued (then ``?token=`` again)."""

CSRF_FIELD = "csrf"
"""The form field a POST with the session cookie carries its CSRF token in."""

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
"""The Content-Security-Policy: scripts and styles only from the console's own files, no
inline script, no inline style, no framing, forms post only to the console."""

SECURITY_HEADERS: dict[str, str] = {
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
    "cross-origin-opener-policy": "same-origin",
}
"""Headers set on every response of the console, errors and static files included."""


class ConsoleSettings(BaseSettings):
    """The console's own setting: its token (``COUNCIL_CONSOLE_TOKEN``), a secret."""

    model_config = SettingsConfigDict(env_prefix="COUNCIL_", extra="ignore", frozen=True)

    console_token: SecretStr | None = None
    """The token every request needs; unset or blank: the console refuses to start."""


class TokenMissing(ValueError):
    """The console was started without a usable token; the message names
    :data:`TOKEN_ENV` and how to make one."""


def console_token(settings: ConsoleSettings) -> SecretStr:
    """The token from ``settings``; raises :class:`TokenMissing` when it is unset, blank
    or shorter than :data:`TOKEN_MIN_CHARS` characters."""
    make = "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
    token = settings.console_token
    if token is None or not token.get_secret_value().strip():
        raise TokenMissing(
            f"{TOKEN_ENV} is not set: the console answers what runs wait on, so it needs a "
            f"token. Make one ({make}), export {TOKEN_ENV}, and open the console with "
            "?token=… once"
        )
    if len(token.get_secret_value().strip()) < TOKEN_MIN_CHARS:
        raise TokenMissing(
            f"{TOKEN_ENV} is shorter than {TOKEN_MIN_CHARS} characters: use a long random "
            f"one ({make})"
        )
    return SecretStr(token.get_secret_value().strip())


AuthKind = Literal["bearer", "cookie"]


@dataclass(frozen=True)
class Auth:
    """How a request proved it holds the token, and (with a cookie) the CSRF token its
    forms carry. Kept in ``request.state.console_auth``."""

    kind: AuthKind
    csrf: str = ""
    cookie: str = ""


@dataclass(frozen=True)
class Access:
    """The token and what is derived from it: session cookies and CSRF tokens.

    ``session_s``: seconds a cookie stays valid. Times are seconds since the epoch
    (cookies are coarse; nothing here needs milliseconds).
    """

    token: SecretStr
    session_s: int = SESSION_S

    def _mac(self, purpose: str, text: str) -> str:
        key = self.token.get_secret_value().encode()
        return hmac.new(key, f"{purpose}:{text}".encode(), hashlib.sha256).hexdigest()

    def token_ok(self, given: str | None) -> bool:
        """Whether ``given`` is the token (compared in constant time)."""
        if not given:
            return False
        return hmac.compare_digest(given.encode(), self.token.get_secret_value().encode())

    def bearer_ok(self, header: str | None) -> bool:
        """Whether an ``Authorization`` header value is ``Bearer TOKEN``."""
        if not header:
            return False
        scheme, _, given = header.partition(" ")
        return scheme.lower() == "bearer" and self.token_ok(given.strip())

    def new_cookie(self, now_s: int | None = None) -> str:
        """A fresh session cookie value, issued at ``now_s`` (default: now)."""
        issued = int(time.time()) if now_s is None else now_s
        body = f"{issued}.{secrets.token_urlsafe(16)}"
        return f"{body}.{self._mac('session', body)}"

    def cookie_ok(self, value: str | None, now_s: int | None = None) -> bool:
        """Whether ``value`` is a cookie this token issued less than ``session_s`` ago."""
        if not value or value.count(".") != 2:
            return False
        body, _, mac = value.rpartition(".")
        issued = body.partition(".")[0]
        if not issued.isdigit():
            return False
        if not hmac.compare_digest(mac.encode(), self._mac("session", body).encode()):
            return False
        now = int(time.time()) if now_s is None else now_s
        return 0 <= now - int(issued) < self.session_s

    def csrf_for(self, cookie: str) -> str:
        """The CSRF token of the session ``cookie`` (its forms carry it)."""
        return self._mac("csrf", cookie)

    def csrf_ok(self, cookie: str, given: str | None) -> bool:
        """Whether ``given`` is the CSRF token of ``cookie`` (constant time)."""
        if not given or not cookie:
            return False
        return hmac.compare_digest(given.encode(), self.csrf_for(cookie).encode())

    def authenticate(self, request: Request) -> Auth | None:
        """How ``request`` holds the token (bearer header first), or None."""
        if self.bearer_ok(request.headers.get("authorization")):
            return Auth(kind="bearer")
        cookie = request.cookies.get(COOKIE)
        if cookie is not None and self.cookie_ok(cookie):
            return Auth(kind="cookie", csrf=self.csrf_for(cookie), cookie=cookie)
        return None


UNAUTHORIZED = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>council console: token needed</title>
<link rel="stylesheet" href="/static/console.css"></head>
<body><main><h1>The console needs its token</h1>
<p>Open the console once with <code>?token=</code> and the value of
<code>COUNCIL_CONSOLE_TOKEN</code> (it then keeps a session cookie for 12 hours), or send
<code>Authorization: Bearer</code> and the token.</p></main></body></html>
"""
"""The 401 page (fixed text: it shows nothing from the request)."""

ENTER = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>council console</title>
<meta http-equiv="refresh" content="0;url={target}"></head>
<body><p><a href="{target}">Continue to the console</a></p></body></html>
"""
"""The page a valid ``?token=`` gets: it sets the cookie and reloads the address without
the token. ``{target}`` is a path the console built (HTML-escaped)."""


class Guard:
    """ASGI middleware: refuses requests without the token (401), turns a valid
    ``?token=`` into the session cookie, and adds :data:`SECURITY_HEADERS` to every
    response. A request it lets through carries its :class:`Auth` in
    ``scope["state"]["console_auth"]``."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app, self.access = app, access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
            await send(message)

        request = Request(scope)
        given = request.query_params.get("token")
        if given is not None:
            response = self._enter(request, given)
        else:
            auth = self.access.authenticate(request)
            if auth is not None:
                scope.setdefault("state", {})["console_auth"] = auth
                await self.app(scope, receive, guarded)
                return
            response = _unauthorized(request)
        await response(scope, receive, guarded)

    def _enter(self, request: Request, given: str) -> Response:
        """A GET with ``?token=``: the cookie and a reload without the token, or 401."""
        if request.method != "GET" or not self.access.token_ok(given):
            return _unauthorized(request)
        kept = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
        # Never "//host" or "/\host" (browsers read a backslash as a slash): another site.
        target = "/" + quote(request.url.path.lstrip("/\\"), safe="/")
        if kept:
            target += "?" + urlencode(kept)
        response = HTMLResponse(ENTER.format(target=escape(target)))
        response.set_cookie(
            COOKIE,
            self.access.new_cookie(),
            max_age=self.access.session_s,
            path="/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response


def _unauthorized(request: Request) -> Response:
    headers = {"www-authenticate": 'Bearer realm="council console"'}
    if "text/html" in request.headers.get("accept", ""):
        return HTMLResponse(UNAUTHORIZED, status_code=401, headers=headers)
    return PlainTextResponse(
        f"401: the council console needs its token ({TOKEN_ENV}): ?token=… once, or "
        "Authorization: Bearer …\n",
        status_code=401,
        headers=headers,
    )
