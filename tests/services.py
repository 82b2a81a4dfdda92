"""Real local services for the integration tests and the benchmarks.

A ``redis-server`` on a free loopback port, and the command line of a real ``celery
worker`` on the council's app and queues. One place, so the tests and the benchmarks
measure the same setup.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import redis

from workers.app.celery_config import ALL_QUEUES

ROOT = Path(__file__).resolve().parents[1]

MISSING_REDIS = (
    "redis-server is missing: install it (Debian: apt-get install redis-server); "
    "`make test` does this for you"
)


class ServiceError(RuntimeError):
    """A local service could not be started; the message says which and why."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(
    workdir: Path | None = None, *extra: str, timeout_s: float = 10.0
) -> tuple[subprocess.Popen[bytes], str]:
    """Start a throwaway redis-server (no persistence, noeviction); ``(process, url)``.

    Returns once it answers PING. Raises :class:`ServiceError` when the binary is
    missing or the server does not answer within ``timeout_s`` seconds.
    """
    binary = shutil.which("redis-server")
    if binary is None:
        raise ServiceError(MISSING_REDIS)
    port = free_port()
    argv = [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--maxmemory-policy",
        "noeviction",
        *extra,
    ]
    if workdir is not None:
        argv += ["--dir", str(workdir)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                client.ping()
                return proc, url
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    proc.kill()
                    raise ServiceError(f"redis-server did not start within {timeout_s} s") from None
                time.sleep(0.05)
    finally:
        client.close()


def worker_argv(name: str, threads: int, loglevel: str = "INFO") -> list[str]:
    """The command line of one real ``celery worker`` on every council queue."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "workers.celery_app",
        "worker",
        "-P",
        "threads",
        "-c",
        str(threads),
        "-n",
        f"{name}@%h",
        "-Q",
        ",".join(ALL_QUEUES),
        f"--loglevel={loglevel}",
        "--without-mingle",
        "--without-gossip",
    ]


def stop_group(proc: subprocess.Popen[bytes], grace_s: float = 15.0) -> None:
    """SIGTERM a process group started with ``start_new_session``, then SIGKILL."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def review_argv(repo: Path, base: str, roster: Path, out: Path, *extra: str) -> list[str]:
    """``council review`` as a child process: the report's JSON to ``out``, no progress
    lines; ``extra`` options follow (``--fail-on never``, ``--state FILE`` ...)."""
    return [
        sys.executable,
        "-m",
        "workers.cli",
        "review",
        "--repo",
        str(repo),
        "--base",
        base,
        "--roster",
        str(roster),
        "--json",
        str(out),
        "--no-progress",
        *extra,
    ]


def provider_env(
    folder: Path, base_url: str, *key_envs: str, api: str = "openai"
) -> dict[str, str]:
    """A worker's ``COUNCIL_PROVIDERS`` holding the fake at ``base_url`` once per key
    variable (:func:`tests.fakes.review.registry_toml`), written under ``folder``: what an
    operator lists so rosters may use it (docs/operating.md "The provider registry")."""
    from tests.fakes.review import registry_toml

    path = folder / f"providers-{api}-{'-'.join(key_envs) or 'keyless'}.toml"
    path.write_text(registry_toml(base_url, *key_envs, api=api))
    return {"COUNCIL_PROVIDERS": str(path)}
