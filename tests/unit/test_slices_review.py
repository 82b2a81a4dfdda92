"""A change over its reviewers' context budgets is reviewed in slices, every file once.

The issue's measure (issue 22): a change of many Python files, reviewed by two command
reviewers whose ``context_tokens`` is small enough to force slicing; each program answers
one finding per file its prompt shows (from git's own ``diff --git`` headers), named with
the task's participant (``alpha@3``). Every file is shown to each reviewer exactly once
across its slices, the lists of what other slices hold are never read as diff, each
reviewer's slices fold into one participant, and the run exits 0 or 1.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from tests.gitrepo import git
from tests.sandboxing import bwrap_or_skip
from tests.unit.test_untrusted_sandbox import two_commits
from workers.cli import main

NOTER = f"""#!{sys.executable}
import json, os, re, sys
prompt = sys.stdin.read()
who = os.environ["COUNCIL_PARTICIPANT"]
shown = re.findall(r"^diff --git a/(\\S+) b/", prompt, re.MULTILINE)
print(json.dumps({{"findings": [
    {{"location": {{"kind": "file", "file": path}}, "label": "note", "severity": "minor",
      "subject": f"shown {{path}} to {{who}}", "discussion": "coverage probe"}}
    for path in shown
]}}))
"""
"""A reviewer program that notes every file its prompt shows."""

FILES = {
    f"pkg{d}/mod{i}.py": "".join(f"value_{i}_{n} = {n}\n" for n in range(40))
    for d in range(6)
    for i in range(10)
}
"""60 Python files in 6 directories, 40 lines each."""


def _report(tmp_path: Path, context_tokens: int) -> tuple[int, dict[str, Any]]:
    bwrap_or_skip()
    roster = "[council]\nbackstop_ms = 120000\nidle_ms = 120000\n"
    for rid in ("alpha", "beta"):
        roster += f'[[reviewers]]\nid = "{rid}"\nbackend = "command"\nprogram = "tools/noter.py"\n'
        roster += f"context_tokens = {context_tokens}\n"
    repo = tmp_path / "repo"
    base = two_commits(
        repo,
        {"council.toml": roster, "tools/noter.py": NOTER, "README": "x\n"},
        FILES,
        executable=("tools/noter.py",),
    )
    argv = ["review", "--repo", str(repo), "--base", base, "--no-progress"]
    argv += ["--state", str(tmp_path / "state.json"), "--json", str(tmp_path / "report.json")]
    done = CliRunner().invoke(main, argv)
    assert done.exit_code in (0, 1), done.output
    return done.exit_code, json.loads((tmp_path / "report.json").read_text())


def _shown(report: dict[str, Any]) -> dict[str, Counter[str]]:
    """Reviewer id → how many slices showed each path (from the findings' subjects)."""
    seen: dict[str, Counter[str]] = {"alpha": Counter(), "beta": Counter()}
    for finding in report["findings"]:
        for member in finding.get("members") or [finding]:
            subject = member["subject"]
            _, path, _, unit = subject.split(" ")
            seen[unit.split("@")[0]][path] += 1
    return seen


def test_every_file_is_shown_to_each_reviewer_exactly_once_across_its_slices(
    tmp_path: Path,
) -> None:
    code, report = _report(tmp_path, context_tokens=6000)
    assert code in (0, 1)
    seen = _shown(report)
    for rid in ("alpha", "beta"):
        assert seen[rid] == Counter(dict.fromkeys(FILES, 1)), rid
    summary = {p["id"]: p for p in report["participants"]}
    assert summary["alpha"]["slices"] > 1
    assert summary["alpha"]["slices"] == summary["beta"]["slices"]
    assert all(p["state"] == "answered" for p in summary.values())
    # The coverage table says the same: every file seen by each, in as many slices.
    lines = {r["id"]: r for r in report["coverage"]["reviewers"]}
    for rid in ("alpha", "beta"):
        assert sorted(lines[rid]["seen"]) == sorted(FILES), rid
        assert lines[rid]["slices"] == summary[rid]["slices"] and not lines[rid]["failed"]


def test_a_budget_too_small_for_the_instructions_exits_2_naming_what_it_needs(
    tmp_path: Path,
) -> None:
    bwrap_or_skip()
    roster = "[council]\nbackstop_ms = 120000\nidle_ms = 120000\n"
    roster += '[[reviewers]]\nid = "alpha"\nbackend = "command"\nprogram = "tools/noter.py"\n'
    roster += "context_tokens = 800\n"
    repo = tmp_path / "repo"
    base = two_commits(
        repo,
        {"council.toml": roster, "tools/noter.py": NOTER, "README": "x\n"},
        FILES,
        executable=("tools/noter.py",),
    )
    argv = ["review", "--repo", str(repo), "--base", base, "--no-progress"]
    done = CliRunner().invoke(main, [*argv, "--state", str(tmp_path / "state.json")])
    assert done.exit_code == 2, done.output
    assert "alpha's context budget of 800 tokens" in done.output
    assert "Set context_tokens = " in done.output


def test_a_binary_file_and_a_file_renamed_and_rewritten_in_slices(tmp_path: Path) -> None:
    """Issue 22's bad input: beside the 60 files, a binary file is added and a file is
    renamed and rewritten (git shows it deleted and added). The binary file is listed as
    skipped, why "binary" (its header alone is in one slice, its bytes in none); the
    rewritten file's old and new paths are each shown to each reviewer exactly once
    across its slices."""
    bwrap_or_skip()
    roster = "[council]\nbackstop_ms = 120000\nidle_ms = 120000\n"
    for rid in ("alpha", "beta"):
        roster += f'[[reviewers]]\nid = "{rid}"\nbackend = "command"\nprogram = "tools/noter.py"\n'
        roster += "context_tokens = 6000\n"
    old = "".join(f"def old_{n}(x):\n    return x + {n}\n" for n in range(60))
    repo = tmp_path / "repo"
    base = two_commits(
        repo,
        {"council.toml": roster, "tools/noter.py": NOTER, "README": "x\n", "src/old.py": old},
        FILES,
        executable=("tools/noter.py",),
    )
    git(repo, "mv", "src/old.py", "src/new.py")
    (repo / "src/new.py").write_text(
        "".join(f"def rewritten_{n}(y):\n    return y * {n} - 1\n" for n in range(60))
    )
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0" + bytes(range(256)) * 16)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "rename and rewrite; a binary")
    argv = ["review", "--repo", str(repo), "--base", base, "--no-progress"]
    argv += ["--state", str(tmp_path / "state.json"), "--json", str(tmp_path / "report.json")]
    done = CliRunner().invoke(main, argv)
    assert done.exit_code in (0, 1), done.output
    report = json.loads((tmp_path / "report.json").read_text())
    skipped = {f["path"]: f["reason"] for f in report["coverage"]["skipped"]}
    assert skipped == {"logo.png": "binary"}
    seen = _shown(report)
    for rid in ("alpha", "beta"):
        assert seen[rid].pop("logo.png", 0) <= 1
        assert seen[rid] == Counter(dict.fromkeys([*FILES, "src/old.py", "src/new.py"], 1)), rid
    assert {p["state"] for p in report["participants"]} == {"answered"}


def test_a_line_over_every_budget_leaves_its_file_unseen_and_the_round_partial(
    tmp_path: Path,
) -> None:
    """A minified bundle sent anyway (``[paths] review_kinds``) whose one long line is
    over both reviewers' budgets: no prompt shows that line, so neither reviewer saw the
    file in full. The coverage lists it as not shown in full to each, with why, and the
    round is partial (exit 3) naming it: a cut we made is never a green gate."""
    bwrap_or_skip()
    roster = "[council]\nbackstop_ms = 120000\nidle_ms = 120000\n"
    roster += '[paths]\nreview_kinds = ["minified"]\n'
    for rid in ("alpha", "beta"):
        roster += f'[[reviewers]]\nid = "{rid}"\nbackend = "command"\nprogram = "tools/noter.py"\n'
        roster += "context_tokens = 6000\n"
    bundle = "var a = [" + ",".join(str(n) for n in range(6000)) + "];\nvar b = 1;\n"
    repo = tmp_path / "repo"
    base = two_commits(
        repo,
        {"council.toml": roster, "tools/noter.py": NOTER, "README": "x\n"},
        {"web/app.js": bundle, "src/ok.py": "x = 1\n"},
        executable=("tools/noter.py",),
    )
    argv = ["review", "--repo", str(repo), "--base", base, "--no-progress"]
    argv += ["--state", str(tmp_path / "state.json"), "--json", str(tmp_path / "report.json")]
    done = CliRunner().invoke(main, argv)
    assert done.exit_code == 3, done.output
    unseen = "no prompt reviewer saw: web/app.js (a line over a reviewer's context budget)"
    assert unseen in done.output
    report = json.loads((tmp_path / "report.json").read_text())
    for line in report["coverage"]["reviewers"]:
        assert "web/app.js" not in line["seen"] and "src/ok.py" in line["seen"], line
        assert [(f["path"], f["reason"]) for f in line["skipped"]] == [("web/app.js", "budget")]
