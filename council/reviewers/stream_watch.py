"""Holding a streamed model request to the review's clocks (all durations in ms).

A model request streams on a helper thread that fills a :class:`StreamedTurn`; the
calling thread watches the clocks while it waits (:func:`run_streamed`). When a clock
fires it interrupts the stream at once: it shuts the request's socket down, which wakes
a blocked read, so a stalled server cannot hold a reviewer past its idle clock, and a
cancellation or the wall is honoured within :data:`POLL_MS`. Before the response headers
have arrived there is no socket yet: the helper is then left to end on its own read
timeout (the idle clock plus a little), and nothing it does afterwards is used.

Clocks: ``backstop_ms`` (the wall, from the start of the review), ``idle_ms`` (no token
streamed and no journal entry), the soft deadline ``backstop_ms - answer_ms`` (when
``answer_ms`` > 0), and ``request.cancel``. Why threads, not a timeout on the read: a
read timeout cannot tell "stalled" from "cancelled", and the wall must fire mid-stream.

Source: identity-and-clocks.md "Clocks", architecture.md "Worker pool", harvest.md §7.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2

from council.participant import Clocks
from council.reviewers.activity import Activity
from council.reviewers.base import Stop, StopLimit, Usage

POLL_MS = 100
"""How often the watcher looks at the cancel flag and the clocks, in milliseconds."""

JOIN_GRACE_MS = 1000
"""How long an interrupted helper gets to finish its bookkeeping, in milliseconds."""


class Watch:
    """The clocks of one review, counted from ``started`` (``time.monotonic()``)."""

    def __init__(self, clocks: Clocks, cancel: threading.Event) -> None:
        self.clocks = clocks
        self.cancel = cancel
        self.started = time.monotonic()
        self.activity = Activity()

    def elapsed_ms(self) -> int:
        """Milliseconds since the review started."""
        return int((time.monotonic() - self.started) * 1000)

    def remaining_ms(self) -> int:
        """Milliseconds left before the wall (0 once it has passed)."""
        return max(0, self.clocks.backstop_ms - self.elapsed_ms())

    def soft_due(self) -> bool:
        """Whether the soft deadline has passed (never, when ``answer_ms`` is 0)."""
        soft = self.clocks.soft_deadline_ms
        return soft is not None and self.elapsed_ms() >= soft

    def fired(self, *, soft: bool, idle: bool) -> StopLimit | None:
        """The clock that has fired, if any: cancelled, wall-clock, soft-deadline, idle.

        ``soft`` says whether the soft deadline applies (not to the wrap-up turn itself);
        ``idle`` whether the idle clock does (not while we wait on our own backoff).
        """
        if self.cancel.is_set():
            return "cancelled"
        if self.elapsed_ms() >= self.clocks.backstop_ms:
            return "wall-clock"
        if soft and self.soft_due():
            return "soft-deadline"
        if idle and self.activity.since_ms() >= self.clocks.idle_ms:
            return "idle"
        return None

    def stop(self, limit: StopLimit) -> Stop:
        """The :class:`Stop` for a fired clock, with the budget (ms) it ran out of."""
        budgets: dict[str, int | None] = {
            "wall-clock": self.clocks.backstop_ms,
            "idle": self.clocks.idle_ms,
            "soft-deadline": self.clocks.soft_deadline_ms,
        }
        return Stop(limit=limit, budget_ms=budgets.get(limit))

    def sleep(self, ms: int, *, soft: bool) -> StopLimit | None:
        """Wait ``ms`` milliseconds unless a clock (idle excepted) fires first."""
        until = time.monotonic() + ms / 1000
        while True:
            limit = self.fired(soft=soft, idle=False)
            left = until - time.monotonic()
            if limit is not None or left <= 0:
                return limit
            self.cancel.wait(min(left, POLL_MS / 1000))


@dataclass
class PendingCall:
    """A tool call being streamed: its id, its name and its arguments' JSON pieces."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamedTurn:
    """What one streamed request produced so far, filled by the helper thread.

    * ``text``: the answer text pieces; ``calls``: tool calls by their stream index;
    * ``extra``: provider blocks to send back with the turn (Anthropic thinking blocks);
    * ``finished``: the final event arrived (a stream without it was truncated);
    * ``usage``: what the provider reported for this request (``requests`` = 1);
    * ``error``: what the helper raised (an SDK or transport error), if anything.

    The helper touches ``activity`` for every streamed token, so the idle clock sees it.
    """

    def __init__(self, activity: Activity) -> None:
        self.activity = activity
        self.lock = threading.Lock()
        self.text: list[str] = []
        self.calls: dict[int, PendingCall] = {}
        self.extra: list[dict[str, Any]] = []
        self.finished = False
        self.usage = Usage(requests=1)
        self.error: BaseException | None = None
        self.done = threading.Event()
        self._response: httpx2.Response | None = None
        self._abandoned = False

    def add_text(self, piece: str) -> None:
        """A piece of answer text arrived."""
        if piece:
            with self.lock:
                self.text.append(piece)
            self.activity.touch()

    def set_usage(self, *, input: int, output: int, cached: int, reasoning: int) -> None:
        """The provider's usage for this request so far (token counts; ``requests`` = 1)."""
        with self.lock:
            self.usage = Usage(
                input=input, output=output, cached=cached, reasoning=reasoning, requests=1
            )

    def text_so_far(self) -> str:
        """The answer text streamed so far."""
        with self.lock:
            return "".join(self.text)

    def attach(self, response: httpx2.Response) -> None:
        """The response exists (headers arrived): it can be interrupted from now on."""
        with self.lock:
            self._response = response
            abandoned = self._abandoned
        if abandoned:
            _shut(response)

    def interrupt(self) -> bool:
        """Stop the stream now: shut its socket down (the helper's read then ends).

        False when the response headers had not arrived yet: there is no socket to shut,
        and the helper ends on its own read timeout (or at once when they arrive).
        """
        with self.lock:
            self._abandoned = True
            response = self._response
        if response is None:
            return False
        _shut(response)
        return True

    def run(self, work: Callable[[StreamedTurn], None]) -> None:
        """The helper thread's body: ``work(self)``, its error kept, ``done`` set."""
        try:
            work(self)
        except Exception as error:  # an SDK or transport fault: the retry loop judges it
            self.error = error
        finally:
            self.done.set()


def _shut(response: httpx2.Response) -> None:
    """Shut the socket under ``response`` down for both directions; never raises.

    Why shutdown and not close: a thread blocked in ``recv`` on a closed descriptor may
    stay blocked, while a shutdown wakes it at once. The plain-socket method is used even
    for TLS, so the TLS object the helper is reading with is left alone.
    """
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


def run_streamed(
    watch: Watch, turn: StreamedTurn, work: Callable[[StreamedTurn], None], *, soft: bool
) -> StopLimit | None:
    """Run ``work(turn)`` on a helper thread under the clocks; the clock that fired, or None.

    The idle clock starts again when the request is sent. ``soft`` says whether the soft
    deadline interrupts this request (not the wrap-up). On a fired clock the stream is
    interrupted and the helper gets :data:`JOIN_GRACE_MS` to wind down (none when no
    response had arrived: nothing of it is waited for); ``turn`` keeps what had arrived.
    """
    watch.activity.touch()
    helper = threading.Thread(target=turn.run, args=(work,), name="council-model-stream")
    helper.daemon = True
    helper.start()
    while not turn.done.is_set():
        limit = watch.fired(soft=soft, idle=True)
        if limit is not None:
            if turn.interrupt():
                helper.join(JOIN_GRACE_MS / 1000)
            return limit
        turn.done.wait(POLL_MS / 1000)
    return None
