"""A model reviewer's question to a person on a real redis-server and real ``celery
worker`` processes, through the CLI in subprocesses: the reviewer (the fake OpenAI
server) stores 200 options, asks with a ``choice`` over them, the run waits (exit 4);
``council answer`` checks the value against the artifact's options; the next ``council
review`` sends that reviewer again, which goes on with the same conversation and the
answer as its tool reply, and the round settles. A worker SIGKILLed while the run waits
loses nothing: the pause is in Redis, a new worker goes on from it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeOpenAI
from tests.fakes.review import KEY
from tests.gitrepo import ROOT
from tests.services import provider_env, review_argv
from tests.unit.test_fail_closed import repo  # noqa: F401  (the fixture)
from tests.unit.test_reviewer_asks import FINDING, OTHER, _roster, script_asking_reviewer

pytestmark = pytest.mark.integration

WORKER_ENV = {"HAWK_KEY": KEY}
"""The workers hold the key; the CLI does not."""


def _council(redis_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """One ``council`` command in a subprocess on ``redis_url`` (no key in its env)."""
    env = {k: v for k, v in os.environ.items() if k != "HAWK_KEY"}
    return subprocess.run(
        [sys.executable, "-m", "workers.cli", *args],
        cwd=ROOT,
        env={**env, "COUNCIL_REDIS_URL": redis_url},
        capture_output=True,
        text=True,
        timeout=180,
    )


def _review(redis_url: str, repo_path: Path, roster: Path, out: Path) -> Any:
    argv = review_argv(repo_path, "HEAD~1", roster, out)[3:]  # after "python -m workers.cli"
    return _council(redis_url, *argv)


def _flow(
    redis_url: str, repo_path: Path, tmp_path: Path, server: FakeOpenAI, between: Any
) -> dict[str, Any]:
    """Review (exit 4), answer (a value off the options refused), ``between()``, review
    again; the settled report. Asserts the conversation went on with the answer."""
    roster = _roster(tmp_path, server.base_url)
    script_asking_reviewer(server)
    out = tmp_path / "r.json"
    first = _review(redis_url, repo_path, roster, out)
    assert first.returncode == 4, first.stderr
    assert "council answer ask_" in first.stdout
    assert server.count == 3
    listed = _council(redis_url, "asks", "--json")
    assert listed.returncode == 0, listed.stderr
    (ask,) = json.loads(listed.stdout)
    assert ask["participant"] == "hawk"
    assert ask["component"]["component_id"] == "choice"
    assert ask["component"]["props_ref"].startswith("art_")
    refused = _council(redis_url, "answer", ask["id"], "profile-999")
    assert refused.returncode == 2 and "takes one of its options" in refused.stderr
    said = _council(redis_url, "answer", ask["id"], "profile-007")
    assert said.returncode == 0, said.stderr
    between()
    settled = _review(redis_url, repo_path, roster, out)
    assert settled.returncode == 1, settled.stderr  # the critical finding gates
    assert server.count == 4
    before, after = server.requests[2].body["messages"], server.requests[3].body["messages"]
    assert after[: len(before)] == before, "the same conversation goes on"
    reply = after[len(before) + 1]
    assert reply["role"] == "tool" and json.loads(reply["content"]) == {"answer": "profile-007"}
    report: dict[str, Any] = json.loads(out.read_text())
    assert report["status"] == "settled", report
    filed = sorted((f["origin"]["participant"], f["subject"]) for f in report["findings"])
    assert filed == [("hawk", FINDING["subject"]), ("owl", OTHER["subject"])]
    people = {p["id"]: p for p in report["participants"]}
    assert people["owl"]["attempts"] == 1, "the other reviewer is not asked again"
    assert people["hawk"]["attempts"] == 2
    return report


def test_a_reviewer_asks_waits_and_goes_on_on_real_workers(
    redis_url: str,
    start_worker: Any,
    server: FakeOpenAI,
    repo: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The whole flow on one real worker."""
    start_worker("w1", env={**WORKER_ENV, **provider_env(tmp_path, server.base_url, "HAWK_KEY")})
    _flow(redis_url, repo, tmp_path, server, lambda: None)


def test_a_worker_killed_while_the_run_waits_loses_nothing(
    redis_url: str,
    start_worker: Any,
    server: FakeOpenAI,
    repo: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """kill -9 of the worker that paused the conversation; a new worker goes on from it."""
    env = {**WORKER_ENV, **provider_env(tmp_path, server.base_url, "HAWK_KEY")}
    first = start_worker("w1", env=env)

    def replace_worker() -> None:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        start_worker("w2", env=env)

    _flow(redis_url, repo, tmp_path, server, replace_worker)
    assert "review_finished" in (tmp_path / "w2.log").read_text(errors="replace")


def test_a_command_reviewer_asks_on_a_real_worker(
    redis_url: str,
    start_worker: Any,
    repo: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """council ask --question inside the worker's sandbox: the refused question exits 2
    and the reviewer goes on, the accepted one makes the run wait; answered, the reviewer
    runs again on a worker and the same question prints the answer."""
    from tests.sandboxing import bwrap_or_skip
    from tests.unit.test_cli_review import reviewer, roster
    from tests.unit.test_reviewer_asks import COMMAND_REVIEWER

    bwrap_or_skip()
    program = tmp_path / "asker.sh"
    program.write_text(COMMAND_REVIEWER)
    program.chmod(0o755)
    rp = roster(tmp_path, reviewer("asker", "command", program=str(program)))
    start_worker("w1")
    out = tmp_path / "r.json"
    first = _review(redis_url, repo, rp, out)
    assert first.returncode == 4, first.stderr
    listed = _council(redis_url, "asks", "--json")
    (ask,) = json.loads(listed.stdout)
    assert ask["participant"] == "asker"
    assert _council(redis_url, "answer", ask["id"], "turbo").returncode == 2
    assert _council(redis_url, "answer", ask["id"], "fast").returncode == 0
    settled = _review(redis_url, repo, rp, out)
    assert settled.returncode == 1, settled.stderr
    report = json.loads(out.read_text())
    (finding,) = report["findings"]
    assert finding["subject"].startswith("profile fast divides by zero (refused 2:")
    assert report["participants"][0]["attempts"] == 2
