"""The waiting CLI when no worker takes the run's tasks, and when Redis goes away for a
while (workers.coordinator.waiting.Waiter, workers.settling.settle.settle_run's
``deadline_passed``).

A participant no worker ever started fails at the watchdog, naming the queue its task
waited on; one whose worker was lost keeps its ``worker-lost`` stop. A short Redis outage
is ridden out and said once; a long one ends in StoreUnavailable naming the URL without
its password."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest
import redis

from council.errors import StoreUnavailable
from council.model.participant import Participant
from council.model.report import CouncilReport
from workers.app.clock import now_ms
from workers.app.services import Runtime, build_runtime
from workers.app.settings import Settings
from workers.coordinator import waiting
from workers.coordinator.waiting import Waiter
from workers.settling.settle import settle_run
from workers.stores.run_record import RunRecord

SECRET_URL = "redis://:sekrit@db.internal:6379/0"

PEOPLE = [
    Participant(id="hawk", backend="openai", model="m"),
    Participant(id="owl", backend="anthropic", model="m"),
    Participant(id="rep", backend="replay", options={"answer": "a.json"}),
]

DIFF = "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1,2 @@\n x = 1\n+y = 2\n"

LOST_FINDING = (
    '{"subject": "written before the worker died", "label": "issue", "severity": "minor", '
    '"location": {"kind": "file", "file": "app.py"}}'
)


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    """A distributed-mode runtime on fakeredis; its settings name a URL with a password."""
    settings = Settings(work_dir=tmp_path / "work", redis_url=SECRET_URL)
    yield build_runtime(settings, fakeredis.FakeRedis(server=fakeredis.FakeServer()))


def _open(rt: Runtime, deadline_ms: int, run_id: str = "r1") -> RunRecord:
    """Open a run of :data:`PEOPLE` as the coordinator does (no task is sent)."""
    record = RunRecord(
        run_id=run_id,
        session="s1",
        mode="distributed",
        participants=tuple(p.id for p in PEOPLE),
        created_ms=now_ms(),
        deadline_ms=deadline_ms,
    )
    rt.sessions.open_run(record, [(p.role, p) for p in PEOPLE], record.created_ms)
    rt.runs.put_inputs(run_id, PEOPLE, {p.id: "review" for p in PEOPLE}, None, {}, change=DIFF)
    return record


def _lose_worker_of(rt: Runtime, run_id: str, pid: str) -> None:
    """A worker started ``pid``'s task, wrote one finding down, and died."""
    attempt = rt.runs.start_attempts(run_id, [pid], now_ms())[pid]
    assert rt.journals.append(run_id, pid, attempt, LOST_FINDING) == "Recorded."


def _waiter(rt: Runtime, record: RunRecord, said: list[str], **kw: Any) -> Waiter:
    return Waiter(rt, record, lambda _s: None, lambda: False, notify=said.append, **kw)


def _by_id(report: CouncilReport) -> dict[str, Any]:
    return {p.id: p for p in report.participants}


def test_watchdog_fails_the_participants_no_worker_started_naming_their_queue(
    rt: Runtime,
) -> None:
    """Past the deadline, a task nobody took is a failure saying so and naming its queue
    and the fix; the participant whose worker died stays a worker-lost stop, its journal
    kept."""
    record = _open(rt, deadline_ms=now_ms() - 1)
    _lose_worker_of(rt, "r1", "rep")
    said: list[str] = []
    report = _waiter(rt, record, said).wait()
    people = _by_id(report)
    assert {pid: p.state for pid, p in people.items()} == {
        "hawk": "failed",
        "owl": "failed",
        "rep": "stopped",
    }
    hawk, owl = str(people["hawk"].failure), str(people["owl"].failure)
    assert "no worker took hawk's task before the run's deadline" in hawk
    assert "council.openai" in hawk and "council worker --queues openai" in hawk
    assert "council.anthropic" in owl and "README" in owl
    assert "loss of its worker" not in hawk + owl
    lost = [w.message for w in report.warnings if w.code == "stopped" and w.at == "rep"]
    assert lost and "stopped by the loss of its worker" in lost[0]
    assert [f.subject for f in report.findings] == ["written before the worker died"]


def test_a_settlement_other_than_the_watchdog_keeps_the_worker_lost_stop(rt: Runtime) -> None:
    """The chord's finalizer (no ``deadline_passed``) says nothing about queues: it runs
    on a worker, so the worker-lost stop it always gave stays."""
    _open(rt, deadline_ms=now_ms() + 60_000)
    report = settle_run(rt, "r1")
    assert {p.id: p.state for p in report.participants} == dict.fromkeys(
        ("hawk", "owl", "rep"), "stopped"
    )
    assert not any("no worker took" in w.message for w in report.warnings)


def test_the_cli_says_once_when_no_worker_started_anything(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every participant still pending past NO_WORKER_HINT_S: one notice naming the
    queues and `council worker`, however many polls follow."""
    monkeypatch.setattr(waiting, "NO_WORKER_HINT_S", 0.0)
    monkeypatch.setattr(waiting, "CANCEL_GRACE_MS", 0)
    record = _open(rt, deadline_ms=now_ms() + 600_000)
    said: list[str] = []
    report = _waiter(rt, record, said, timeout_ms=800).wait()
    assert report.status == "timeout"
    hints = [s for s in said if "no worker has started" in s]
    assert len(hints) == 1, said
    for queue in ("council.anthropic", "council.default", "council.openai"):
        assert queue in hints[0]
    assert "`council worker`" in hints[0]


def test_no_hint_once_a_worker_started_a_task(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """One participant started: workers are there; nothing is said about them."""
    monkeypatch.setattr(waiting, "NO_WORKER_HINT_S", 0.0)
    monkeypatch.setattr(waiting, "CANCEL_GRACE_MS", 0)
    record = _open(rt, deadline_ms=now_ms() + 600_000)
    rt.runs.start_attempts("r1", ["rep"], now_ms())
    said: list[str] = []
    _waiter(rt, record, said, timeout_ms=500).wait()
    assert said == []


class Flaky:
    """Stands in for ``rt.runs.status``: raises ConnectionError for ``down`` calls."""

    def __init__(self, real: Any, down: int) -> None:
        self.real, self.down, self.calls = real, down, 0

    def __call__(self, run_id: str) -> Any:
        self.calls += 1
        if self.calls <= self.down:
            raise redis.ConnectionError("Error 111 connecting to db.internal:6379. Refused.")
        return self.real(run_id)


def test_a_short_redis_outage_is_ridden_out_and_said_once(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six failed reads in a row: one notice naming the URL without its password, one
    when Redis answers again, and the run settles as if nothing happened."""
    monkeypatch.setattr(waiting, "OUTAGE_PAUSE_S", (0.001, 0.004))
    record = _open(rt, deadline_ms=now_ms() - 1)
    flaky = Flaky(rt.runs.wait_read, down=6)  # what the woken waiter reads
    monkeypatch.setattr(rt.runs, "wait_read", flaky)
    said: list[str] = []
    report = _waiter(rt, record, said).wait()
    assert report.status != "open" and flaky.calls > 6
    assert len(said) == 2, said
    assert said[0].startswith("Redis at redis://:***@db.internal:6379/0 is unreachable")
    assert "retrying for up to 30 s" in said[0]
    assert said[1].startswith("Redis at redis://:***@db.internal:6379/0 answers again")
    assert not any("sekrit" in s for s in said)


def test_a_long_redis_outage_ends_in_store_unavailable_naming_the_url(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past REDIS_OUTAGE_S of failed reads: StoreUnavailable (exit 3 in the CLI) naming
    the URL without its password, the run and how to see it later; said once before."""
    monkeypatch.setattr(waiting, "OUTAGE_PAUSE_S", (0.01, 0.05))
    monkeypatch.setattr(waiting, "REDIS_OUTAGE_S", 0.3)
    record = _open(rt, deadline_ms=now_ms() + 600_000)
    flaky = Flaky(rt.runs.wait_read, down=10**9)
    monkeypatch.setattr(rt.runs, "wait_read", flaky)
    said: list[str] = []
    with pytest.raises(StoreUnavailable) as caught:
        _waiter(rt, record, said).wait()
    text = str(caught.value)
    assert text.startswith("cannot reach Redis at redis://:***@db.internal:6379/0")
    assert "council show r1" in text and "sekrit" not in text
    assert flaky.calls > 3
    assert len(said) == 1 and "unreachable" in said[0]
