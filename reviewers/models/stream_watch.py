"""Holding a streamed model request to the review's clocks (all durations in ms).

A request streams as an asyncio task filling a :class:`StreamedTurn` while the review's
coroutine watches the clocks (:func:`run_streamed`): ``backstop_ms`` (the wall, from the
review's start), ``idle_ms`` (no token and no journal entry), the soft deadline
``backstop_ms - answer_ms`` (when ``answer_ms`` > 0) and ``request.cancel`` (seen within
:data:`~reviewers.models.stream_loop.BRIDGE_POLL_MS`). When one fires the stream's task is
cancelled at once, abandoning the SDK's read and closing its connection, so a stalled
server cannot hold a reviewer past its idle clock. The watcher sleeps until the next
moment a clock could fire (no polling): hundreds of streaming reviews cost nothing.

Source: docs/identity-and-clocks.md "Clocks", docs/architecture.md "Worker pool",
docs/harvest.md §7.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from council.model.backend_result import Stop, StopLimit, Usage
from council.model.participant import Clocks
from reviewers.models.activity import Activity

JOIN_GRACE_MS = 1000
"""How long a cancelled stream gets to wind down (close its connection), in milliseconds."""

MIN_WAIT_MS = 5
"""The shortest wait between two looks at the clocks, in milliseconds."""


class Watch:
    """The clocks of one review, counted from ``started`` (``time.monotonic()``).

    ``cancel`` is the run's cancellation (set by another thread); ``woken`` is its
    mirror on the loop (:func:`~reviewers.models.stream_loop.bridge`), set by the
    review's coroutine before it waits on anything (None: ``cancel`` is only looked at
    when a clock is).
    """

    def __init__(self, clocks: Clocks, cancel: threading.Event) -> None:
        self.clocks = clocks
        self.cancel = cancel
        self.woken: asyncio.Event | None = None
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

    def due_in_ms(self, *, soft: bool, idle: bool) -> int:
        """Milliseconds until the next clock could fire (at least :data:`MIN_WAIT_MS`).

        The idle clock's moment moves when something happens, so a wait that ends on it
        looks again rather than stopping.
        """
        elapsed = self.elapsed_ms()
        due = self.clocks.backstop_ms - elapsed
        deadline = self.clocks.soft_deadline_ms
        if soft and deadline is not None:
            due = min(due, deadline - elapsed)
        if idle:
            due = min(due, self.clocks.idle_ms - self.activity.since_ms())
        return max(due, MIN_WAIT_MS)

    def stop(self, limit: StopLimit) -> Stop:
        """The :class:`Stop` for a fired clock, with the budget (ms) it ran out of."""
        budgets: dict[str, int | None] = {
            "wall-clock": self.clocks.backstop_ms,
            "idle": self.clocks.idle_ms,
            "soft-deadline": self.clocks.soft_deadline_ms,
        }
        return Stop(limit=limit, budget_ms=budgets.get(limit))

    async def wait(self, work: asyncio.Future[Any] | None, ms: int) -> None:
        """Wait up to ``ms`` ms for ``work`` to finish or the cancellation to be set."""
        waiters: set[asyncio.Future[Any]] = set()
        if work is not None:
            waiters.add(work)
        woken = None
        if self.woken is not None:
            if self.woken.is_set():
                return
            woken = asyncio.ensure_future(self.woken.wait())
            waiters.add(woken)
        try:
            if waiters:
                await asyncio.wait(waiters, timeout=ms / 1000, return_when=asyncio.FIRST_COMPLETED)
            else:
                await asyncio.sleep(ms / 1000)
        finally:
            if woken is not None:
                woken.cancel()

    async def sleep(self, ms: int, *, soft: bool) -> StopLimit | None:
        """Wait ``ms`` milliseconds unless a clock (idle excepted) fires first."""
        until = time.monotonic() + ms / 1000
        while True:
            limit = self.fired(soft=soft, idle=False)
            left_ms = int((until - time.monotonic()) * 1000)
            if limit is not None or left_ms <= 0:
                return limit
            await self.wait(None, min(left_ms, self.due_in_ms(soft=soft, idle=False)))


@dataclass
class PendingCall:
    """A tool call being streamed: its id, its name and its arguments' JSON pieces."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class TurnActivity:
    """The review's :class:`Activity` as one streamed request touches it, remembering when
    this request's first token came (``first``, monotonic seconds; None until then).

    Every streamed token touches it (text, a tool call's pieces, thinking), so ``first``
    is the time to first token once the request's send time is known.
    """

    def __init__(self, review: Activity) -> None:
        self.review = review
        self.first: float | None = None

    def touch(self) -> None:
        """A token arrived: the review's idle clock starts again."""
        if self.first is None:
            self.first = time.monotonic()
        self.review.touch()


class StreamedTurn:
    """What one streamed request produced so far (filled on the loop, read on the loop).

    * ``text``: the answer text pieces; ``calls``: tool calls by their stream index;
    * ``extra``: provider blocks to send back with the turn (Anthropic thinking blocks);
    * ``finished``: the final event arrived (a stream without it was truncated);
    * ``usage``: what the provider reported for this request (``requests`` = 1);
    * ``error``: what the stream raised (an SDK or transport error), if anything.

    The stream touches ``activity`` for every streamed token, so the idle clock sees it
    (and ``activity.first`` says when the first one came).
    """

    def __init__(self, activity: Activity) -> None:
        self.activity = TurnActivity(activity)
        self.text: list[str] = []
        self.calls: dict[int, PendingCall] = {}
        self.extra: list[dict[str, Any]] = []
        self.finished = False
        self.usage = Usage(requests=1)
        self.usage_repeats = 0
        """How many times the provider sent a usage it had already sent (counted once)."""
        self.error: BaseException | None = None

    def add_text(self, piece: str) -> None:
        """A piece of answer text arrived."""
        if piece:
            self.text.append(piece)
            self.activity.touch()

    def set_usage(
        self, *, input: int, output: int, cached: int, reasoning: int, cache_write: int = 0
    ) -> None:
        """The provider's usage for this request so far (token counts; ``requests`` = 1).
        It replaces the last: a usage sent twice is counted once (``usage_repeats``)."""
        usage = Usage(
            input=input,
            output=output,
            cached=cached,
            reasoning=reasoning,
            requests=1,
            cache_write=cache_write,
        )
        if usage == self.usage and (input or output):
            self.usage_repeats += 1
        self.usage = usage

    def text_so_far(self) -> str:
        """The answer text streamed so far."""
        return "".join(self.text)

    async def run(self, work: Callable[[StreamedTurn], Awaitable[None]]) -> None:
        """The stream's body: ``await work(self)``, its error kept (a cancellation is not)."""
        try:
            await work(self)
        except Exception as error:  # an SDK or transport fault: the retry loop judges it
            self.error = error


async def run_streamed(
    watch: Watch,
    turn: StreamedTurn,
    work: Callable[[StreamedTurn], Awaitable[None]],
    *,
    soft: bool,
) -> StopLimit | None:
    """Run ``work(turn)`` as a task under the clocks; the clock that fired, or None.

    The idle clock starts again when the request is sent. ``soft`` says whether the soft
    deadline interrupts this request (not the wrap-up). On a fired clock the stream's task
    is cancelled and given :data:`JOIN_GRACE_MS` to close its connection; ``turn`` keeps
    what had arrived.
    """
    watch.activity.touch()
    task = asyncio.ensure_future(turn.run(work))
    try:
        while not task.done():
            limit = watch.fired(soft=soft, idle=True)
            if limit is not None:
                task.cancel()
                await asyncio.wait({task}, timeout=JOIN_GRACE_MS / 1000)
                return limit
            await watch.wait(task, watch.due_in_ms(soft=soft, idle=True))
    finally:
        if not task.done():  # the review itself was cancelled: take the stream with it
            task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return None
