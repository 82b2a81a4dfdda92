"""One asyncio event loop per process, on its own thread, driving every model stream.

Why: a worker holds hundreds of model reviews at once, each mostly waiting on a streamed
HTTP body. A thread per stream (and a watcher thread per review) made the GIL the
bottleneck: ``bench/concurrency.py`` measured threads plus the SDK alone at 150 % overhead
on 500 streams of 2 s. Callers (a Celery task's thread, the CLI) hand the loop a coroutine
(:meth:`StreamLoop.run`, :meth:`StreamLoop.submit`); :func:`stream_loop` starts it again
after a fork (neither threads nor sockets survive one). :func:`bridge` mirrors a
cancellation with ONE poll per loop, however many reviews wait on it; blocking work (tool
calls, journal appends, rate-limiter waits) goes to the loop's :data:`TOOL_THREADS`.

Source: docs/architecture.md "Worker pool", issue "Model reviewers" (speed).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import os
import sys
import threading
import weakref
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

BRIDGE_POLL_MS = 100
"""How often a loop looks at the bridged ``threading.Event`` objects, in milliseconds."""

CLOSE_TIMEOUT_S = 2.0
"""How long closing the loop at exit may take, in seconds."""

TOOL_THREADS = 64
"""Threads of the loop's executor: tool calls, journal appends, the rate limiter's waits."""


class StreamLoop:
    """An event loop running forever on a daemon thread named ``council-streams``."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.set_default_executor(
            concurrent.futures.ThreadPoolExecutor(TOOL_THREADS, thread_name_prefix="council-tools")
        )
        ready = threading.Event()
        self.thread = threading.Thread(
            target=self._main, args=(ready,), name="council-streams", daemon=True
        )
        self.thread.start()
        ready.wait()
        atexit.register(self.close)

    def _main(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(ready.set)
        self.loop.run_forever()

    def close(self, timeout_s: float = CLOSE_TIMEOUT_S) -> None:
        """Close the loop's HTTP pools and stop the loop (at exit); never raises."""
        if not self.thread.is_alive():
            return
        with contextlib.suppress(Exception):
            self.submit(_shutdown()).result(timeout_s)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout_s)

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; its future (thread-safe)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for it; raises what it raised.

        Raises RuntimeError when called from the loop's own thread (it would deadlock).
        """
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("StreamLoop.run called on the loop's own thread; await instead")
        return self.submit(coro).result()


_lock = threading.Lock()
_current: StreamLoop | None = None
_owner_pid = 0


def stream_loop() -> StreamLoop:
    """The process's :class:`StreamLoop`, started on first use (and after a fork)."""
    global _current, _owner_pid
    with _lock:
        if _current is None or _owner_pid != os.getpid() or not _current.thread.is_alive():
            _current = StreamLoop()
            _owner_pid = os.getpid()
        return _current


async def _shutdown() -> None:
    """Close the loop's HTTP pools, then cancel whatever else still runs on it. The pools'
    module (httpx2) is loaded by the model reviewers only: without it there is none."""
    pools = sys.modules.get("reviewers.models.http_pool")
    if pools is not None:
        await pools.close_pools()
    others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)


class _Bridges:
    """The bridged events of one loop, and its one poller task."""

    def __init__(self) -> None:
        self.pairs: dict[int, tuple[threading.Event, asyncio.Event]] = {}
        self.poller: asyncio.Task[None] | None = None

    async def poll(self) -> None:
        while self.pairs:
            for event, mirror in list(self.pairs.values()):
                if event.is_set() and not mirror.is_set():
                    mirror.set()
            await asyncio.sleep(BRIDGE_POLL_MS / 1000)


_bridges: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Bridges] = (
    weakref.WeakKeyDictionary()
)


@contextmanager
def bridge(event: threading.Event) -> Iterator[asyncio.Event]:
    """An ``asyncio.Event`` set within :data:`BRIDGE_POLL_MS` ms of ``event`` being set.

    Call inside a coroutine (it uses the running loop); the bridge ends with the block.
    Raises RuntimeError when no loop is running.
    """
    loop = asyncio.get_running_loop()
    bridges = _bridges.get(loop)
    if bridges is None:
        bridges = _bridges[loop] = _Bridges()
    mirror = asyncio.Event()
    if event.is_set():
        mirror.set()
    key = id(mirror)
    bridges.pairs[key] = (event, mirror)
    if bridges.poller is None or bridges.poller.done():
        bridges.poller = loop.create_task(bridges.poll())
    try:
        yield mirror
    finally:
        bridges.pairs.pop(key, None)
