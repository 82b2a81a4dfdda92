"""Benchmark: does agreement merge what different reviewers say about one problem, and
at what cost?

Part 1, quality (:mod:`agreement_corpus`): on the agreement corpus, leave one repository
out (the threshold chosen on two repositories, scored on the third), the current relation
(prose share 0), this relation and the issue's one-threshold word-overlap probe side by
side, per held-out repository and the mean; then the same folds with the held-out
repository shifted so that every telling names the code its pull request names most.

Part 2, speed and memory: the whole consolidation a round runs
(:func:`council.merging.consolidation.consolidate`) on 1,000, 10,000 and 100,000 synthetic
findings of 10 reviewers (100 per file), and on 1,000, 8,000 and 100,000 that name no
file: wall and CPU time, peak memory (the resident set's high-water mark, VmHWM, of a
fresh process per size, beside tracemalloc's Python allocations up to 10,000), the exact
says_the_same merge on the same findings in the same run, the floor (:func:`floor`: the
CPU time of the least any lexical consolidation does in CPython), the CPU time of each
phase (:data:`PHASES`), and the linearity ratio time(largest) / time(smallest) /
(largest / smallest). Each size's consolidation and phases run in that fresh process
(one run at 100,000 and with ``--quick``, else the best of 3), so the full part 2 takes
minutes, not tens of them.

Run: ``python bench/agreement.py [--quick] [--part 1|2]``. The corpus is looked up at
``$COUNCIL_SHARED_DATA/agreement`` or ``../shared/data/agreement`` beside the repository;
when absent, part 1 is skipped with one line. Exits 0 unless it crashes.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import subprocess
import sys
import time
import tracemalloc
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import chain, combinations
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.agreement_corpus import corpus_path, load, quality  # noqa: E402
from bench.headline import headline  # noqa: E402
from council.merging.agreement import THRESHOLD  # noqa: E402
from council.merging.agreement.clusters import groups_of, reviewer_numbers  # noqa: E402
from council.merging.agreement.pairs import scored_pairs  # noqa: E402
from council.merging.agreement.relation import Vocabulary, norms_of, place_of  # noqa: E402
from council.merging.agreement.words import READ_CHARS, Lexicon  # noqa: E402
from council.merging.consolidation import collector_paused, consolidate, merge_across  # noqa: E402
from council.model.findings import ChangeAnchor, FileAnchor, Finding, LineAnchor, Origin  # noqa: E402

# -- part 2: speed and memory -------------------------------------------------------------

_SYLLABLES = (
    "ka",
    "lo",
    "mi",
    "ne",
    "ru",
    "sa",
    "ti",
    "vo",
    "ber",
    "dan",
    "fel",
    "gor",
    "hin",
    "jul",
    "kes",
    "lam",
    "mor",
    "nis",
    "pel",
    "quo",
    "ras",
    "sen",
    "tor",
)
_FUNCTION = ("the", "a", "is", "of", "to", "and", "in", "when", "so", "it", "on", "for")


def _vocabulary(rng: random.Random, size: int = 5_000) -> tuple[list[str], list[float]]:
    """``size`` pseudo-words and Zipf cumulative weights (rank^-1.1), as in prose."""
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    total, cumulative = 0.0, []
    for rank in range(1, size + 1):
        total += rank**-1.1
        cumulative.append(total)
    return words, cumulative


def synthetic(
    count: int, files: int, reviewers: int = 10, seed: int = 7, placed: bool = True
) -> tuple[list[Finding], list[str], list[int]]:
    """``count`` findings of ``reviewers`` reviewers over ``files`` files (or no file).

    Problems sit at random lines of their file; each is told by 1 to 7 reviewers, each in
    its own words: the problem's identifier or call and some of its keywords, among prose
    drawn from a 5,000-word Zipf vocabulary and function words; a line or two off, one in
    ten on the file only. About 60 characters of subject and 170 of discussion, like a
    model's finding. Returns the findings, who raised each, and each one's true problem.
    """
    rng = random.Random(seed)
    words, cumulative = _vocabulary(rng)
    names = [f"reviewer-{k}" for k in range(reviewers)]
    findings: list[Finding] = []
    raised: list[str] = []
    truth: list[int] = []
    problem = 0

    def prose(k: int) -> list[str]:
        drawn = rng.choices(words, cum_weights=cumulative, k=k)
        return [w if rng.random() < 0.7 else rng.choice(_FUNCTION) for w in drawn]

    while len(findings) < count:
        path = f"src/pkg{problem % files % 37}/module_{problem % files}.py"
        line = rng.randint(1, 2_000)
        keywords = rng.choices(words, cum_weights=cumulative, k=4)
        ident = f"{keywords[0]}_{rng.choice(words)}"
        call = f"{rng.choice(words)}{rng.choice(words).title()}"
        for who in rng.sample(names, rng.randint(1, 7)):
            if len(findings) >= count:
                break
            said = rng.sample(keywords, 3)
            name = f"`{ident}`" if rng.random() < 0.7 else f"{call}()"
            subject = " ".join([name, *said[:2], *prose(4)])
            discussion = " ".join([*prose(9), call + "()", said[2], *prose(8), ident, *prose(5)])
            anchor: ChangeAnchor | FileAnchor | LineAnchor
            if not placed:
                anchor = ChangeAnchor()
            elif rng.random() < 0.1:
                anchor = FileAnchor(path=path)
            else:
                at = max(1, line + rng.randint(-2, 2))
                end = at + rng.choice((0, 0, 1, 3))
                anchor = LineAnchor(path=path, line=end, start_line=at if end > at else None)
            findings.append(
                Finding(anchor=anchor, label="issue", subject=subject, discussion=discussion + ".")
            )
            raised.append(who)
            truth.append(problem)
        problem += 1
    return findings, raised, truth


def _tellings(
    findings: list[Finding], raised: list[str], roster: list[str]
) -> list[tuple[str, list[Finding]]]:
    """The findings as a round hands them to consolidate(): per participant in roster
    order, each with its origin set (outside the timing, as the round does it)."""
    per: dict[str, list[Finding]] = defaultdict(list)
    for finding, who in zip(findings, raised, strict=True):
        origin = Origin(kind="reviewer", run_id="bench", participant=who)
        per[who].append(finding.model_copy(update={"origin": origin}))
    return [(name, per[name]) for name in roster]


@dataclass
class Timing:
    """The best of some runs: wall and CPU seconds, and what the last run returned."""

    wall: float
    cpu: float
    result: object


def timed(run: Callable[[], object], repeat: int = 3) -> Timing:
    """The best of ``repeat`` runs (garbage collector as usual). CPU time is this process's
    alone: on a machine shared with other work, it is the steadier figure."""
    best = Timing(float("inf"), float("inf"), None)
    for _ in range(repeat):
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        result = run()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        best = Timing(min(best.wall, wall), min(best.cpu, cpu), result)
    return best


def peak_mb(run: Callable[[], object]) -> float:
    """Peak memory allocated by one run, in MB (tracemalloc: Python allocations)."""
    gc.collect()
    tracemalloc.start()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1e6


def baseline_merge(findings: list[Finding], raised: list[str], roster: list[str]) -> object:
    """The exact merge (merge_across: says_the_same, folded subject + file)."""
    per: dict[str, list[Finding]] = defaultdict(list)
    for finding, who in zip(findings, raised, strict=True):
        per[who].append(finding)
    return merge_across([(name, per[name]) for name in roster])


def floor(findings: list[Finding]) -> object:
    """The least any lexical consolidation does, as a baseline in the same run: every
    telling's subject and discussion split at whitespace (no identifiers, no phrases, no
    stemming), the tokens counted over all findings, each finding's tokens made a set, and
    each finding copied once (as a consolidated finding is made). No pair is scored and
    nothing is grouped: what is left of consolidate()'s time above this is the relation."""
    with collector_paused():
        tokens = [(f.subject + " " + f.discussion[:READ_CHARS]).split() for f in findings]
        sets = [frozenset(listed) for listed in tokens]
        counts = Counter(chain.from_iterable(sets))
        copies = [f.model_copy(update={"raised_by": None}) for f in findings]
    return len(counts), len(sets), len(copies)


def sanity(groups: list[list[int]], truth: list[int], raised: list[str]) -> str:
    """Pairwise precision and recall against the synthetic truth (a check, not a measure)."""
    by_truth: dict[int, list[int]] = defaultdict(list)
    for i, t in enumerate(truth):
        by_truth[t].append(i)
    positives = sum(
        1
        for members in by_truth.values()
        for i, j in combinations(members, 2)
        if raised[i] != raised[j]
    )
    hit = wrong = 0
    for members in groups:
        for i, j in combinations(members, 2):
            if truth[i] == truth[j]:
                hit += 1
            else:
                wrong += 1
    return f"P {hit / max(1, hit + wrong):.3f} R {hit / max(1, positives):.3f}"


PHASES = ("places", "read", "weigh", "pairs", "groups", "build")
"""The phases of a consolidation, as :func:`phases` times them: anchors to places; the
findings read into term ids (Lexicon); the weights and norms (Vocabulary); the blocked,
scored pairs; the groups (components, cliques, average linkage); then the rest of
consolidate(): the exact says_the_same pass, the joins and the consolidated findings
with their members (consolidate()'s best CPU time less the other phases, which are one
run each: on a small input the difference can be lost in noise and reads 0)."""


def phases(
    findings: list[Finding], raised: list[str], roster: list[str], whole: float
) -> tuple[dict[str, float], list[list[int]]]:
    """CPU seconds of each of :data:`PHASES` on these findings: the steps cluster() takes,
    called one by one (with the collector paused as consolidate() pauses it), and the
    rest of consolidate() as ``whole`` (its CPU seconds) less their sum; and the groups."""
    out: dict[str, float] = {}

    def step(name: str, run: Callable[[], T]) -> T:
        started = time.process_time()
        got = run()
        out[name] = time.process_time() - started
        return got

    gc.collect()
    with collector_paused():
        reviewer = reviewer_numbers(raised, roster, len(findings))
        places = step("places", lambda: [place_of(f) for f in findings])
        lexicon = Lexicon()
        read = step("read", lambda: [lexicon.read(f) for f in findings])
        terms = [r.terms for r in read]

        def weigh() -> tuple[Vocabulary[int], list[float]]:
            vocabulary = Vocabulary(terms, lexicon.identifiers)
            return vocabulary, norms_of(terms, vocabulary.squared)

        vocabulary, norms = step("weigh", weigh)
        adjacency = step(
            "pairs",
            lambda: scored_pairs(
                read, places, reviewer, vocabulary.squared, norms, vocabulary.used, THRESHOLD
            ),
        )
        groups = step("groups", lambda: groups_of(findings, places, reviewer, adjacency, THRESHOLD))
    out["build"] = max(0.0, whole - sum(out.values()))
    return out, groups


T = TypeVar("T")


TRACED_UP_TO = 10_000
"""Sizes up to which tracemalloc's peak is measured too (it slows a run 2-3×; the
resident set's peak stands for it above)."""


def _findings(placed: bool, size: int) -> tuple[list[Finding], list[str], list[int]]:
    """The synthetic findings of one row (the same in the parent and its fresh child)."""
    files = max(1, size // 100) if placed else 1
    return synthetic(size, files, placed=placed, seed=7 if placed else 11)


def _status_kib(field: str) -> int:
    """A ``VmHWM``/``VmRSS``-like field of /proc/self/status in KiB (0 where there is none)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def one_size(placed: bool, size: int, roster: list[str], repeat: int) -> dict[str, object]:
    """In a fresh process: consolidate() at one size (the best of ``repeat`` runs), the
    resident set before and its peak after (MiB; VmHWM, else ru_maxrss), then the phases
    (after the peak was read, so they do not raise it)."""
    findings, raised, truth = _findings(placed, size)
    tellings = _tellings(findings, raised, roster)
    gc.collect()
    before = _status_kib("VmRSS")
    run = timed(partial(consolidate, tellings), repeat)
    peak = _status_kib("VmHWM")
    if not peak:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    consolidated = run.result if isinstance(run.result, list) else []
    split, groups = phases(findings, raised, roster, run.cpu)
    return {
        "wall": run.wall,
        "cpu": run.cpu,
        "rss_before": before / 1024,
        "rss_peak": peak / 1024,
        "consolidated": len(consolidated),
        "phases": split,
        "sanity": sanity(groups, truth, raised),
    }


@dataclass
class Row:
    """What :func:`one_size` measured in its fresh process."""

    wall: float
    cpu: float
    rss_before: float
    rss_peak: float
    consolidated: int
    phases: dict[str, float]
    sanity: str


def _in_child(placed: bool, size: int, repeat: int) -> Row:
    """:func:`one_size` in a fresh interpreter (its peak resident set is this row's alone)."""
    here = str(Path(__file__).resolve())
    command = [sys.executable, here, "--one", str(int(placed)), str(size), str(repeat)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return Row(**json.loads(done.stdout.splitlines()[-1]))


def _speed_rows(placed: bool, sizes: Sequence[int], roster: list[str], quick: bool) -> None:
    """One table: consolidate() at each size (in a fresh process), the exact merge, the
    floor, the phases, linearity."""
    where = "10 reviewers, 100 findings per file" if placed else "10 reviewers, no file named"
    print(f"  {'findings that name a file' if placed else 'findings that name no file'} ({where})")
    head = f"    {'findings':>9} {'wall s':>7} {'cpu s':>7} {'RSS MiB':>8} {'+MiB':>6}"
    head += f" {'traced':>7} {'exact s':>8} {'floor s':>8} {'×floor':>6}"
    print(head + f" {'groups':>8}  " + " ".join(f"{p:>6}" for p in PHASES) + "  synthetic truth")
    cpu: dict[int, float] = {}
    floors: dict[int, float] = {}
    for size in sizes:
        row = _in_child(placed, size, 1 if quick or size >= 100_000 else 3)
        findings, raised, _ = _findings(placed, size)
        whole = partial(consolidate, _tellings(findings, raised, roster))
        traced = f"{peak_mb(whole):>7.1f}" if size <= TRACED_UP_TO else f"{'-':>7}"
        exact = timed(partial(baseline_merge, findings, raised, roster), 1)
        least = timed(partial(floor, findings), 1)
        cpu[size] = row.cpu
        floors[size] = least.cpu
        print(
            f"    {size:>9,} {row.wall:>7.3f} {row.cpu:>7.3f} {row.rss_peak:>8.0f}"
            f" {row.rss_peak - row.rss_before:>6.0f} {traced} {exact.wall:>8.3f}"
            f" {least.cpu:>8.3f} {row.cpu / max(least.cpu, 1e-9):>6.1f} {row.consolidated:>8,}  "
            + " ".join(f"{row.phases[p]:>6.3f}" for p in PHASES)
            + f"  {row.sanity}"
        )
    small, large = min(sizes), max(sizes)
    ratio = cpu[large] / cpu[small] / (large / small)
    print(
        f"    linearity: cpu({large:,}) / cpu({small:,}) / {large // small} = {ratio:.2f}"
        " (1.00 = linear; quadratic would be " + f"{large // small})"
    )
    headline(
        "agreement",
        f"consolidate() of {large:,} findings {'naming files' if placed else 'naming no file'}, "
        "cpu",
        f"{cpu[large]:.1f} s (linearity {ratio:.2f})",
        f"the floor {floors[large]:.2f} s",
        cpu[large] / max(floors[large], 1e-9),
        "" if placed else "<= 3x at 100,000",
        None if placed or large < 100_000 else cpu[large] <= 3 * floors[large],
    )


def speed(quick: bool) -> None:
    """Part 2: time, peak memory and phases of consolidate(), beside the exact merge."""
    roster = [f"reviewer-{k}" for k in range(10)]
    sizes = (1_000, 10_000) if quick else (1_000, 10_000, 100_000)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"Part 2: speed and memory of consolidate() ({os.cpu_count()} cores, load average "
        f"{load:.1f} at start; each size in a fresh process: wall and cpu the best run (one "
        "at 100,000 and with --quick, else of 3), RSS MiB its peak resident set (VmHWM), "
        "+MiB that peak less the resident set before consolidating, traced: tracemalloc's "
        "peak MB (up to 10,000); "
        "exact: the says_the_same merge on the same findings; floor: cpu s of the least "
        "any lexical consolidation does, see floor(), and ×floor cpu / floor; phases in "
        "cpu s, see PHASES)"
    )
    _speed_rows(True, sizes, roster, quick)
    _speed_rows(False, (800, 8_000) if quick else (1_000, 8_000, 100_000), roster, quick)


def main() -> int:
    """Run both parts (or one); always exit 0 (a crash exits non-zero by itself)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="no cross-validation, smaller sizes")
    parser.add_argument("--part", type=int, choices=(1, 2), help="run only this part")
    parser.add_argument("--one", nargs=3, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        roster = [f"reviewer-{k}" for k in range(10)]
        print(json.dumps(one_size(bool(args.one[0]), args.one[1], roster, args.one[2])))
        return 0
    started = time.perf_counter()
    if args.part != 2:
        path = corpus_path()
        if path is None:
            print("Part 1 skipped: no agreement/martian-offline.json (set COUNCIL_SHARED_DATA)")
        else:
            quality(load(path), args.quick)
        print(f"  (part 1: {time.perf_counter() - started:.0f} s wall)")
    if args.part != 1:
        second = time.perf_counter()
        speed(args.quick)
        print(f"  (part 2: {time.perf_counter() - second:.0f} s wall)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
