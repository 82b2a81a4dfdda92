"""The --filter modes (council/change/diff_filter.py): which findings gate and post inline; the
rest is listed with why, never dropped; an invented path never gates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from council.change.diff import parse_diff
from council.change.diff_filter import apply_filter, filter_reason, parse_filter
from council.model.findings import ChangeAnchor, FileAnchor, Finding, LineAnchor
from council.model.gate_choices import FILTER_MODES
from council.model.report import CouncilReport
from council.round.gate import gate_tripped
from tests.gitrepo import commit, new_repo
from tests.unit.test_cli_review import answer, report_of, review, reviewer, roster

DIFF = (
    "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n"
    "@@ -1,3 +1,4 @@\n x = 1\n+y = 2\n z = 3\n w = 4\n"
)
CHANGE = parse_diff(DIFF)
TREE = frozenset({"app.py", "lib.py"})


def _at(anchor: LineAnchor | FileAnchor | ChangeAnchor, fid: int = 1) -> Finding:
    return Finding(id=fid, anchor=anchor, label="issue", subject="s", severity="critical")


ADDED = _at(LineAnchor(path="app.py", line=2))
CONTEXT = _at(LineAnchor(path="app.py", line=3))
FAR = _at(LineAnchor(path="app.py", line=40))
OTHER_FILE = _at(FileAnchor(path="lib.py"))
INVENTED = _at(LineAnchor(path="nowhere.py", line=1))
WHOLE = _at(ChangeAnchor())

EXPECTED = {
    "added": [None, "not-added", "not-added", "file-unchanged", "no-such-path", None],
    "diff_context": [None, None, "not-in-diff", "file-unchanged", "no-such-path", None],
    "file": [None, None, None, "file-unchanged", "no-such-path", None],
    "nofilter": [None, None, None, None, "no-such-path", None],
}


@pytest.mark.parametrize("mode", FILTER_MODES)
def test_each_mode_passes_what_it_says(mode: str) -> None:
    findings = [ADDED, CONTEXT, FAR, OTHER_FILE, INVENTED, WHOLE]
    got = [filter_reason(f, CHANGE, parse_filter(mode), TREE) for f in findings]
    assert got == EXPECTED[mode]


def test_an_unknown_tree_calls_no_path_invented() -> None:
    assert filter_reason(INVENTED, CHANGE, "nofilter", None) is None
    with pytest.raises(ValueError, match="use one of"):
        parse_filter("everything")


def test_filtered_findings_stay_in_the_report_and_never_gate() -> None:
    findings = tuple(f.model_copy(update={"id": i}) for i, f in enumerate([ADDED, FAR], 1))
    report = CouncilReport(run_id="r", session="s", status="settled", findings=findings)
    filtered = apply_filter(report, CHANGE, "added", TREE)
    assert filtered.findings == report.findings
    assert filtered.filtered == {2: "not-added"}
    assert [f.id for f in gate_tripped(filtered.gated(fail_on="critical"))] == [1]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    lines = "".join(f"line{i} = {i}\n" for i in range(1, 30))
    path = new_repo(tmp_path / "repo", {"app.py": lines})
    commit(path, {"app.py": lines + "added = 1 / 0\n"}, "divide")
    return path


def _old_line_finding(tmp_path: Path) -> str:
    old = {
        "subject": "old smell far from the change",
        "label": "issue",
        "severity": "critical",
        "location": {"kind": "line", "file": "app.py", "line": 3},
    }
    return answer(tmp_path, "a.json", old)


def test_review_lists_but_does_not_gate_a_finding_outside_the_filter(
    tmp_path: Path, repo: Path
) -> None:
    tables = reviewer("rep", "replay", answer=_old_line_finding(tmp_path))
    out = tmp_path / "r.json"
    done = review(
        repo, tmp_path / "s.json", "--json", str(out), roster_path=roster(tmp_path, tables)
    )
    assert done.exit_code == 0, done.output
    assert "Outside the filter" in done.stdout and "old smell far from the change" in done.stdout
    report = report_of(out)
    assert list(report["filtered"].values()) == ["not-added"]
    assert report["filter"] == "added"
    wide = review(
        repo, tmp_path / "s2.json", "--filter", "file", roster_path=roster(tmp_path, tables)
    )
    assert wide.exit_code == 1, wide.output


def test_an_invented_path_never_gates(tmp_path: Path, repo: Path) -> None:
    invented = {
        "subject": "bug in a file that is not there",
        "label": "issue",
        "severity": "critical",
        "location": {"kind": "file", "file": "src/made_up.py"},
    }
    tables = reviewer("rep", "replay", answer=answer(tmp_path, "a.json", invented))
    out = tmp_path / "r.json"
    done = review(
        repo,
        tmp_path / "s.json",
        "--json",
        str(out),
        "--filter",
        "nofilter",
        roster_path=roster(tmp_path, tables),
    )
    assert done.exit_code == 0, done.output
    assert json.loads(out.read_text())["filtered"] == {"1": "no-such-path"}


def test_a_range_of_a_quintillion_lines_is_filtered_without_walking_it() -> None:
    """A reviewer's range 3 .. 10**18 over app.py (its added line is 2) used to be
    walked number by number (no end in sight); it is now tested against the added lines."""
    wide = _at(LineAnchor(path="app.py", line=10**18, start_line=3))
    assert filter_reason(wide, CHANGE, "added", TREE) == "not-added"
    holding = _at(LineAnchor(path="app.py", line=10**18, start_line=2))
    assert filter_reason(holding, CHANGE, "added", TREE) is None
    removed = _at(LineAnchor(path="app.py", side="old", line=10**18, start_line=1))
    assert filter_reason(removed, CHANGE, "added", TREE) == "not-added"
