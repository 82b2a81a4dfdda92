"""Every run key gets its TTL as it is written, so a run parked before its deadline keeps
them (no EXPIRE per key at settling) and still leaves nothing behind (fakeredis; the same
tests run on a real redis-server in tests/integration/test_store_ttls_real.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import fakeredis
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from council.evidence import ScriptRow
from council.model.participant import Participant
from council.model.report import CouncilReport
from council.round.lifecycle import step
from council.round.outcome import ParticipantOutcome
from workers.stores.budget import RedisBudget
from workers.stores.journal import JournalStore
from workers.stores.keys import Keys
from workers.stores.run_progress import Settled
from workers.stores.run_record import Progress, RunRecord
from workers.stores.runs import RunStore
from workers.stores.scripts import ScriptStore
from workers.stores.session_opening import OPEN_TTL_CAP_S
from workers.stores.sessions import RETENTION_SLACK, Filing, SessionStore

KEYS = Keys("council:")
RUN_TTL_S, SESSION_TTL_S = 7 * 24 * 3600, 90 * 24 * 3600
GLOBAL = {KEYS.runs_index(), KEYS.runs_open(), KEYS.runs_undispatched(), KEYS.leases()}
"""Keys every run shares (trimmed or emptied by their own rules, not by a TTL)."""


@pytest.fixture
def client() -> Iterator[Any]:
    """An in-process fakeredis client (with Lua)."""
    yield fakeredis.FakeRedis(server=fakeredis.FakeServer())


def _sessions(client: Any) -> SessionStore:
    return SessionStore(client, KEYS, session_retention_s=SESSION_TTL_S, run_retention_s=RUN_TTL_S)


def _participant(pid: str) -> Participant:
    return Participant(id=pid, backend="replay", options={"answer": "a.txt"})


def _row() -> ScriptRow:
    return ScriptRow(tool_call_id="c1", tool="run_script", dispatch=1, outcome="ok", exit_code=0)


def _council(client: Any, now: int, deadline: int) -> tuple[SessionStore, RunRecord]:
    """Open a run of two reviewers at ``now`` and write every kind of run key a round
    writes, as the coordinator and the workers write them."""
    sessions, runs, journals = _sessions(client), RunStore(client, KEYS), JournalStore(client, KEYS)
    record = RunRecord(
        run_id="r1",
        session="s1",
        participants=("hawk", "owl"),
        created_ms=now,
        deadline_ms=deadline,
    )
    people = [_participant("hawk"), _participant("owl")]
    sessions.open_run(record, [("reviewer", p) for p in people], now)
    ttl_s = sessions.open_ttl_s(record, now)
    runs.put_inputs("r1", people, {"hawk": "p", "owl": "p"}, b"T", {}, "diff", ttl_s=ttl_s)
    runs.start_attempts("r1", ["hawk"], now, lease_ms=10_000, ttl_ms=ttl_s * 1000)
    runs.start_attempts("r1", ["owl"], now)  # no TTL given: the run hash's
    journals.store("r1", "hawk", 1, "{}")  # the first entry has no id
    journals.store("r1", "hawk", 1, "{}", entry_id="e2")
    journals.store("r1", "owl", 1, "{}", entry_id="e1")
    ScriptStore(client, KEYS).append("r1", "owl", 1, _row())
    assert RedisBudget(client, KEYS, "r1", 1.0).reserve(10) is not None
    done = [
        Settled(ParticipantOutcome(participant=p, status="answered"), "a", Progress())
        for p in ("hawk", "owl")
    ]
    runs.put_outcomes("r1", done[:1], ttl_ms=ttl_s * 1000)
    runs.put_outcomes("r1", done[1:])  # as the keeper restores one: the run hash's TTL
    runs.poke("r1")
    report = CouncilReport(run_id="r1", session="s1", status="settled")
    filing = Filing(first_id=1, findings=(), report=report)
    assert sessions.commit(record, step("open", "reviewers_settled"), filing, now + 1000)
    return sessions, record


def _unexpiring(client: Any) -> list[str]:
    return [
        k.decode()
        for k in client.scan_iter(match="council:*")
        if k.decode() not in GLOBAL and client.ttl(k) < 0
    ]


def test_a_run_parked_before_its_deadline_keeps_the_ttls_it_was_written_with(
    client: Any,
) -> None:
    """Settled a minute before its deadline, no run key is expired again (their TTLs
    reach past the retention from the settling), and every key a round writes expires."""
    now = 1_000_000
    sessions, record = _council(client, now, now + 61_000)
    assert sessions.expiring_as_written(record, now + 1000)
    assert _unexpiring(client) == []
    for key in client.scan_iter(match="council:run:r1*"):
        if key.decode() != KEYS.run_wake("r1"):  # a day after the push that made it
            assert RUN_TTL_S < client.ttl(key) <= RUN_TTL_S + 62, key
    for key in KEYS.session_keys("s1"):
        assert client.ttl(key) in (-2, *range(SESSION_TTL_S - 5, SESSION_TTL_S + 1)), key


def test_a_run_parked_long_before_a_far_deadline_gets_the_retention_from_now(
    client: Any,
) -> None:
    """Its deadline a day away (over 1% of the retention), settling expires every run key
    to the retention from now, as before."""
    now = 1_000_000
    sessions, record = _council(client, now, now + 24 * 3600 * 1000)
    assert not sessions.expiring_as_written(record, now + 1000)
    assert _unexpiring(client) == []
    for key in client.scan_iter(match="council:run:r1*"):
        if key.decode() != KEYS.run_wake("r1"):
            assert 0 < client.ttl(key) <= RUN_TTL_S, key


@given(
    span_s=st.integers(0, 40 * 24 * 3600),
    written=st.floats(0, 1),
    parked=st.floats(0, 1),
    retention_s=st.integers(1, 400 * 24 * 3600),
)
def test_keys_kept_as_written_outlive_the_parking_by_the_retention(
    span_s: int, written: float, parked: float, retention_s: int
) -> None:
    """Whenever parking keeps the TTLs as written, a key written at any time between the
    opening and the parking expires at least the retention after the parking, and at
    most 1% of it (and a second) later."""
    sessions = SessionStore(
        fakeredis.FakeRedis(), KEYS, session_retention_s=1, run_retention_s=retention_s
    )
    created = 1_000_000
    record = RunRecord(
        run_id="r", session="s", created_ms=created, deadline_ms=created + span_s * 1000
    )
    parked_ms = created + int(parked * (span_s * 1000 + 10_000))
    write_ms = created + int(written * (parked_ms - created))
    if not sessions.expiring_as_written(record, parked_ms):
        return
    expires = write_ms + sessions.open_ttl_s(record, write_ms) * 1000
    assert expires >= parked_ms + retention_s * 1000
    assert expires <= parked_ms + retention_s * 1000 * (1 + RETENTION_SLACK) + 1000
    assert span_s <= OPEN_TTL_CAP_S


STEPS = ("open", "settle", "dismiss", "answer", "release")
AGES = (0, 60, 24 * 3600, 2 * 24 * 3600, 30 * 24 * 3600)
"""Seconds that pass before a step: none, a minute, within and past the 1% slack of the
90-day session retention, a month."""


def _age(client: Any, seconds: int) -> None:
    """Let ``seconds`` pass for every key (its TTL shortened; gone when it runs out)."""
    for key in list(client.scan_iter(match="council:session:*")):
        left = client.pttl(key)
        if left > seconds * 1000:
            client.pexpire(key, left - seconds * 1000)
        else:
            client.delete(key)


def _session_step(sessions: SessionStore, client: Any, name: str, n: int) -> None:
    """One step that writes the session's keys: a run opened (and another settled), a
    dismissal, an answer, a release."""
    from council.asks.pending import Answer
    from council.model.findings import FileAnchor, Finding, Origin
    from council.session.earlier_rounds import RoundMemory

    rid = f"r{n}"
    record = RunRecord(
        run_id=rid, session="s1", participants=("hawk",), created_ms=n, deadline_ms=n + 60_000
    )
    if name == "open":
        sessions.open_run(record, [("reviewer", _participant("hawk"))], n)
    elif name == "settle":
        sessions.open_run(record, [("reviewer", _participant("hawk"))], n)
        first = sessions.next_finding_id("s1")
        found = [
            Finding(
                id=first,
                anchor=FileAnchor(path="a.py"),
                label="issue",
                subject=f"s{n}",
                origin=Origin(kind="reviewer", run_id=rid, participant="hawk"),
            )
        ]
        memory = RoundMemory(
            reported={f"fp{n}": str(first)},
            still_open=tuple(found),
            heard=("hawk",),
            recall=tuple(found),
        )
        report = CouncilReport(run_id=rid, session="s1", status="settled", findings=tuple(found))
        filing = Filing(first_id=first, findings=found, report=report, memory=memory)
        assert sessions.commit(record, step("open", "reviewers_settled"), filing, n + 1)
    elif name == "dismiss":
        sessions.dismiss("s1", f"fp{n}", "not a bug", n)
    elif name == "answer":
        sessions.answer("s1", f"ask{n}", Answer(value="yes"))
    else:
        sessions.release("s1", "hawk")


@settings(deadline=None)
@given(st.lists(st.tuples(st.sampled_from(STEPS), st.sampled_from(AGES)), max_size=8))
def test_session_keys_expire_together_whatever_the_steps(
    steps: list[tuple[str, int]],
) -> None:
    """Whatever steps a session takes, and however long apart: every session key expires;
    none expires before ``runs`` (the marker of the last refresh), so a ``fresh`` session's
    keys all live 99% of the retention; no key holding finding ids outlives ``issued``
    (an id is never given twice); and right after an opening, a filing or a dismissal
    every key lives at least 99% of the retention."""
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    sessions = _sessions(client)
    k = KEYS
    for n, (name, age) in enumerate(steps, start=1):
        _age(client, age)
        _session_step(sessions, client, name, n)
        ttl = {key: client.pttl(key) for key in k.session_keys("s1") if client.exists(key)}
        assert all(t > 0 for t in ttl.values()), ttl
        floor = SESSION_TTL_S * 1000 * 0.99 - 5000
        if name in ("open", "settle", "dismiss"):  # an answer, a release: their own key
            assert all(t >= floor for t in ttl.values()), (name, ttl)
        runs = ttl.get(k.session_runs("s1"))
        if runs is not None:
            assert all(t >= runs - 5000 for t in ttl.values()), ttl
        ids = [k.session_findings("s1"), k.session_fingerprints("s1"), k.session_recall("s1")]
        ids += [k.session_reviewed("s1"), k.session_dismissed("s1"), k.session_acted("s1")]
        issued = ttl.get(k.session_issued("s1"))
        for key in ids:
            if key in ttl and issued is not None:
                assert ttl[key] <= issued + 5000, (key, ttl)
