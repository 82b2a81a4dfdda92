"""A large change reviewed in slices: wall time against the number of workers.

A 2 MB change (``--files`` Python files of ~10 KB in 25 directories) reviewed by four
model reviewers of 32,000 tokens of context (``context_tokens``) against a fake
OpenAI-compatible provider in this process, which answers after a time in proportion to
the prompt (``--ms-per-kb``) and records which files each prompt showed. Each reviewer's
change is cut into slices (one task each, in the one chord) and run on 1, 2 and 4 real
``celery worker`` processes on a real redis-server; each worker holds
``--slots`` reviews at a time (one slice a task, that many threads), standing for
a worker's capacity. Prints the wall time per worker count (dispatch to settled report)
and its ratio to one worker's (the baseline), and checks every file was shown to every
reviewer exactly once. Then plans ``--tiny`` (100,000) one-line files for one reviewer, in
this process (no workers): the planning's time and peak memory.
Run: ``python bench/large.py [--files 500] [--quick]``. Measured at ``--files 500`` (5 MB,
about 10 minutes on a 2-core machine): 142 s on 1 worker, 75 s on 2 (1.89x), 42 s on 4
(3.42x), 100 slices per reviewer; 100,000 tiny files planned in 8-16 s, 571 slices, peak
77 MB.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import SecretStr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.headline import headline  # noqa: E402
from council.change.diff import parse_diff  # noqa: E402
from council.model.participant import Participant  # noqa: E402
from council.slicing.plan import plan_prompts  # noqa: E402
from tests.fakes import FakeOpenAI, Scenario  # noqa: E402
from tests.fakes.review import KEY  # noqa: E402
from tests.gitrepo import commit, git, new_repo  # noqa: E402
from tests.services import (  # noqa: E402
    ServiceError,
    provider_env,
    start_redis,
    stop_group,
    worker_argv,
)
from workers.app.celery_config import create_app  # noqa: E402
from workers.app.clock import now_ms  # noqa: E402
from workers.app.logging import configure_logging  # noqa: E402
from workers.app.services import build_runtime  # noqa: E402
from workers.app.settings import Settings  # noqa: E402
from workers.coordinator.dispatch import open_and_dispatch  # noqa: E402
from workers.coordinator.preparation import ReviewOptions, Round, prepare  # noqa: E402
from workers.coordinator.waiting import Waiter  # noqa: E402

REVIEWERS = ("r0", "r1", "r2", "r3")
_SHOWN = re.compile(r"^diff --git a/(\S+) b/", re.MULTILINE)


class _Provider(FakeOpenAI):
    """The fake provider: waits ``ms_per_kb`` per KB of prompt, answers no findings, and
    counts (model, file) for each ``diff --git`` header a prompt holds."""

    def __init__(self, ms_per_kb: float) -> None:
        super().__init__(api_key=KEY)
        self.ms_per_kb = ms_per_kb
        self.shown: Counter[tuple[str, str]] = Counter()

    def _next(self, model: str | None) -> Any:
        def reply(body: Mapping[str, Any]) -> Scenario:
            prompt = "".join(_text(m.get("content")) for m in body.get("messages", []))
            for path in _SHOWN.findall(prompt):
                self.shown[(str(body.get("model")), path)] += 1
            delay = int(len(prompt) / 1024 * self.ms_per_kb)
            return Scenario(text='{"findings": []}', delay_ms=delay)

        return reply


def _text(content: Any) -> str:
    """A message's text: a string, or its text parts'."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _repo(tmp: Path, files: int, base_url: str) -> tuple[ReviewOptions, list[str]]:
    """The repository and roster; the options reviewing it and the changed paths."""
    repo = new_repo(tmp / "repo", {"README": "bench\n"})
    base = git(repo, "rev-parse", "HEAD")
    body = "".join(
        f"def f{n}(x):\n    return x * {n} + {n * 7}  # {'y' * 20}\n" for n in range(170)
    )
    changed = {f"pkg{i % 25}/mod{i}.py": f"# module {i}\n{body}" for i in range(files)}
    commit(repo, changed, "a large change")
    tables = "".join(
        f'[[reviewers]]\nid = "{rid}"\nbackend = "openai"\nmodel = "bench-{rid}"\n'
        f'base_url = "{base_url}"\ncontext_tokens = 32000\nmax_output_tokens = 2048\n\n'
        for rid in REVIEWERS
    )
    roster = tmp / "council.toml"
    roster.write_text(
        "[council]\nbackstop_ms = 600000\nidle_ms = 600000\nmax_diff_bytes = 20000000\n\n" + tables
    )
    return ReviewOptions(repo=repo, base=base, roster=roster, session="large"), list(changed)


def _run(url: str, settings: Settings, prepared: Round, workers: int, name: str) -> float:
    """One council on ``url``'s workers; the seconds from dispatch to the settled report."""
    rt = build_runtime(settings)
    app = create_app(settings)
    created = now_ms()
    round_ = prepared.rerun(name, created, created + 900_000)
    started = time.monotonic()
    open_and_dispatch(app, rt, round_)
    report = Waiter(rt, round_.record, lambda _s: None, lambda: False).wait()
    took = time.monotonic() - started
    if report.status != "settled":
        raise RuntimeError(f"{name} on {workers} worker(s) ended {report.status}")
    consumer = getattr(app.backend, "result_consumer", None)
    if consumer is not None:
        consumer.stop()
    app.close()
    return took


def _start(count: int, slots: int, env: dict[str, str], tmp: Path) -> list[Any]:
    procs = []
    for n in range(count):
        procs.append(
            subprocess.Popen(
                worker_argv(f"large{n}", slots, "WARNING"),
                cwd=ROOT,
                env={**env, "COUNCIL_WORK_DIR": str(tmp / f"w{n}")},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
    return procs


def _tiny(count: int) -> tuple[float, int, int]:
    """Plan ``count`` one-line files for one reviewer; (seconds, slices, peak bytes)."""
    text = "".join(
        f"diff --git a/t{i % 500}/f{i}.txt b/t{i % 500}/f{i}.txt\nnew file mode 100644\n"
        f"--- /dev/null\n+++ b/t{i % 500}/f{i}.txt\n@@ -0,0 +1 @@\n+{i}\n"
        for i in range(count)
    )
    change = parse_diff(text)
    p = Participant(id="m", backend="openai", model="gpt-4o", context_tokens=32_000)
    started = time.monotonic()
    plan = plan_prompts([p], change, {}, [])
    took = time.monotonic() - started
    tracemalloc.start()  # again, measured: tracemalloc slows it several times
    plan_prompts([p], change, {}, [])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    shown = Counter(path for paths in plan.shown.values() for path in paths)
    if shown != Counter(dict.fromkeys(change.paths, 1)):
        raise RuntimeError("a tiny file was not in exactly one slice")
    return took, plan.slices.get("m", 1), peak


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--files", type=int, default=200, help="changed files, ~10 KB each")
    parser.add_argument("--ms-per-kb", type=float, default=10.0)
    parser.add_argument("--slots", type=int, default=2, help="reviews a worker holds at once")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--tiny", type=int, default=100_000)
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 40 files on 1 and 2 workers, 10,000 tiny"
    )
    args = parser.parse_args()
    if args.quick:
        args.files, args.workers, args.tiny = 40, "1,2", 10_000
    configure_logging(level="WARNING")
    counts = [int(n) for n in args.workers.split(",")]
    rows: list[tuple[int, float]] = []
    with tempfile.TemporaryDirectory() as raw, _Provider(args.ms_per_kb) as provider:
        tmp = Path(raw)
        options, paths = _repo(tmp, args.files, provider.base_url)
        try:
            server, url = start_redis(None)
        except ServiceError as exc:
            sys.exit(str(exc))
        try:
            # One slice a task (the coordinator builds the chord): a worker then holds as
            # many slices as it has threads.
            settings = Settings(redis_url=SecretStr(url), batch_size=1)
            t0 = time.monotonic()
            prepared = prepare(settings, options, mode="distributed")
            prepare_s = time.monotonic() - t0
            size = prepared.change.total_bytes
            slices = dict(prepared.slices)
            env = {
                **os.environ,
                "COUNCIL_REDIS_URL": url,
                "OPENAI_API_KEY": KEY,
                **provider_env(tmp, provider.base_url, "OPENAI_API_KEY"),
            }
            for n in counts:
                procs = _start(n, args.slots, env, tmp)
                try:
                    probe = create_app(settings)
                    deadline = time.monotonic() + 60
                    while len(probe.control.ping(timeout=0.5) or []) < n:
                        if time.monotonic() > deadline:
                            sys.exit("the workers did not answer within 60 s")
                    probe.close()
                    provider.shown.clear()
                    rows.append((n, _run(url, settings, prepared, n, f"large{n}x{os.getpid()}")))
                    wanted = Counter({(f"bench-{r}", p): 1 for r in REVIEWERS for p in paths})
                    if provider.shown != wanted:
                        missing = sum((wanted - provider.shown).values())
                        raise RuntimeError(
                            f"{n} worker(s): {missing} (reviewer, file) not shown once"
                        )
                finally:
                    for proc in procs:
                        stop_group(proc, grace_s=30)
        finally:
            server.terminate()
            server.wait(timeout=10)
    tiny_s, tiny_slices, tiny_peak = _tiny(args.tiny)
    print(
        f"large: a {size / 1e6:.1f} MB change of {len(paths)} files, {len(REVIEWERS)} model "
        f"reviewers of 32,000 tokens: {sorted(set(slices.values()))} slices each "
        f"(prepared in {prepare_s:.1f} s); fake provider {args.ms_per_kb} ms per KB of "
        f"prompt; {args.slots} reviews per worker at a time"
    )
    first = rows[0][1]
    print(f"{'workers':>8}{'wall s':>9}{'vs 1':>7}")
    for n, took in rows:
        print(f"{n:>8}{took:>9.1f}{first / took:>7.2f}x")
    print("every file was shown to every reviewer exactly once, on each worker count")
    for n, took in rows[1:]:
        headline(
            "large",
            f"a {size / 1e6:.1f} MB change in slices, 4 reviewers, on {n} workers",
            f"{took:.0f} s",
            f"1 worker {first:.0f} s",
            took / first,
        )
    print(
        f"tiny: {args.tiny} one-line files planned for one reviewer in {tiny_s:.1f} s, "
        f"{tiny_slices} slices, peak {tiny_peak / 1e6:.0f} MB (every file in one slice)"
    )


if __name__ == "__main__":
    main()
