"""``council review`` on a real redis-server with NO worker, through a Redis restart; and
a CLI process that exits while Redis is down leaves no AsyncResult finalizer traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.gitrepo import ROOT, project_history_repo
from tests.services import free_port, review_argv

pytestmark = pytest.mark.integration


class RestartableRedis:
    """A redis-server on a fixed port with an append-only file, so it can be stopped and
    started again with its keys (a restart, as an operator would do)."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.argv = [
            "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--dir",
            str(workdir),
        ]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        try:
            while True:
                try:
                    client.ping()
                    return
                except redis.ConnectionError:
                    assert time.monotonic() < deadline, "redis-server did not start"
                    time.sleep(0.05)
        finally:
            client.close()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=10)


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[RestartableRedis]:
    server = RestartableRedis(tmp_path)
    server.start()
    yield server
    server.stop()


ROSTER = """[council]
backstop_ms = 1000
idle_ms = 1000
answer_ms = 0

[[reviewers]]
id = "rep"
backend = "replay"
answer = "answer.json"

[[reviewers]]
id = "hawk"
backend = "openai"
model = "m"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "COUNCIL_TEST_NO_SUCH_KEY"
"""


def test_no_worker_fails_naming_queues_through_a_redis_restart(
    restartable: RestartableRedis, tmp_path: Path
) -> None:
    """No worker, a short watchdog, and Redis restarted mid-wait: the CLI says once that
    Redis is unreachable, rides it out, and at the deadline fails both reviewers naming
    their queues (not "the loss of its worker"); exit 3, no traceback."""
    repo, base = project_history_repo(tmp_path / "repo")
    (tmp_path / "answer.json").write_text(json.dumps({"findings": []}))
    roster = tmp_path / "council.toml"
    roster.write_text(ROSTER)
    out = tmp_path / "report.json"
    env = {
        **os.environ,
        "COUNCIL_REDIS_URL": restartable.url,
        "COUNCIL_WATCHDOG_SLACK_MS": "5000",
    }
    started = time.monotonic()
    review = subprocess.Popen(
        review_argv(repo, base, roster, out, "--fail-on", "never"),
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert review.stderr is not None
    seen: list[str] = []
    while line := review.stderr.readline():
        seen.append(line)
        if line.startswith("council: run "):
            break
    assert review.poll() is None, "".join(seen)
    time.sleep(0.5)
    restartable.stop()
    time.sleep(2.0)
    restartable.start()
    _, rest = review.communicate(timeout=60)
    stderr = "".join(seen) + rest
    elapsed = time.monotonic() - started
    assert review.returncode == 3, stderr
    assert stderr.count("is unreachable") == 1, stderr
    assert "answers again" in stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    report = json.loads(out.read_text())
    people = {p["id"]: p for p in report["participants"]}
    assert {pid: p["state"] for pid, p in people.items()} == {"rep": "failed", "hawk": "failed"}
    assert "council.default" in people["rep"]["failure"]
    assert "council.openai" in people["hawk"]["failure"]
    assert "no worker took" in people["hawk"]["failure"]
    assert "loss of its worker" not in json.dumps(report)
    print(f"no-worker review through a 2 s Redis restart: {elapsed:.1f} s")


DISPATCH_THEN_WAIT = """
import sys
from pathlib import Path
from workers.app.celery_config import create_app
from workers.coordinator.dispatch import open_and_dispatch
from workers.coordinator.preparation import ReviewOptions, prepare
from workers.app.services import build_runtime
from workers.app.settings import Settings

settings = Settings()
rt = build_runtime(settings)
options = ReviewOptions(repo=Path(sys.argv[1]), base=sys.argv[2], roster=Path(sys.argv[3]))
round_ = prepare(settings, options, mode="distributed")
app = create_app(settings)
open_and_dispatch(app, rt, round_)
print("sent", flush=True)
sys.stdin.readline()
"""


def test_a_cli_exiting_while_redis_is_down_leaves_no_result_finalizer_noise(
    restartable: RestartableRedis, tmp_path: Path
) -> None:
    """The chord is sent, Redis goes away, the process exits: no AsyncResult outlives the
    dispatch, so no ``Exception ignored in: AsyncResult.__del__`` at shutdown."""
    repo, base = project_history_repo(tmp_path / "repo")
    (tmp_path / "answer.json").write_text(json.dumps({"findings": []}))
    roster = tmp_path / "council.toml"
    roster.write_text(ROSTER)
    proc = subprocess.Popen(
        [sys.executable, "-c", DISPATCH_THEN_WAIT, str(repo), base, str(roster)],
        cwd=ROOT,
        env={**os.environ, "COUNCIL_REDIS_URL": restartable.url},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    while (line := proc.stdout.readline()) and line.strip() != "sent":
        pass  # structlog's lines go to stdout too
    assert line.strip() == "sent", proc.stderr and proc.stderr.read()
    restartable.stop()
    _, stderr = proc.communicate("\n", timeout=60)
    assert proc.returncode == 0, stderr
    assert "Exception ignored" not in stderr and "Traceback" not in stderr, stderr


DISPATCH_THEN_COUNT = """
import gc
import sys
from pathlib import Path
from celery.result import AsyncResult
from workers.app.celery_config import create_app
from workers.coordinator.dispatch import open_and_dispatch
from workers.coordinator.preparation import ReviewOptions, prepare
from workers.app.services import build_runtime
from workers.app.settings import Settings

settings = Settings()
rt = build_runtime(settings)
options = ReviewOptions(repo=Path(sys.argv[1]), base=sys.argv[2], roster=Path(sys.argv[3]))
round_ = prepare(settings, options, mode="distributed")
app = create_app(settings)
open_and_dispatch(app, rt, round_)
gc.collect()
alive = sum(isinstance(o, AsyncResult) for o in gc.get_objects())
print(f"alive {alive}", flush=True)
sys.stdin.readline()
"""


def test_nothing_of_the_chords_results_is_kept_after_dispatch(
    restartable: RestartableRedis, tmp_path: Path
) -> None:
    """Right after dispatch the CLI holds no AsyncResult and listens on no result channel
    (the Redis result backend kept none of the header's results for the process's life)."""
    repo, base = project_history_repo(tmp_path / "repo")
    (tmp_path / "answer.json").write_text(json.dumps({"findings": []}))
    roster = tmp_path / "council.toml"
    roster.write_text(ROSTER)
    proc = subprocess.Popen(
        [sys.executable, "-c", DISPATCH_THEN_COUNT, str(repo), base, str(roster)],
        cwd=ROOT,
        env={**os.environ, "COUNCIL_REDIS_URL": restartable.url},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    while (line := proc.stdout.readline()) and not line.startswith("alive "):
        pass  # structlog's lines go to stdout too
    assert line.startswith("alive "), proc.stderr and proc.stderr.read()
    client = redis.Redis.from_url(restartable.url)
    try:
        channels = client.pubsub_channels("celery-task-meta-*")
    finally:
        client.close()
    _, stderr = proc.communicate("\n", timeout=60)
    assert proc.returncode == 0, stderr
    assert line.strip() == "alive 0"
    assert channels == []
