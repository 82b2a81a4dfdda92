"""A change cannot skip its own code by what it writes: a long line skips only a script or
stylesheet (minified in real life), git's "binary" only a known binary kind or a path the
base tree's ``.gitattributes`` marks; any other such file is shown, or named as seen by no
reviewer (exit 3). Analyzers still run and gate. Each test builds a real repository whose
BASE holds the roster and runs ``council review`` (embedded) as CI runs it. Source:
docs/guide.md "What is skipped, and coverage", docs/security.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from council.change.skipping import MINIFIED_LINE_CHARS
from tests.gitrepo import commit, git, new_repo
from tests.sandboxing import bwrap_or_skip
from tests.unit.test_untrusted_sandbox import two_commits
from workers.cli import main

ROUND = "[council]\nbackstop_ms = 60000\nidle_ms = 60000\n"
OWL = '[[reviewers]]\nid = "owl"\nbackend = "replay"\nanswer = "owl.json"\n'
QUIET = json.dumps({"findings": []})

LONG_COMMENT = "# " + "x" * MINIFIED_LINE_CHARS + "\n"
SHELL = "import os\n\n\ndef run(cmd):\n    os.system(cmd)  # shell injection\n"
"""The hostile pull request's code: ``os.system`` on line 5."""


def review(repo: Path, base: str, tmp_path: Path) -> tuple[Result, dict[str, Any] | None]:
    """``council review`` of base..HEAD with the base tree's roster (gate at critical)."""
    out = tmp_path / "report.json"
    argv = ["review", "--repo", str(repo), "--base", base, "--no-progress", "--json", str(out)]
    argv += ["--state", str(tmp_path / "state.json"), "--fail-on", "critical"]
    done = CliRunner().invoke(main, argv)
    return done, json.loads(out.read_text()) if out.exists() else None


def sarif_script(path: str, line: int) -> str:
    """A program printing a SARIF log with one error on ``path`` at ``line``, whatever
    the tree holds (bandit's B605, without bandit)."""
    result = {
        "ruleId": "B605",
        "level": "error",
        "message": {"text": "Starting a process with a shell, possible injection detected"},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": path},
                    "region": {"startLine": line},
                }
            }
        ],
    }
    log = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "b"}}, "results": [result]}]}
    return f"#!{sys.executable}\nimport json\nprint(json.dumps({log!r}))\n"


def with_analyzer(path: str, line: int) -> dict[str, str]:
    """A base tree: the replay reviewer ``owl`` and the analyzer ``bandit`` (a script)."""
    roster = (
        ROUND + OWL + '[[reviewers]]\nid = "bandit"\nbackend = "sarif"\nprogram = "tools/b.py"\n'
    )
    return {"council.toml": roster, "owl.json": QUIET, "tools/b.py": sarif_script(path, line)}


def coverage_of(report: dict[str, Any]) -> dict[str, Any]:
    coverage: dict[str, Any] = report["coverage"]
    return coverage


def test_a_long_comment_line_does_not_skip_code_and_the_analyzer_gates(tmp_path: Path) -> None:
    """The hostile tester's r9: ``app.py`` with a shell injection and a 5,002-character
    comment line was "minified", the change had "nothing to review" and exited 0 before
    the analyzer ran. Now the file is shown to the replay reviewer, nothing is skipped,
    and the analyzer's critical gates (exit 1)."""
    bwrap_or_skip()
    repo = tmp_path / "repo"
    base_files = {**with_analyzer("app.py", 5), "a.py": "x = 1\n"}
    base = two_commits(
        repo, base_files, {"app.py": SHELL + LONG_COMMENT}, executable=("tools/b.py",)
    )
    done, report = review(repo, base, tmp_path)
    assert done.exit_code == 1, done.output
    assert report is not None
    coverage = coverage_of(report)
    assert coverage["skipped"] == [] and coverage["unreviewed"] == []
    assert coverage["reviewers"][0]["seen"] == ["app.py"]
    assert [f["origin"]["participant"] for f in report["findings"]] == ["bandit"]


def test_a_line_over_the_budget_is_not_seen_whatever_its_length(tmp_path: Path) -> None:
    """The hostile tester's r17: a command reviewer of few tokens (3,800 there, 3,000
    here); a 4,902-character line was cut (exit 3) but a 5,003-character one was
    "minified" (exit 0). Both are now a line over its context budget: exit 3, naming
    the file."""
    bwrap_or_skip()
    answer = f"#!{sys.executable}\nimport sys, json\nsys.stdin.read()\nprint({QUIET!r})\n"
    roster = ROUND + '[[reviewers]]\nid = "prog"\nbackend = "command"\nprogram = "tools/rev.py"\n'
    roster += "context_tokens = 3000\n"
    repo = tmp_path / "repo"
    base_files = {"council.toml": roster, "tools/rev.py": answer, "a.py": "x = 1\n"}
    base = two_commits(
        repo, base_files, {"app.py": SHELL + LONG_COMMENT}, executable=("tools/rev.py",)
    )
    done, report = review(repo, base, tmp_path)
    assert done.exit_code == 3, done.output
    assert report is not None
    assert coverage_of(report)["skipped"] == []
    assert "1 file(s) no prompt reviewer saw: app.py (a line over a reviewer's context budget)" in (
        done.output
    )


def test_a_nul_byte_in_a_script_makes_it_unseen_not_skipped(tmp_path: Path) -> None:
    """The hostile tester's r16: ``deploy.sh`` with a NUL byte (git calls it binary, sh
    runs it) was "binary file not shown" and exit 0. Its kind is no binary kind: it is
    named as no reviewer can read it, and the round is partial (exit 3)."""
    repo = tmp_path / "repo"
    base_files = {"council.toml": ROUND + OWL, "owl.json": QUIET, "a.py": "x = 1\n"}
    script = "#!/bin/sh\necho PWNED-ran\n# \0\n"
    base = two_commits(repo, base_files, {"deploy.sh": script})
    done, report = review(repo, base, tmp_path)
    assert done.exit_code == 3, done.output
    assert report is not None
    coverage = coverage_of(report)
    assert [(f["path"], f["reason"]) for f in coverage["unreviewed"]] == [
        ("deploy.sh", "unreadable")
    ]
    assert coverage["skipped"] == []
    seen = "1 file(s) no prompt reviewer saw: deploy.sh (binary, of no known binary kind"
    assert seen in done.output
    assert any(n.startswith("not reviewed, no reviewer can read it:") for n in report["notes"])


def test_deleting_a_binary_of_no_known_kind_is_no_unseen_file(tmp_path: Path) -> None:
    """A deletion hides no code: a ``data.bin`` the pull request deletes is skipped as
    binary, and the round is whole (it was partial, exit 3, for every such deletion)."""
    repo = new_repo(
        tmp_path / "repo",
        {"council.toml": ROUND + OWL, "owl.json": QUIET, "a.py": "x = 1\n", "data.bin": b"x\0y"},
    )
    base = git(repo, "rev-parse", "HEAD")
    commit(repo, {"data.bin": None, "a.py": "x = 1\ny = 2\n"}, "delete the data")
    done, report = review(repo, base, tmp_path)
    assert done.exit_code == 0, done.output
    assert report is not None
    coverage = coverage_of(report)
    assert coverage["unreviewed"] == []
    assert [(f["path"], f["reason"]) for f in coverage["skipped"]] == [("data.bin", "binary")]


def test_the_base_attributes_may_mark_a_kind_binary(tmp_path: Path) -> None:
    """The team's ``*.dat binary`` in the base tree's .gitattributes: a ``.dat`` file
    with a NUL byte is skipped as binary on purpose (exit 0); the change's own
    .gitattributes marking its ``.sh`` binary is not read (exit 3)."""
    repo = tmp_path / "repo"
    base_files = {
        "council.toml": ROUND + OWL,
        "owl.json": QUIET,
        ".gitattributes": "*.dat binary\n",
    }
    base = two_commits(repo, base_files, {"table.dat": "a\0b\n"})
    done, report = review(repo, base, tmp_path)
    assert done.exit_code == 0, done.output
    assert report is not None
    assert [(f["path"], f["reason"]) for f in coverage_of(report)["skipped"]] == [
        ("table.dat", "binary")
    ]

    (repo / ".gitattributes").write_text("*.dat binary\n*.sh binary\n")
    (repo / "run.sh").write_text("echo hi\n# \0\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "hide a script")
    done, report = review(repo, base, tmp_path)
    assert done.exit_code == 3, done.output
    assert report is not None
    assert [f["path"] for f in coverage_of(report)["unreviewed"]] == ["run.sh"]


def test_an_ordinary_png_and_minified_bundle_are_still_skipped(tmp_path: Path) -> None:
    """A real PNG and a real minified bundle (``dist/app.js``, one long line) beside a
    source edit: both skipped on purpose, as before, and the round completes (exit 0)."""
    repo = tmp_path / "repo"
    base_files = {"council.toml": ROUND + OWL, "owl.json": QUIET, "a.py": "x = 1\n"}
    base = two_commits(repo, base_files, {"a.py": "x = 2\n"})
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)))
    (repo / "dist").mkdir()
    (repo / "dist/app.js").write_text("var a=" + "1+" * MINIFIED_LINE_CHARS + "1;\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "assets")
    done, report = review(repo, base, tmp_path)
    assert done.exit_code == 0, done.output
    assert report is not None
    coverage = coverage_of(report)
    assert {f["path"]: f["reason"] for f in coverage["skipped"]} == {
        "dist/app.js": "minified",
        "logo.png": "binary",
    }
    assert coverage["unreviewed"] == []
    assert coverage["reviewers"][0]["seen"] == ["a.py"]


def test_an_analyzers_result_on_a_minified_bundle_still_gates(tmp_path: Path) -> None:
    """A bundle skipped for the prompts by its long line is still the change's for the
    analyzers: the analyzer's critical on it is kept and gates (exit 1)."""
    bwrap_or_skip()
    repo = tmp_path / "repo"
    bundle = "eval(location.hash);var a=" + "1+" * MINIFIED_LINE_CHARS + "1;\n"
    base_files = {**with_analyzer("web/bundle.js", 1), "a.py": "x = 1\n"}
    change = {"a.py": "x = 2\n", "web/bundle.js": bundle}
    base = two_commits(repo, base_files, change, executable=("tools/b.py",))
    done, report = review(repo, base, tmp_path)
    assert done.exit_code == 1, done.output
    assert report is not None
    assert [f["path"] for f in coverage_of(report)["skipped"]] == ["web/bundle.js"]
    assert [f["anchor"]["path"] for f in report["findings"]] == ["web/bundle.js"]


def test_a_change_of_only_a_minified_bundle_is_sent_anyway(tmp_path: Path) -> None:
    """A change holding nothing but a file minified by its line: not "nothing to review"
    (exit 0 before any reviewer read it) but sent to the reviewers, with a note."""
    repo = tmp_path / "repo"
    base_files = {"council.toml": ROUND + OWL, "owl.json": QUIET, "a.py": "x = 1\n"}
    bundle = "var a=" + "1+" * MINIFIED_LINE_CHARS + "1;\n"
    base = two_commits(repo, base_files, {"web/bundle.js": bundle})
    done, report = review(repo, base, tmp_path)
    assert done.exit_code == 0, done.output
    assert report is not None
    coverage = coverage_of(report)
    assert coverage["skipped"] == []
    assert coverage["reviewers"][0]["seen"] == ["web/bundle.js"]
    said = "1 file(s) minified by a line sent anyway"
    assert any(n.startswith(said) for n in report["notes"]), report["notes"]
