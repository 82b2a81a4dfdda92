"""Benchmark: is script-evidence matching linear in the answer's size, and how fast is it?

Two measurements, each beside a baseline measured in the same run on the same answer:

1. **The design's load**: a 1 MB answer with 64 fenced blocks matched against 512 rows
   of up to 64 KiB (32 rows equal to shown blocks, 8 of them twice; 128 "near misses" of
   a block's exact length that differ only in their last character, so they are
   candidates and are hashed in full; the rest of random lengths up to 64 KiB, never
   hashed). Times building the turn's index (:meth:`TurnSubmissions.of`) and
   :func:`match_evidence`, with the rows' hashes cached and with rows fresh from storage.
2. **Growth**: answers of 100 KB, 1 MB and 10 MB (half prose full of backticks, tildes
   and indented lines, half fenced blocks of up to 8 KiB: 64 read, any further ones
   dropped), against the same kind of 512 rows, then four 10 MB texts built to be slow
   for a fence reader (:data:`ADVERSARIAL`). The last line prints the size and time
   growth from 100 KB to 10 MB and the ratio of their throughputs, which must stay under
   3 ("linear: yes").

3. **The sandbox's start-up cost per ``run_script`` call**: the median wall time of 50
   :meth:`ScriptRunner.run <reviewers.sandbox.scripts.ScriptRunner.run>` calls of the
   ``sh`` program ``true`` (bwrap, its namespaces and mounts, prlimit, and where the
   worker is root the pids cgroup), beside the median of 50 ``subprocess.run(["true"])``
   measured in the same run; skipped, saying why, where bubblewrap cannot run.

The baselines: a plain ``str.find`` scan of the answer for every ````` ``` ````` (what
any fence finder must at least do) and one UTF-8 encoding of it (reading it once).

Run: ``python bench/evidence.py [--quick]`` (``--quick``: one timed run each). Exits 0
unless it crashes, or 1 when a check of the verdicts fails. Source:
docs/evidence-and-asks.md §1 (the matcher is linear in the answer's size)."""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.headline import headline
from council.evidence import MatchedBlock, ScriptRow, TurnSubmissions, match_evidence
from council.roster.script_limits import ScriptLimits
from reviewers.sandbox.bubblewrap import Bubblewrap
from reviewers.sandbox.scripts import ScriptRunner

SIZES = (100_000, 1_000_000, 10_000_000)
"""Answer sizes for the growth table, in characters (ASCII, so also bytes)."""

RUNS = {100_000: 9, 1_000_000: 5, 10_000_000: 3}
"""How many timed runs per size; the best one counts."""

ROWS = 512
"""Rows of the turn, as the design's load names it."""

ROW_MAX = 65536
"""Longest row text, in bytes (64 KiB, the per-script cap)."""

TOLERANCE = 3.0
"""The 10 MB throughput may be at most this many times lower than the 100 KB one."""

PROSE = (
    "The guard `if attempt > limit` reads well; ``double`` ticks and ~~struck~~ text are\n"
    "  indented prose, not a fence, and neither is `` ` `` nor a line of two ``\n"
    "- a list item with `code` in it, and > a quote mark mid-line\n"
    "> ```not a fence in a quote\n"
    "    ```four spaces: an indented code line, not a fence\n"
)
"""Prose lines that look like fences to a careless reader, repeated."""


def _program(rng: random.Random, size: int, tag: int) -> str:
    """A shell-ish program of about ``size`` characters, different per ``tag``."""
    line = f"echo step-{tag} && grep -rn 'pattern {tag}' src/ | sort | uniq -c\n"
    body = (line * (size // len(line) + 1))[: max(size - 12, 0)]
    return f"# probe {tag:05d}\n{body}".rstrip("\n") + f"\nexit {rng.randrange(2)}"


def build_answer(size: int, seed: int = 7) -> tuple[str, list[str]]:
    """An answer of about ``size`` characters, and the programs of its blocks in order.

    Half prose, half fenced blocks of at most 8 KiB (a quarter of them indented two
    spaces, as in a list item); at least 64 blocks, more at large sizes (dropped).
    """
    rng = random.Random(seed)
    blocks = max(64, size // 2 // 8192 + 1)
    block_size = min(8192, size // 2 // blocks)
    prose_each = (size // 2) // blocks
    filler = PROSE * (prose_each // len(PROSE) + 1)
    parts: list[str] = []
    programs: list[str] = []
    for index in range(blocks):
        parts.append(filler[:prose_each].rsplit("\n", 1)[0] + "\n")
        program = _program(rng, block_size, index)
        programs.append(program)
        if index % 4 == 3:
            shown = "\n".join("  " + line for line in program.split("\n"))
            parts.append(f"  ```sh\n{shown}\n  ```\n")
        else:
            parts.append(f"```bash\n{program}\n```\n")
    parts.append("That is what I ran.\n")
    return "".join(parts), programs


def build_rows(programs: list[str], seed: int = 11) -> list[ScriptRow]:
    """512 rows against the first 64 programs: matches, duplicates, near misses, others."""
    rng = random.Random(seed)
    read = programs[:64]
    texts: list[str] = []
    texts += read[:32]  # 32 blocks that ran
    texts += read[:8]  # 8 of them twice (also_matches)
    texts += [p[:-1] + ("!" if p[-1] != "!" else "?") for p in read for _ in range(2)]
    while len(texts) < ROWS:
        length = rng.randrange(1, ROW_MAX + 1)
        texts.append(_program(rng, length, 90_000 + len(texts))[:length])
    rng.shuffle(texts)
    return [
        ScriptRow(
            tool_call_id=f"call_{n}",
            tool="run_script",
            dispatch=n,
            outcome="ok",
            exit_code=0,
            text=text,
        )
        for n, text in enumerate(texts, start=1)
    ]


ADVERSARIAL = {
    "10 MB of bare fence lines (2.5 M regions)": "```\n" * 2_500_000,
    "one 10 MB line of backticks": "`" * 10_000_000,
    "10 MB open block of would-be closers": "`````\n" + "```` x\n" * 1_428_000,
    "10 MB block indented 3, short lines": "   ~~~\n" + " ab\n" * 2_500_000 + "   ~~~\n",
}
"""Texts built to make a fence finder slow, matched against no rows."""


def best_of(runs: int, work: Callable[[], object]) -> float:
    """The best wall time of ``runs`` calls of ``work``, in seconds."""
    runs = 1 if "--quick" in sys.argv[1:] else runs  # a smoke run: one timed run each
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def fresh(rows: list[ScriptRow]) -> list[ScriptRow]:
    """Copies of ``rows`` with new text objects, whose hashes Python has not cached yet
    (as when the rows arrive from storage)."""
    return [r.model_copy(update={"text": (r.text + "#")[:-1]}) for r in rows if r.text]


def match_cold(answer: str, rows: list[ScriptRow], runs: int) -> float:
    """The best time of indexing fresh copies of ``rows`` and matching ``answer``, in s."""
    best = float("inf")
    for _ in range(runs):
        copies = fresh(rows)
        started = time.perf_counter()
        match_evidence(answer, TurnSubmissions.of(copies))
        best = min(best, time.perf_counter() - started)
    return best


def find_scan(answer: str) -> int:
    """The baseline: every ````` ``` ````` in the answer, found by ``str.find``."""
    count, at = 0, answer.find("```")
    while at != -1:
        count += 1
        at = answer.find("```", at + 3)
    return count


def check(answer: str, rows: list[ScriptRow], programs: list[str]) -> bool:
    """Whether the verdicts are the expected ones: 32 matched, 8 of them twice."""
    evidence = match_evidence(answer, TurnSubmissions.of(rows))
    matched = evidence.matched
    dropped_ok = evidence.regions_dropped == max(0, len(programs) - 64)
    twice = sum(1 for v in matched if isinstance(v, MatchedBlock) and v.also_matches == 1)
    return len(evidence.blocks) == 64 and len(matched) == 32 and twice == 8 and dropped_ok


SANDBOX_CALLS = 50
"""``run_script`` calls (and baseline ``true`` runs) whose median is reported."""


def median_ms(calls: int, work: Callable[[], object]) -> float:
    """The median wall time of ``calls`` runs of ``work``, in ms."""
    times: list[float] = []
    for _ in range(calls):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times)


def sandbox_startup() -> int:
    """Print the sandbox's start-up cost per call beside the plain-process baseline;
    1 when a sandboxed ``true`` did not end ``ok``."""
    trouble = Bubblewrap().trouble()
    if trouble is not None:
        print(f"\nsandbox start-up: skipped ({trouble})")
        return 0
    with tempfile.TemporaryDirectory() as tree:
        runner = ScriptRunner(Path(tree), ScriptLimits())
        first = runner.run("sh", "true")
        if first.outcome != "ok":
            print(f"error: a sandboxed true ended {first.outcome}: {first.reason}")
            return 1
        sandboxed = median_ms(SANDBOX_CALLS, lambda: runner.run("sh", "true"))
        plain = median_ms(SANDBOX_CALLS, lambda: subprocess.run(["true"], check=False))
    print(f"\nsandbox start-up, median of {SANDBOX_CALLS} calls:")
    print(f"  run_script of 'true' (ScriptRunner.run)  {sandboxed:8.2f} ms")
    print(f"  baseline: subprocess.run(['true'])       {plain:8.2f} ms")
    print(f"  start-up cost per call                   {sandboxed - plain:8.2f} ms")
    return 0


def main() -> int:
    """Print the load figures and the growth table; exit 1 when the verdicts are wrong."""
    answer, programs = build_answer(1_000_000)
    rows = build_rows(programs)
    if not check(answer, rows, programs):
        print("error: the verdicts of the design's load are not the expected ones")
        return 1
    row_bytes = sum(len(r.text or "") for r in rows)
    index_s = best_of(5, lambda: TurnSubmissions.of(rows))
    turn = TurnSubmissions.of(rows)
    match_s = best_of(5, lambda: match_evidence(answer, turn))
    cold_s = match_cold(answer, rows, 5)
    find_s = best_of(5, lambda: find_scan(answer))
    encode_s = best_of(5, lambda: answer.encode("utf-8"))
    print(
        f"load: {len(answer):,} B answer, 64 blocks read, {ROWS} rows "
        f"({row_bytes / 1e6:.1f} MB of row text, up to {ROW_MAX // 1024} KiB each)"
    )
    print(f"  index the turn (TurnSubmissions.of)    {index_s * 1e3:8.2f} ms")
    print(f"  match_evidence (index reused)          {match_s * 1e3:8.2f} ms")
    print(f"  index + match, rows fresh from storage {cold_s * 1e3:8.2f} ms")
    print(f"  baseline: str.find scan for ```        {find_s * 1e3:8.2f} ms")
    print(f"  baseline: answer.encode('utf-8')       {encode_s * 1e3:8.2f} ms")
    if sandbox_startup():
        return 1

    print(
        f"\n{'size':>12} {'blocks':>7} {'dropped':>8} {'match ms':>9} {'MB/s':>8} "
        f"{'find ms':>8} {'encode ms':>9} {'x find':>7}"
    )
    rates: dict[int, float] = {}
    sizes: dict[int, int] = {}
    for size in SIZES:
        answer, programs = build_answer(size)
        rows = build_rows(programs)
        if not check(answer, rows, programs):
            print(f"error: wrong verdicts at size {size}")
            return 1
        runs = RUNS[size]
        seconds = match_cold(answer, rows, runs)
        find_s = best_of(runs, partial(find_scan, answer))
        encode_s = best_of(runs, partial(answer.encode, "utf-8"))
        rates[size] = len(answer) / 1e6 / seconds
        sizes[size] = len(answer)
        print(
            f"{len(answer):>12,} {len(programs):>7} {max(0, len(programs) - 64):>8} "
            f"{seconds * 1e3:>9.2f} {rates[size]:>8.1f} {find_s * 1e3:>8.2f} "
            f"{encode_s * 1e3:>9.2f} {seconds / find_s:>7.1f}"
        )
    for label, text in ADVERSARIAL.items():
        seconds = best_of(3, partial(match_evidence, text, TurnSubmissions()))
        find_s = best_of(3, partial(find_scan, text))
        print(
            f"  {label}: {len(text):,} B, match {seconds * 1e3:.2f} ms, find {find_s * 1e3:.2f} ms"
        )
    len_100kb, len_10mb = sizes[100_000], sizes[10_000_000]
    ratio = rates[100_000] / rates[10_000_000]
    verdict = "yes" if ratio <= TOLERANCE else "no"
    growth = SIZES[-1] // SIZES[0]
    times = (len_10mb / rates[10_000_000]) / (len_100kb / rates[100_000])
    print(
        f"linear: {verdict} (size x{growth}, time x{times:.0f}; 100 KB rate / 10 MB rate = "
        f"{ratio:.2f}, limit {TOLERANCE:.0f})"
    )
    headline(
        "evidence",
        "matching evidence in a 10 MB answer",
        f"{rates[10_000_000]:.1f} MB/s",
        f"{rates[100_000]:.1f} MB/s at 100 KB",
        rates[10_000_000] / rates[100_000],
        f">= {1 / TOLERANCE:.2f}x (linear)",
        ratio <= TOLERANCE,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
