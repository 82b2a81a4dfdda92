"""Redis goes away for 15 s mid-round (SIGTERM or SIGKILL, AOF on), or pauses: nothing
any reviewer recorded or answered is lost, no worker exits, nobody is called lost."""

from __future__ import annotations

import signal
import time

import pytest

from tests.faults.lab import Lab, assert_filed_once

pytestmark = pytest.mark.integration

OUTAGE_S = 15.0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_redis_restart_mid_round_loses_nothing(lab: Lab, sig: signal.Signals) -> None:
    """Three reviewers record as they go; Redis stops 3 s in and is back 15 s later. The
    busy worker survives (kombu 5.7's restore at close is kept from running), the
    reviewers that finished meanwhile keep their outcomes and the entries they recorded
    during the outage, and the run settles ``settled`` with every finding filed once."""
    roster, subjects = lab.replay_roster(3, entries=3, latency_ms=9000)
    worker = lab.start_worker("w1", COUNCIL_VISIBILITY_TIMEOUT_S="300")
    review = lab.review(roster, COUNCIL_VISIBILITY_TIMEOUT_S="300")
    lab.wait_for("the first recorded entry", lambda: lab.journal_entries() >= 1)
    time.sleep(1.0)
    lab.stop_redis(sig)
    time.sleep(OUTAGE_S)
    lab.start_redis()
    _, stderr = review.communicate(timeout=120)
    assert review.returncode == 0, stderr
    assert worker.poll() is None, "the worker exited on the Redis restart"
    log = lab.log("w1")
    assert "Unrecoverable error" not in log
    report = lab.report()
    assert report["status"] == "settled", report["participants"]
    assert {p["state"] for p in report["participants"]} == {"answered"}
    assert_filed_once(report, subjects)
    client = lab.client()
    lab.wait_for("every ack", lambda: client.hlen("unacked") == 0, timeout_s=30)
    assert "journal_held" in log, "the outage did not fall while reviewers recorded"


def test_client_pause_mid_round_loses_nothing(lab: Lab) -> None:
    """CLIENT PAUSE 8 s mid-round (every client blocks, nothing is refused): the round
    settles whole, every finding filed once, the worker alive."""
    roster, subjects = lab.replay_roster(3, entries=3, latency_ms=6000)
    worker = lab.start_worker("w1")
    review = lab.review(roster)
    lab.wait_for("the first recorded entry", lambda: lab.journal_entries() >= 1)
    client = lab.client()
    client.execute_command("CLIENT", "PAUSE", "8000", "ALL")
    _, stderr = review.communicate(timeout=120)
    assert review.returncode == 0, stderr
    assert worker.poll() is None
    report = lab.report()
    assert report["status"] == "settled", report["participants"]
    assert_filed_once(report, subjects)


def test_network_link_cut_and_healed_loses_nothing(isolated_lab: Lab) -> None:
    """The link to Redis is cut for 20 s mid-round, then healed: no refusal, just lost
    packets (the hardest outage: every command waits for a timeout). Nothing is lost."""
    lab = isolated_lab
    roster, subjects = lab.replay_roster(3, entries=3, latency_ms=9000)
    worker = lab.start_worker("w1", COUNCIL_VISIBILITY_TIMEOUT_S="300")
    review = lab.review(roster, COUNCIL_VISIBILITY_TIMEOUT_S="300")
    lab.wait_for("the first recorded entry", lambda: lab.journal_entries() >= 1)
    time.sleep(1.0)
    lab.cut()
    time.sleep(20)
    lab.heal()
    _, stderr = review.communicate(timeout=180)
    assert review.returncode == 0, stderr
    assert worker.poll() is None, "the worker exited on the cut"
    report = lab.report()
    assert report["status"] == "settled", report["participants"]
    assert {p["state"] for p in report["participants"]} == {"answered"}
    assert_filed_once(report, subjects)
