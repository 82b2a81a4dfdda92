"""What a worker keeps because Redis may forget its last second (issue 26): entries with
ids stored once however often they are stored again, the attempt's sink storing again
what Redis forgot, the keeper storing a forgotten outcome again and letting it go once
the filing is durable, and the settling naming whose findings nobody could keep."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import fakeredis
import pytest

from council.model.backend_result import ReviewResult
from council.model.participant import Participant
from council.round.outcome import harvest_outcome
from workers.app.clock import now_ms
from workers.app.services import Runtime, build_runtime
from workers.app.settings import Settings
from workers.execution import keeping
from workers.execution.journal_sink import RedisJournal
from workers.settling.hearing import UNKEPT_NOTE
from workers.settling.settle import settle_run
from workers.stores import runs, session_opening
from workers.stores.run_progress import Settled
from workers.stores.run_record import Progress, RunRecord

PEOPLE = [
    Participant(id="hawk", backend="replay", options={"answer": "a.json"}),
    Participant(id="owl", backend="replay", options={"answer": "a.json"}),
]

DIFF = "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1,2 @@\n x = 1\n+y = 2\n"


def _entry(i: int) -> str:
    return (
        f'{{"subject": "finding {i}", "label": "issue", "severity": "minor", '
        '"location": {"kind": "file", "file": "app.py"}}'
    )


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    settings = Settings(work_dir=tmp_path / "work", redis_url="redis://localhost:1/0")
    yield build_runtime(settings, fakeredis.FakeRedis(server=fakeredis.FakeServer()))


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The Redis server's ``run_id`` as the code sees it (fakeredis has no INFO): set
    ``server[0]`` to restart it."""
    now = ["first"]
    for module in (runs, session_opening, keeping):
        monkeypatch.setattr(module, "server_id", lambda _client: now[0])
    return now


def _open(rt: Runtime, run_id: str = "r1") -> RunRecord:
    record = RunRecord(
        run_id=run_id,
        session="s1",
        mode="distributed",
        participants=tuple(p.id for p in PEOPLE),
        created_ms=now_ms(),
        deadline_ms=now_ms() + 600_000,
    )
    rt.sessions.open_run(record, [(p.role, p) for p in PEOPLE], record.created_ms)
    rt.runs.put_inputs(run_id, PEOPLE, {p.id: "review" for p in PEOPLE}, None, {}, change=DIFF)
    return record


def _forget_last(rt: Runtime, run_id: str, pid: str, attempt: int, n: int) -> None:
    """Redis forgets the last ``n`` entries of an attempt's journal, ids and all."""
    client, keys = rt.client, rt.keys
    for raw_id in sorted(client.smembers(keys.journal_ids(run_id, pid, attempt)))[-n:]:
        client.srem(keys.journal_ids(run_id, pid, attempt), raw_id)
    for _ in range(n):
        client.rpop(keys.journal(run_id, pid, attempt))


def test_an_entry_stored_again_with_its_id_is_kept_once(rt: Runtime) -> None:
    """A retried write that had in fact been applied files nothing twice."""
    _open(rt)
    attempt = rt.journals.next_attempt("r1", "hawk")
    for _ in range(3):
        assert rt.journals.store("r1", "hawk", attempt, _entry(1), entry_id="s-1") == 1
    assert rt.journals.store("r1", "hawk", attempt, _entry(1)) == 2  # no id: stored
    assert rt.journals.missing("r1", [("hawk", attempt, ["s-1", "s-2"])]) == [["s-2"]]


def test_the_sink_stores_again_what_redis_forgot_once(rt: Runtime) -> None:
    _open(rt)
    attempt = rt.journals.next_attempt("r1", "hawk")
    sink = RedisJournal(rt, "r1", "hawk", attempt, live="open")
    for i in range(4):
        assert sink.append(_entry(i)) == "Recorded."
    _forget_last(rt, "r1", "hawk", attempt, 2)
    rt.client.delete(rt.keys.run_attempts("r1", "hawk"))  # the INCR that started it too
    assert len(rt.journals.read("r1", "hawk", attempt)) == 2
    assert sink.reconcile(until=float("inf")) == 0
    assert rt.journals.attempts("r1", "hawk") == attempt
    assert sink.reconcile(until=float("inf")) == 0  # nothing is stored twice
    held = sorted(rt.journals.read("r1", "hawk", attempt))
    assert held == sorted(_entry(i).encode() for i in range(4))
    assert sink.recorded == 4


def test_the_sink_keeps_what_the_fold_would_read(tmp_path: Path) -> None:
    """Within the reading caps: an attempt keeps a few MiB at most, whatever a program
    records."""
    settings = Settings(
        work_dir=tmp_path / "work",
        redis_url="redis://localhost:1/0",
        journal_max_entries=3,
        journal_max_entry_bytes=200,
    )
    rt = build_runtime(settings, fakeredis.FakeRedis(server=fakeredis.FakeServer()))
    _open(rt)
    sink = RedisJournal(rt, "r1", "hawk", rt.journals.next_attempt("r1", "hawk"), live="open")
    assert sink.append('{"subject": "' + "x" * 300 + '"}') == "Recorded."
    for i in range(5):
        assert sink.append(_entry(i)) == "Recorded."
    assert sink.recorded == 3


def _stored(rt: Runtime, pid: str) -> Settled:
    outcome = harvest_outcome(pid, "reviewer", ReviewResult(answer='{"findings": []}'), [])
    done = Settled(outcome, '{"findings": []}', Progress(state="answered"))
    assert rt.runs.put_outcomes("r1", [done]) == {}
    return done


def test_the_keeper_stores_a_forgotten_outcome_again_and_settles(
    rt: Runtime, server: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _open(rt)
    settled: list[str] = []
    keeper = keeping.Keeper(rt, settled.append)
    keeper.check()  # it learns the server
    hawk = _stored(rt, "hawk")
    keeper.keep("r1", hawk, rt.keys.lease_member("r1", "hawk", 1), "open")
    keeper.check()
    assert settled == [] and keeper.kept == 1  # no restart: nothing to do
    rt.client.delete(rt.keys.run_outcome("r1", "hawk"))
    server[0] = "second"  # Redis restarted and forgot it
    keeper.check()
    kept = rt.runs.outcome("r1", "hawk")
    assert kept is not None and kept.status == "answered"
    assert settled == ["r1"]
    monkeypatch.setattr(keeping, "DURABLE_S", 0.0)
    rt.client.hset(rt.keys.run("r1"), "status", "settled")
    keeper.check()
    assert keeper.kept == 1  # seen filed once: not yet let go
    keeper.check()
    assert keeper.kept == 0


def test_the_keeper_holds_on_when_the_filing_is_forgotten(
    rt: Runtime, server: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen filed, then Redis restarts and the run is open again: held, settled again."""
    monkeypatch.setattr(keeping, "DURABLE_S", 3600.0)
    _open(rt)
    settled: list[str] = []
    keeper = keeping.Keeper(rt, settled.append)
    keeper.check()
    keeper.keep("r1", _stored(rt, "hawk"), rt.keys.lease_member("r1", "hawk", 1), "open")
    rt.client.hset(rt.keys.run("r1"), "status", "settled")
    keeper.check()
    rt.client.hset(rt.keys.run("r1"), "status", "open")
    server[0] = "second"
    keeper.check()
    assert settled == ["r1"] and keeper.kept == 1


def test_the_keeper_reads_a_filed_run_once_unless_redis_restarts(
    rt: Runtime, server: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen filed, the run's status is not read again (one read a run, not one a
    second): DURABLE_S later on the same server it is let go; a restart in between has
    it read at the next check."""
    _open(rt)
    keeper = keeping.Keeper(rt, lambda _run: None)
    keeper.check()
    keeper.keep("r1", _stored(rt, "hawk"), rt.keys.lease_member("r1", "hawk", 1), "open")
    rt.client.hset(rt.keys.run("r1"), "status", "settled")
    reads: list[str] = []
    status = rt.runs.status
    monkeypatch.setattr(rt.runs, "status", lambda run_id: reads.append(run_id) or status(run_id))
    monkeypatch.setattr(keeping, "DURABLE_S", 3600.0)
    keeper.check()  # seen filed
    keeper.check()
    keeper.check()
    assert reads == ["r1"] and keeper.kept == 1
    server[0] = "second"  # a restart: the filing may be gone, read it again
    keeper.check()
    assert reads == ["r1", "r1"] and keeper.kept == 1
    monkeypatch.setattr(keeping, "DURABLE_S", 0.0)
    keeper.check()  # seen filed on the new server at the restart's read: let go unread
    assert reads == ["r1", "r1"] and keeper.kept == 0


def test_the_report_names_whose_findings_could_not_be_kept(rt: Runtime, server: list[str]) -> None:
    """Redis restarted during the run and nobody held owl's outcome: partial, the note
    names owl (not hawk, whose outcome is stored)."""
    _open(rt)
    _stored(rt, "hawk")
    attempt = rt.runs.start_attempts("r1", ["owl"], now_ms())["owl"]
    assert rt.journals.append("r1", "owl", attempt, _entry(1)) == "Recorded."
    server[0] = "second"
    report = settle_run(rt, "r1", event="worker_lost")
    assert report.status == "partial"
    said = [n for n in report.notes if n.startswith(UNKEPT_NOTE)]
    assert said and said[0].endswith(": owl"), report.notes
    assert [f.subject for f in report.findings] == ["finding 1"]


def test_no_restart_no_note(rt: Runtime, server: list[str]) -> None:
    _open(rt)
    _stored(rt, "hawk")
    report = settle_run(rt, "r1", event="worker_lost")
    assert report.status == "partial"
    assert not any(n.startswith(UNKEPT_NOTE) for n in report.notes)
