"""Redis behind Sentinel (a master, a replica, one sentinel): the master is killed mid-round
(or failed over alive), the sentinel promotes the replica, the old master becomes a
replica. The workers and the review, given the Sentinel URL, ride it out as an outage that
ends: every recorded finding filed once, or exit 3 naming whose findings were lost
(asynchronous replication can drop the last writes), never exit 0 with findings missing;
no worker exits, and the same workers serve the next round. A worker whose plain-URL Redis
turns replica waits for a master instead of exiting. A worker that cannot serve (no
sentinel answers, or a URL without a master's name) exits non-zero with one line saying
why."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
import redis

from tests.faults.lab import Lab, assert_filed_once
from tests.gitrepo import ROOT
from tests.services import free_port

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("how", ["sigkill", "sentinel-failover"])
def test_master_lost_mid_round_fails_over(lab: Lab, how: str) -> None:
    """``sigkill``: the master dies (kill -9) and comes back after the failover, to be made
    a replica. ``sentinel-failover``: ``SENTINEL FAILOVER`` promotes the replica while the
    old master still serves; the sentinel demotes it seconds later, mid-round (its clients'
    waiting ``BRPOP`` gets ``UNBLOCKED``, then they are killed)."""
    lab.start_sentinel()
    old_master = lab.port
    roster, subjects = lab.replay_roster(3, entries=5, latency_ms=25000, backstop_ms=90000)
    workers = [lab.start_worker(name, COUNCIL_VISIBILITY_TIMEOUT_S="300") for name in ("w1", "w2")]
    review = lab.review(roster, COUNCIL_VISIBILITY_TIMEOUT_S="300")
    lab.wait_for("the first recorded entry", lambda: lab.journal_entries() >= 1)
    time.sleep(1.0)
    if how == "sigkill":
        lab.stop_redis(signal.SIGKILL)
    else:
        lab.sentinel_failover()
    lab.wait_for(
        "the sentinel to promote the replica",
        lambda: lab.sentinel_master() not in (None, old_master),
        timeout_s=60,
    )
    assert review.poll() is None, f"the round ended before the failover: {review.communicate()}"
    if how == "sigkill":
        lab.start_redis()  # the old master is back; the sentinel makes it a replica
    else:
        old: Any = lab.client()
        lab.wait_for(
            "the sentinel to demote the old master",
            lambda: old.info("replication").get("role") == "slave",
            timeout_s=60,
        )
        assert review.poll() is None, f"the round ended before the demotion: {review.communicate()}"
    _, stderr = review.communicate(timeout=240)
    logs = {n: lab.log(n) for n in ("w1", "w2")}
    assert all(w.poll() is None for w in workers), "a worker exited on the failover"
    assert not any("Unrecoverable error" in log for log in logs.values())
    assert review.returncode in (0, 1, 3), stderr
    report = lab.report()
    (lab.tmp / "report-failover.json").write_text(json.dumps(report))  # for a person to read
    if review.returncode in (0, 1):
        assert report["status"] == "settled", report["participants"]
        assert_filed_once(report, subjects)
    else:  # writes the replica had not received are lost: said, never filed as whole
        assert report["status"] == "partial", report["participants"]
        assert "Traceback" not in stderr, stderr
        unheard = {
            p["id"]
            for p in report["participants"]
            if p["state"] != "answered" or p.get("read_in_part") or p.get("unread")
        }
        assert unheard, report["participants"]
        missing = subjects - {f["subject"] for f in report["findings"]}
        assert all(any(f"finding {pid}-" in s for pid in unheard) for s in missing), missing
    assert all("Connection to broker lost" in log for log in logs.values()), "no failover met"
    # The outage ended: the same workers serve a whole round on the new master.
    roster, _ = lab.replay_roster(2, entries=2, latency_ms=500)
    again = lab.review(roster, COUNCIL_VISIBILITY_TIMEOUT_S="300")
    _, stderr = again.communicate(timeout=120)
    assert again.returncode == 0, stderr
    report = lab.report()
    assert report["status"] == "settled", report["participants"]
    assert {p["state"] for p in report["participants"]} == {"answered"}
    assert all(w.poll() is None for w in workers), "a worker exited after the failover"


def _failed_line(out: str) -> dict[str, object]:
    """The worker's one ``worker_failed`` line."""
    lines = [json.loads(raw) for raw in out.splitlines() if raw.startswith("{")]
    (failed,) = [line for line in lines if line.get("event") == "worker_failed"]
    return dict(failed)


def test_a_worker_no_sentinel_answers_exits_3(lab: Lab) -> None:
    url = f"sentinel://:s3cret@127.0.0.1:{free_port()}/0?master_name=council"
    proc = lab.worker_process(url)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 3, out
    failed = _failed_line(out)
    assert "sentinel://:***@127.0.0.1" in str(failed["message"]), failed
    assert "s3cret" not in out


def _cli_runs(url: str) -> subprocess.CompletedProcess[str]:
    """``council runs`` on ``url``, as a child process."""
    env = {**os.environ, "COUNCIL_REDIS_URL": url}
    argv = [sys.executable, "-m", "workers.cli", "runs"]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=90)


def test_the_cli_no_sentinel_answers_says_so_in_one_short_line() -> None:
    """redis-py's message listed each sentinel's client object (900 characters) and the
    advice was to start redis-server: the line names the sentinels instead."""
    ports = free_port(), free_port()
    url = ";".join(f"sentinel://:s3cret@127.0.0.1:{p}" for p in ports)
    done = _cli_runs(url + "/0?master_name=council")
    assert done.returncode == 3, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert f"no sentinel answered (127.0.0.1:{ports[0]}, 127.0.0.1:{ports[1]})" in line
    assert "Start the sentinels there" in line and len(line) < 400
    assert "s3cret" not in done.stderr


def test_the_cli_given_a_master_name_the_sentinels_lack_names_it(lab: Lab) -> None:
    url = lab.start_sentinel()
    done = _cli_runs(url.replace("master_name=council", "master_name=cuoncil"))
    assert done.returncode == 3, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "know no master named 'cuoncil'" in line and "SENTINEL masters" in line, line
    assert len(line) < 400


def test_a_worker_given_a_sentinel_url_without_a_master_name_exits_2(lab: Lab) -> None:
    proc = lab.worker_process("sentinel://127.0.0.1:26379/0")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2, out
    (line,) = out.splitlines()  # refused while reading the settings, before any JSON line
    assert "master_name" in line and "COUNCIL_REDIS_URL" in line, out


def test_a_worker_whose_redis_becomes_a_replica_waits_for_a_master(lab: Lab) -> None:
    """Pointed at a master that a failover turns into a replica (no Sentinel URL): the
    worker's ``READONLY`` is a lost connection it retries, not an exit; once its Redis is
    a master again the worker serves a whole round."""
    worker = lab.start_worker("w1")
    binary = shutil.which("redis-server")
    assert binary is not None
    other = subprocess.Popen(
        [binary, "--port", str(port := free_port()), "--save", "", "--dir", str(lab.tmp)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    lab.children.append(other)
    client = lab.client()
    lab.wait_for("the other redis", lambda: _answers_on(port), timeout_s=15)
    client.replicaof("127.0.0.1", str(port))
    lab.wait_for(
        "the worker to meet the replica",
        lambda: "read only replica" in lab.log("w1") or worker.poll() is not None,
        timeout_s=30,
    )
    time.sleep(3.0)  # a few reconnects against the replica
    assert worker.poll() is None, lab.log("w1")[-3000:]
    client.replicaof("NO", "ONE")
    roster, subjects = lab.replay_roster(1, entries=3, latency_ms=500)
    review = lab.review(roster)
    _, stderr = review.communicate(timeout=120)
    assert review.returncode == 0, stderr
    report = lab.report()
    assert report["status"] == "settled", report["participants"]
    assert_filed_once(report, subjects)
    assert worker.poll() is None
    assert "Unrecoverable error" not in lab.log("w1")


def _answers_on(port: int) -> bool:
    try:
        return bool(redis.Redis(port=port, socket_timeout=1).ping())
    except redis.ConnectionError:
        return False
