"""The sweep on fakeredis: lapsed leases are sent again once (and only when their
attempt is the latest, unsettled, in an open run), abandoned runs are cancelled, runs
past their deadline settle as the watchdog would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import fakeredis
import pytest
from structlog.testing import capture_logs

from council.model.participant import Participant
from workers.app.clock import now_ms
from workers.app.services import Runtime, build_runtime
from workers.app.settings import Settings
from workers.execution.sweep import Sweeper
from workers.settling.settle import ABANDONED_NOTE
from workers.stores.run_record import RunRecord

PEOPLE = [
    Participant(id="hawk", backend="openai", model="m"),
    Participant(id="rep", backend="replay", options={"answer": "a.json"}),
]


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    settings = Settings(
        work_dir=tmp_path / "work",
        redis_url="redis://x:1/0",
        abandon_after_s=1,
        watchdog_slack_ms=0,
    )
    yield build_runtime(settings, fakeredis.FakeRedis(server=fakeredis.FakeServer()))


def _open(rt: Runtime, run_id: str = "r1", deadline_ms: int | None = None) -> RunRecord:
    record = RunRecord(
        run_id=run_id,
        session="s1",
        mode="distributed",
        participants=tuple(p.id for p in PEOPLE),
        created_ms=now_ms(),
        deadline_ms=deadline_ms or now_ms() + 600_000,
    )
    rt.sessions.open_run(record, [(p.role, p) for p in PEOPLE], record.created_ms)
    rt.runs.put_inputs(run_id, PEOPLE, {p.id: "review" for p in PEOPLE}, None, {})
    rt.runs.mark_dispatched(run_id)
    return record


def _lapse(rt: Runtime) -> None:
    """Every lease lapsed long ago (a lease is scored on Redis's clock when written)."""
    for raw in rt.client.zrange(rt.keys.leases(), 0, -1):
        rt.client.zadd(rt.keys.leases(), {raw: 1})


def _sweeper(rt: Runtime, sent: list[tuple[str, str, str]]) -> Sweeper:
    sweeper = Sweeper(rt, lambda *a: sent.append(a), lambda run_id: None)
    sweeper._healthy_since -= 3600  # healthy for an hour
    return sweeper


def _sweep(rt: Runtime, sweeper: Sweeper) -> None:
    rt.client.delete(rt.keys.sweep_lock())
    assert sweeper.sweep() is not None


def test_a_lapsed_lease_is_sent_again_once(rt: Runtime) -> None:
    _open(rt)
    rt.runs.start_attempts("r1", ["hawk", "rep"], now_ms() - 60_000, lease_ms=1)
    _lapse(rt)
    sent: list[tuple[str, str, str]] = []
    sweeper = _sweeper(rt, sent)
    _sweep(rt, sweeper)
    assert sorted(sent) == [("r1", "hawk", "openai"), ("r1", "rep", "replay")]
    _sweep(rt, sweeper)
    assert len(sent) == 2
    assert rt.client.zcard(rt.keys.leases()) == 0


def test_a_redispatch_line_names_the_session_and_the_new_task(rt: Runtime) -> None:
    """``participant_redispatched`` is a warning with the run, session, participant, the
    task sent again and the attempt it starts (the first line of that task, for a filter
    on its id), and the attempt that was lost."""
    _open(rt)
    rt.runs.start_attempts("r1", ["hawk"], now_ms() - 60_000, lease_ms=1)
    _lapse(rt)
    sweeper = Sweeper(rt, lambda run_id, pid, backend: f"task-{pid}", lambda run_id: None)
    sweeper._healthy_since -= 3600
    with capture_logs() as logged:
        _sweep(rt, sweeper)
    (line,) = [e for e in logged if e["event"] == "participant_redispatched"]
    assert line["log_level"] == "warning"
    assert {k: line[k] for k in ("run_id", "session", "participant", "task_id")} == {
        "run_id": "r1",
        "session": "s1",
        "participant": "hawk",
        "task_id": "task-hawk",
    }
    assert (line["attempt"], line["lost_attempt"]) == (2, 1)


def test_a_lapse_is_ignored_when_settled_superseded_or_the_run_moved_on(rt: Runtime) -> None:
    _open(rt)
    rt.runs.start_attempts("r1", ["hawk", "rep"], now_ms() - 60_000, lease_ms=1)
    _lapse(rt)
    rt.client.set(rt.keys.run_outcome("r1", "hawk"), b"{}")  # settled
    rt.runs.start_attempts("r1", ["rep"], now_ms())  # a newer attempt runs
    sent: list[tuple[str, str, str]] = []
    _sweep(rt, _sweeper(rt, sent))
    assert sent == []
    _open(rt, "r2")
    rt.runs.start_attempts("r2", ["hawk"], now_ms() - 60_000, lease_ms=1)
    _lapse(rt)
    rt.client.hset(rt.keys.run("r2"), "status", "settled")
    _sweep(rt, _sweeper(rt, sent))
    assert sent == []


def test_no_lapse_is_believed_right_after_an_outage(rt: Runtime) -> None:
    """Nobody could beat while Redis was away: the sweep waits one lease of health."""
    _open(rt)
    rt.runs.start_attempts("r1", ["hawk"], now_ms() - 60_000, lease_ms=1)
    _lapse(rt)
    sent: list[tuple[str, str, str]] = []
    sweeper = Sweeper(rt, lambda *a: sent.append(a), lambda run_id: None)
    _sweep(rt, sweeper)
    assert sent == []


def test_an_abandoned_run_is_cancelled(rt: Runtime) -> None:
    now = now_ms()
    record = RunRecord(
        run_id="r1", session="s1", participants=("rep",), created_ms=now, deadline_ms=now + 600_000
    )
    rt.sessions.open_run(record, [("reviewer", PEOPLE[1])], now_ms=now)
    rt.runs.put_inputs("r1", [PEOPLE[1]], {"rep": "review"}, None, {})
    rt.client.zincrby(rt.keys.runs_undispatched(), -5_000, "r1")  # opened 5 s ago, on Redis
    _sweep(rt, _sweeper(rt, []))
    assert rt.runs.status("r1") == "cancelled"
    report = rt.runs.report("r1")
    assert report is not None and ABANDONED_NOTE in report.notes


def test_a_run_past_its_deadline_is_settled_by_the_sweep(rt: Runtime) -> None:
    _open(rt, deadline_ms=now_ms() - 1)
    _sweep(rt, _sweeper(rt, []))
    assert rt.runs.status("r1") == "partial"
    assert rt.client.zscore(rt.keys.runs_open(), "r1") is None
