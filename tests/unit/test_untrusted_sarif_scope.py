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

from council.readers.sarif import read_sarif
from council.readers.sarif_scope import statement_lines
from reviewers.programs.statements import SOURCE_MAX_BYTES, python_statements, statement_spans
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

    one = read_sarif(log("src%5Capp.py"), ["src/app.py"])
    assert [f["location"]["file"] for f in one.findings] == ["src/app.py"]
    exact = read_sarif(log("src%5Capp.py"), ["src/app.py", "src\\app.py"])
    assert [f["location"]["file"] for f in exact.findings] == ["src\\app.py"]
    both = read_sarif(log("a%5Cb%5Cc.py"), ["a/b\\c.py", "a\\b/c.py"])
    assert both.findings == [] and both.ignored_results == 1


CALL = (
    "import subprocess\n\n\ndef run(x):\n"
    "    subprocess.call(\n        x,\n        shell={},\n    )\n"
)
"""A four-line call at lines 5 to 8; line 7 says whether it runs a shell."""


def test_shell_true_on_a_continuation_line_fails_the_gate(tmp_path: Path) -> None:
    """The change edits only line 7 (``shell=False`` → ``shell=True``); bandit marks lines
    5–6. The result lies in the edit's hunk, so it is kept: exit 1 (it was exit 0)."""
    base = {"app.py": CALL.format("False")}
    code, report, output = review(tmp_path, base, {"app.py": CALL.format("True")})
    assert code == 1, output
    (finding,) = [f for f in report["findings"] if f["subject"].startswith("B602")]
    assert finding["anchor"]["path"] == "app.py"


LONG_CALL = (
    "import subprocess\n\n\ndef run(x):\n"
    '    subprocess.call(\n        x,\n        "a",\n        "b",\n        shell={},\n    )\n'
)
"""A six-line call at lines 5 to 10; line 9, four lines below its start, says whether it
runs a shell (bandit still marks lines 5–6, out of reach of line 9's hunk)."""


def test_shell_true_far_down_a_long_call_fails_the_gate(tmp_path: Path) -> None:
    """The edit is on line 9 of a call starting at line 5: past the hunk's context, but in
    the same statement, so the result is kept and reaches line 9: exit 1."""
    base = {"app.py": LONG_CALL.format("False")}
    code, report, output = review(tmp_path, base, {"app.py": LONG_CALL.format("True")})
    assert code == 1, output
    (finding,) = [f for f in report["findings"] if f["subject"].startswith("B602")]
    assert (finding["anchor"]["start_line"], finding["anchor"]["line"]) == (5, 9)


def test_statement_spans_give_headers_of_compound_statements() -> None:
    """A simple statement spans all its lines; a compound one its header only; source
    that does not parse has no spans."""
    source = b"def f(\n    a,\n):\n    x = g(\n        1,\n    )\n    return x\n"
    spans = statement_spans(source)
    assert spans == ((1, 3), (4, 6), (7, 7))
    table = statement_lines(spans)
    assert table[5] == (4, 6) and 8 not in table
    one_line = statement_spans(b"if x: y = (\n    1)\n")
    assert one_line == ((1, 1), (1, 2)) and statement_lines(one_line)[1] == (1, 1)
    assert statement_spans(b"def f(:\n") == () and statement_spans(b"x = 1\0") == ()
    assert statement_spans(b"(" * 10_000) == ()


def test_the_statements_of_a_file_outside_the_tree_are_not_read(tmp_path: Path) -> None:
    """A symbolic link out of the tree, a file over the cap and a non-Python file give no
    spans (only the hunk rule applies to them); a Python file of the tree does."""
    tree, outside = tmp_path / "tree", tmp_path / "outside.py"
    tree.mkdir()
    outside.write_text("x = 1\n")
    (tree / "link.py").symlink_to(outside)
    (tree / "big.py").write_bytes(b"x = 1\n" * (SOURCE_MAX_BYTES // 6 + 1))
    (tree / "a.txt").write_text("x = 1\n")
    (tree / "a.py").write_text("x = 1\n")
    spans = python_statements(tree)
    assert [spans(name) for name in ("link.py", "big.py", "a.txt", "nope.py")] == [()] * 4
    assert spans("a.py") == ((1, 1),)


def test_an_old_critical_far_from_the_edit_stays_out_but_is_said(tmp_path: Path) -> None:
    """An old B602 far from the change's lines is still left out (exit 0, no flood of
    old problems), and the reviewer's note counts it as an error-level result dropped."""
    old = CALL.format("True") + "\n" * 20 + "\n\ndef other():\n    return 1\n"
    new = old.replace("return 1", "return 2")
    code, report, output = review(tmp_path, {"app.py": old}, {"app.py": new})
    assert code == 0, output
    assert report["findings"] == []
    (bandit,) = report["participants"]
    notes = report["notes"] + bandit.get("notes", [])
    assert any("1 result(s) at SARIF level error" in note for note in notes), notes


def test_the_example_bandit_exclude_is_anchored_to_the_tests_folder(tmp_path: Path) -> None:
    """With the example roster's own ``-x``, files whose path merely contains ``tests``
    are scanned (each fails the gate); only the top-level ``tests/`` folder is skipped."""
    sneaky = ["tests_util.py", "testsuite/evil.py", "src/x./tests/t.py", "src/x./tests/*e.py"]
    change = {name: SHELL for name in [*sneaky, "tests/test_app.py"]}
    code, report, output = review(tmp_path, {"app.py": "x = 1\n"}, change)
    assert code == 1, output
    flagged = {f["anchor"]["path"] for f in report["findings"] if f["subject"].startswith("B602")}
    assert flagged == set(sneaky)
