"""The Redis stores on fakeredis (the same tests run on a real redis-server in
tests/integration/test_stores_real.py, which re-collects them with another ``client``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import fakeredis
import pytest

from council.asks.confirm import waiting_report
from council.errors import IdentityRefused
from council.model.backend_result import Stop
from council.model.findings import FINDINGS, FileAnchor, Finding, Origin
from council.model.fingerprint import fingerprint
from council.model.participant import Participant, Role
from council.model.report import CouncilReport
from council.round.lifecycle import step
from council.round.outcome import ParticipantOutcome
from council.session.earlier_rounds import RoundMemory
from workers.coordinator.resume import finish
from workers.stores import server_ms
from workers.stores.journal import JournalStore
from workers.stores.keys import Keys
from workers.stores.run_record import Progress, RunRecord
from workers.stores.runs import RunStore
from workers.stores.session_opening import trims_index
from workers.stores.sessions import Filing, RunNotSettled, SessionStore

KEYS = Keys("council:")


@pytest.fixture
def client() -> Iterator[Any]:
    """An in-process fakeredis client (with Lua)."""
    yield fakeredis.FakeRedis(server=fakeredis.FakeServer())


def _participant(pid: str, model: str = "m1") -> Participant:
    return Participant(id=pid, backend="replay", model=model, options={"answer": "a.txt"})


def _record(run_id: str = "r1", session: str = "s1", deadline_ms: int = 10_000_000) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        session=session,
        participants=("hawk", "owl"),
        created_ms=1000,
        deadline_ms=deadline_ms,
    )


def _sessions(client: Any) -> SessionStore:
    return SessionStore(client, KEYS, session_retention_s=3600, run_retention_s=600)


def test_journal_append_reads_back_in_order(client: Any) -> None:
    """Entries come back in the order they were appended, attempt by attempt."""
    j = JournalStore(client, KEYS)
    a1 = j.next_attempt("r1", "hawk")
    assert j.append("r1", "hawk", a1, '{"subject": "one"}') == "Recorded."
    a2 = j.next_attempt("r1", "hawk")
    assert j.append("r1", "hawk", a2, '{"subject": "two"}') == "Recorded."
    assert (a1, a2) == (1, 2)
    assert j.read_all("r1", "hawk") == [[b'{"subject": "one"}'], [b'{"subject": "two"}']]
    assert j.recorded_counts("r1") == {"hawk": 2}


def test_journal_refuses_over_size_and_over_count(client: Any) -> None:
    """The storage caps refuse an entry with a reply that says to keep it for the answer."""
    j = JournalStore(client, KEYS, max_entries=2, max_entry_bytes=10)
    n = j.next_attempt("r1", "hawk")
    assert "over the journal" in j.append("r1", "hawk", n, "x" * 11)
    assert j.append("r1", "hawk", n, "{}") == "Recorded."
    assert j.append("r1", "hawk", n, "{}") == "Recorded."
    refused = j.append("r1", "hawk", n, "{}")
    assert refused.startswith("Not recorded") and "final answer" in refused
    assert len(j.read("r1", "hawk", n)) == 2


def test_coming_attempt_is_the_number_the_next_incr_gives(client: Any) -> None:
    """Before a task numbers its attempt, the number it will get: started + 1, the
    started count for a participant already settled, the highest over a batch."""
    j, runs = JournalStore(client, KEYS), RunStore(client, KEYS)
    assert j.coming_attempt("r1", []) is None
    assert j.coming_attempt("r1", ["hawk"]) == 1
    j.next_attempt("r1", "hawk")
    assert j.coming_attempt("r1", ["hawk"]) == 2 == j.next_attempt("r1", "hawk")
    runs.put_outcome("r1", ParticipantOutcome(participant="hawk", status="answered"), "a")
    assert j.coming_attempt("r1", ["hawk"]) == 2  # settled: no attempt 3 starts
    assert j.coming_attempt("r1", ["owl", "hawk"]) == 2
    j.next_attempt("r1", "owl")
    j.next_attempt("r1", "owl")
    assert j.coming_attempt("r1", ["owl", "hawk"]) == 3


def test_start_attempts_numbers_each_participant_on_and_gives_a_new_counter_its_ttl(
    client: Any,
) -> None:
    """A first attempt makes its counter at 1 with the TTL given; later attempts (a
    redelivery) count on from it, keeping that TTL; attempts started elsewhere
    (``next_attempt``) count too; without a TTL given, a new counter takes the run
    hash's."""
    runs, j = RunStore(client, KEYS), JournalStore(client, KEYS)
    assert runs.start_attempts("r1", ["hawk", "owl"], 1000, ttl_ms=60_000) == {
        "hawk": 1,
        "owl": 1,
    }
    assert 0 < client.pttl(KEYS.run_attempts("r1", "hawk")) <= 60_000
    client.pexpire(KEYS.run_attempts("r1", "hawk"), 30_000)
    assert runs.start_attempts("r1", ["hawk"], 2000, ttl_ms=60_000) == {"hawk": 2}
    assert 0 < client.pttl(KEYS.run_attempts("r1", "hawk")) <= 30_000  # kept, not reset
    assert j.next_attempt("r1", "hawk") == 3
    assert runs.start_attempts("r1", ["hawk", "owl"], 3000) == {"hawk": 4, "owl": 2}
    assert runs.progress("r1")["hawk"].attempt == 4
    client.hset(KEYS.run("r2"), "status", "open")
    client.pexpire(KEYS.run("r2"), 45_000)
    assert runs.start_attempts("r2", ["hawk"], 1000) == {"hawk": 1}
    assert 0 < client.pttl(KEYS.run_attempts("r2", "hawk")) <= 45_000


def test_settle_inputs_read_the_outcomes_named_with_the_strings(client: Any) -> None:
    """Settling's one read of strings holds the stored outcomes of the ids it names (those
    without one left out, every named id counted as read); none named, none read."""
    runs = RunStore(client, KEYS)
    runs.put_inputs("r1", [_participant("hawk"), _participant("owl")], {}, None, {}, change="d")
    runs.put_outcome("r1", ParticipantOutcome(participant="hawk", status="answered"), "a")
    read = runs.settle_inputs("r1", "s1", ["hawk", "owl", "hawk"])
    assert [p.id for p in read.participants] == ["hawk", "owl"] and read.change == "d"
    assert list(read.outcomes) == ["hawk"] and read.outcomes["hawk"].status == "answered"
    assert read.read == {"hawk", "owl"} and read.next_id == 1
    none = runs.settle_inputs("r1", "s1")
    assert none.outcomes == {} and none.read == frozenset() and none.change == "d"


def test_settle_inputs_leave_unparseable_secret_places_to_the_head_tree_reader(
    client: Any,
) -> None:
    """A stored secrets value that does not parse is None in settling's one read (the head
    tree's reader then notes the tree unread), not an error failing the whole settle."""
    runs = RunStore(client, KEYS)
    runs.put_inputs("r1", [_participant("hawk")], {}, None, {}, change="d")
    client.set(KEYS.run_secrets("r1"), b"{not json")
    read = runs.settle_inputs("r1", "s1", ["hawk"])
    assert read.secrets is None and read.change == "d"
    assert runs.settle_inputs("r2", "s1").secrets == ()


def test_run_inputs_round_trip(client: Any) -> None:
    """Roster, prompts, tree and programs are stored once and read back by key."""
    runs = RunStore(client, KEYS)
    ps = [_participant("hawk"), _participant("owl")]
    runs.put_inputs("r1", ps, {"hawk": "prompt h", "owl": "prompt o"}, b"TREE", {"hawk": b"#!x"})
    assert [p.id for p in runs.participants("r1")] == ["hawk", "owl"]
    assert runs.participant("r1", "owl") == ps[1]
    assert runs.prompt("r1", "owl") == "prompt o"
    assert runs.tree("r1") == b"TREE"
    assert runs.program("r1", "hawk") == b"#!x" and runs.program("r1", "owl") is None
    assert {p: s.state for p, s in runs.progress("r1").items()} == {
        "hawk": "pending",
        "owl": "pending",
    }


def test_a_persona_is_stored_beside_the_prompts(client: Any) -> None:
    """A persona for a prompt built later (the judge's) is stored with the inputs and read
    back by participant, not as a prompt."""
    runs = RunStore(client, KEYS)
    ps = [_participant("hawk"), _participant("arbiter")]
    runs.put_inputs("r1", ps, {"hawk": "prompt h"}, None, {}, personas={"arbiter": "Lens."})
    assert runs.persona("r1", "arbiter") == "Lens."
    assert runs.persona("r1", "hawk") is None
    assert runs.prompt("r1", "arbiter") is None


def test_first_outcome_wins(client: Any) -> None:
    """A second outcome for the same participant is not stored (redelivery files nothing twice)."""
    runs = RunStore(client, KEYS)
    first = ParticipantOutcome(participant="hawk", status="answered")
    second = ParticipantOutcome(participant="hawk", status="failed", failure="late")
    assert runs.put_outcome("r1", first, "answer one")
    assert not runs.put_outcome("r1", second, "answer two")
    assert runs.outcome("r1", "hawk") == first
    assert runs.answer("r1", "hawk") == "answer one"


def test_progress_and_cancel_flag(client: Any) -> None:
    """Progress is kept per participant and the cancel flag is visible."""
    runs = RunStore(client, KEYS)
    runs.set_progress("r1", "hawk", Progress(state="running", started_ms=5, attempt=1))
    assert runs.progress("r1")["hawk"].state == "running"
    assert not runs.cancelled("r1")
    runs.cancel("r1")
    assert runs.cancelled("r1")
    assert runs.cancel_status("r1") == "cancelled"
    assert runs.cancel_stop("r1") == Stop(limit="cancelled")


def test_timeout_cancel_carries_its_budget(client: Any) -> None:
    """A run cancelled by --timeout settles as timeout; its stops name the timeout in ms."""
    runs = RunStore(client, KEYS)
    assert runs.cancel_stop("r1") is None
    runs.cancel("r1", "timeout", 2000)
    assert runs.cancel_status("r1") == "timeout"
    assert runs.cancel_stop("r1") == Stop(limit="cancelled", budget_ms=2000)
    assert Stop(limit="cancelled", budget_ms=2000).describe() == "the run's --timeout (2000 ms)"
    assert Stop(limit="cancelled").describe() == "a cancellation"


def test_open_run_claims_and_writes_record(client: Any) -> None:
    """Opening a run holds its identities and writes the record open, indexed."""
    sessions, runs = _sessions(client), RunStore(client, KEYS)
    rec = _record()
    claims = [("reviewer", _participant("hawk")), ("reviewer", _participant("owl"))]
    held = sessions.open_run(rec, claims, now_ms=2000)  # type: ignore[arg-type]
    assert [i.id for i in held] == ["hawk", "owl"]
    assert runs.status("r1") == "open" and runs.record("r1") == rec
    assert [r.run_id for r in runs.recent()] == ["r1"]
    assert [i.id for i in sessions.ledger("s1").held()] == ["hawk", "owl"]


def test_open_run_holds_ids_against_another_meaning(client: Any) -> None:
    """While a run is open, its ids count as attributed: a re-point is refused, nothing written."""
    sessions, runs = _sessions(client), RunStore(client, KEYS)
    sessions.open_run(_record("r1"), [("reviewer", _participant("hawk", "m1"))], now_ms=2000)
    before = client.get(KEYS.session_ledger("s1"))
    with pytest.raises(IdentityRefused):
        sessions.open_run(_record("r2"), [("reviewer", _participant("hawk", "m2"))], now_ms=2000)
    assert client.get(KEYS.session_ledger("s1")) == before
    assert runs.record("r2") is None


def test_stale_open_run_does_not_hold_ids(client: Any) -> None:
    """An open run past its deadline (a crashed coordinator) no longer blocks a re-point."""
    sessions = _sessions(client)
    sessions.open_run(
        _record("r1", deadline_ms=3000), [("reviewer", _participant("hawk", "m1"))], 2000
    )
    held = sessions.open_run(_record("r2"), [("reviewer", _participant("hawk", "m2"))], now_ms=4000)
    assert held[0].model == "m2"


def _filing(run_id: str, n: int, first_id: int) -> Filing:
    origin = Origin(kind="reviewer", run_id=run_id, participant="hawk")
    found = [
        Finding(
            id=first_id + i,
            anchor=FileAnchor(path=f"f{i}.py"),
            label="issue",
            subject=f"s{i}",
            origin=origin,
        )
        for i in range(n)
    ]
    report = CouncilReport(run_id=run_id, session="s1", status="settled", findings=tuple(found))
    return Filing(first_id=first_id, findings=found, report=report)


SETTLED = step("open", "reviewers_settled")


def _settle(sessions: SessionStore, record: RunRecord, n: int, now: int) -> CouncilReport:
    """File ``n`` findings and settle the run, as settling does: build from the next id,
    commit, build again when the counter moved."""
    while True:
        filing = _filing(record.run_id, n, sessions.next_finding_id(record.session))
        committed = sessions.commit(record, SETTLED, filing, now)
        if committed is not None:
            return committed


def test_settle_files_once_with_counter_ids(client: Any) -> None:
    """Ids come from the session counter; a second settle files nothing and returns the report."""
    sessions, runs = _sessions(client), RunStore(client, KEYS)
    sessions.open_run(_record("r1"), [("reviewer", _participant("hawk"))], 2000)
    report = _settle(sessions, _record("r1"), 2, 3000)
    assert [f.id for f in report.findings] == [1, 2]
    again = _settle(sessions, _record("r1"), 5, 4000)
    assert again == report
    assert client.get(KEYS.session_issued("s1")) == b"2"
    assert runs.status("r1") == "settled"
    sessions.open_run(_record("r2"), [("reviewer", _participant("hawk"))], 5000)
    later = _settle(sessions, _record("r2"), 1, 6000)
    assert [f.id for f in later.findings] == [3]
    assert [f.id for f in sessions.findings("s1")] == [1, 2, 3]


def test_commit_refuses_a_filing_built_on_a_moved_counter(client: Any) -> None:
    """Compare-and-set on the id counter: a filing whose first id another run of the
    session took meanwhile is refused (None, nothing written), so ids are never reused."""
    sessions = _sessions(client)
    sessions.open_run(_record("r1"), [("reviewer", _participant("hawk"))], 2000)
    sessions.open_run(_record("r2"), [("reviewer", _participant("hawk"))], 2000)
    stale = _filing("r1", 2, sessions.next_finding_id("s1"))
    _settle(sessions, _record("r2"), 1, 2500)
    assert sessions.commit(_record("r1"), SETTLED, stale, 3000) is None
    assert RunStore(client, KEYS).status("r1") == "open"
    assert [f.id for f in _settle(sessions, _record("r1"), 2, 3000).findings] == [2, 3]


def test_a_recognized_finding_keeps_its_id_and_only_new_ones_take_ids(client: Any) -> None:
    """A filing whose finding kept an earlier id (recognized, council.session.remembered) rewrites
    that finding under it; the counter advances for the new one alone; the session's
    recall is written with the round and read back, and a reported fingerprint names
    its id."""
    sessions = _sessions(client)
    sessions.open_run(_record("r1"), [("reviewer", _participant("hawk"))], 2000)
    _settle(sessions, _record("r1"), 2, 3000)
    assert sessions.recall("s1") is None
    sessions.open_run(_record("r2"), [("reviewer", _participant("hawk"))], 4000)
    first_id = sessions.next_finding_id("s1")
    origin = Origin(kind="reviewer", run_id="r2", participant="hawk")
    kept = Finding(
        id=1, anchor=FileAnchor(path="a.py"), label="issue", subject="s0 reworded", origin=origin
    )
    new = kept.model_copy(update={"id": first_id, "subject": "another"})
    report = CouncilReport(run_id="r2", session="s1", status="settled", findings=(kept, new))
    memory = RoundMemory(reported={"f" * 64: "1"}, still_open=None, recall=(kept, new))
    filing = Filing(first_id=first_id, findings=[kept, new], report=report, memory=memory)
    assert sessions.commit(_record("r2"), SETTLED, filing, 5000) is not None
    assert client.get(KEYS.session_issued("s1")) == b"3"
    by_id = {f.id: f.subject for f in sessions.findings("s1")}
    assert by_id == {1: "s0 reworded", 2: "s1", 3: "another"}
    assert [(f.id, f.subject) for f in sessions.recall("s1") or []] == [
        (1, "s0 reworded"),
        (3, "another"),
    ]
    assert sessions.reported_id("s1", "f" * 64) == 1
    assert sessions.reported_id("s1", "e" * 64) is None


def test_finishing_a_waiting_run_keeps_the_sessions_recall(client: Any) -> None:
    """A run that waited on a person settles with the session's recall kept: its own
    findings first, then those remembered before it (not its findings alone)."""
    sessions = _sessions(client)
    origin = Origin(kind="reviewer", run_id="r0", participant="hawk")
    earlier = Finding(
        id=1, anchor=FileAnchor(path="a.py"), label="issue", subject="old", origin=origin
    )
    client.set(KEYS.session_recall("s1"), FINDINGS.dump_json([earlier]))
    client.set(KEYS.session_issued("s1"), 1)
    sessions.open_run(_record("r1"), [("reviewer", _participant("hawk"))], 2000)
    filing = _filing("r1", 1, sessions.next_finding_id("s1"))
    parked = waiting_report(filing.report, ())
    asking = step("open", "reviewers_settled", ask=True)
    waiting = Filing(first_id=filing.first_id, findings=filing.findings, report=parked)
    assert sessions.commit(_record("r1"), asking, waiting, 3000) is not None
    (held,) = sessions.waiting("s1")
    assert finish(sessions, held) is not None
    assert [f.id for f in sessions.recall("s1") or []] == [2, 1]


def test_a_dismissal_keeps_the_finding_dismissed_and_old_ones_still_read(client: Any) -> None:
    """``dismiss`` with the finding keeps it (so its rewording stays dismissed); a
    dismissal a person gave when asked keeps the report's finding of that fingerprint;
    one written before the finding was kept reads with none."""
    sessions = _sessions(client)
    origin = Origin(kind="reviewer", run_id="r1", participant="hawk")
    told = Finding(
        id=4, anchor=FileAnchor(path="a.py"), label="issue", subject="leak", origin=origin
    )
    assert sessions.dismiss("s1", "a" * 64, "upstream", 1000, finding=told)
    client.hset(KEYS.session_dismissed("s1"), "b" * 64, '{"reason": "old", "dismissed_ms": 1}')
    sessions.open_run(_record("r1"), [("reviewer", _participant("hawk"))], 2000)
    asked = _filing("r1", 1, sessions.next_finding_id("s1"))
    print_ = fingerprint(asked.findings[0])
    with_asked = Filing(
        first_id=asked.first_id,
        findings=asked.findings,
        report=asked.report,
        dismissals={print_: "a person said no"},
    )
    assert sessions.commit(_record("r1"), SETTLED, with_asked, 3000) is not None
    held = sessions.dismissals("s1")
    assert held["a" * 64].finding == told and held["b" * 64].finding is None
    assert held[print_].finding == asked.findings[0]


def test_commit_refuses_a_transition_from_another_state(client: Any) -> None:
    """Compare-and-set on the state: a judge's transition (from judging) on a run that is
    still open writes nothing; with no report stored there is nothing to return, so it
    raises RunNotSettled."""
    sessions = _sessions(client)
    sessions.open_run(_record("r1"), [("reviewer", _participant("hawk"))], 2000)
    judged = step("judging", "judge_settled")
    with pytest.raises(RunNotSettled):
        sessions.commit(_record("r1"), judged, _filing("r1", 1, 1), 3000)
    assert client.get(KEYS.session_issued("s1")) is None


def test_findings_attribute_ids_for_later_claims(client: Any) -> None:
    """Once findings are filed under an id, another meaning for it is refused."""
    sessions = _sessions(client)
    sessions.open_run(_record("r1"), [("reviewer", _participant("hawk", "m1"))], 2000)
    _settle(sessions, _record("r1"), 1, 3000)
    with pytest.raises(IdentityRefused):
        sessions.open_run(_record("r2"), [("reviewer", _participant("hawk", "m2"))], 4000)
    assert sessions.release("s1", "hawk")
    held = sessions.open_run(_record("r3"), [("reviewer", _participant("hawk", "m2"))], 4000)
    assert held[0].model == "m2"


def test_run_keys_expire_session_keys_stay(client: Any) -> None:
    """After settling, run keys carry the run retention and session keys the longer one."""
    sessions, runs, journals = _sessions(client), RunStore(client, KEYS), JournalStore(client, KEYS)
    rec = _record("r1")
    sessions.open_run(rec, [("reviewer", _participant("hawk"))], 2000)
    runs.put_inputs("r1", [_participant("hawk")], {"hawk": "p"}, b"T", {})
    n = journals.next_attempt("r1", "hawk")
    journals.append("r1", "hawk", n, "{}")
    _settle(sessions, rec, 1, 3000)
    for key in (
        KEYS.run("r1"),
        KEYS.run_tree("r1"),
        KEYS.journal("r1", "hawk", 1),
    ):
        assert 0 < client.ttl(key) <= 600, key
    for key in (KEYS.session_findings("s1"), KEYS.session_ledger("s1"), KEYS.session_issued("s1")):
        assert 600 < client.ttl(key) <= 3600, key


def test_every_key_is_under_the_prefix_and_distinct() -> None:
    """Every key shape starts with the prefix, and no two shapes collide."""
    keys = Keys("x:")
    shapes = keys.run_keys("r", ["p"], {"p": 2}) + keys.session_keys("s") + [keys.runs_index()]
    assert all(k.startswith("x:") for k in shapes)
    assert len(set(shapes)) == len(shapes)


def test_open_run_gives_the_run_its_ttl_and_indexes_it(client: Any) -> None:
    """A run expires even if it never settles: TTL = until its deadline + retention; it is
    listed as open (scored by its deadline) and as not yet dispatched, both on Redis's
    clock (the opener's wall clock may be off: here it says 2 s after the epoch)."""
    sessions = _sessions(client)
    rec = _record("r1", deadline_ms=2000 + 50_000)
    before = server_ms(client)
    sessions.open_run(rec, [("reviewer", _participant("hawk"))], now_ms=2000)
    after = server_ms(client)
    assert 600 + 40 <= client.ttl(KEYS.run("r1")) <= 600 + 51
    assert before + 50_000 <= client.zscore(KEYS.runs_open(), "r1") <= after + 50_000
    assert before <= client.zscore(KEYS.runs_undispatched(), "r1") <= after
    RunStore(client, KEYS).mark_dispatched("r1")
    assert client.zscore(KEYS.runs_undispatched(), "r1") is None


def test_the_runs_index_is_trimmed_by_age_at_one_opening_in_sixteen(client: Any) -> None:
    """Runs older than the run retention (their keys are gone) leave council:runs at an
    opening whose run id trims; one that does not trim leaves them (two commands saved)."""
    ids = [f"r{i}" for i in range(16_000)]
    trimming = [run_id for run_id in ids if trims_index(run_id)]
    assert 16_000 / 20 < len(trimming) < 16_000 / 12  # about one opening in 16
    keeping_id = next(run_id for run_id in ids if not trims_index(run_id))
    sessions = _sessions(client)
    client.zadd(KEYS.runs_index(), {"ancient": 1, "recent": 2_000_000})
    hawk: list[tuple[Role, Participant]] = [("reviewer", _participant("hawk"))]
    sessions.open_run(_record(keeping_id), hawk, now_ms=2_000_000)
    listed = {m.decode() for m in client.zrange(KEYS.runs_index(), 0, -1)}
    assert listed == {"ancient", "recent", keeping_id}
    sessions.open_run(_record(trimming[0], session="s2"), hawk, now_ms=2_000_000)
    listed = {m.decode() for m in client.zrange(KEYS.runs_index(), 0, -1)}
    assert listed == {"recent", trimming[0]}  # the first run's created_ms is 1000: old too


def test_put_inputs_with_a_ttl_sets_it_on_every_input(client: Any) -> None:
    runs = RunStore(client, KEYS)
    runs.put_inputs("r1", [_participant("hawk")], {"hawk": "p"}, b"T", {"hawk": b"#!x"}, ttl_s=99)
    for key in (
        KEYS.run_roster("r1"),
        KEYS.run("r1"),
        KEYS.run_tree("r1"),
        KEYS.run_program("r1", "hawk"),
        KEYS.run_state("r1"),
        KEYS.run_change("r1"),
    ):
        assert 0 < client.ttl(key) <= 99, key
