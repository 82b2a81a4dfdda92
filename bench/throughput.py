"""Throughput at the engine's floor: councils of instant reviewers versus bare chords.

A real redis-server and 2 ``celery worker`` processes (threads pool) serve, in turns
(interleaved, ``--rounds`` times each):

* councils: ``--reviewers`` replay reviewers answering at once (latency 0), opened,
  dispatched and awaited as ``council review`` does, ``--clients`` at a time;
* the baseline, bare chords: the same Celery app, queues and configuration (late acks,
  results, task events), a header of as many tasks that return a small dict at once and a
  body that does nothing, ``--clients`` at a time, each awaited on its result.

Per turn: councils (or chords) per second, Redis commands per council (``INFO
commandstats`` after ``CONFIG RESETSTAT``: every command, those a Lua script runs and
MULTI/EXEC included, the workers' polling too) and the workers' CPU ms per council
(``/proc/PID/stat``). Printed: the best turn of each and the ratios (council / chord), and
the commands per council by name. ``--monitor`` also counts one council's commands with
``MONITOR`` (round trips, i.e. commands sent by a client, apart from those scripts ran).
Run: ``python bench/throughput.py [--councils 60] [--rounds 3] [--quick]``.
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
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import redis
from celery import chord, shared_task
from pydantic import SecretStr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.headline import headline  # noqa: E402
from bench.replay_change import replay_change  # noqa: E402
from tests.services import ServiceError, start_redis, stop_group, worker_argv  # noqa: E402
from workers.app.celery_config import CONSOLIDATE_QUEUE, REVIEW_QUEUE, create_app  # noqa: E402
from workers.app.clock import now_ms  # noqa: E402
from workers.app.logging import configure_logging  # noqa: E402
from workers.app.services import Runtime, build_runtime  # noqa: E402
from workers.app.settings import Settings  # noqa: E402
from workers.coordinator.dispatch import open_and_dispatch, release_results  # noqa: E402
from workers.coordinator.preparation import Round, prepare  # noqa: E402
from workers.coordinator.waiting import Waiter  # noqa: E402

WORKERS = 2
GOALS = {"councils/s": 0.8, "commands": 1.2}
"""The goals: councils/s at least 0.8x the bare chords', commands at most 1.2x."""


@shared_task(name="bench.bare_review", acks_late=True)
def bare_review(run_id: str, participant: str) -> dict[str, Any]:
    """A header task of a bare chord: nothing but its small result."""
    return {"participant": participant, "status": "settled"}


@shared_task(name="bench.bare_settle", acks_late=True)
def bare_settle(results: list[Any], run_id: str) -> dict[str, Any]:
    """The body of a bare chord: nothing."""
    return {"run_id": run_id, "status": "settled", "findings": len(results)}


def _cpu_ms(pids: list[int]) -> float:
    """User + system CPU ms of ``pids`` so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total * 1000 / tick


def _commandstats(client: redis.Redis) -> Counter[str]:
    stats = client.info("commandstats")
    return Counter({name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()})


def _turn(
    client: redis.Redis, pids: list[int], n: int, clients: int, one: Callable[[int], None]
) -> tuple[float, Counter[str], float]:
    """Run ``one(i)`` for i < n on ``clients`` threads; (per second, commands, CPU ms)."""
    todo = iter(range(n))
    lock = threading.Lock()
    errors: list[BaseException] = []

    def loop() -> None:
        while True:
            with lock:
                i = next(todo, None)
            if i is None:
                return
            try:
                one(i)
            except BaseException as exc:  # reported below
                errors.append(exc)
                return

    client.config_resetstat()
    cpu0, t0 = _cpu_ms(pids), time.monotonic()
    threads = [threading.Thread(target=loop) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took, cpu = time.monotonic() - t0, _cpu_ms(pids) - cpu0
    stats = _commandstats(client)
    stats.pop("config|resetstat", None)
    stats.pop("info", None)
    if errors:
        raise RuntimeError(f"{len(errors)} failed; first: {errors[0]!r}")
    return n / took, stats, cpu / n


class _Bench:
    def __init__(self, app: Any, rt: Runtime, prepared: Round, reviewers: int) -> None:
        self.app, self.rt, self.prepared, self.reviewers = app, rt, prepared, reviewers
        self.turn = 0

    def council(self, i: int) -> None:
        created = now_ms()
        name = f"tp{os.getpid()}t{self.turn}x{i}"
        round_ = self.prepared.rerun(name, created, created + 600_000)
        round_ = replace(round_, record=round_.record.model_copy(update={"session": name}))
        open_and_dispatch(self.app, self.rt, round_)
        report = Waiter(self.rt, round_.record, lambda _s: None, lambda: False).wait()
        if report.status != "settled":
            raise RuntimeError(f"council {name} ended {report.status}")

    def chord(self, i: int) -> None:
        run_id = f"bare{os.getpid()}t{self.turn}x{i}"
        header = (
            self.app.signature(
                "bench.bare_review",
                kwargs={"run_id": run_id, "participant": f"r{p}"},
                immutable=True,
                queue=REVIEW_QUEUE,
            )
            for p in range(self.reviewers)
        )
        body = self.app.signature(
            "bench.bare_settle", kwargs={"run_id": run_id}, queue=CONSOLIDATE_QUEUE
        )
        sent = chord(header, body).apply_async()
        got = sent.get(timeout=60, disable_sync_subtasks=False)
        if got.get("findings") != self.reviewers:
            raise RuntimeError(f"bare chord {run_id} returned {got!r}")
        release_results(self.app, sent)


def _monitor_one(url: str, one: Callable[[], None]) -> tuple[Counter[str], int, int]:
    """Run ``one()`` under MONITOR: (commands by name, round trips, script commands)."""
    mon = redis.Redis.from_url(url)
    lines: list[str] = []
    stop = threading.Event()

    def reader() -> None:
        with mon.monitor() as m:
            for entry in m.listen():
                lines.append(f"{entry['client_type']} {entry['command'][:160]}")
                if stop.is_set():
                    return

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    time.sleep(0.3)
    one()
    time.sleep(0.5)
    stop.set()
    redis.Redis.from_url(url).ping()
    t.join(timeout=5)
    if log := os.environ.get("COUNCIL_BENCH_MONITOR_LOG"):  # the whole sequence, to read
        with open(log, "a") as out:
            out.write("\n".join(lines) + "\n\n")
    names: Counter[str] = Counter()
    scripted = 0
    for line in lines:
        kind, _, command = line.partition(" ")
        names[command.split(" ", 1)[0].upper()] += 1
        scripted += kind == "lua"
    return names, len(lines) - scripted, scripted


def main() -> None:
    """Run the turns and print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--councils", type=int, default=60, help="councils (and chords) a turn")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reviewers", type=int, default=5)
    parser.add_argument("--clients", type=int, default=4, help="councils in flight")
    parser.add_argument("--threads", type=int, default=8, help="threads per worker")
    parser.add_argument("--monitor", action="store_true", help="MONITOR one of each")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 20 a turn, 2 rounds")
    args = parser.parse_args()
    if args.quick:
        args.councils, args.rounds = 20, 2
    configure_logging(level="WARNING")
    rows: dict[str, list[tuple[float, Counter[str], float]]] = {"bare chords": [], "councils": []}
    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        options = replay_change(
            tmp, reviewers=args.reviewers, latency_ms=0, clock_ms=600_000, session="tp"
        )
        try:
            server, url = start_redis(None, "--maxclients", "10000")
        except ServiceError as exc:
            sys.exit(str(exc))
        workers: list[subprocess.Popen[bytes]] = []
        try:
            env = {
                **os.environ,
                "COUNCIL_REDIS_URL": url,
                "COUNCIL_WORK_DIR": str(tmp / "w"),
                "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            }
            for n in range(WORKERS):
                workers.append(
                    subprocess.Popen(
                        [*worker_argv(f"tp{n}", args.threads, "WARNING"), "-I", "bench.throughput"],
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
            rt = build_runtime(settings)
            bench = _Bench(app, rt, prepare(settings, options, mode="distributed"), args.reviewers)
            client = redis.Redis.from_url(url)
            pids = [w.pid for w in workers]
            for warm in range(4):  # warm-up: trees unpacked, connections open, both ways
                bench.council(10_000 + warm)
                bench.chord(10_000 + warm)
            for _ in range(args.rounds):
                for name, one in (("bare chords", bench.chord), ("councils", bench.council)):
                    bench.turn += 1
                    rows[name].append(_turn(client, pids, args.councils, args.clients, one))
            monitored = (
                {
                    "bare chords": _monitor_one(url, lambda: bench.chord(20_000)),
                    "councils": _monitor_one(url, lambda: bench.council(20_000)),
                }
                if args.monitor
                else {}
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
    _print(args, rows, monitored)


def _print(
    args: argparse.Namespace,
    rows: dict[str, list[tuple[float, Counter[str], float]]],
    monitored: dict[str, tuple[Counter[str], int, int]],
) -> None:
    print(
        f"throughput: {args.reviewers} instant replay reviewers a council, {WORKERS} workers x "
        f"{args.threads} threads, {args.clients} in flight, {args.councils} a turn, "
        f"{args.rounds} turns each, interleaved (nproc {os.cpu_count()})"
    )
    print(f"{'':<14}{'per s best':>11}{'per s med':>11}{'cmds best':>11}{'cpu ms best':>13}")
    best: dict[str, tuple[float, float, float]] = {}
    for name, turns in rows.items():
        rates = [t[0] for t in turns]
        cmds = [sum(t[1].values()) / args.councils for t in turns]
        cpus = [t[2] for t in turns]
        best[name] = (max(rates), min(cmds), min(cpus))
        print(
            f"{name:<14}{max(rates):>11.1f}{statistics.median(rates):>11.1f}"
            f"{min(cmds):>11.0f}{min(cpus):>13.1f}"
        )
    (rb, cb, pb), (rc, cc, pc) = best["bare chords"], best["councils"]
    headline(
        "throughput",
        f"councils of {args.reviewers} instant reviewers per second, {WORKERS} workers",
        f"{rc:.1f}/s",
        f"bare chords {rb:.1f}/s",
        rc / rb,
        f">= {GOALS['councils/s']}x",
        rc / rb >= GOALS["councils/s"],
    )
    headline(
        "throughput",
        "Redis commands per council (scripts' included)",
        f"{cc:.0f}",
        f"bare chord {cb:.0f}",
        cc / cb,
        f"<= {GOALS['commands']}x",
        cc / cb <= GOALS["commands"],
    )
    print(
        f"{'ratio':<14}{rc / rb:>10.2f}x{'':>11}{cc / cb:>10.2f}x{pc / pb:>12.2f}x  "
        f"(goals: per s >= {GOALS['councils/s']}x, commands <= {GOALS['commands']}x)"
    )
    print("commands per council by name (the turn with the fewest, councils | bare chords):")
    fewest = {name: min(turns, key=lambda t: sum(t[1].values()))[1] for name, turns in rows.items()}
    names = sorted(
        set(fewest["councils"]) | set(fewest["bare chords"]), key=lambda c: -fewest["councils"][c]
    )
    for c in names:
        per = fewest["councils"][c] / args.councils, fewest["bare chords"][c] / args.councils
        if max(per) >= 0.5:
            print(f"  {c:<22}{per[0]:>8.1f}{per[1]:>8.1f}")
    for name, (by_name, trips, scripted) in monitored.items():
        top = ", ".join(f"{c} {k}" for c, k in by_name.most_common(12))
        print(f"MONITOR one of the {name}: {trips} round trips + {scripted} in scripts; {top}")


if __name__ == "__main__":
    main()
