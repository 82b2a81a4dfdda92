"""Stopping the embedded council's in-process worker (workers.coordinator.embedded): once
the block is over the stop is asked for and the broker's drains stop waiting, and the
worker is stopped and its flag reset when the block is left."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from celery.worker import state as worker_state
from kombu import Connection

from workers.app.settings import Settings
from workers.coordinator import embedded


class _CountedCondition:
    """A stand-in for the broker's condition that counts the drains' waits."""

    def __init__(self) -> None:
        self.real = threading.Condition()
        self.waits = 0

    def __enter__(self) -> bool:
        return self.real.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self.real.__exit__(*exc)

    def wait(self, timeout: float | None = None) -> bool:
        self.waits += 1
        return self.real.wait(timeout)

    def notify_all(self) -> None:
        self.real.notify_all()


def test_a_stopping_transport_drains_what_is_there_and_waits_for_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A drain of an empty queue waits for a message, unless the transport is stopping:
    then it says at once that none came (kombu's TimeoutError)."""
    counted = _CountedCondition()
    monkeypatch.setattr(embedded, "_posted", counted)
    with Connection("memory://", transport=embedded.PromptMemoryTransport) as conn:
        conn.default_channel.queue_declare(queue="q-stop-test")
        conn.default_channel.basic_consume("q-stop-test", True, lambda *_: None, "t")
        transport = conn.transport
        with pytest.raises(TimeoutError):
            transport.drain_events(conn.connection, timeout=0.01)
        assert counted.waits >= 1
        counted.waits = 0
        transport.stopping = True
        with pytest.raises(TimeoutError):
            transport.drain_events(conn.connection, timeout=2.0)
        assert counted.waits == 0


def test_leaving_the_block_stops_the_worker_and_resets_its_flag(tmp_path: Path) -> None:
    """The worker thread is gone after the block, its transport was told to stop, and
    Celery's process-wide stop flag is back to unset (a later council starts afresh)."""
    settings = Settings(work_dir=tmp_path / "work", state_path=tmp_path / "state.json")
    before = {t.ident for t in threading.enumerate()}
    with embedded.embedded_council(settings, 1) as (app, _rt):
        assert worker_state.should_terminate is None
        with app.connection_for_read() as conn:
            assert isinstance(conn.transport, embedded.PromptMemoryTransport)
    assert worker_state.should_terminate is None
    left = [t for t in threading.enumerate() if t.ident not in before and not t.daemon]
    assert left == []
