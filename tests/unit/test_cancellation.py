"""One cancel watcher per worker process serves every review it runs."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from workers.cancellation import CancelWatch


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
