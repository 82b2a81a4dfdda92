"""Benchmark: the renderers on 30,000 findings, beside the floor of writing the report.

The tests check that 30,000 findings give valid outputs within the forges' limits; how
long that takes is measured here, not asserted there. Each renderer (GitHub review,
GitLab Code Quality, SARIF, Markdown) is timed on the same report, best of a few runs,
and printed beside the baseline measured in the same run: the JSON report of the same
findings (``render_json``, one pass over every finding), with the ratio.

Run: ``python bench/renderers.py [--quick]`` from the checkout (``--quick``: one run
each). Exits 0 unless it crashes."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.headline import headline  # noqa: E402
from council.rendering import render_json, render_markdown  # noqa: E402
from council.rendering.github_review import render_github_review  # noqa: E402
from council.rendering.gitlab import render_gitlab_codequality  # noqa: E402
from council.rendering.sarif import render_sarif  # noqa: E402
from tests.forge_cases import many_findings, messy_change, report  # noqa: E402

FINDINGS = 30_000
"""How many findings the report holds."""

RUNS = 1 if "--quick" in sys.argv[1:] else 3
"""Timed runs per renderer; the best counts."""


def best(render: Callable[[], object]) -> float:
    """The best of :data:`RUNS` timings of ``render``, in seconds."""
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        render()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    big = report(*many_findings(FINDINGS)).gated(fail_on="critical")
    change = messy_change()
    floor = best(lambda: render_json(big))
    print(f"renderers on {FINDINGS:,} findings (best of {RUNS}); baseline: JSON report")
    print(f"{'output':<20}{'seconds':>10}{'× baseline':>14}")
    print(f"{'json (baseline)':<20}{floor:>10.2f}{1.0:>14.1f}")
    for name, render in (
        ("github-review", lambda: render_github_review(big, change=change)),
        ("gitlab-codequality", lambda: render_gitlab_codequality(big)),
        ("sarif", lambda: render_sarif(big)),
        ("markdown", lambda: render_markdown(big)),
    ):
        took = best(render)
        print(f"{name:<20}{took:>10.2f}{took / floor:>14.1f}")
        headline(
            "renderers",
            f"{name} of {FINDINGS:,} findings",
            f"{took:.2f} s",
            f"JSON report {floor:.2f} s",
            took / floor,
        )


if __name__ == "__main__":
    main()
