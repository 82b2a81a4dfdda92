"""An analyzer that says it could not analyze part of the change is not a pass.

bandit, given a changed file it cannot parse, lists it under its SARIF log's
``invocations[].toolConfigurationNotifications`` at level ``error`` and reports nothing
for it: read as results alone, that silence looked clean. The reviewer is now heard in
part (``unanalyzed``, the files named in its note), so the gate fails closed (exit 3).
Source: docs/architecture.md "Reports, the CLI and the gate".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from council.readers.sarif import read_sarif
from tests.sandboxing import bwrap_or_skip
from tests.unit.test_untrusted_sandbox import two_commits
from workers.cli import main


def _log(invocation: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": "2.1.0",
        "runs": [
            {"tool": {"driver": {"name": "bandit"}}, "results": [], "invocations": [invocation]}
        ],
    }


def _note(uri: str, level: str = "error") -> dict[str, Any]:
    return {
        "level": level,
        "message": {"text": "syntax error while parsing AST from file"},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri}}}],
    }


def test_error_notifications_name_the_changed_files_not_analyzed() -> None:
    """Error-level notifications on changed files are read (both kinds, once each);
    a warning, or a file outside the change, is not."""
    log = _log(
        {
            "executionSuccessful": True,
            "toolConfigurationNotifications": [
                _note("bad.py"),
                _note("old.py"),
                _note("w.py", "warning"),
            ],
            "toolExecutionNotifications": [_note("./bad.py"), _note("lib/other.py")],
        }
    )
    read = read_sarif(log, ["bad.py", "w.py", "lib/other.py"])
    assert read.unanalyzed_files == ["bad.py", "lib/other.py"]
    assert read.execution_failed is False


def test_an_unsuccessful_execution_is_said() -> None:
    """``executionSuccessful: false`` with no file named still says the run failed."""
    read = read_sarif(_log({"executionSuccessful": False}), ["a.py"])
    assert read.unanalyzed_files == [] and read.execution_failed is True
    clean = read_sarif(_log({"executionSuccessful": True}), ["a.py"])
    assert clean.unanalyzed_files == [] and clean.execution_failed is False


def test_bandit_that_cannot_parse_a_changed_file_fails_the_gate_closed(tmp_path: Path) -> None:
    """The real bandit on a change adding a file it cannot parse: exit 3, the reviewer
    heard in part (``unanalyzed``), its note naming the file; a clean change passes."""
    bwrap_or_skip()
    roster = (
        "[council]\nbackstop_ms = 60000\nidle_ms = 60000\n"
        '[[reviewers]]\nid = "bandit"\nbackend = "sarif"\nprogram = "bandit"\n'
        'args = ["-r", ".", "-f", "sarif", "--exit-zero", "-q"]\n'
    )
    repo = tmp_path / "repo"
    base = two_commits(
        repo,
        {"council.toml": roster, "app.py": "x = 1\n"},
        {"broken.py": "def f(:\n    return 1\n", "app.py": "x = 2\n"},
    )
    out = tmp_path / "report.json"
    argv = ["review", "--repo", str(repo), "--base", base, "--no-progress"]
    argv += ["--state", str(tmp_path / "state.json"), "--json", str(out)]
    done = CliRunner().invoke(main, argv)
    assert done.exit_code == 3, done.output
    report = json.loads(out.read_text())
    (bandit,) = report["participants"]
    assert bandit["read_in_part"] == "unanalyzed", bandit
    assert any(
        '"broken.py"' in note and "could not analyze" in note
        for note in report["notes"] + bandit.get("notes", [])
    )
