"""The council's overhead: wall time of a council minus its slowest participant's latency.

12 ``replay`` participants answering after 1000 ms each, 20 councils per mode:

* distributed: a real redis-server and 2 ``celery worker`` processes (threads pool, 12
  threads each);
* embedded: the same tasks and canvas inside this process;
* baseline: an in-process ``asyncio.gather`` of the same 12 sleeps, measured in the same
  run (what any scheduler pays at the least).

Prints p50 and p95 of the overhead in ms per mode, and the targets (p50 ≤ 100 ms
distributed, ≤ 250 ms embedded). Run: ``python bench/overhead.py [--councils 20]
[--quick]`` (``--quick``: 5 a mode)."""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pydantic import SecretStr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.headline import headline  # noqa: E402
from bench.replay_change import replay_change  # noqa: E402
from tests.services import ServiceError, start_redis, stop_group, worker_argv  # noqa: E402
from workers.app.celery_config import create_app  # noqa: E402
from workers.app.clock import now_ms  # noqa: E402
from workers.app.logging import configure_logging  # noqa: E402
from workers.app.services import Runtime, build_runtime  # noqa: E402
from workers.app.settings import Settings  # noqa: E402
from workers.coordinator.dispatch import open_and_dispatch  # noqa: E402
from workers.coordinator.embedded import embedded_council  # noqa: E402
from workers.coordinator.preparation import ReviewOptions, Round, prepare  # noqa: E402
from workers.coordinator.waiting import Waiter  # noqa: E402

PARTICIPANTS = 12
LATENCY_MS = 1000
TARGETS_MS = {"distributed": 100.0, "embedded": 250.0}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def _councils(rt: Runtime, app: object, prepared: Round, n: int) -> list[float]:
    overheads: list[float] = []
    for i in range(n):
        created = now_ms()
        round_ = prepared.rerun(f"bench{os.getpid()}x{i}x{created}", created, created + 120_000)
        t0 = time.perf_counter()
        open_and_dispatch(app, rt, round_)  # type: ignore[arg-type]
        report = Waiter(rt, round_.record, lambda _s: None, lambda: False).wait()
        wall_ms = (time.perf_counter() - t0) * 1000
        assert report.status == "settled", [
            (p.id, p.state, p.failure, p.stop) for p in report.participants
        ]
        overheads.append(wall_ms - LATENCY_MS)
    return overheads


def _baseline(n: int) -> list[float]:
    async def council() -> None:
        await asyncio.gather(*(asyncio.sleep(LATENCY_MS / 1000) for _ in range(PARTICIPANTS)))

    out: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        asyncio.run(council())
        out.append((time.perf_counter() - t0) * 1000 - LATENCY_MS)
    return out


def _distributed(tmp: Path, options: ReviewOptions, n: int) -> list[float]:
    try:
        server, url = start_redis()
    except ServiceError as exc:
        sys.exit(str(exc))
    workers: list[subprocess.Popen[bytes]] = []
    try:
        env = {**os.environ, "COUNCIL_REDIS_URL": url, "COUNCIL_WORK_DIR": str(tmp / "work")}
        for w in range(2):
            workers.append(
                subprocess.Popen(
                    worker_argv(f"bench{w}", PARTICIPANTS, "WARNING"),
                    cwd=ROOT,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
        settings = Settings(redis_url=SecretStr(url))
        app = create_app(settings)
        for _ in range(300):
            if len(app.control.ping(timeout=0.2) or []) >= 2:
                break
        rt = build_runtime(settings)
        prepared = prepare(settings, options, mode="distributed")
        _councils(rt, app, prepared, 2)  # warm-up: tree unpacked, connections open
        measured = _councils(rt, app, prepared, n)
        consumer = getattr(app.backend, "result_consumer", None)
        if consumer is not None:
            consumer.stop()
        app.close()
        gc.collect()  # result handles unsubscribe now, while redis-server is still up
        return measured
    finally:
        for w in workers:
            stop_group(w)
        server.terminate()
        server.wait(timeout=10)


def _embedded(tmp: Path, options: ReviewOptions, n: int) -> list[float]:
    settings = Settings(state_path=tmp / "state.json", work_dir=tmp / "embedded-work")
    prepared = prepare(settings, options, mode="embedded")
    with embedded_council(settings, PARTICIPANTS) as (app, rt):
        _councils(rt, app, prepared, 2)
        return _councils(rt, app, prepared, n)


def main() -> None:
    """Measure and print the overhead table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--councils", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 5 councils a mode")
    args = parser.parse_args()
    if args.quick:
        args.councils = 5
    configure_logging(level="WARNING")
    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        options = replay_change(
            tmp, reviewers=PARTICIPANTS, latency_ms=LATENCY_MS, clock_ms=60_000, session="bench"
        )
        results = {
            "baseline (asyncio.gather)": _baseline(args.councils),
            "embedded": _embedded(tmp, options, args.councils),
            "distributed": _distributed(tmp, options, args.councils),
        }
    print(
        f"council overhead: {PARTICIPANTS} replay participants x {LATENCY_MS} ms, "
        f"{args.councils} councils per mode (ms = wall - {LATENCY_MS} ms)"
    )
    print(f"{'mode':<28}{'p50 ms':>10}{'p95 ms':>10}{'mean ms':>10}{'target p50':>12}{'met':>6}")
    for mode, values in results.items():
        p50, p95 = _percentile(values, 0.5), _percentile(values, 0.95)
        target = TARGETS_MS.get(mode)
        met = "" if target is None else ("yes" if p50 <= target else "NO")
        shown = "" if target is None else f"<= {target:.0f}"
        print(
            f"{mode:<28}{p50:>10.1f}{p95:>10.1f}{statistics.mean(values):>10.1f}{shown:>12}{met:>6}"
        )
    floor = _percentile(results["baseline (asyncio.gather)"], 0.5)
    for mode in ("embedded", "distributed"):
        p50 = _percentile(results[mode], 0.5)
        headline(
            "overhead",
            f"{mode} council of {PARTICIPANTS} x {LATENCY_MS} ms, wall - {LATENCY_MS} ms, p50",
            f"{p50:.0f} ms",
            f"asyncio.gather {floor:.1f} ms",
            None,
            f"<= {TARGETS_MS[mode]:.0f} ms",
            p50 <= TARGETS_MS[mode],
        )


if __name__ == "__main__":
    main()
