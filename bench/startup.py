"""The council's floor: start-up and an embedded round, against Celery doing the same.

Whole processes, each pair interleaved and timed the same number of times, the minimum
kept (a 2-core machine shared with other work is noisy):

* ``council review --help`` against ``celery --help`` (ratio; target within 1.5×);
* an embedded ``council review`` of a one-line change by three ``command`` reviewers that
  each sleep 2 s, against a bare Celery app (``memory://`` broker, ``cache+memory://``
  results, an in-process threads worker from ``start_worker``) running a chord of the
  same three programs, unsandboxed, its broker polled every 5 ms, and ending without
  stopping its worker. Each side's own time is its wall time minus the 2 s the programs
  sleep (ratio; target within 2.5×).

The council is this checkout's (``python -m workers.cli``). Run: ``python bench/startup.py
[--tries 5]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLEEP_S = 2.0
PROGRAMS = 3
sys.path.insert(0, str(ROOT))

from bench.headline import headline  # noqa: E402

TARGETS = {"help": 1.5, "round": 2.5}

SLEEPER = f"""#!{sys.executable}
import sys, time
sys.stdin.read()
time.sleep({SLEEP_S})
print('{{"findings": []}}')
"""

ROSTER = "[council]\nbackstop_ms = 60000\n" + "".join(
    f'\n[[reviewers]]\nid = "r{i}"\nbackend = "command"\nprogram = "./sleeper.py"\n'
    for i in range(PROGRAMS)
)

BARE_CHORD = textwrap.dedent(
    """
    import os, subprocess, sys
    from celery import Celery, chord
    from celery.contrib.testing.worker import start_worker

    app = Celery("bare", broker="memory://", backend="cache+memory://")
    app.conf.broker_transport_options = {{"polling_interval": 0.005}}  # kombu's default: 1 s

    @app.task
    def run_program(path):
        done = subprocess.run([sys.executable, path], input=b"change", capture_output=True)
        return done.stdout.decode()

    @app.task
    def gather(outputs):
        return len(outputs)

    # The floor: the worker is left running (its drains would take 4 s to see a stop)
    # and the interpreter is not torn down.
    running = start_worker(app, pool="threads", concurrency={n}, perform_ping_check=False)
    running.__enter__()
    result = chord(run_program.s(sys.argv[1]) for _ in range({n}))(gather.s())
    assert result.get(timeout=60) == {n}
    os._exit(0)
    """
).format(n=PROGRAMS)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _scene(tmp: Path) -> tuple[Path, Path, Path]:
    """A repository with a one-line change, the roster beside it, and the program."""
    repo = tmp / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "bench@example.com")
    _git(repo, "config", "user.name", "bench")
    for i in range(30):
        (repo / f"f{i}.py").write_text(f"x = {i}\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    with (repo / "f1.py").open("a") as f:
        f.write("y = 2\n")
    _git(repo, "commit", "-qam", "change")
    sleeper = tmp / "sleeper.py"
    sleeper.write_text(SLEEPER)
    sleeper.chmod(0o755)
    roster = tmp / "council.toml"
    roster.write_text(ROSTER)
    return repo, roster, sleeper


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Seconds one whole process took; it must exit 0."""
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(argv[:4])} … exited {done.returncode}:\n{done.stderr[-2000:]!r}"
        )
    return took


def _pair(
    tries: int, ours: Callable[[], float], theirs: Callable[[], float]
) -> tuple[float, float]:
    """The minimum of each over ``tries`` interleaved runs (one warm-up each first)."""
    ours(), theirs()
    mine: list[float] = []
    base: list[float] = []
    for _ in range(tries):
        mine.append(ours())
        base.append(theirs())
    return min(mine), min(base)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 tries each")
    args = parser.parse_args()
    tries = 2 if args.quick else args.tries
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("COUNCIL_REDIS_URL", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # both sides read compiled modules
    council = [sys.executable, "-m", "workers.cli"]
    with tempfile.TemporaryDirectory(prefix="council-startup-") as scratch:
        tmp = Path(scratch)
        repo, roster, sleeper = _scene(tmp)
        env["XDG_CACHE_HOME"] = str(tmp / "cache")
        helped, celery_help = _pair(
            tries,
            lambda: _timed([*council, "review", "--help"], env, tmp),
            lambda: _timed([sys.executable, "-m", "celery", "--help"], env, tmp),
        )
        review = [*council, "review", "--repo", str(repo), "--base", "HEAD~1"]
        review += ["--roster", str(roster), "--no-progress", "--state", str(tmp / "state.json")]
        bare = [sys.executable, "-c", BARE_CHORD, str(sleeper)]
        ours, theirs = _pair(
            tries, lambda: _timed(review, env, repo), lambda: _timed(bare, env, tmp)
        )
    own, base = ours - SLEEP_S, theirs - SLEEP_S
    print(f"start-up and an embedded round, minimum of {tries} interleaved runs each")
    print(
        f"  council review --help {helped * 1000:6.0f} ms   celery --help "
        f"{celery_help * 1000:6.0f} ms   ratio {helped / celery_help:4.2f}x "
        f"(target <= {TARGETS['help']}x)"
    )
    print(
        f"  embedded round - {SLEEP_S:g} s {own * 1000:6.0f} ms   bare celery chord - "
        f"{SLEEP_S:g} s {base * 1000:6.0f} ms   ratio {own / base:4.2f}x "
        f"(target <= {TARGETS['round']}x)"
    )
    print(f"  (whole processes: {PROGRAMS} command reviewers sleeping {SLEEP_S:g} s each)")
    headline(
        "startup",
        "council review --help, whole process",
        f"{helped * 1000:.0f} ms",
        f"celery --help {celery_help * 1000:.0f} ms",
        helped / celery_help,
        f"<= {TARGETS['help']}x",
        helped / celery_help <= TARGETS["help"],
    )
    headline(
        "startup",
        f"embedded round of {PROGRAMS} programs sleeping {SLEEP_S:g} s, wall - {SLEEP_S:g} s",
        f"{own * 1000:.0f} ms",
        f"bare in-process Celery chord {base * 1000:.0f} ms",
        own / base,
        f"<= {TARGETS['round']}x",
        own / base <= TARGETS["round"],
    )


if __name__ == "__main__":
    main()
