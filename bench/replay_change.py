"""The change the fleet and overhead benchmarks review: one added debug print, reviewed
by ``reviewers`` replay reviewers that each take ``latency_ms`` to give the same answer.

A replay reviewer costs no model and no network, so what these benchmarks time is the
council itself (preparation, dispatch, workers, settling). Source: docs/architecture.md
"The canvas".
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.gitrepo import commit, new_repo  # noqa: E402
from workers.coordinator.preparation import ReviewOptions  # noqa: E402

ANSWER = {
    "findings": [
        {
            "subject": "debug print left in",
            "label": "nitpick",
            "location": {"kind": "line", "file": "app.py", "start": 2},
        }
    ]
}
"""What every replay reviewer answers."""


def replay_change(
    tmp: Path, *, reviewers: int, latency_ms: int, clock_ms: int, session: str
) -> ReviewOptions:
    """A repository under ``tmp`` with a one-line change, and a roster of ``reviewers``
    replay reviewers (``r0``, ``r1``, …) answering :data:`ANSWER` after ``latency_ms``,
    with backstop and idle clocks of ``clock_ms``; the options that review it in
    ``session``."""
    repo = new_repo(tmp / "repo", {"app.py": "x = 1\n"})
    base = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    commit(repo, {"app.py": "x = 1\nprint(x)\n"}, "change")
    (tmp / "answer.json").write_text(json.dumps(ANSWER))
    tables = "".join(
        f'[[reviewers]]\nid = "r{i}"\nbackend = "replay"\nanswer = "answer.json"\n'
        f"latency_ms = {latency_ms}\n\n"
        for i in range(reviewers)
    )
    roster = tmp / "council.toml"
    roster.write_text(
        f"[council]\nbackstop_ms = {clock_ms}\nidle_ms = {clock_ms}\nanswer_ms = 0\n\n" + tables
    )
    return ReviewOptions(repo=repo, base=base, roster=roster, session=session)
