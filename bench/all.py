"""Every bench, one after another, within a budget: what ``make bench`` runs.

Each bench of :data:`BENCHES` runs in its own process (its output passed through as it
comes), is timed, and has its headline lines (:mod:`bench.headline`) collected. The end
prints each bench's time, the total against :data:`BUDGET_S` (20 minutes on 2 cores), and
the Markdown table of every headline with the machine it came from; ``--readme`` also
writes that table into ``bench/README.md`` between its two markers.

Exit 1 when a bench failed or printed no headline (named, the others still run), else 0.
Run: ``python bench/all.py [--quick] [--only NAME,...] [--readme]``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.headline import Headline, parse  # noqa: E402

BENCHES = (
    "harvest",
    "evidence",
    "renderers",
    "overhead",
    "startup",
    "cost",
    "fleet",
    "throughput",
    "concurrency",
    "ranking",
    "agreement",
    "large",
)
"""Every bench (``bench/<name>.py``), in the order they run; each takes ``--quick``."""

BUDGET_S = 20 * 60
"""What the whole run may take on a 2-core machine, in seconds."""

BEGIN = "<!-- bench/all.py: latest figures begin -->"
END = "<!-- bench/all.py: latest figures end -->"
"""The markers in bench/README.md between which ``--readme`` writes the table."""


@dataclass
class Outcome:
    """One bench's run: its exit code, seconds and headlines."""

    name: str
    code: int = 0
    seconds: float = 0.0
    headlines: list[Headline] = field(default_factory=list)
    trouble: str = ""


def run(name: str, quick: bool) -> Outcome:
    """Run ``bench/<name>.py``, passing its output through; what it did and printed."""
    outcome = Outcome(name)
    argv = [sys.executable, str(ROOT / "bench" / f"{name}.py")] + (["--quick"] if quick else [])
    print(f"== bench/{name}.py {'--quick' if quick else ''}".rstrip(), flush=True)
    started = time.monotonic()
    with subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.PIPE, text=True, errors="replace", bufsize=1
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            try:
                found = parse(line.rstrip("\n"))
            except ValueError as exc:
                outcome.trouble = str(exc)
                continue
            if found is not None:
                outcome.headlines.append(found)
    outcome.code = proc.returncode
    outcome.seconds = time.monotonic() - started
    if outcome.code != 0:
        outcome.trouble = f"exited {outcome.code}"
    elif not outcome.headlines and not outcome.trouble:
        outcome.trouble = "printed no headline"
    return outcome


def machine() -> str:
    """The machine the figures come from, in one line."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    return (
        f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}, {today}"
    )


def _ratio(line: Headline) -> str:
    if line.ratio is None:
        return ""
    return f"{line.ratio:.2f}x"


def _met(line: Headline) -> str:
    return {None: "", True: "yes", False: "**no**"}[line.met]


def table(outcomes: list[Outcome], quick: bool) -> str:
    """The Markdown table of every headline, with the machine and each bench's time."""
    total = sum(o.seconds for o in outcomes)
    head = [
        f"Machine: {machine()}.",
        f"Run: `python bench/all.py{' --quick' if quick else ''}`, {total / 60:.1f} minutes "
        f"in all (budget {BUDGET_S // 60} minutes).",
        "",
        "| bench | measure | figure | baseline (same run) | ratio | goal | met |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = []
    for o in outcomes:
        for line in o.headlines:
            cells = (
                f"`{o.name}.py`",
                line.measure,
                line.figure,
                line.baseline,
                _ratio(line),
                line.goal,
                _met(line),
            )
            rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        if o.trouble:
            rows.append(f"| `{o.name}.py` | **failed: {o.trouble}** | | | | | |")
    times = ", ".join(f"{o.name} {o.seconds:.0f} s" for o in outcomes)
    return "\n".join([*head, *rows, "", f"Seconds per bench: {times}."])


def write_readme(path: Path, text: str) -> None:
    """Put ``text`` between :data:`BEGIN` and :data:`END` in ``path``.

    Raises ValueError naming the file when it lacks either marker (nothing is written)."""
    old = path.read_text(encoding="utf-8")
    start, end = old.find(BEGIN), old.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{path} lacks the markers {BEGIN!r} and {END!r}: add them once")
    path.write_text(old[: start + len(BEGIN)] + "\n\n" + text + "\n\n" + old[end:], "utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of every bench")
    parser.add_argument("--only", default="", help="comma-separated bench names to run")
    parser.add_argument(
        "--readme", action="store_true", help="write the table into bench/README.md"
    )
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(BENCHES)
    unknown = sorted(set(names) - set(BENCHES))
    if unknown:
        parser.error(f"no bench named {', '.join(unknown)}; the benches: {', '.join(BENCHES)}")
    outcomes = [run(name, args.quick) for name in names]
    text = table(outcomes, args.quick)
    total = sum(o.seconds for o in outcomes)
    print("\n== every bench\n" + text)
    if total > BUDGET_S:
        print(f"over budget: {total / 60:.1f} minutes, budget {BUDGET_S // 60}", flush=True)
    failed = [o for o in outcomes if o.trouble]
    for o in failed:
        print(f"bench/{o.name}.py failed: {o.trouble}", file=sys.stderr)
    if args.readme:
        write_readme(ROOT / "bench" / "README.md", text)
        print("bench/README.md: the latest figures written")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
