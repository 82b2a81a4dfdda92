"""--since-last and an analyzer's result on a line an earlier round filed: a push a few
lines below must not move it onto the new lines. Before, the result lay in the new
commits' hunk, was stretched to reach their first added line, named other code, and so
came back as a new finding: a dismissed one gated again, an open one was listed twice."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from council.rendering import read_json
from tests.gitrepo import commit, git, new_repo
from tests.sandboxing import bwrap_or_skip
from workers.cli import main

APP = "X = 1\n\n\ndef f():\n    unused = 2\n    return 3\n"
"""a.py as the pull request adds it: the analyzer marks line 5."""

F841 = {
    "version": "2.1.0",
    "runs": [
        {
            "tool": {"driver": {"name": "ruff"}},
            "results": [
                {
                    "ruleId": "F841",
                    "level": "error",
                    "message": {"text": "Local variable `unused` is assigned to but never used"},
                    "locations": [
                        {
                            "physicalLocation": {
                                "artifactLocation": {"uri": "a.py"},
                                "region": {"startLine": 5},
                            }
                        }
                    ],
                }
            ],
        }
    ],
}


def _rounds(tmp_path: Path) -> tuple[Path, list[str]]:
    """A repository whose base holds the roster (a SARIF analyzer printing F841 at a.py:5)
    and a pull request adding a.py; the review's arguments."""
    bwrap_or_skip()
    roster = "[council]\nbackstop_ms = 60000\nidle_ms = 60000\n"
    roster += '[[reviewers]]\nid = "ruff"\nbackend = "sarif"\nprogram = "tools/ruff.py"\n'
    script = f"#!{sys.executable}\nimport json\nprint(json.dumps({F841!r}))\n"
    repo = new_repo(tmp_path / "repo", {"council.toml": roster, "tools/ruff.py": script})
    (repo / "tools/ruff.py").chmod(0o755)
    git(repo, "add", "tools/ruff.py")
    git(repo, "commit", "-qm", "executable", "--allow-empty")
    base = git(repo, "rev-parse", "HEAD")
    commit(repo, {"a.py": APP}, "add a.py")
    argv = ["review", "--repo", str(repo), "--base", base, "--no-progress", "--session", "s"]
    argv += ["--state", str(tmp_path / "state.json"), "--fail-on", "minor"]
    return repo, argv


def _review(argv: list[str], out: Path, *more: str) -> tuple[int, Any]:
    done = CliRunner().invoke(main, [*argv, *more, "--json", str(out)])
    assert done.exit_code in (0, 1), done.output
    return done.exit_code, read_json(out.read_text())


def test_a_dismissed_analyzer_finding_stays_dismissed_after_a_push_below_it(
    tmp_path: Path,
) -> None:
    repo, argv = _rounds(tmp_path)
    code, first = _review(argv, tmp_path / "one.json")
    assert code == 1 and [f.id for f in first.findings] == [1]
    state = ["--state", str(tmp_path / "state.json"), "--session", "s"]
    dismissed = CliRunner().invoke(main, ["dismiss", "1", "--reason", "intended", *state])
    assert dismissed.exit_code == 0, dismissed.output
    commit(repo, {"a.py": APP + "\n\ndef g():\n    return 1\n"}, "add g")
    code, second = _review(argv, tmp_path / "two.json", "--since-last")
    assert code == 0, (second.findings, second.notes)
    assert [f.id for f in second.findings] == [1] and 1 in second.suppressed
    assert second.findings[0].anchor.line == 5  # its own line, not stretched to the new ones


def test_an_open_analyzer_finding_is_listed_once_after_a_push_below_it(tmp_path: Path) -> None:
    repo, argv = _rounds(tmp_path)
    _review(argv, tmp_path / "one.json")
    commit(repo, {"a.py": APP + "\n\ndef g():\n    return 1\n"}, "add g")
    code, second = _review(argv, tmp_path / "two.json", "--since-last")
    assert code == 1
    listed = [f.id for f in (*second.findings, *second.carried)]
    assert listed == [1], listed
