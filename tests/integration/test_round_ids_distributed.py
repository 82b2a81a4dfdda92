"""Finding ids across rounds in distributed mode: a real redis-server and a real ``celery
worker``; two rounds of one session whose replay reviewer rewords its finding."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.gitrepo import ROOT, project_history_repo

pytestmark = pytest.mark.integration

TOLD = [
    {
        "subject": "`run_tool` passes shell=True with a formatted command",
        "discussion": "The subprocess call in run_tool builds the command with an "
        "f-string and shell=True: a crafted path runs arbitrary commands.",
        "label": "issue",
        "severity": "critical",
        "location": {"kind": "file", "file": "tools/runner.py"},
    },
    {
        "subject": "Command injection through shell=True in run_tool",
        "discussion": "run_tool hands an f-string command to subprocess with "
        "shell=True; quote the arguments or pass a list.",
        "label": "issue",
        "severity": "critical",
        "location": {"kind": "file", "file": "tools/runner.py"},
    },
]


def test_a_reworded_finding_keeps_its_id_through_redis(
    redis_url: str, start_worker: Any, tmp_path: Path, real_redis: redis.Redis
) -> None:
    """Round 2's rewording keeps id 1, is seen by agreement, takes no id from the
    counter, and the session's recall is kept in Redis."""
    repo, base = project_history_repo(tmp_path / "repo")
    answer = tmp_path / "answer.txt"
    roster = tmp_path / "council.toml"
    roster.write_text(
        "[council]\nbackstop_ms = 20000\nidle_ms = 20000\nanswer_ms = 0\n\n"
        '[[reviewers]]\nid = "rep"\nbackend = "replay"\nanswer = "answer.txt"\n'
    )
    env = {"COUNCIL_REDIS_URL": redis_url}
    start_worker("w1", env=env)
    reports = []
    for n, told in enumerate(TOLD):
        answer.write_text(json.dumps({"findings": [told]}))
        out = tmp_path / f"round{n}.json"
        argv = ["review", "--repo", str(repo), "--base", base, "--roster", str(roster)]
        argv += ["--fail-on", "never", "--no-progress", "--session", "pr-7", "--json", str(out)]
        done = subprocess.run(
            [sys.executable, "-m", "workers.cli", *argv],
            cwd=ROOT,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert done.returncode == 0, done.stderr
        reports.append(json.loads(out.read_text()))
    first, second = reports
    assert [f["id"] for f in first["findings"]] == [1]
    assert [(f["id"], f["subject"]) for f in second["findings"]] == [(1, TOLD[1]["subject"])]
    assert second["seen"] == [1] and second["seen_by_agreement"] == {"1": 1}
    assert real_redis.get("council:session:pr-7:issued") == b"1"
    recall = json.loads(real_redis.get("council:session:pr-7:recall") or b"[]")
    assert [(f["id"], f["subject"]) for f in recall] == [(1, TOLD[1]["subject"])]
