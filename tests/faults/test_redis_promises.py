"""``council worker`` says at start what the Redis it reaches promises (AOF, fsync,
replicas, ``maxmemory-policy``), warns for an evicting policy and for no persistence, and
does not start against a read-only replica (exit 3, not 0)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from typing import Any

import pytest
import redis

from tests.faults.lab import Lab
from tests.services import free_port

pytestmark = pytest.mark.integration


def _lines_until(proc: subprocess.Popen[str], event: str, n: int = 1) -> list[dict[str, Any]]:
    assert proc.stdout is not None
    seen: list[dict[str, Any]] = []
    for raw in proc.stdout:
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        seen.append(line)
        if sum(1 for e in seen if e.get("event") == event) == n:
            return seen
    raise AssertionError(f"no {event} line: {seen}")


def test_the_start_line_says_what_redis_promises_and_warns(lab: Lab) -> None:
    client = lab.client()
    client.config_set("appendonly", "no")
    client.config_set("maxmemory-policy", "allkeys-lru")
    proc = lab.worker_process(lab.url)
    lines = _lines_until(proc, "redis_promise_weak", 2)
    proc.kill()
    (said,) = [line for line in lines if line["event"] == "redis_promises"]
    assert said["appendonly"] is False and said["maxmemory_policy"] == "allkeys-lru"
    assert said["role"] == "master" and said["replicas"] == 0
    weak = [line for line in lines if line["event"] == "redis_promise_weak"]
    assert len(weak) == 2, lines
    assert all(line["level"] == "warning" for line in weak), weak


def test_a_worker_started_against_a_replica_exits_3(lab: Lab) -> None:
    port = free_port()
    binary = shutil.which("redis-server")
    assert binary is not None
    primary = ["--replicaof", "127.0.0.1", str(lab.port)]
    replica = subprocess.Popen(
        [binary, "--port", str(port), "--save", "", "--dir", str(lab.tmp), *primary],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    lab.children.append(replica)
    url = f"redis://127.0.0.1:{port}/0"
    probe = redis.Redis.from_url(url)
    lab.wait_for("the replica", lambda: _answers(probe), timeout_s=15)
    proc = lab.worker_process(url)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 3, out
    assert "read-only replica" in out
    assert '"worker_failed"' in out


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        time.sleep(0.1)
        return False
