"""Real services for integration tests: a redis-server per session, celery worker processes.

Each test gets an emptied Redis (FLUSHALL), as rq's RQTestCase does. Workers are real
``celery worker`` subprocesses on the threads pool, started with the test's settings.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest
import redis

from tests.fakes import FakeOpenAI
from tests.fakes.review import KEY
from tests.services import ROOT, ServiceError, start_redis, worker_argv


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server on a free loopback port; yields its URL (db 0)."""
    try:
        proc, url = start_redis(tmp_path_factory.mktemp("redis"))
    except ServiceError as exc:
        pytest.fail(str(exc))
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def redis_url(redis_server: str) -> Iterator[str]:
    """The session's redis-server, emptied before the test."""
    client = redis.Redis.from_url(redis_server)
    client.flushall()
    client.close()
    yield redis_server


@pytest.fixture
def real_redis(redis_url: str) -> Iterator[redis.Redis]:
    """A client on the emptied test Redis."""
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


WorkerFactory = Callable[..., subprocess.Popen[bytes]]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    """A fake OpenAI server on this process's loopback, expecting the test key."""
    with FakeOpenAI(api_key=KEY) as fake:
        yield fake


WORKER_LOG_TAIL_LINES = 60
"""Lines of each worker's log shown when a test that started workers fails."""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep each phase's report on the test item, so fixtures can see a failed call."""
    report = yield
    setattr(item, f"council_report_{report.when}", report)
    return report


@pytest.fixture
def start_worker(
    redis_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[WorkerFactory]:
    """Start real ``celery worker`` processes on the test Redis; all killed at teardown.

    ``start_worker(name, env={...}, threads=16)`` returns the Popen once the worker
    answers a ping; its log goes to ``tmp_path / f"{name}.log"``. When the test fails,
    the tail of each worker's log is printed (it shows under "Captured stdout teardown").
    """
    procs: list[subprocess.Popen[bytes]] = []
    names: list[str] = []

    def start(
        name: str = "w1", env: dict[str, str] | None = None, threads: int = 16
    ) -> subprocess.Popen[bytes]:
        full_env = {
            **os.environ,
            "COUNCIL_REDIS_URL": redis_url,
            "COUNCIL_RESTORE_INTERVAL_S": "1",
            "COUNCIL_WORK_DIR": str(tmp_path / f"work-{name}"),
            **(env or {}),
        }
        with (tmp_path / f"{name}.log").open("wb") as log:
            proc = subprocess.Popen(
                worker_argv(name, threads),
                cwd=ROOT,
                env=full_env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        procs.append(proc)
        names.append(name)
        _wait_ready(redis_url, f"{name}@", proc, tmp_path / f"{name}.log")
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    call = getattr(request.node, "council_report_call", None)
    if call is not None and call.failed:
        for name in names:
            lines = (tmp_path / f"{name}.log").read_text(errors="replace").splitlines()
            print(f"--- last {WORKER_LOG_TAIL_LINES} lines of worker {name}'s log ---")
            print("\n".join(lines[-WORKER_LOG_TAIL_LINES:]))


def _wait_ready(url: str, prefix: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    from celery import Celery

    probe = Celery("probe", broker=url, backend=url)
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"worker exited early:\n{log.read_text(errors='replace')[-3000:]}")
            replies = probe.control.ping(timeout=0.5) or []
            if any(next(iter(r)).startswith(prefix) for r in replies):
                return
        pytest.fail(f"worker not ready within 30 s:\n{log.read_text(errors='replace')[-3000:]}")
    finally:
        probe.close()
