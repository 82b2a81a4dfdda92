"""One asyncio event loop per process, on its own thread, driving every model stream.

Why: a worker holds hundreds of model reviews at once, each mostly waiting on a streamed
HTTP body. A thread per stream (and a watcher thread per review) made the GIL the
bottleneck: ``bench/concurrency.py`` measured threads plus the SDK alone at 150 % overhead
on 500 streams of 2 s. One loop multiplexes them all on one thread; the callers (a Celery
task's thread, the CLI) hand it a coroutine and wait for its result.

* :func:`stream_loop` — the process's loop, started on first use (again after a fork:
  neither threads nor sockets survive one).
* :meth:`StreamLoop.run` — run a coroutine on the loop, block the calling thread for its
  result (raises what the coroutine raised).
* :meth:`StreamLoop.submit` — the same without blocking: a ``concurrent.futures.Future``.
* :meth:`StreamLoop.bridge` — an ``asyncio.Event`` set soon after a ``threading.Event``
  (a cancellation set by another thread) is set. ONE poll of every bridged event per
  :data:`BRIDGE_POLL_MS`, however many reviews wait on the loop.

Source: architecture.md "Worker pool", issue "Model reviewers" (speed).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

BRIDGE_POLL_MS = 100
"""How often the loop looks at the bridged ``threading.Event`` objects, in milliseconds."""


class StreamLoop:
    """An event loop running forever on a daemon thread named ``council-streams``."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._bridges: dict[int, tuple[threading.Event, asyncio.Event]] = {}
        self._poller: asyncio.Task[None] | None = None
        ready = threading.Event()
        self.thread = threading.Thread(
            target=self._main, args=(ready,), name="council-streams", daemon=True
        )
        self.thread.start()
        ready.wait()

    def _main(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(ready.set)
        self.loop.run_forever()

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

    @contextmanager
    def bridge(self, event: threading.Event) -> Iterator[asyncio.Event]:
        """An ``asyncio.Event`` set within :data:`BRIDGE_POLL_MS` of ``event`` being set.

        Use on the loop (inside a coroutine); the bridge ends with the block.
        """
        mirror = asyncio.Event()
        if event.is_set():
            mirror.set()
        key = id(mirror)
        self._bridges[key] = (event, mirror)
        if self._poller is None or self._poller.done():
            self._poller = self.loop.create_task(self._poll())
        try:
            yield mirror
        finally:
            self._bridges.pop(key, None)

    async def _poll(self) -> None:
        while self._bridges:
            for event, mirror in list(self._bridges.values()):
                if event.is_set() and not mirror.is_set():
                    mirror.set()
            await asyncio.sleep(BRIDGE_POLL_MS / 1000)


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
