"""Model reviewers in a whole distributed council: the CLI, a real redis-server, real
``celery worker`` processes, and ``openai`` reviewers pointed at a fake OpenAI server
started by the test (tests.fakes.FakeOpenAI, on a thread of this process).

The workers get the key from their environment (``OPENAI_API_KEY`` or the roster's
``api_key_env``); the fake checks it. Nothing here prints the key.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from council.model.backend_result import Usage
from council.round.cost import Price, PriceTable, cost_usd
from tests.fakes import FakeOpenAI, Scenario
from tests.fakes.review import KEY
from tests.gitrepo import ROOT, commit, git, new_repo
from tests.services import provider_env, review_argv

pytestmark = pytest.mark.integration

WORKER_KEYS = {"OPENAI_API_KEY": KEY, "HAWK_KEY": KEY}
"""What the workers' environment holds: the default key variable and a custom one."""

PRICE = Price(input=2.0, output=8.0, cached_input=0.5)
"""USD per million tokens for ``openai:gpt-hawk`` when the roster prices it."""


def _finding(subject: str, severity: str, line: int) -> dict[str, Any]:
    return {
        "subject": subject,
        "label": "issue",
        "severity": severity,
        "location": {"kind": "line", "file": "app.py", "start": line},
    }


HAWK_ANSWER = json.dumps(
    {
        "findings": [
            _finding("eval of user input", "critical", 2),
            _finding("debug print left in", "minor", 3),
        ]
    }
)
OWL_ANSWER = json.dumps({"findings": [_finding("name shadows a builtin", "medium", 3)]})

HAWK_USAGE = Usage(input=1200, output=300, cached=200, reasoning=40, requests=1)
OWL_USAGE = Usage(input=800, output=100, cached=0, reasoning=0, requests=1)


def _scenario(text: str, usage: Usage) -> Scenario:
    return Scenario(
        text=text,
        chunk_chars=24,
        input_tokens=usage.input,
        output_tokens=usage.output,
        cached_tokens=usage.cached,
        reasoning_tokens=usage.reasoning,
    )


@pytest.fixture
def change(tmp_path: Path) -> tuple[Path, str]:
    """A repository with one change on app.py (lines 2 and 3 added); (repo, base sha)."""
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    base = git(repo, "rev-parse", "HEAD")
    commit(repo, {"app.py": "x = 1\ny = eval(input())\nprint(y)\n"}, "change")
    return repo, base


def _roster(
    path: Path,
    reviewers: Sequence[tuple[str, str, str | None]],
    base_url: str,
    *,
    extra: str = "",
    backstop_ms: int = 60_000,
) -> Path:
    """A roster of ``(id, model, api_key_env)`` openai reviewers on ``base_url``."""
    tables = []
    for rid, model, key_env in reviewers:
        table = (
            f'[[reviewers]]\nid = "{rid}"\nbackend = "openai"\nmodel = "{model}"\n'
            f'base_url = "{base_url}"\n'
        )
        if key_env is not None:
            table += f'api_key_env = "{key_env}"\n'
        tables.append(table)
    path.write_text(
        f"[council]\nbackstop_ms = {backstop_ms}\nidle_ms = 20000\nanswer_ms = 0\n\n"
        + "\n".join(tables)
        + extra
    )
    return path


def _held(tmp_path: Path, server: FakeOpenAI, *more: str) -> dict[str, str]:
    """The workers' provider registry: the fake, with each key variable of WORKER_KEYS
    and ``more`` (as an operator lists it; rosters may then name the fake's URL)."""
    return provider_env(tmp_path, server.base_url, *WORKER_KEYS, *more)


def _review(
    repo: Path,
    base: str,
    roster: Path,
    out: Path,
    redis_url: str,
    *extra: str,
    settings: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``council review`` in a subprocess, distributed on ``redis_url``, JSON to ``out``;
    ``settings``: more ``COUNCIL_*`` variables for the CLI."""
    # The CLI itself is given no key: only the workers read one.
    env = {k: v for k, v in os.environ.items() if k not in WORKER_KEYS} | (settings or {})
    return subprocess.run(
        review_argv(repo, base, roster, out, *extra),
        cwd=ROOT,
        env={**env, "COUNCIL_REDIS_URL": redis_url},
        capture_output=True,
        text=True,
        timeout=180,
    )


def _by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["id"]: p for p in report["participants"]}


def _usage(summary: dict[str, Any]) -> Usage:
    return Usage.model_validate(summary["usage"])


def test_two_openai_reviewers_file_findings_with_usage_and_cost(
    redis_url: str,
    start_worker: Any,
    server: FakeOpenAI,
    change: tuple[Path, str],
    tmp_path: Path,
) -> None:
    """Both reviewers' findings are filed with their usage; priced models give cost_usd."""
    repo, base = change
    start_worker("w1", env={**WORKER_KEYS, **_held(tmp_path, server)})
    reviewers = [("hawk", "gpt-hawk", "HAWK_KEY"), ("owl", "gpt-owl", None)]
    prices = (
        '\n[prices."openai:gpt-hawk"]\ninput = 2.0\noutput = 8.0\ncached_input = 0.5\n'
        '\n[prices."gpt-owl"]\ninput = 1.0\noutput = 4.0\n'
    )
    table = PriceTable(
        prices={"openai:gpt-hawk": PRICE, "gpt-owl": Price(input=1, output=4, cached_input=1)}
    )
    hawk_cost = cost_usd(HAWK_USAGE, "openai", "gpt-hawk", table)
    owl_cost = cost_usd(OWL_USAGE, "openai", "gpt-owl", table)
    assert hawk_cost is not None and owl_cost is not None

    server.script(_scenario(HAWK_ANSWER, HAWK_USAGE), model="gpt-hawk")
    server.script(_scenario(OWL_ANSWER, OWL_USAGE), model="gpt-owl")
    roster = _roster(tmp_path / "priced.toml", reviewers, server.base_url, extra=prices)
    out = tmp_path / "priced.json"
    done = _review(repo, base, roster, out, redis_url, "--fail-on", "never")
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["status"] == "settled", report
    people = _by_id(report)
    assert {p: s["state"] for p, s in people.items()} == {"hawk": "answered", "owl": "answered"}
    filed = sorted((f["origin"]["participant"], f["subject"]) for f in report["findings"])
    assert filed == [
        ("hawk", "debug print left in"),
        ("hawk", "eval of user input"),
        ("owl", "name shadows a builtin"),
    ]
    assert _usage(people["hawk"]) == HAWK_USAGE
    assert _usage(people["owl"]) == OWL_USAGE
    assert people["hawk"]["cost_usd"] == pytest.approx(hawk_cost)
    assert people["owl"]["cost_usd"] == pytest.approx(owl_cost)
    assert report["cost_usd"] == pytest.approx(hawk_cost + owl_cost)
    assert report["cost_complete"] is True
    assert [r.model for r in server.requests] and all(r.credential_ok for r in server.requests)
    assert sorted(r.model or "" for r in server.requests) == ["gpt-hawk", "gpt-owl"]
    assert all(r.body.get("stream") is True for r in server.requests)

    # The same council with gpt-owl unpriced: the total is a lower bound.
    server.reset()
    server.script(_scenario(HAWK_ANSWER, HAWK_USAGE), model="gpt-hawk")
    server.script(_scenario(OWL_ANSWER, OWL_USAGE), model="gpt-owl")
    only_hawk = '\n[prices."openai:gpt-hawk"]\ninput = 2.0\noutput = 8.0\ncached_input = 0.5\n'
    roster = _roster(tmp_path / "unpriced.toml", reviewers, server.base_url, extra=only_hawk)
    out = tmp_path / "unpriced.json"
    done = _review(
        repo, base, roster, out, redis_url, "--fail-on", "never", "--session", "unpriced"
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    people = _by_id(report)
    assert _usage(people["owl"]) == OWL_USAGE and people["owl"].get("cost_usd") is None
    assert people["hawk"]["cost_usd"] == pytest.approx(hawk_cost)
    assert report["cost_usd"] == pytest.approx(hawk_cost)
    assert report["cost_complete"] is False


def test_a_refused_key_fails_one_reviewer_and_the_gate_still_decides(
    redis_url: str,
    start_worker: Any,
    server: FakeOpenAI,
    change: tuple[Path, str],
    tmp_path: Path,
) -> None:
    """A 401 fails that participant with the provider's message; with --quorum 1 the
    other's critical gates (without it the failed reviewer fails the gate closed: exit 3,
    tests/unit/test_fail_closed.py)."""
    repo, base = change
    held = _held(tmp_path, server, "WRONG_KEY")
    start_worker("w1", env={**WORKER_KEYS, "WRONG_KEY": "sk-wrong-0000000000000000", **held})
    server.script(_scenario(HAWK_ANSWER, HAWK_USAGE), model="gpt-hawk")
    reviewers = [("hawk", "gpt-hawk", None), ("owl", "gpt-owl", "WRONG_KEY")]
    roster = _roster(tmp_path / "council.toml", reviewers, server.base_url)
    out = tmp_path / "report.json"
    done = _review(repo, base, roster, out, redis_url, "--fail-on", "critical", "--quorum", "1")
    assert done.returncode == 1, done.stderr
    report = json.loads(out.read_text())
    people = _by_id(report)
    assert people["hawk"]["state"] == "answered"
    assert people["owl"]["state"] == "failed"
    failure = people["owl"]["failure"]
    assert "HTTP 401" in failure and "invalid api key" in failure, failure
    assert "sk-wrong" not in out.read_text() and "sk-wrong" not in done.stdout + done.stderr
    assert people["owl"]["attempts"] == 1
    assert _usage(people["owl"]).requests == 1
    subjects = sorted(f["subject"] for f in report["findings"])
    assert subjects == ["debug print left in", "eval of user input"]
    assert report["status"] == "partial"
    owl_requests = [r for r in server.requests if r.model == "gpt-owl"]
    assert len(owl_requests) == 1 and owl_requests[0].credential_ok is False

    # Nothing critical filed: the same failure does not fail the gate (quorum 1 met).
    server.reset()
    minor_only = json.dumps({"findings": [_finding("debug print left in", "minor", 3)]})
    server.script(_scenario(minor_only, HAWK_USAGE), model="gpt-hawk")
    out = tmp_path / "minor.json"
    passed = _review(
        repo,
        base,
        roster,
        out,
        redis_url,
        "--fail-on",
        "critical",
        "--session",
        "minor",
        "--quorum",
        "1",
    )
    assert passed.returncode == 0, passed.stderr
    report = json.loads(out.read_text())
    assert report["status"] == "partial" and _by_id(report)["owl"]["state"] == "failed"


WINDOW_MS = 2000
"""The rate limit window the workers are given (COUNCIL_RATELIMIT_WINDOW_MS)."""

TRANSPORT_SLACK_S = 0.3
"""How much later than its admission in Redis a request may reach the server (s): the
limiter holds admissions to the window; the server sees them after the SDK's send."""


def _most_in_window(arrivals: list[float], window_s: float) -> int:
    """The most arrivals any half-open window of ``window_s`` seconds holds."""
    ordered = sorted(arrivals)
    return max(
        sum(1 for t in ordered[i:] if t < start + window_s) for i, start in enumerate(ordered)
    )


@pytest.mark.parametrize(
    "limit",
    [
        pytest.param("openai", id="backend-limit"),
        pytest.param("openai:gpt-rl", id="model-limit"),
    ],
)
def test_two_workers_share_one_rate_limit(
    limit: str,
    redis_url: str,
    start_worker: Any,
    server: FakeOpenAI,
    change: tuple[Path, str],
    tmp_path: Path,
) -> None:
    """Six reviewers on two workers under rpm = 2: two per window reach the server, no more."""
    repo, base = change
    env = {**WORKER_KEYS, "COUNCIL_RATELIMIT_WINDOW_MS": str(WINDOW_MS), **_held(tmp_path, server)}
    workers = [start_worker("w1", env=env, threads=3), start_worker("w2", env=env, threads=3)]
    assert all(w.poll() is None for w in workers)
    server.default = _scenario(OWL_ANSWER, OWL_USAGE)
    reviewers = [(f"r{i}", "gpt-rl", None) for i in range(6)]
    roster = _roster(
        tmp_path / "council.toml",
        reviewers,
        server.base_url,
        extra=f'\n[limits."{limit}"]\nrpm = 2\n',
    )
    out = tmp_path / "report.json"
    # One reviewer per task (batches of one), so both workers take some of the six.
    done = _review(
        repo,
        base,
        roster,
        out,
        redis_url,
        "--fail-on",
        "never",
        settings={"COUNCIL_BATCH_SIZE": "1"},
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["status"] == "settled", report
    assert {p["state"] for p in report["participants"]} == {"answered"}
    arrivals = [r.at for r in server.requests]
    assert len(arrivals) == 6
    window_s = WINDOW_MS / 1000
    # Never more than rpm in a window (less the transport's jitter)...
    assert _most_in_window(arrivals, window_s - TRANSPORT_SLACK_S) <= 2, sorted(arrivals)
    # ...and the limit is used: two requests go together, and 6 need 3 windows.
    assert _most_in_window(arrivals, TRANSPORT_SLACK_S) == 2, sorted(arrivals)
    assert max(arrivals) - min(arrivals) >= 2 * window_s - TRANSPORT_SLACK_S
    assert max(arrivals) - min(arrivals) < 3 * window_s + 1.0, sorted(arrivals)
    served = [
        (tmp_path / f"{name}.log").read_text(errors="replace").count("review_finished")
        for name in ("w1", "w2")
    ]
    assert sum(served) == 6 and min(served) >= 1, served
