"""A worker is SIGKILLed mid-review while another is alive: its lease lapses, a sweep
sends the participant again at once, and the run settles whole, long before the
visibility timeout (2 h here, its default) would have redelivered anything."""

from __future__ import annotations

import json
import time

import pytest

from tests.faults.lab import Lab, assert_filed_once

pytestmark = pytest.mark.integration

BACKSTOP_MS = 20_000


def test_worker_killed_mid_review_is_sent_again_in_seconds(lab: Lab) -> None:
    # 15 s a review: w2 takes seconds to start on a busy machine, and w1 must still be
    # mid-review when it is killed (at 6 s it once finished first and nothing was lost).
    roster, subjects = lab.replay_roster(2, entries=3, latency_ms=15_000, backstop_ms=BACKSTOP_MS)
    lab.start_worker("w1")
    started = time.monotonic()
    review = lab.review(roster)
    lab.wait_for("the first recorded entry", lambda: lab.journal_entries() >= 2)
    lab.start_worker("w2")
    time.sleep(1.0)
    assert "review_finished" not in lab.log("w1"), "w1 finished before it could be killed"
    lab.kill_worker("w1")
    _, stderr = review.communicate(timeout=120)
    took = time.monotonic() - started
    assert review.returncode == 0, stderr
    report = lab.report()
    assert report["status"] == "settled", report["participants"]
    assert {p["state"] for p in report["participants"]} == {"answered"}
    assert all(p["attempts"] >= 2 for p in report["participants"])
    assert_filed_once(report, subjects)
    # Minutes at most, against the 2 h visibility timeout that would otherwise redeliver it.
    assert took < 300, f"settled after {took:.0f} s"
    entries = [json.loads(line) for line in lab.log("w2").splitlines() if line.strip()]
    sent = [e for e in entries if e["event"] == "participant_redispatched"]
    assert sent
    for line in sent:
        assert (line["level"], line["session"]) == ("warning", report["session"]), line
        assert line["run_id"] == report["run_id"] and line["task_id"], line
        task = [e for e in entries if e.get("task_id") == line["task_id"]]
        assert {e["event"] for e in task} >= {"task_started", "review_finished"}, task
        # The new task's every line, Celery's "received" first, says the attempt it ran.
        assert {e["attempt"] for e in task} == {line["lost_attempt"] + 1}, task
        assert {e["participant"] for e in task} == {line["participant"]}, task
