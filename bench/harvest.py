"""Benchmark: is the harvest linear in the answer's size?

Builds realistic answers (brace-heavy prose such as ``if (x) { y() }``, a fenced JSON
object with many findings, prose after it) of about 10 KB, 100 KB, 1 MB and 10 MB,
times :func:`council.harvest.harvest` on each (best of a few runs) and prints a table of
size, seconds and MB/s. The last line says whether throughput held: the 10 MB rate must
be at least a third of the 100 KB rate ("linear: yes").

Run: ``python bench/harvest.py [--quick]`` (``--quick``: one timed run per size). Exits
0 unless it crashes. Source: docs/harvest.md §3 ("Reading must be linear in the answer's
size")."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from council.harvest import harvest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.headline import headline

SIZES = (10_000, 100_000, 1_000_000, 10_000_000)
"""Target answer sizes, in characters (ASCII, so also bytes)."""

RUNS = {10_000: 7, 100_000: 5, 1_000_000: 3, 10_000_000: 2}
"""How many timed runs per size; the best one counts."""

TOLERANCE = 3.0
"""The 10 MB throughput may be at most this many times lower than the 100 KB one."""

PROSE = (
    "The guard `if (attempt > limit) { return err }` reads correctly, and the helper "
    "`withTx(fn) { ... }` keeps its {braces} balanced; a set like {db, cache} is fine. "
)
"""One sentence of brace-heavy prose, repeated to fill a third of the answer."""


def _finding(index: int) -> dict[str, object]:
    """One realistic finding entry, different per index."""
    return {
        "location": {"kind": "line", "file": f"pkg/module_{index % 97}.py", "start": index + 1},
        "label": "issue",
        "subject": f"Finding number {index}: the retry loop ignores the deadline",
        "discussion": (
            "The loop `for (;;) { retry() }` never checks ctx.Done(); under load "
            f'the worker spins. Seen in case {index}, e.g. {{"retries": {index}}}.'
        ),
        "severity": ("critical", "medium", "minor")[index % 3],
        "confidence": 0.5 + (index % 5) / 10,
    }


def build_answer(size: int) -> tuple[str, int]:
    """An answer of about ``size`` characters, and how many findings it holds."""
    prose = (PROSE * (size // (3 * len(PROSE)) + 1))[: size // 3]
    entries: list[dict[str, object]] = []
    budget = size - len(prose) - 200
    used = 0
    while used < budget or not entries:
        entry = _finding(len(entries))
        used += len(json.dumps(entry, indent=2)) + 8
        entries.append(entry)
    body = json.dumps({"findings": entries}, indent=2)
    answer = f"{prose}\n\n```json\n{body}\n```\n\nThat is all {{ for now }}.\n"
    return answer, len(entries)


UNCAPPED = sys.maxsize
"""The reading cap for this bench: none, so every entry is read (the default 1,000 would
measure the scan of the 1 MB and 10 MB answers, not the reading of their entries)."""


def time_harvest(answer: str, runs: int) -> tuple[float, int]:
    """The best wall time of ``runs`` harvests of ``answer``, and the findings read."""
    best = float("inf")
    found = 0
    for _ in range(runs):
        started = time.perf_counter()
        result = harvest(answer, max_entries=UNCAPPED)
        best = min(best, time.perf_counter() - started)
        found = len(result.findings)
    return best, found


def main() -> int:
    """Print the table and the verdict; always exit 0 (a crash exits non-zero by itself)."""
    quick = "--quick" in sys.argv[1:]  # a smoke run: one timed run per size
    rates: dict[int, float] = {}
    print(f"{'size':>12} {'findings':>9} {'seconds':>9} {'MB/s':>8}")
    for size in SIZES:
        answer, count = build_answer(size)
        seconds, found = time_harvest(answer, 1 if quick else RUNS[size])
        if found != count:
            print(f"warning: read {found} of {count} findings at size {size}", file=sys.stderr)
        rate = len(answer) / 1e6 / seconds
        rates[size] = rate
        print(f"{len(answer):>12,} {found:>9} {seconds:>9.3f} {rate:>8.2f}")
    held = rates[10_000_000] >= rates[100_000] / TOLERANCE
    ratio = rates[100_000] / rates[10_000_000]
    verdict = "yes" if held else "no"
    print(f"linear: {verdict} (100 KB rate / 10 MB rate = {ratio:.2f}, limit {TOLERANCE:.0f})")
    headline(
        "harvest",
        "reading a 10 MB answer",
        f"{rates[10_000_000]:.1f} MB/s",
        f"{rates[100_000]:.1f} MB/s at 100 KB",
        rates[10_000_000] / rates[100_000],
        f">= {1 / TOLERANCE:.2f}x (linear)",
        held,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
