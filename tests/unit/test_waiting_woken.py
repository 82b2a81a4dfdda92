"""The waiter is woken by Redis (BLPOP on the run's wake list; embedded, on fakeredis), not by a
10 ms poll: a settling on another thread wakes it at once, and a wait costs a handful of
commands."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest

from council.model.participant import Participant
from workers.app.clock import now_ms
from workers.app.services import Runtime, build_runtime
from workers.app.settings import Settings
from workers.coordinator import waiting
from workers.coordinator.waiting import Waiter
from workers.settling.settle import settle_run
from workers.stores.run_record import Progress, RunRecord

PEOPLE = [Participant(id="rep", backend="replay", options={"answer": "a.json"})]


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    settings = Settings(work_dir=tmp_path / "work", redis_url="redis://x:1/0")
    yield build_runtime(settings, fakeredis.FakeRedis(server=fakeredis.FakeServer()))


def _open(rt: Runtime) -> RunRecord:
    record = RunRecord(
        run_id="r1",
        session="s1",
        mode="distributed",
        participants=("rep",),
        created_ms=now_ms(),
        deadline_ms=now_ms() + 600_000,
    )
    rt.sessions.open_run(record, [("reviewer", PEOPLE[0])], record.created_ms)
    rt.runs.put_inputs("r1", PEOPLE, {"rep": "review"}, None, {})
    return record


def test_a_settling_wakes_the_waiter_at_once(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waiting, "WAKE_FALLBACK_S", 30.0)
    record = _open(rt)
    seen: list[dict[str, Progress]] = []

    def later() -> None:
        time.sleep(0.3)
        rt.runs.set_progress("r1", "rep", Progress(state="running", attempt=1))
        time.sleep(0.3)
        settle_run(rt, "r1", forced="cancelled")

    threading.Thread(target=later).start()
    reads: list[Any] = []
    real = rt.runs.wait_read

    def counting(run_id: str) -> Any:
        reads.append(run_id)
        return real(run_id)

    monkeypatch.setattr(rt.runs, "wait_read", counting)
    started = time.monotonic()
    report = Waiter(rt, record, seen.append, lambda: False).wait()
    assert time.monotonic() - started < 3
    assert report.status == "cancelled"
    assert any(s["rep"].state == "running" for s in seen)
    assert len(reads) <= 4


def test_ctrl_c_wakes_a_blocked_waiter(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waiting, "WAKE_FALLBACK_S", 30.0)
    monkeypatch.setattr(waiting, "CANCEL_GRACE_MS", 100)
    record = _open(rt)
    stopped = threading.Event()
    threading.Timer(0.3, stopped.set).start()
    started = time.monotonic()
    report = Waiter(rt, record, lambda _s: None, stopped.is_set).wait()
    assert time.monotonic() - started < 3
    assert report.status == "cancelled"


def test_embedded_waiter_is_woken_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Embedded, the waiter blocks on the in-process fakeredis's wake list as well (its
    BLPOP sleeps until a write), instead of polling the run every 10 ms."""
    rt = build_runtime(
        Settings(work_dir=tmp_path / "work"),
        fakeredis.FakeRedis(server=fakeredis.FakeServer()),
        mode="embedded",
    )

    def no_polling(_self: Waiter) -> Any:
        raise AssertionError("the embedded waiter polled")

    monkeypatch.setattr(Waiter, "_wait_polling", no_polling)
    monkeypatch.setattr(waiting, "WAKE_FALLBACK_S", 30.0)
    record = _open(rt)
    reads: list[str] = []
    real = rt.runs.wait_read

    def counting(run_id: str) -> Any:
        reads.append(run_id)
        return real(run_id)

    monkeypatch.setattr(rt.runs, "wait_read", counting)
    threading.Timer(0.2, lambda: settle_run(rt, "r1", forced="cancelled")).start()
    report = Waiter(rt, record, lambda _s: None, lambda: False).wait()
    assert report.status == "cancelled"
    assert len(reads) <= 3
