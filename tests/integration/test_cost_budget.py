"""A round's cost budget over a whole council: four ``openai`` reviewers on the fake OpenAI
server, priced so that each request is estimated (and billed) at about $1.20, under
``max_cost_usd = 2.5``. Run embedded (the CLI alone, fakeredis inside it) and distributed
(a real redis-server, a real ``celery worker`` process): no more than the budget plus one
request's estimate is ever sent, the reviewers the budget stopped are named (stop
``budget``), the report states spent against budget, and the gate exits 3.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from council.round.budget import to_nanos
from tests.fakes import FakeOpenAI, Scenario
from tests.fakes.review import KEY
from tests.gitrepo import ROOT, commit, git, new_repo
from tests.services import provider_env, review_argv
from workers.stores.budget import RedisBudget
from workers.stores.keys import Keys

pytestmark = pytest.mark.integration

OUTPUT_CAP = 1000
"""Each reviewer's ``max_output_tokens``: the output part of every estimate."""

ROSTER_HEAD = (
    "[council]\nbackstop_ms = 60000\nidle_ms = 20000\nanswer_ms = 0\nmax_cost_usd = 2.5\n\n"
    # $1200 per million output tokens: the output cap alone is $1.20 a request; input is
    # priced at $1 per million, so a prompt of a few thousand tokens adds under a cent.
    '[prices."openai:gpt-dear"]\ninput = 1.0\noutput = 1200.0\n\n'
)
REVIEWERS = ("ant", "bee", "cat", "dog")
ANSWER = json.dumps({"findings": []})


def _roster(path: Path, base_url: str) -> Path:
    tables = [
        f'[[reviewers]]\nid = "{rid}"\nbackend = "openai"\nmodel = "gpt-dear"\n'
        f'base_url = "{base_url}"\nmax_output_tokens = {OUTPUT_CAP}\n'
        for rid in REVIEWERS
    ]
    path.write_text(ROSTER_HEAD + "\n".join(tables))
    return path


def _change(tmp_path: Path) -> tuple[Path, str]:
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    base = git(repo, "rev-parse", "HEAD")
    commit(repo, {"app.py": "x = 1\ny = eval(input())\n"}, "change")
    return repo, base


def _script(server: FakeOpenAI) -> None:
    """Every request answers at the full output cap: $1.20 of output (plus input)."""
    scenario = Scenario(text=ANSWER, input_tokens=2000, output_tokens=OUTPUT_CAP)
    server.script(*([scenario] * len(REVIEWERS)), model="gpt-dear")


def _check(done: subprocess.CompletedProcess[str], out: Path, server: FakeOpenAI) -> None:
    assert done.returncode == 3, done.stderr
    sent = server.count
    # 2 × $1.202 fit in $2.50; a third would pass it. Never more than budget + one estimate.
    assert sent <= 3
    assert sent == 2, [r.model for r in server.requests]
    report: dict[str, Any] = json.loads(out.read_text())
    people = {p["id"]: p for p in report["participants"]}
    stopped = sorted(pid for pid, p in people.items() if p["state"] == "stopped")
    answered = sorted(pid for pid, p in people.items() if p["state"] == "answered")
    assert len(stopped) == 2 and len(answered) == 2, people
    assert all(people[pid]["stop"]["limit"] == "budget" for pid in stopped)
    budget = report["budget"]
    assert budget["max_cost_usd"] == pytest.approx(2.5)
    assert budget["spent_usd"] == pytest.approx(2 * (2000 * 1.0 + OUTPUT_CAP * 1200.0) / 1e6)
    assert budget["spent_usd"] <= 2.5
    assert budget["held_usd"] == 0
    assert sorted(budget["stopped"]) == stopped
    gate = [line for line in done.stderr.splitlines() if line.startswith("gate:")]
    assert gate and "cost budget" in gate[0] and "exit 3" in gate[0], done.stderr
    for pid in stopped:
        assert pid in gate[0]


def test_embedded_a_budget_stops_the_reviewers_it_cannot_afford(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    """Embedded: the CLI runs all four at once on its own threads and fakeredis."""
    repo, base = _change(tmp_path)
    _script(server)
    roster = _roster(tmp_path / "council.toml", server.base_url)
    out = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if k != "COUNCIL_REDIS_URL"}
    done = subprocess.run(
        review_argv(repo, base, roster, out, "--state", str(tmp_path / "state.json")),
        cwd=ROOT,
        env={**env, "OPENAI_API_KEY": KEY},
        capture_output=True,
        text=True,
        timeout=180,
    )
    _check(done, out, server)


def test_distributed_a_budget_holds_across_a_worker_on_redis(
    redis_url: str, start_worker: Any, server: FakeOpenAI, tmp_path: Path
) -> None:
    """Distributed: one real worker with 16 threads takes all four at once; the budget
    is the run's hash on the real redis-server, reserved by its Lua script."""
    repo, base = _change(tmp_path)
    held = provider_env(tmp_path, server.base_url, "OPENAI_API_KEY")
    start_worker("w1", env={"OPENAI_API_KEY": KEY, **held})
    _script(server)
    roster = _roster(tmp_path / "council.toml", server.base_url)
    out = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    done = subprocess.run(
        review_argv(repo, base, roster, out),
        cwd=ROOT,
        env={**env, "COUNCIL_REDIS_URL": redis_url},
        capture_output=True,
        text=True,
        timeout=180,
    )
    _check(done, out, server)


def test_threads_reserving_at_once_on_a_real_redis_never_overspend(real_redis: Any) -> None:
    """Sixteen threads, each reserving $0.30 requests until refused and settling each at
    its estimate, against the real redis-server's Lua: exactly what $10 affords."""
    budget = RedisBudget(real_redis, Keys(), "run", 10.0)
    admitted: list[int] = []
    lock = threading.Lock()

    def reviewer() -> None:
        while (held := budget.reserve(to_nanos(0.3))) is not None:
            assert budget.settle(held, to_nanos(0.3), "p")
            assert not budget.settle(held, to_nanos(0.3), "p")  # counted once
            with lock:
                admitted.append(1)

    threads = [threading.Thread(target=reviewer) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(admitted) == 33  # 33 × $0.30 = $9.90; a 34th would pass $10
    spend = budget.spend()
    assert spend.spent_usd == pytest.approx(9.9) and spend.held_usd == 0
