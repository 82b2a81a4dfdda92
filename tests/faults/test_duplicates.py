"""Duplicate delivery: every reviewer task and the consolidation delivered again, during
the round and after it settled. Each finding is filed once; the settled report stands."""

from __future__ import annotations

import time

import pytest
from celery import Celery

from tests.faults.lab import Lab, assert_filed_once
from workers.stores.keys import Keys
from workers.stores.run_record import PROTOCOL

pytestmark = pytest.mark.integration


def test_duplicate_reviewers_and_consolidations_file_once(lab: Lab) -> None:
    roster, subjects = lab.replay_roster(3, entries=3, latency_ms=3000)
    lab.start_worker("w1")
    review = lab.review(roster)
    client = lab.client()
    keys = Keys("council:")
    lab.wait_for("the run to open", lambda: client.zcard(keys.runs_index()) == 1)
    run_id = client.zrange(keys.runs_index(), 0, 0)[0].decode()
    sender = Celery("dup", broker=lab.url, backend=lab.url)

    def duplicate() -> None:
        for pid in ("r0", "r1", "r2"):
            sender.send_task(
                "council.review_participant",
                kwargs={"run_id": run_id, "participant": pid, "protocol": PROTOCOL},
                queue="council.default",
            )
        sender.send_task(
            "council.consolidate",
            kwargs={"results": [], "run_id": run_id},
            queue="council.consolidate",
        )

    lab.wait_for("the first recorded entry", lambda: lab.journal_entries() >= 1)
    duplicate()  # while the round runs
    _, stderr = review.communicate(timeout=120)
    assert review.returncode == 0, stderr
    first = lab.report()
    assert first["status"] == "settled", first["participants"]
    assert_filed_once(first, subjects)
    issued = int(client.get(keys.session_issued(first["session"])) or 0)
    duplicate()  # after it settled
    lab.wait_for(
        "the duplicates to be consumed",
        lambda: client.llen("council.default") == 0 and client.llen("council.consolidate") == 0,
    )
    time.sleep(3)
    assert int(client.get(keys.session_issued(first["session"])) or 0) == issued
    stored = client.hget(keys.run(run_id), "status")
    assert stored == b"settled"
    assert len(client.hgetall(keys.session_findings(first["session"]))) == len(subjects)
    sender.close()
    client.close()
