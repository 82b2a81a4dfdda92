"""A change cannot take an analyzer's result out of the gate by where it puts it.

Three ways a hostile change did, each played here on a real repository with the real
bandit and the example roster's bandit arguments (``examples/council.toml``):

* a backslash in a file name (``src/evil\\x.py``): the result was filed at
  ``src/evil/x.py``, a path not in the change, and left out;
* an edit on a statement's continuation line: bandit marks the statement's first two
  lines, so with ``scope = "lines"`` turning ``shell=False`` into ``shell=True`` on the
  third touched no line of the result and the critical was dropped;
* bandit's ``-x`` matches a substring: ``-x ./tests`` also skipped ``tests_util.py``,
  ``testsuite/`` and ``src/x./tests/``.

Source: docs/architecture.md "Reports, the CLI and the gate".
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from council.reviewers.sarif import findings_from_sarif
from tests.gitrepo import ROOT
from tests.sandboxing import bwrap_or_skip
from tests.unit.test_untrusted_sandbox import two_commits
from workers.cli import main

SHELL = "import subprocess\nsubprocess.call(x, shell=True)\n"
"""A file bandit reports (B602, subprocess with shell=True: high, level error)."""


def example_bandit() -> dict[str, Any]:
    """The bandit reviewer of the example roster, as it is written there."""
    roster = tomllib.loads((ROOT / "examples" / "council.toml").read_text())
    (bandit,) = [r for r in roster["reviewers"] if r["id"] == "bandit"]
    return dict(bandit)


def roster_of(reviewer: dict[str, Any]) -> str:
    """A base-tree roster holding one reviewer (the example's clocks, short)."""
    lines = ["[council]", "backstop_ms = 60000", "idle_ms = 60000", "[[reviewers]]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in reviewer.items()]
    return "\n".join(lines) + "\n"


def review(
    tmp_path: Path, base: dict[str, str], change: dict[str, str]
) -> tuple[int, dict[str, Any], str]:
    """``council review`` of the change with the example's bandit in the base tree:
    the exit code, the JSON report and the CLI's output."""
    bwrap_or_skip()
    repo = tmp_path / "repo"
    sha = two_commits(repo, {"council.toml": roster_of(example_bandit()), **base}, change)
    out = tmp_path / "report.json"
    argv = ["review", "--repo", str(repo), "--base", sha, "--no-progress"]
    argv += ["--state", str(tmp_path / "state.json"), "--json", str(out)]
    done = CliRunner().invoke(main, argv)
    return done.exit_code, json.loads(out.read_text()), done.output


def test_a_backslash_in_a_file_name_keeps_the_result_on_that_file(tmp_path: Path) -> None:
    """``src/evil\\x.py`` is one POSIX file: bandit's B602 on it is filed there, and fails
    the gate (it used to be filed at ``src/evil/x.py`` and left out: exit 0)."""
    code, report, output = review(tmp_path, {"app.py": "x = 1\n"}, {"src/evil\\x.py": SHELL})
    assert code == 1, output
    (finding,) = [f for f in report["findings"] if f["subject"].startswith("B602")]
    assert finding["anchor"]["path"] == "src/evil\\x.py"
    assert finding["severity"] == "critical"


def test_a_result_filed_in_windows_spelling_falls_back_to_the_one_changed_file() -> None:
    """A path with backslashes that names no changed file exactly is read as slashes,
    when that names exactly one changed file; two candidates match none."""

    def log(uri: str) -> dict[str, Any]:
        place = {"physicalLocation": {"artifactLocation": {"uri": uri}}}
        result = {"ruleId": "R", "message": {"text": "m"}, "locations": [place]}
        return {"version": "2.1.0", "runs": [{"tool": {"driver": {}}, "results": [result]}]}

    one = findings_from_sarif(log("src%5Capp.py"), ["src/app.py"])
    assert [f["location"]["file"] for f in one["findings"]] == ["src/app.py"]
    exact = findings_from_sarif(log("src%5Capp.py"), ["src/app.py", "src\\app.py"])
    assert [f["location"]["file"] for f in exact["findings"]] == ["src\\app.py"]
    both = findings_from_sarif(log("a%5Cb%5Cc.py"), ["a/b\\c.py", "a\\b/c.py"])
    assert both["findings"] == [] and both["ignored_results"] == 1
