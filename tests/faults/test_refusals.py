"""Redis refuses writes for 15 s mid-round (``maxmemory`` reached under ``noeviction``,
then raised): every recorded finding is filed once, or the run ends exit 3 naming whose
findings could not be kept, never exit 0/1 with findings missing; no second copy of a
reviewer starts while the first runs (a refused lease beat is not a lost worker)."""

from __future__ import annotations

import time

import pytest

from tests.faults.lab import Lab, assert_filed_once

pytestmark = pytest.mark.integration

REFUSAL_S = 15.0


def test_writes_refused_for_a_while_lose_nothing(lab: Lab) -> None:
    roster, subjects = lab.replay_roster(3, entries=5, latency_ms=12000)
    workers = [lab.start_worker(name, COUNCIL_VISIBILITY_TIMEOUT_S="300") for name in ("w1", "w2")]
    review = lab.review(roster, COUNCIL_VISIBILITY_TIMEOUT_S="300")
    lab.wait_for("the first recorded entry", lambda: lab.journal_entries() >= 1)
    client = lab.client()
    # One byte, not "used + 1 KiB": memory that drops back under a near limit lets our
    # writes through again, and the refusal this test is about never reaches them.
    client.config_set("maxmemory", 1)
    lab.wait_for(
        "a refused write",
        lambda: any("OOM" in lab.log(n) or "maxmemory" in lab.log(n) for n in ("w1", "w2")),
        timeout_s=30,
    )
    time.sleep(REFUSAL_S)
    client.config_set("maxmemory", 0)
    _, stderr = review.communicate(timeout=180)
    logs = {n: lab.log(n) for n in ("w1", "w2")}
    assert all(w.poll() is None for w in workers), "a worker exited on the refusals"
    assert not any("participant_redispatched" in log for log in logs.values()), (
        "a second copy of a reviewer started while the first ran"
    )
    assert review.returncode in (0, 3), stderr
    report = lab.report()
    if review.returncode == 0:
        assert report["status"] == "settled", report["participants"]
        assert_filed_once(report, subjects)
    else:
        assert report["status"] == "partial", report["participants"]
        assert "Traceback" not in stderr, stderr
    assert any("redis_refused" in log or "journal_held" in log for log in logs.values())
