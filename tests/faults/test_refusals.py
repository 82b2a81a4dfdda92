"""Redis refuses writes for 15 s mid-round (``maxmemory`` reached under ``noeviction``,
then raised): every recorded finding is filed once, or the run ends exit 3 naming whose
findings could not be kept, never exit 0/1 with findings missing; no second copy of a
reviewer starts while the first runs (a refused lease beat is not a lost worker). Refused
to the end, the review writes a report of what Redis held and exits 3. Source:
docs/operating.md "Redis"."""

from __future__ import annotations

import json
import time
from typing import cast

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


def test_writes_refused_to_the_end_end_in_a_report_naming_the_loss(lab: Lab) -> None:
    """Redis refuses writes from the first recorded entry to the end (never raised): the
    review does not wait forever. Past the run's deadline and the waiter's outage budget
    it writes a report made from what Redis held (status ``open``, a note saying it is not
    kept, every reviewer without a stored outcome named), showing every entry Redis kept,
    and exits 3."""
    roster, _ = lab.replay_roster(3, entries=5, latency_ms=6000, backstop_ms=20000)
    workers = [lab.start_worker(name, COUNCIL_VISIBILITY_TIMEOUT_S="300") for name in ("w1", "w2")]
    review = lab.review(
        roster, COUNCIL_VISIBILITY_TIMEOUT_S="300", COUNCIL_WATCHDOG_SLACK_MS="5000"
    )
    lab.wait_for("the first recorded entry", lambda: lab.journal_entries() >= 1)
    client = lab.client()
    client.config_set("maxmemory", 1)
    _, stderr = review.communicate(timeout=400)
    assert review.returncode == 3, stderr
    assert "cannot be filed" in stderr and "Traceback" not in stderr, stderr
    assert all(w.poll() is None for w in workers), "a worker exited on the refusals"
    kept = {
        json.loads(row)["subject"]
        for key in client.scan_iter(match="council:run:*:journal:*")
        for row in cast(list[bytes], client.lrange(key, 0, -1))
    }
    report = lab.report()
    assert report["status"] == "open", report["status"]
    assert any("not kept" in note and "refused writes" in note for note in report["notes"])
    shown = {t["subject"] for f in report["findings"] for t in (f, *f.get("members", ()))}
    assert kept and kept <= shown, kept
    unheard = {p["id"] for p in report["participants"] if p["state"] != "answered"}
    assert unheard, report["participants"]
    assert all(p in stderr for p in unheard), stderr
