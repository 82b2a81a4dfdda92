"""Slices of one change spread over two real workers (issue 22): a real redis-server, two
``council worker`` processes of one thread each, two command reviewers whose
``context_tokens`` forces slicing. Each worker reviews some slices, every file is shown to
each reviewer once, and each reviewer is one participant in the report."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_council_distributed import council
from tests.sandboxing import bwrap_or_skip
from tests.unit.test_slices_review import FILES, NOTER, _shown
from tests.unit.test_untrusted_sandbox import two_commits

pytestmark = pytest.mark.integration

SLOW_NOTER = NOTER.replace(
    "import json, os, re, sys", "import json, os, re, sys, time\ntime.sleep(0.5)"
)
"""The noting program, half a second slower: a worker of one thread holds one slice at a
time, so the other worker takes the next."""


def test_slices_spread_over_two_workers(redis_url: str, start_worker: Any, tmp_path: Path) -> None:
    bwrap_or_skip()
    roster = "[council]\nbackstop_ms = 120000\nidle_ms = 120000\n"
    for rid in ("alpha", "beta"):
        roster += f'[[reviewers]]\nid = "{rid}"\nbackend = "command"\nprogram = "tools/noter.py"\n'
        roster += "context_tokens = 6000\n"
    repo = tmp_path / "repo"
    base = two_commits(
        repo,
        {"council.toml": roster, "tools/noter.py": SLOW_NOTER, "README": "x\n"},
        FILES,
        executable=("tools/noter.py",),
    )
    start_worker("w1", threads=1)
    start_worker("w2", threads=1)
    out = tmp_path / "report.json"
    done = council(
        "review",
        "--repo",
        str(repo),
        "--base",
        base,
        "--json",
        str(out),
        "--no-progress",
        env={"COUNCIL_REDIS_URL": redis_url},
    )
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(out.read_text())
    seen = _shown(report)
    for rid in ("alpha", "beta"):
        assert seen[rid] == Counter(dict.fromkeys(FILES, 1)), rid
    summary = {p["id"]: p for p in report["participants"]}
    assert set(summary) == {"alpha", "beta"}
    slices = summary["alpha"]["slices"]
    assert slices > 1 and all(p["state"] == "answered" for p in summary.values())
    ran = {
        name: set(
            re.findall(
                r"review_finished.*?participant[\"=:\s]+\"?((?:alpha|beta)@\d+)",
                (tmp_path / f"{name}.log").read_text(errors="replace"),
            )
        )
        for name in ("w1", "w2")
    }
    assert ran["w1"] and ran["w2"], ran  # both workers reviewed slices
    assert len(ran["w1"] | ran["w2"]) == 2 * slices
    assert not ran["w1"] & ran["w2"]  # each slice once
