"""The whole council on a real redis-server and real ``celery worker`` processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from council.errors import IdentityRefused
from council.model.participant import Participant
from tests.gitrepo import ROOT, project_history_repo
from tests.services import review_argv
from workers.stores.keys import Keys
from workers.stores.run_record import RunRecord
from workers.stores.sessions import SessionStore

pytestmark = pytest.mark.integration


def council(
    *args: str, env: dict[str, str], timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """Run the ``council`` CLI as a user would, in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "workers.cli", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_example_roster_reviews_real_history(
    redis_url: str, start_worker: Any, tmp_path: Path
) -> None:
    """ruff, bandit and the script reviewer review a real commit through Redis and a worker."""
    repo, base = project_history_repo(tmp_path / "repo")
    start_worker("w1")
    out = tmp_path / "report.json"
    done = council(
        "review",
        "--repo",
        str(repo),
        "--base",
        base,
        "--roster",
        str(ROOT / "examples/council.toml"),
        "--json",
        str(out),
        "--fail-on",
        "never",
        "--no-progress",
        env={"COUNCIL_REDIS_URL": redis_url},
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    states = {p["id"]: p["state"] for p in report["participants"]}
    assert report["status"] == "settled", report["participants"]
    assert states == {"ruff": "answered", "bandit": "answered", "smells": "answered"}
    by_origin: dict[str, list[dict[str, Any]]] = {}
    for f in report["findings"]:
        by_origin.setdefault(f["origin"]["participant"], []).append(f)
        assert f["anchor"]["path"] == "tools/runner.py"
        assert f["anchor"]["witness"] == report["head"]
    assert any("F401" in f["subject"] for f in by_origin["ruff"])
    assert any("B602" in f["subject"] for f in by_origin["bandit"])
    assert any("print" in f["subject"].lower() for f in by_origin["smells"])
    assert [f["id"] for f in report["findings"]] == list(range(1, len(report["findings"]) + 1))
    gated = council(
        "review",
        "--repo",
        str(repo),
        "--base",
        base,
        "--roster",
        str(ROOT / "examples/council.toml"),
        "--fail-on",
        "minor",
        "--no-progress",
        env={"COUNCIL_REDIS_URL": redis_url},
    )
    assert gated.returncode == 1, gated.stderr
    listed = council("runs", env={"COUNCIL_REDIS_URL": redis_url})
    assert listed.stdout.count("settled") == 2


def _replay_roster(tmp_path: Path, latency_ms: int, backstop_ms: int = 20000) -> Path:
    entries = [
        {
            "subject": f"Journal finding {i}",
            "label": "issue",
            "severity": "minor",
            "location": {"kind": "file", "file": "tools/runner.py"},
        }
        for i in range(3)
    ]
    (tmp_path / "journal.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    (tmp_path / "answer.txt").write_text(json.dumps({"findings": entries[:1]}))
    roster = tmp_path / "council.toml"
    roster.write_text(
        f"[council]\nbackstop_ms = {backstop_ms}\nidle_ms = {backstop_ms}\nanswer_ms = 0\n\n"
        '[[reviewers]]\nid = "slow"\nbackend = "replay"\nanswer = "answer.txt"\n'
        f'journal = "journal.jsonl"\nlatency_ms = {latency_ms}\n'
    )
    return roster


def test_worker_killed_mid_review_settles_once(
    redis_url: str, start_worker: Any, tmp_path: Path, real_redis: redis.Redis
) -> None:
    """SIGKILL mid-review: the task is redelivered, the council settles, nothing is filed twice."""
    repo, base = project_history_repo(tmp_path / "repo")
    roster = _replay_roster(tmp_path, latency_ms=6000, backstop_ms=8000)
    env = {"COUNCIL_REDIS_URL": redis_url, "COUNCIL_VISIBILITY_TIMEOUT_S": "20"}
    first = start_worker("w1", env=env)
    out = tmp_path / "report.json"
    review = subprocess.Popen(
        review_argv(repo, base, roster, out, "--fail-on", "never"),
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not any(True for _ in real_redis.scan_iter(match="council:run:*:journal:slow:1")):
        assert time.monotonic() < deadline, "the review never started"
        time.sleep(0.1)
    time.sleep(1.0)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=10)
    start_worker("w2", env=env)
    _, stderr = review.communicate(timeout=180)
    assert review.returncode == 0, stderr
    report = json.loads(out.read_text())
    subjects = [f["subject"] for f in report["findings"]]
    assert sorted(subjects) == [f"Journal finding {i}" for i in range(3)]
    assert report["participants"][0]["attempts"] >= 2
    # Whichever came first (the sweep's new task or the message redelivered), each task
    # w2 ran says one attempt on every line, from Celery's "received" on.
    entries = [
        json.loads(line)
        for line in (tmp_path / "w2.log").read_text().splitlines()
        if line.strip()
    ]
    ran = {e["task_id"] for e in entries if e["event"] == "review_finished"}
    assert ran
    for task_id in ran:
        lines = [e for e in entries if e.get("task_id") == task_id]
        assert len({e["attempt"] for e in lines}) == 1, lines
        assert lines[0]["attempt"] >= 2 and lines[0]["run_id"] == report["run_id"], lines


def test_two_coordinators_one_id_exactly_one_wins(real_redis: redis.Redis) -> None:
    """Two coordinators claim one id with different meanings at once: exactly one opens a run."""
    keys = Keys()
    wins: list[str] = []
    refusals: list[str] = []
    for round_no in range(10):
        barrier = threading.Barrier(2)

        def claim(
            model: str, run_id: str, session: str, barrier: threading.Barrier = barrier
        ) -> None:
            store = SessionStore(
                redis.Redis(connection_pool=real_redis.connection_pool),
                keys,
                session_retention_s=3600,
                run_retention_s=600,
            )
            record = RunRecord(
                run_id=run_id,
                session=session,
                participants=("hawk",),
                created_ms=1,
                deadline_ms=2**62,
            )
            p = Participant(id="hawk", backend="replay", model=model, options={"answer": "a"})
            barrier.wait()
            try:
                store.open_run(record, [("reviewer", p)], now_ms=2)
                wins.append(run_id)
            except IdentityRefused:
                refusals.append(run_id)

        threads = [
            threading.Thread(target=claim, args=(m, f"{m}-{round_no}", f"s{round_no}"))
            for m in ("m1", "m2")
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(wins) == 10 and len(refusals) == 10
    for run_id in refusals:
        assert real_redis.hget(keys.run(run_id), "record") is None


def test_second_coordinator_with_other_meaning_exits_2(
    redis_url: str, start_worker: Any, tmp_path: Path, real_redis: redis.Redis
) -> None:
    """While a run holds an id, a review that re-points it exits 2 and sends nothing."""
    repo, base = project_history_repo(tmp_path / "repo")
    roster = _replay_roster(tmp_path, latency_ms=4000)
    other = tmp_path / "other.toml"
    other.write_text(
        roster.read_text().replace('backend = "replay"', 'backend = "replay"\nmodel = "v2"')
    )
    env = {"COUNCIL_REDIS_URL": redis_url}
    start_worker("w1", env=env)
    args = [
        "--repo",
        str(repo),
        "--base",
        base,
        "--fail-on",
        "never",
        "--no-progress",
        "--session",
        "pr-1",
    ]
    first = subprocess.Popen(
        [sys.executable, "-m", "workers.cli", "review", *args, "--roster", str(roster)],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not real_redis.hlen("council:session:pr-1:open"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    second = council("review", *args, "--roster", str(other), env=env)
    assert second.returncode == 2, second.stderr
    assert "slow" in second.stderr and "v2" in second.stderr
    first.communicate(timeout=120)
    assert first.returncode == 0
    assert real_redis.zcard("council:runs") == 1


def _review_once(
    repo: Path, base: str, roster: Path, env: dict[str, str], *extra: str
) -> subprocess.CompletedProcess[str]:
    """``council review`` of ``repo`` since ``base`` that never gates (``--fail-on never``)."""
    argv = ["review", "--repo", str(repo), "--base", base, "--roster", str(roster)]
    return council(*argv, "--fail-on", "never", "--no-progress", *extra, env=env)


def test_run_keys_expire_session_keys_stay(
    redis_url: str, start_worker: Any, tmp_path: Path, real_redis: redis.Redis
) -> None:
    """After the retention period a run's keys are gone; the session's keys remain."""
    repo, base = project_history_repo(tmp_path / "repo")
    roster = _replay_roster(tmp_path, latency_ms=0)
    env = {"COUNCIL_REDIS_URL": redis_url, "COUNCIL_RUN_RETENTION_S": "2"}
    start_worker("w1", env=env)
    done = _review_once(repo, base, roster, env, "--session", "pr-9")
    assert done.returncode == 0, done.stderr
    assert list(real_redis.scan_iter(match="council:run:*"))
    time.sleep(3.0)
    assert list(real_redis.scan_iter(match="council:run:*")) == []
    assert real_redis.exists("council:session:pr-9:findings", "council:session:pr-9:ledger") == 2


def _settled_council(redis_url: str, start_worker: Any, tmp_path: Path) -> None:
    """One council of the replay roster on the project's history, on one worker, settled."""
    repo, base = project_history_repo(tmp_path / "repo")
    roster = _replay_roster(tmp_path, latency_ms=0)
    env = {"COUNCIL_REDIS_URL": redis_url}
    start_worker("w1", env=env)
    done = _review_once(repo, base, roster, env)
    assert done.returncode == 0, done.stderr


def test_every_key_a_council_writes_expires(
    redis_url: str, start_worker: Any, tmp_path: Path, real_redis: redis.Redis
) -> None:
    """A council settled before its deadline (settling expires no run key again: each got
    its TTL as it was written) leaves no key without a TTL but those every run shares."""
    _settled_council(redis_url, start_worker, tmp_path)
    written = {k.decode() for k in real_redis.scan_iter(match="council:*")}
    assert any(":journal:slow:" in k for k in written)  # the reviewer's journal too
    shared = {"council:runs", "council:runs:open", "council:runs:undispatched"}
    shared |= {"council:leases", "council:records"}
    unexpiring = sorted(k for k in written - shared if real_redis.ttl(k) < 0)
    assert unexpiring == []


def test_a_council_stores_no_celery_task_result(
    redis_url: str, start_worker: Any, tmp_path: Path, real_redis: redis.Redis
) -> None:
    """Nobody reads the chord's task results (the run's state is the record): on Redis its
    tasks are sent with ``ignore_result``, so a settled council left none, and the chord
    still fired (the report came)."""
    _settled_council(redis_url, start_worker, tmp_path)
    assert list(real_redis.scan_iter(match="council:run:*")) != []
    assert list(real_redis.scan_iter(match="celery-task-meta-*")) == []
