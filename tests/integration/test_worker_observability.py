"""A real ``council worker`` (run as this user: root in CI) as a team watches it: every
line of its stdout and stderr is JSON, task lines carry the run's ids, and its
Prometheus endpoint counts the review it ran."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.fakes import FakeOpenAI, Scenario
from tests.fakes.review import KEY
from tests.gitrepo import ROOT, commit, git, new_repo
from tests.services import free_port, provider_env, review_argv, stop_group
from workers.app.logging import MASK
from workers.app.metrics import METRIC_NAMES
from workers.app.task_lines import TASK_KEYS

pytestmark = pytest.mark.integration

FINDING = {
    "subject": "x is printed unguarded",
    "label": "issue",
    "severity": "minor",
    "location": {"kind": "line", "file": "app.py", "start": 2},
}


class Worker:
    """A ``council worker`` subprocess; its stdout and stderr kept in separate files."""

    def __init__(self, proc: subprocess.Popen[bytes], out: Path, err: Path, port: int) -> None:
        self.proc, self.out, self.err, self.port = proc, out, err, port

    def lines(self) -> list[str]:
        """Every line it wrote so far, stdout's then stderr's."""
        text = self.out.read_text(errors="replace") + self.err.read_text(errors="replace")
        return [line for line in text.splitlines() if line.strip()]

    def wait_for(self, predicate: Any, timeout_s: float = 30) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "\n".join(self.lines()[-40:])
            if any(predicate(line) for line in self.lines()):
                return
            time.sleep(0.1)
        pytest.fail("worker not ready:\n" + "\n".join(self.lines()[-40:]))

    def scrape(self) -> tuple[dict[tuple[str, tuple[tuple[str, str], ...]], float], set[str]]:
        """The metrics endpoint: its samples ((name, sorted labels) → value) and the
        names a query uses for its council families (a counter's with ``_total``)."""
        url = f"http://127.0.0.1:{self.port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:  # nosec B310 (loopback)
            text = response.read().decode()
        families = list(text_string_to_metric_families(text))
        samples = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in families
            for s in family.samples
        }
        names = {
            f.name + "_total" if f.type == "counter" else f.name
            for f in families
            if f.name.startswith("council_")
        }
        return samples, names


@pytest.fixture
def council_worker(redis_url: str, server: FakeOpenAI, tmp_path: Path) -> Iterator[Worker]:
    """``council worker --metrics-port P -c 4 --providers FILE`` on the test Redis, with the
    test key; the registry holds the fake OpenAI server with it."""
    port = free_port()
    out, err = tmp_path / "worker.out", tmp_path / "worker.err"
    env = {
        **os.environ,
        "COUNCIL_REDIS_URL": redis_url,
        "COUNCIL_WORK_DIR": str(tmp_path / "work"),
        "OPENAI_API_KEY": KEY,
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    registry = provider_env(tmp_path, server.base_url, "OPENAI_API_KEY")["COUNCIL_PROVIDERS"]
    argv = [sys.executable, "-m", "workers.cli", "worker", "-c", "4", "--metrics-port", str(port)]
    argv += ["--providers", registry]
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(
            [*argv, "--without-mingle", "--without-gossip"],
            cwd=ROOT,
            env=env,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    worker = Worker(proc, out, err, port)
    try:
        worker.wait_for(lambda line: str(json.loads(line).get("event")).endswith(" ready."))
        yield worker
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _roster(path: Path, base_url: str) -> Path:
    """hawk (openai, priced), owl (a replay of one finding) and crow (openai, optional,
    refused by its provider: it fails)."""
    (path.parent / "owl.json").write_text(json.dumps({"findings": [FINDING]}))
    path.write_text(
        "[council]\nbackstop_ms = 60000\nidle_ms = 20000\nanswer_ms = 0\n\n"
        '[prices."openai:gpt-hawk"]\ninput = 2.0\noutput = 8.0\n\n'
        f'[[reviewers]]\nid = "hawk"\nbackend = "openai"\nmodel = "gpt-hawk"\n'
        f'base_url = "{base_url}"\n\n'
        '[[reviewers]]\nid = "owl"\nbackend = "replay"\nanswer = "owl.json"\n\n'
        f'[[reviewers]]\nid = "crow"\nbackend = "openai"\nmodel = "gpt-crow"\n'
        f'base_url = "{base_url}"\noptional = true\n'
    )
    return path


RECIPE = re.compile(r"^council worker 2>&1 \| jq -c '(?P<program>[^']+)'", re.M)
"""A jq recipe of docs/operating.md's "Logs" section (its program)."""

DOC_RUN_ID = "4e0b30bce93d4d99"
DOC_TASK_ID = "0b7c3f0e-5d4e-4f8e-9a51-2d3c9a0c6e11"


def _recipes() -> list[str]:
    """The jq programs of docs/operating.md's "Logs" section, in order."""
    text = (ROOT / "docs" / "operating.md").read_text()
    logs = text[text.index("## Logs") : text.index("## Metrics")]
    return [m["program"] for m in RECIPE.finditer(logs)]


def _jq(program: str, log: Path) -> list[dict[str, Any]]:
    """``jq -c PROGRAM`` on ``log``: the objects it selected. Outside CI a machine
    without jq skips; CI installs it (.ci/run)."""
    jq = shutil.which("jq")
    if jq is None:
        if os.environ.get("CI"):
            pytest.fail("jq must be installed in CI (.ci/run installs it)")
        pytest.skip("jq is not installed: apt-get install jq")
    done = subprocess.run(
        [jq, "-c", program, str(log)], capture_output=True, text=True, timeout=60, check=True
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def _check_recipes(log: Path, parsed: list[dict[str, Any]], run_id: str) -> None:
    """Each documented recipe, run by jq on the worker's whole log, selects exactly the
    lines its description promises (the same predicate written here in Python)."""
    hawk_task = next(
        e["task_id"]
        for e in parsed
        if e["event"] == "review_finished" and e.get("participant") == "hawk"
    )
    promised: dict[str, Any] = {
        f'select(.run_id=="{DOC_RUN_ID}" and .participant=="hawk")': (
            lambda e: e.get("run_id") == run_id and e.get("participant") == "hawk"
        ),
        f'select(.task_id=="{DOC_TASK_ID}")': lambda e: e.get("task_id") == hawk_task,
        'select(.level != "info" and .level != "debug")': (
            lambda e: e.get("level") not in ("info", "debug")
        ),
        'select(.event=="model_retry")': lambda e: e.get("event") == "model_retry",
    }
    recipes = _recipes()
    assert recipes == list(promised), recipes
    for program, wanted in promised.items():
        ran = program.replace(DOC_RUN_ID, run_id).replace(DOC_TASK_ID, hawk_task)
        selected = _jq(ran, log)
        assert selected == [e for e in parsed if wanted(e)], program
        assert selected, program
    trouble = _jq('select(.level != "info" and .level != "debug")', log)
    said = {(e["event"], e.get("participant")) for e in trouble}
    assert {("review_finished", "crow"), ("model_retry", "hawk"), ("run_settled", None)} <= said


def test_worker_lines_are_json_with_task_ids_and_metrics_count_the_review(
    redis_url: str, council_worker: Worker, server: FakeOpenAI, tmp_path: Path
) -> None:
    """A review through a real council worker: every stdout/stderr line is a JSON
    object (banner, root SecurityWarning, shutdown notice included), every task line
    carries run_id, session, participant, task_id and attempt (Celery's "received" too),
    hawk's retry is a warning and crow's failure a warning, the banner and Celery's lines
    show a URL without a password unmasked, docs/operating.md's jq recipes select what
    they promise, and the scrape shows the reviews, the retry, the tokens, the cost, the
    time to first token, the findings and the queue depth."""
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    base = git(repo, "rev-parse", "HEAD")
    commit(repo, {"app.py": "x = 1\nprint(x)\n"}, "change")
    server.script(
        Scenario.error(429, "slow down", retry_after="0"),
        Scenario(text=json.dumps({"findings": [FINDING]}), input_tokens=1000, output_tokens=50),
        model="gpt-hawk",
    )
    server.script(Scenario.error(403, "this key may not use gpt-crow"), model="gpt-crow")
    roster = _roster(tmp_path / "council.toml", server.base_url)
    out = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    done = subprocess.run(
        review_argv(repo, base, roster, out, "--fail-on", "never"),
        cwd=ROOT,
        env={**env, "COUNCIL_REDIS_URL": redis_url},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert {p["id"]: p["state"] for p in report["participants"]} == {
        "hawk": "answered",
        "owl": "answered",
        "crow": "failed",
    }

    samples, names = council_worker.scrape()
    assert names == METRIC_NAMES, names ^ METRIC_NAMES

    def value(name: str, **labels: str) -> float:
        return samples.get((name, tuple(sorted(labels.items()))), 0.0)

    assert value("council_reviews_total", backend="openai", status="answered") == 1
    assert value("council_reviews_total", backend="replay", status="answered") == 1
    assert value("council_retries_total", provider="openai", reason="http-429") == 1
    assert value("council_tokens_total", provider="openai", model="gpt-hawk", kind="input") >= 1000
    assert value("council_model_requests_total", provider="openai", model="gpt-hawk") == 2
    hawk_cost = {"provider": "openai", "model": "gpt-hawk", "participant": "hawk"}
    assert value("council_cost_usd_total", **hawk_cost) > 0
    ttft = "council_review_time_to_first_token_seconds_count"
    assert value(ttft, provider="openai", model="gpt-hawk") == 1
    assert value("council_reviews_total", backend="openai", status="failed") == 1  # crow
    assert value("council_review_duration_seconds_count", backend="openai") == 2
    assert value("council_findings_total", backend="openai", severity="minor") == 1
    assert value("council_findings_total", backend="replay", severity="minor") == 1
    assert ("council_queue_depth", (("queue", "council.openai"),)) in samples
    assert value("council_tasks_in_flight", task="council.review_batch") == 0

    stop_group(council_worker.proc)
    lines = council_worker.lines()
    parsed = []
    for line in lines:
        entry = json.loads(line)  # every line, or this raises with the line in the message
        assert isinstance(entry, dict), line
        parsed.append(entry)
    events = [e["event"] for e in parsed]
    assert "worker_banner" in events
    assert "celery_notice" in events  # "worker: Warm shutdown (MainProcess)"
    if os.getuid() == 0:  # Celery warns a root worker once, as a Python warning
        warned = [e for e in parsed if e["event"] == "python_warning"]
        assert any(e["category"] == "SecurityWarning" for e in warned), warned

    task_lines = [e for e in parsed if e.get("task_id") is not None]
    assert task_lines
    for entry in task_lines:
        missing = [key for key in TASK_KEYS if key not in entry]
        assert not missing, (missing, entry)
        assert entry["run_id"] == report["run_id"], entry
        assert entry["session"] == report["session"], entry
    hawk = [
        e for e in parsed if e.get("run_id") == report["run_id"] and e.get("participant") == "hawk"
    ]
    finished = [e for e in hawk if e["event"] == "review_finished"]
    assert len(finished) == 1 and finished[0]["task_id"] and finished[0]["attempt"] == 1
    assert finished[0]["level"] == "info"
    (retry,) = [e for e in hawk if e["event"] == "model_retry"]
    assert (retry["level"], retry["status"], retry["request_attempt"]) == ("warning", 429, 1)
    assert retry["task_id"] == finished[0]["task_id"] and retry["attempt"] == 1
    (crow,) = [
        e for e in parsed if e["event"] == "review_finished" and e.get("participant") == "crow"
    ]
    assert (crow["level"], crow["status"]) == ("warning", "failed")
    received = [e for e in parsed if str(e["event"]).endswith("] received")]
    assert received  # Celery's own line, written before any task context exists
    for entry in received:
        assert entry["event"] == f"Task {entry['task']}[{entry['task_id']}] received", entry
        assert (entry["run_id"], entry["session"]) == (report["run_id"], report["session"])
        assert entry["attempt"] == 1
    (banner,) = [e for e in parsed if e["event"] == "worker_banner"]
    assert MASK not in banner["transport"] + banner["results"]  # no password: no mask
    assert not [e for e in parsed if MASK in str(e["event"])]  # "Connected to redis://…"
    assert KEY not in "\n".join(lines)
    log = tmp_path / "worker.log"
    log.write_text("\n".join(lines) + "\n")
    _check_recipes(log, parsed, report["run_id"])
