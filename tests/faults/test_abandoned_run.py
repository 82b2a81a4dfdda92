"""A CLI that dies between opening its run and dispatching it: the next sweep of a
worker settles the run ``cancelled`` (the lifecycle's ``abandoned`` event), its claims
are released, and its keys expire."""

from __future__ import annotations

import json
import time

import pytest

from council.model.participant import Participant
from tests.faults.lab import Lab
from workers.settling.settle import ABANDONED_NOTE
from workers.stores.keys import Keys
from workers.stores.run_record import RunRecord
from workers.stores.runs import RunStore
from workers.stores.sessions import SessionStore

pytestmark = pytest.mark.integration


def test_a_run_opened_and_never_dispatched_is_cancelled_by_the_sweep(lab: Lab) -> None:
    keys = Keys("council:")
    client = lab.client()
    now = int(time.time() * 1000)
    p = Participant(id="hawk", backend="replay", model="", options={"answer": "a.txt"})
    record = RunRecord(
        run_id="deadbeef00000001",
        session="s1",
        mode="distributed",
        participants=("hawk",),
        created_ms=now,
        deadline_ms=now + 600_000,
    )
    # What `council review` does first; then its process dies before the chord is sent.
    sessions = SessionStore(client, keys, session_retention_s=3600, run_retention_s=600)
    sessions.open_run(record, [("reviewer", p)], now_ms=now)
    RunStore(client, keys).put_inputs(record.run_id, [p], {"hawk": "review"}, None, {}, ttl_s=900)
    assert client.ttl(keys.run(record.run_id)) > 600
    lab.start_worker("w1", COUNCIL_ABANDON_AFTER_S="2")
    lab.wait_for(
        "the sweep to cancel the run",
        lambda: client.hget(keys.run(record.run_id), "status") == b"cancelled",
        timeout_s=30,
    )
    report = json.loads(client.hget(keys.run(record.run_id), "report") or b"{}")
    assert ABANDONED_NOTE in report["notes"]
    assert [s["state"] for s in report["participants"]] == ["stopped"]
    assert client.hget(keys.session_open("s1"), record.run_id) is None
    assert 0 < client.ttl(keys.run(record.run_id)) <= 7 * 24 * 3600  # the retention
    assert client.zscore(keys.runs_open(), record.run_id) is None
    client.close()
