"""One cancel watcher per worker process serves every review it runs."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence

import structlog
from structlog.testing import capture_logs

from workers.execution.cancellation import CancelWatch


def test_cancelled_run_sets_every_review_event_and_only_its_own() -> None:
    """Two reviews of a cancelled run are told; a review of another run is not."""
    cancelled = {"r1"}
    polls: list[list[str]] = []

    def check(runs: Sequence[str]) -> list[bool]:
        polls.append(list(runs))
        return [r in cancelled for r in runs]

    # Watchers of earlier tests' embedded councils may still be alive: count this one's.
    before = {t for t in threading.enumerate() if t.name == "cancel-watch"}
    watch = CancelWatch(check, poll_s=0.01)
    with watch.watching("r1") as a, watch.watching("r1") as b, watch.watching("r2") as c:
        assert a.wait(2) and b.wait(2)
        assert not c.wait(0.1)
        ours = [t for t in threading.enumerate() if t.name == "cancel-watch" and t not in before]
        assert len(ours) == 1
    assert all(len(set(p)) == len(p) for p in polls)  # one round trip names each run once


def test_finished_reviews_are_forgotten() -> None:
    """A run no review waits on is no longer polled."""
    seen: list[list[str]] = []

    def check(runs: Sequence[str]) -> list[bool]:
        seen.append(list(runs))
        return [False] * len(runs)

    watch = CancelWatch(check, 0.01)
    with watch.watching("r9"):
        threading.Event().wait(0.05)
    seen.clear()
    threading.Event().wait(0.05)
    assert all("r9" not in runs for runs in seen)


def test_the_watcher_ends_when_nothing_is_watched_and_comes_back() -> None:
    """No thread is kept once no review is watched (an embedded council that ended); the
    next review starts a new watcher, which still sees cancellations."""
    cancelled: set[str] = set()
    watch = CancelWatch(lambda runs: [r in cancelled for r in runs], poll_s=0.01)
    with watch.watching("r1"):
        first = watch._thread
        assert first is not None and first.is_alive()
    first.join(2)
    assert not first.is_alive()
    cancelled.add("r2")
    with watch.watching("r2") as event:
        assert event.wait(2)
        assert watch._thread is not None and watch._thread is not first


def test_an_outage_is_said_once_per_task_with_its_ids_then_recovered() -> None:
    """Polls failing for a while (a Redis outage): each watching task gets ONE
    cancel_check_failed carrying its run_id, session, participant, task_id and attempt
    (not one per 0.5 s poll), then one cancel_check_recovered; a second outage is said
    again, once."""
    failing = threading.Event()
    failing.set()
    polls: list[bool] = []

    def check(runs: Sequence[str]) -> list[bool]:
        polls.append(failing.is_set())
        if failing.is_set():
            raise ConnectionError("Error 111 connecting to redis://:pw@127.0.0.1:6379/0")
        return [False] * len(runs)

    def wait_until(predicate: Callable[[], bool]) -> None:
        deadline = time.monotonic() + 5
        while not predicate():
            assert time.monotonic() < deadline
            time.sleep(0.005)

    ids = [
        {"run_id": "r1", "session": "s", "participant": p, "task_id": f"t-{p}", "attempt": 1}
        for p in ("hawk", "owl")
    ]
    watch = CancelWatch(check, poll_s=0.005)
    with capture_logs() as logs, contextlib.ExitStack() as stack:
        for fields in ids:
            with structlog.contextvars.bound_contextvars(**fields):
                stack.enter_context(watch.watching("r1"))
        wait_until(lambda: polls.count(True) >= 20)  # twenty failed polls
        failing.clear()
        wait_until(lambda: any(e["event"] == "cancel_check_recovered" for e in logs))
        wait_until(lambda: len([e for e in logs if e["event"] == "cancel_check_recovered"]) == 2)
        failing.set()
        wait_until(lambda: polls[-3:] == [True] * 3)
        failing.clear()
        wait_until(lambda: len([e for e in logs if e["event"] == "cancel_check_recovered"]) == 4)
    failed = [e for e in logs if e["event"] == "cancel_check_failed"]
    recovered = [e for e in logs if e["event"] == "cancel_check_recovered"]
    assert len(failed) == 4 and len(recovered) == 4  # two tasks, two outages
    for entry in failed + recovered:
        assert {k: entry[k] for k in ids[0]} in ids
    assert failed[0]["log_level"] == "warning" and failed[0]["error_type"] == "ConnectionError"
    assert recovered[0]["failed_polls"] >= 20 and recovered[0]["outage_ms"] >= 0
