"""``COUNCIL_DURABILITY``: the filing must reach a replica (``WAIT``) or the AOF on disk
(``WAITAOF``, Redis 7.2+) before ``council review`` reports the run settled; a Redis that
cannot give it is refused before the run opens, in one line."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest
import redis

from tests.faults.lab import Lab
from tests.services import free_port

pytestmark = pytest.mark.integration


@pytest.fixture
def replica(lab: Lab) -> Iterator[subprocess.Popen[bytes]]:
    """A redis-server replicating the lab's, connected."""
    port = free_port()
    data = lab.tmp / "replica"
    data.mkdir()
    binary = shutil.which("redis-server")
    assert binary is not None
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(data),
            "--save",
            "",
            "--replicaof",
            "127.0.0.1",
            str(lab.port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    client = lab.client()
    lab.wait_for("the replica", lambda: int(client.info("replication")["connected_slaves"]) >= 1)
    client.close()
    yield proc
    proc.send_signal(signal.SIGCONT)
    proc.kill()
    proc.wait(timeout=10)


def _version(lab: Lab) -> tuple[int, ...]:
    client: redis.Redis = lab.client()
    try:
        text = str(client.info("server")["redis_version"])
    finally:
        client.close()
    return tuple(int(p) for p in text.split(".")[:2])


def test_aof_durability_is_refused_before_7_2_in_one_line(lab: Lab) -> None:
    if _version(lab) >= (7, 2):
        pytest.skip("this Redis has WAITAOF")
    roster, _ = lab.replay_roster(1, entries=1, latency_ms=100)
    review = lab.review(roster, COUNCIL_DURABILITY="aof")
    _, stderr = review.communicate(timeout=120)
    assert review.returncode == 3, stderr
    said = [line for line in stderr.splitlines() if "COUNCIL_DURABILITY=aof" in line]
    assert len(said) == 1 and "Redis 7.2" in said[0], stderr
    assert lab.journal_entries() == 0 and not (lab.tmp / "report.json").exists()


def test_replica_durability_without_a_replica_is_refused(lab: Lab) -> None:
    roster, _ = lab.replay_roster(1, entries=1, latency_ms=100)
    review = lab.review(roster, COUNCIL_DURABILITY="replicas:1")
    _, stderr = review.communicate(timeout=120)
    assert review.returncode == 3, stderr
    assert "needs 1 replica(s), and this Redis has 0 connected" in stderr, stderr


def test_replica_durability_confirmed(lab: Lab, replica: subprocess.Popen[bytes]) -> None:
    roster, _ = lab.replay_roster(2, entries=2, latency_ms=1000)
    lab.start_worker("w1")
    review = lab.review(roster, COUNCIL_DURABILITY="replicas:1")
    _, stderr = review.communicate(timeout=120)
    assert review.returncode == 0, stderr
    assert lab.report()["status"] == "settled"


def test_a_replica_that_stops_answering_fails_the_review(
    lab: Lab, replica: subprocess.Popen[bytes]
) -> None:
    """The replica is frozen mid-round: the filing is not confirmed, exit 3 in one line."""
    roster, _ = lab.replay_roster(2, entries=2, latency_ms=3000)
    lab.start_worker("w1")
    review = lab.review(
        roster, COUNCIL_DURABILITY="replicas:1", COUNCIL_DURABILITY_TIMEOUT_MS="1500"
    )
    lab.wait_for("the first recorded entry", lambda: lab.journal_entries() >= 1)
    replica.send_signal(signal.SIGSTOP)
    time.sleep(0.2)
    _, stderr = review.communicate(timeout=120)
    assert review.returncode == 3, stderr
    assert "not confirmed durable" in stderr and "0 of 1 replicas" in stderr, stderr
