"""The process's stream loop: many coroutines on one thread, results back to the caller,
cancellations bridged from other threads, the caller's log context kept."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import structlog

from reviewers.models.stream_loop import BRIDGE_POLL_MS, bridge, stream_loop


def test_one_loop_per_process_runs_coroutines_on_its_own_thread() -> None:
    async def where() -> str:
        return threading.current_thread().name

    assert stream_loop() is stream_loop()
    assert stream_loop().run(where()) == "council-streams"


def test_many_waits_overlap_on_the_one_thread() -> None:
    """200 coroutines sleeping 200 ms each take about 200 ms in all, not 40 s."""

    async def nap() -> int:
        await asyncio.sleep(0.2)
        return 1

    started = time.monotonic()
    futures = [stream_loop().submit(nap()) for _ in range(200)]
    assert sum(f.result(timeout=10) for f in futures) == 200
    assert time.monotonic() - started < 5


def test_run_raises_what_the_coroutine_raised() -> None:
    async def broken() -> None:
        raise ValueError("bad entry")

    with pytest.raises(ValueError, match="bad entry"):
        stream_loop().run(broken())


def test_run_on_the_loop_thread_is_refused() -> None:
    async def nested() -> str:
        inner = asyncio.sleep(0)
        try:
            stream_loop().run(inner)
        except RuntimeError as error:
            return str(error)
        return "no error"

    assert "own thread" in stream_loop().run(nested())


def test_the_callers_log_context_reaches_the_coroutine_and_its_threads() -> None:
    seen: dict[str, object] = {}

    def caller() -> None:
        structlog.contextvars.bind_contextvars(run_id="r-ctx", participant="hawk")

        async def look() -> None:
            seen["loop"] = structlog.contextvars.get_contextvars().get("run_id")
            seen["tool"] = (await asyncio.to_thread(structlog.contextvars.get_contextvars)).get(
                "participant"
            )

        stream_loop().run(look())

    thread = threading.Thread(target=caller)
    thread.start()
    thread.join()
    assert seen == {"loop": "r-ctx", "tool": "hawk"}


def test_a_cancel_set_by_another_thread_wakes_the_waiter_within_the_poll() -> None:
    cancel = threading.Event()

    async def wait_for_cancel() -> float:
        with bridge(cancel) as woken:
            threading.Timer(0.1, cancel.set).start()
            started = time.monotonic()
            await asyncio.wait_for(woken.wait(), timeout=5)
            return time.monotonic() - started

    waited = stream_loop().run(wait_for_cancel())
    assert 0.05 <= waited < 0.1 + 3 * BRIDGE_POLL_MS / 1000


def test_a_cancel_already_set_is_seen_at_once() -> None:
    cancel = threading.Event()
    cancel.set()

    async def look() -> bool:
        with bridge(cancel) as woken:
            return woken.is_set()

    assert stream_loop().run(look()) is True
