"""The batched store methods a ``council.review_batch`` uses, on fakeredis (the same tests
run on a real redis-server in tests/integration/test_stores_batched_real.py).

Each test also counts the round trips the method cost (tests.roundtrips): the point of
these methods is that a batch of N participants pays one, not N.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import fakeredis
import pytest

from council.asks.ask import Ask
from council.asks.paused import Paused
from council.asks.pending import Answer
from council.model.participant import Participant
from council.round.outcome import ParticipantOutcome
from tests.roundtrips import CountingClient
from workers.stores.journal import JournalStore
from workers.stores.keys import Keys
from workers.stores.run_progress import Settled
from workers.stores.run_record import Progress, RunRecord
from workers.stores.runs import RunStore

KEYS = Keys("council:")


@pytest.fixture
def client() -> Iterator[Any]:
    """An in-process fakeredis client (with Lua)."""
    yield fakeredis.FakeRedis(server=fakeredis.FakeServer())


def _participant(pid: str) -> Participant:
    return Participant(id=pid, backend="replay", model="m1", options={"answer": "a.txt"})


def _outcome(pid: str, status: str = "answered") -> ParticipantOutcome:
    return ParticipantOutcome.model_validate({"participant": pid, "status": status})


def _stored_run(client: Any) -> RunStore:
    runs = RunStore(client, KEYS)
    client.hset(
        KEYS.run("r1"),
        "record",
        RunRecord(run_id="r1", session="s1", participants=("hawk", "owl")).model_dump_json(),
    )
    runs.put_inputs(
        "r1",
        [_participant("hawk"), _participant("owl")],
        {"hawk": "prompt h", "owl": "prompt o"},
        None,
        {"owl": b"#!prog"},
        change="diff text",
    )
    return runs


def test_batch_inputs_reads_everything_in_one_round_trip(client: Any) -> None:
    """Record, diff, participants, prompts, outcomes and programs come back in one trip;
    ids not found are absent from the maps."""
    _stored_run(client).put_outcome("r1", _outcome("hawk"), "answer h")
    counting = CountingClient(client)
    got = RunStore(counting, KEYS).batch_inputs("r1", ["hawk", "owl", "ghost"])
    assert counting.round_trips == 1
    assert got.record is not None and got.record.session == "s1"
    assert got.change == "diff text"
    assert got.participants == {"hawk": _participant("hawk"), "owl": _participant("owl")}
    assert got.prompts == {"hawk": "prompt h", "owl": "prompt o"}
    assert got.outcomes == {"hawk": _outcome("hawk")}
    assert got.programs == {"owl": b"#!prog"}


def test_batch_inputs_of_an_unknown_run_is_empty(client: Any) -> None:
    """An expired run: no record, no diff, nothing found for any id."""
    got = RunStore(client, KEYS).batch_inputs("gone", ["hawk"])
    assert got.record is None and got.change == ""
    assert got.participants == got.prompts == got.outcomes == got.programs == {}


def test_start_attempts_counts_and_shows_running(client: Any) -> None:
    """Each participant's counter goes up by one (shared with next_attempt) and its
    progress is ``running`` with that attempt, all in one round trip."""
    runs = _stored_run(client)
    JournalStore(client, KEYS).next_attempt("r1", "owl")
    counting = CountingClient(client)
    attempts = RunStore(counting, KEYS).start_attempts("r1", ["hawk", "owl"], 5_000)
    assert counting.round_trips == 1
    assert attempts == {"hawk": 1, "owl": 2}
    assert JournalStore(client, KEYS).attempts("r1", "owl") == 2
    progress = runs.progress("r1")
    assert progress["hawk"] == Progress(
        state="running", started_ms=5_000, updated_ms=5_000, attempt=1
    )
    assert progress["owl"].attempt == 2 and progress["owl"].state == "running"


def test_put_outcomes_first_wins_answer_and_progress_with_it(client: Any) -> None:
    """A stored outcome is kept (and returned); a new one is stored with its answer and
    progress; one round trip for both."""
    runs = _stored_run(client)
    runs.put_outcome("r1", _outcome("hawk", "stopped"), "first answer")
    runs.set_progress("r1", "hawk", Progress(state="stopped", attempt=1))
    counting = CountingClient(client)
    kept = RunStore(counting, KEYS).put_outcomes(
        "r1",
        [
            Settled(_outcome("hawk"), "second answer", Progress(state="answered", attempt=2)),
            Settled(_outcome("owl"), "owl answer", Progress(state="answered", attempt=1)),
        ],
    )
    assert counting.round_trips == 1
    assert kept == {"hawk": _outcome("hawk", "stopped")}
    assert runs.outcome("r1", "hawk") == _outcome("hawk", "stopped")
    assert runs.answer("r1", "hawk") == "first answer"
    assert runs.progress("r1")["hawk"] == Progress(state="stopped", attempt=1)
    assert runs.outcome("r1", "owl") == _outcome("owl")
    assert runs.answer("r1", "owl") == "owl answer"
    assert runs.progress("r1")["owl"] == Progress(state="answered", attempt=1)


def test_set_progress_many_is_one_write(client: Any) -> None:
    """Several participants' progress in one round trip; nothing sent for none."""
    runs = _stored_run(client)
    counting = CountingClient(client)
    store = RunStore(counting, KEYS)
    store.set_progress_many("r1", {})
    assert counting.round_trips == 0
    store.set_progress_many(
        "r1", {"hawk": Progress(state="failed"), "owl": Progress(state="stopped")}
    )
    assert counting.round_trips == 1
    assert {p: s.state for p, s in runs.progress("r1").items()} == {
        "hawk": "failed",
        "owl": "stopped",
    }


def test_read_all_many_reads_every_attempt_in_one_round_trip(client: Any) -> None:
    """Every attempt's entries per participant, in order; none for one never started."""
    j = JournalStore(client, KEYS)
    for entry in ("a", "b"):
        j.append("r1", "hawk", j.next_attempt("r1", "hawk"), entry)
    j.append("r1", "hawk", 2, "c")
    j.next_attempt("r1", "owl")
    counting = CountingClient(client)
    got = JournalStore(counting, KEYS).read_all_many("r1", ["hawk", "owl", "ghost"])
    assert counting.round_trips == 1
    assert got == {"hawk": [[b"a"], [b"b", b"c"]], "owl": [[]], "ghost": []}
    assert got["hawk"] == j.read_all("r1", "hawk")


def test_read_all_many_from_a_known_attempt_reads_a_racing_later_one_too(client: Any) -> None:
    """Given the attempt each caller runs, the lists are read with no script, in one
    round trip; a later attempt that started meanwhile (a redelivery racing this one) is
    read in one more, so its entries are not lost; the result is read_all's."""
    j = JournalStore(client, KEYS)
    for entry in ("a", "b"):
        j.append("r1", "hawk", j.next_attempt("r1", "hawk"), entry)
    j.append("r1", "hawk", 2, "c")
    j.append("r1", "owl", j.next_attempt("r1", "owl"), "o")
    counting = CountingClient(client)
    got = JournalStore(counting, KEYS).read_all_many("r1", ["owl"], {"owl": 1})
    assert (got, counting.round_trips) == ({"owl": [[b"o"]]}, 1)
    got = JournalStore(counting, KEYS).read_all_many("r1", ["hawk", "owl"], {"hawk": 1, "owl": 1})
    assert counting.round_trips == 1 + 2
    assert got == {"hawk": [[b"a"], [b"b", b"c"]], "owl": [[b"o"]]}
    assert got["hawk"] == j.read_all("r1", "hawk")


def test_resumptions_read_every_answered_pause_in_one_round_trip(client: Any) -> None:
    """Each participant's answered pause comes back as resumption() reads it, in one
    trip; a pause without its answer yet, and no pause, are absent."""
    runs = _stored_run(client)
    for pid in ("hawk", "owl"):
        paused = Paused(ask=Ask(question=f"{pid}?"), call_id="c1", messages=[], replies=[])
        runs.put_pause("r1", pid, paused)
    client.hset(KEYS.run_pause("r1", "hawk"), "answer", Answer(value="yes").model_dump_json())
    counting = CountingClient(client)
    got = RunStore(counting, KEYS).resumptions("r1", ["hawk", "owl", "ghost"])
    assert counting.round_trips == 1
    assert got == {"hawk": runs.resumption("r1", "hawk")}
    assert got["hawk"].answer.value == "yes" and runs.resumption("r1", "owl") is None
