"""Many waiting CLIs at once: what waiting costs Redis, woken versus polling.

``--councils`` concurrent councils (default 40; the issue's figure is 200) of
``--reviewers`` replay reviewers (5, each answering after ``--latency-ms``, 500) on 2 real
``celery worker`` processes (threads pool) and a real redis-server. Each council is one
thread of this process standing for one waiting CLI, with its own Redis client that
counts every command it sends (pipelines and scripts: each command once). The same
fleet runs twice in the same run: the waiting CLI woken by Redis (BLPOP on the run's
wake list, the default) and the old 10 ms poll (``COUNCIL_WAIT_POLL=1``).

Prints, per mode: the commands a waiting CLI issued per council (p50, p95; counted from
the end of its dispatch to the settled report), and wall − critical path (the wall time
of a council from the start of its dispatch to its report, minus its slowest reviewer's
own duration) p50 and p95. With 200 councils on 2 workers most of that is queueing
behind the other councils' tasks, the same for both modes; the fleet's total is printed
too.
Run: ``python bench/fleet.py [--councils 200] [--quick]`` (``--quick``: 10 councils).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import redis
from pydantic import SecretStr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.headline import headline  # noqa: E402
from bench.replay_change import replay_change  # noqa: E402
from tests.services import ServiceError, start_redis, stop_group, worker_argv  # noqa: E402
from workers.app.celery_config import create_app  # noqa: E402
from workers.app.clock import now_ms  # noqa: E402
from workers.app.logging import configure_logging  # noqa: E402
from workers.app.services import build_runtime  # noqa: E402
from workers.app.settings import Settings  # noqa: E402
from workers.coordinator.dispatch import open_and_dispatch  # noqa: E402
from workers.coordinator.preparation import Round, prepare  # noqa: E402
from workers.coordinator.waiting import Waiter  # noqa: E402

WORKERS = 2
GOAL_COMMANDS = 50


class _Count:
    def __init__(self) -> None:
        self.n = 0
        self.lock = threading.Lock()

    def add(self) -> None:
        with self.lock:
            self.n += 1


def counting_client(url: str, count: _Count) -> redis.Redis:
    """A client whose every command sent (alone, in a pipeline or a script call) is
    counted in ``count``."""

    class Counting(redis.Connection):
        def send_command(self, *args: Any, **kwargs: Any) -> None:
            count.add()
            super().send_command(*args, **kwargs)

        def pack_commands(self, commands: Any) -> list[bytes | memoryview]:
            commands = list(commands)
            for _ in commands:
                count.add()
            return super().pack_commands(commands)

    pool = redis.ConnectionPool.from_url(
        url, connection_class=Counting, socket_timeout=30, socket_connect_timeout=5
    )
    return redis.Redis(connection_pool=pool)


def _council(
    url: str, settings: Settings, app: Any, prepared: Round, name: str, poll: bool
) -> tuple[int, float]:
    """One council and its waiting CLI; (commands the wait issued, wall − critical ms)."""
    count = _Count()
    rt = build_runtime(settings, counting_client(url, count))
    created = now_ms()
    round_ = prepared.rerun(name, created, created + 900_000)
    round_ = replace(round_, record=round_.record.model_copy(update={"session": name}))
    t0 = time.monotonic()
    open_and_dispatch(app, rt, round_)
    count.n = 0
    report = Waiter(rt, round_.record, lambda _s: None, lambda: False, poll=poll).wait()
    wall_ms = (time.monotonic() - t0) * 1000
    commands = count.n
    if report.status != "settled":
        raise RuntimeError(f"council {name} ended {report.status}")
    critical = max((p.duration_ms or 0) for p in report.participants)
    rt.client.close()
    return commands, wall_ms - critical


def _fleet(
    url: str, settings: Settings, app: Any, prepared: Round, councils: int, poll: bool
) -> tuple[list[int], list[float], float]:
    results: list[tuple[int, float]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    tag = "poll" if poll else "woken"

    def one(i: int) -> None:
        try:
            got = _council(url, settings, app, prepared, f"fleet{tag}{os.getpid()}x{i}", poll)
        except BaseException as exc:  # reported below
            with lock:
                errors.append(exc)
            return
        with lock:
            results.append(got)

    started = time.monotonic()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(councils)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.monotonic() - started
    if errors:
        raise RuntimeError(f"{len(errors)} councils failed; first: {errors[0]!r}")
    return [c for c, _ in results], [o for _, o in results], took


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    """Run the fleet both ways and print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--councils", type=int, default=40)
    parser.add_argument("--reviewers", type=int, default=5)
    parser.add_argument("--latency-ms", type=int, default=500)
    parser.add_argument("--threads", type=int, default=16, help="threads per worker")
    parser.add_argument(
        "--first", choices=("woken", "poll"), default="woken", help="which fleet runs first"
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: 10 councils")
    args = parser.parse_args()
    if args.quick:
        args.councils = 10
    configure_logging(level="WARNING")
    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        options = replay_change(
            tmp,
            reviewers=args.reviewers,
            latency_ms=args.latency_ms,
            clock_ms=600_000,
            session="fleet",
        )
        try:
            server, url = start_redis(None, "--maxclients", "10000")
        except ServiceError as exc:
            sys.exit(str(exc))
        workers: list[subprocess.Popen[bytes]] = []
        try:
            env = {**os.environ, "COUNCIL_REDIS_URL": url, "COUNCIL_WORK_DIR": str(tmp / "w")}
            for n in range(WORKERS):
                workers.append(
                    subprocess.Popen(
                        worker_argv(f"fleet{n}", args.threads, "WARNING"),
                        cwd=ROOT,
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        start_new_session=True,
                    )
                )
            settings = Settings(redis_url=SecretStr(url))
            app = create_app(settings)
            deadline = time.monotonic() + 60
            while len(app.control.ping(timeout=0.5) or []) < WORKERS:
                if time.monotonic() > deadline:
                    sys.exit("the workers did not answer within 60 s")
            prepared = prepare(settings, options, mode="distributed")
            rows = {}
            for poll in (False, True) if args.first == "woken" else (True, False):
                rows["polling (10 ms, old)" if poll else "woken (BLPOP, new)"] = _fleet(
                    url, settings, app, prepared, args.councils, poll
                )
            consumer = getattr(app.backend, "result_consumer", None)
            if consumer is not None:
                consumer.stop()
            app.close()
        finally:
            for w in workers:
                stop_group(w, grace_s=30)
            server.terminate()
            server.wait(timeout=10)
    print(
        f"fleet: {args.councils} concurrent councils x {args.reviewers} replay reviewers "
        f"({args.latency_ms} ms) on {WORKERS} workers x {args.threads} threads, one waiting "
        f"CLI each (goal: <= {GOAL_COMMANDS} commands per council woken; {args.first} first)"
    )
    print(
        f"{'waiting':<24}{'cmds p50':>10}{'cmds p95':>10}{'over p50 ms':>13}"
        f"{'over p95 ms':>13}{'fleet s':>9}"
    )
    for mode, (commands, over, took) in rows.items():
        print(
            f"{mode:<24}{statistics.median(commands):>10.0f}{_pct(commands, 0.95):>10.0f}"
            f"{_pct(over, 0.5):>13.0f}{_pct(over, 0.95):>13.0f}{took:>9.1f}"
        )
    print("(over = wall - critical path: dispatch to report, minus the slowest reviewer)")
    woken = statistics.median(rows["woken (BLPOP, new)"][0])
    polled = statistics.median(rows["polling (10 ms, old)"][0])
    headline(
        "fleet",
        f"commands a waiting CLI sends per council, {args.councils} councils at once, p50",
        f"{woken:.0f} (woken)",
        f"{polled:.0f} (the old 10 ms poll)",
        woken / polled,
        f"<= {GOAL_COMMANDS} commands",
        woken <= GOAL_COMMANDS,
    )


if __name__ == "__main__":
    main()
