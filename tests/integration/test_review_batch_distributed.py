"""Model participants sent in ``council.review_batch`` tasks, on a real redis-server and
real ``celery worker`` processes, against a fake OpenAI server started by the test."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.fakes import FakeOpenAI, Scenario
from tests.fakes.review import KEY
from tests.fakes.scenario import ToolCall
from tests.gitrepo import ROOT, commit, git, new_repo
from tests.services import provider_env, review_argv

pytestmark = pytest.mark.integration


def _tellings(report: dict[str, Any]) -> list[tuple[str, str]]:
    """Every reviewer's own telling filed in the report, (participant, subject), sorted:
    a consolidated finding's members (the reviewers agreed: the placeholders below all
    sit on app.py:2), or the finding itself when one reviewer raised it."""
    told = [
        (m["participant"], m["subject"])
        for f in report["findings"]
        for m in f.get("members") or [{"participant": f["origin"]["participant"], **f}]
    ]
    return sorted(told)


def _finding(subject: str) -> dict[str, Any]:
    return {
        "subject": subject,
        "label": "issue",
        "severity": "minor",
        "location": {"kind": "line", "file": "app.py", "start": 2},
    }


@pytest.fixture
def change(tmp_path: Path) -> tuple[Path, str]:
    """A repository with one change on app.py; (repo, base sha)."""
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    base = git(repo, "rev-parse", "HEAD")
    commit(repo, {"app.py": "x = 1\nprint(x)\n"}, "change")
    return repo, base


def _roster(path: Path, ids: list[str], base_url: str, clocks: str, tools: str = "") -> Path:
    """A roster of openai reviewers, each on its own model ``gpt-<id>``."""
    tables = "".join(
        f'[[reviewers]]\nid = "{rid}"\nbackend = "openai"\nmodel = "gpt-{rid}"\n'
        f'base_url = "{base_url}"\n{tools}\n'
        for rid in ids
    )
    path.write_text(f"[council]\n{clocks}\n\n{tables}")
    return path


def _argv(repo: Path, base: str, roster: Path, out: Path) -> list[str]:
    return review_argv(repo, base, roster, out, "--fail-on", "never")


def _cli_env(redis_url: str, **extra: str) -> dict[str, str]:
    """The CLI's environment: the test Redis, no API key (only workers read one)."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return {**env, "COUNCIL_REDIS_URL": redis_url, **extra}


def _started_tasks(log: Path) -> list[str]:
    """The task names of the ``task_started`` lines of a worker's JSON log."""
    names = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("event") == "task_started":
            names.append(str(entry.get("task")))
    return names


def test_openai_council_settles_through_batches(
    redis_url: str,
    start_worker: Any,
    server: FakeOpenAI,
    change: tuple[Path, str],
    tmp_path: Path,
) -> None:
    """Six openai participants in batches of four (two review_batch tasks, no single
    review tasks): every one answered with its own finding, one request each at the fake."""
    repo, base = change
    ids = [f"m{i}" for i in range(6)]
    for rid in ids:
        answer = json.dumps({"findings": [_finding(f"finding of {rid}")]})
        server.script(Scenario(text=answer, chunk_chars=16, interval_ms=20), model=f"gpt-{rid}")
    held = provider_env(tmp_path, server.base_url, "OPENAI_API_KEY")
    start_worker("w1", env={"OPENAI_API_KEY": KEY, **held})
    clocks = "backstop_ms = 60000\nidle_ms = 20000\nanswer_ms = 0"
    roster = _roster(tmp_path / "council.toml", ids, server.base_url, clocks)
    out = tmp_path / "report.json"
    done = subprocess.run(
        _argv(repo, base, roster, out),
        cwd=ROOT,
        env=_cli_env(redis_url, COUNCIL_BATCH_SIZE="4"),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["status"] == "settled", report
    assert {p["id"]: p["state"] for p in report["participants"]} == dict.fromkeys(ids, "answered")
    assert _tellings(report) == [(rid, f"finding of {rid}") for rid in ids]
    assert sorted(r.model or "" for r in server.requests) == [f"gpt-{rid}" for rid in ids]
    assert all(r.credential_ok for r in server.requests)
    started = _started_tasks(tmp_path / "w1.log")
    assert started.count("council.review_batch") == 2, started
    assert "council.review_participant" not in started


def test_worker_killed_mid_batch_is_redelivered_and_files_once(
    redis_url: str,
    start_worker: Any,
    server: FakeOpenAI,
    change: tuple[Path, str],
    tmp_path: Path,
    real_redis: redis.Redis,
) -> None:
    """SIGKILL while a batch's streams play: the batch is redelivered to another worker,
    the council settles, and each participant's journal finding (recorded by both
    attempts) is filed once."""
    repo, base = change
    ids = [f"k{i}" for i in range(4)]
    slow = Scenario(text=json.dumps({"findings": []}).ljust(200), chunk_chars=10, interval_ms=400)
    for rid in ids:
        record = ToolCall("record_finding", {"finding": _finding(f"journal finding of {rid}")})
        server.script(
            Scenario(tool_calls=(record,)),
            slow,  # about 8 s: the first worker dies in it
            Scenario(tool_calls=(record,)),
            Scenario(text=json.dumps({"findings": []})),
            model=f"gpt-{rid}",
        )
    held = provider_env(tmp_path, server.base_url, "OPENAI_API_KEY")
    env = {"COUNCIL_VISIBILITY_TIMEOUT_S": "20"}
    first = start_worker("w1", env={**env, "OPENAI_API_KEY": KEY, **held})
    clocks = "backstop_ms = 9000\nidle_ms = 5000\nanswer_ms = 0"
    tools = 'tools = ["record_finding"]\n'
    roster = _roster(tmp_path / "council.toml", ids, server.base_url, clocks, tools)
    out = tmp_path / "report.json"
    review = subprocess.Popen(
        _argv(repo, base, roster, out),
        cwd=ROOT,
        env=_cli_env(redis_url, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while len([k for k in real_redis.scan_iter(match="council:run:*:journal:k*:1")]) < len(ids):
        assert time.monotonic() < deadline, "the batch's reviews never recorded a finding"
        assert review.poll() is None, review.communicate()
        time.sleep(0.1)
    time.sleep(1.0)
    assert server.in_flight == len(ids), "every slow stream should be playing"
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=10)
    start_worker("w2", env={**env, "OPENAI_API_KEY": KEY, **held})
    _, stderr = review.communicate(timeout=180)
    assert review.returncode == 0, stderr
    report = json.loads(out.read_text())
    assert report["status"] == "settled", report
    people = {p["id"]: p for p in report["participants"]}
    assert {p: s["state"] for p, s in people.items()} == dict.fromkeys(ids, "answered")
    # Two attempts at least: under load the redelivered batch and a lone review sent once
    # the lease lapsed can both start (a third attempt, whose script records nothing);
    # either way each finding is filed once.
    assert all(s["attempts"] >= 2 for s in people.values()), people
    assert _tellings(report) == [(rid, f"journal finding of {rid}") for rid in ids]
    for rid in ids:
        journals = sorted(real_redis.scan_iter(match=f"council:run:*:journal:{rid}:*"))
        assert 2 <= len(journals) <= people[rid]["attempts"], (rid, journals)
        assert all(real_redis.llen(k) == 1 for k in journals)
    # The lost attempts come back as a redelivered batch or, once their leases lapse, as
    # lone reviews sent at once (whichever the second worker takes first).
    taken = _started_tasks(tmp_path / "w2.log")
    assert {"council.review_batch", "council.review_participant"} & set(taken), taken
