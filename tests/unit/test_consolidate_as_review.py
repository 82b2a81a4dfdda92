"""``council consolidate`` and ``council review`` file the same tellings alike: the same
findings with the same "k of n", n the reviewers heard in full (plus any raiser that
was not), whichever command read them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.gitrepo import commit, new_repo
from tests.unit.test_cli_review import report_of, review, reviewer, roster
from workers.cli.group import main

LINE_2 = {"kind": "line", "file": "app.py", "start": 2, "end": 2}
DIVISION = dict(subject="`y` divides by zero", label="issue", severity="critical", location=LINE_2)
NAMING = dict(subject="`y` says nothing of what it holds", label="suggestion", location=LINE_2)
IMPORT = dict(subject="app.py runs code at import time", label="issue", location=LINE_2)


@pytest.fixture
def changed(tmp_path: Path) -> Path:
    """A repository whose last commit adds line 2 of app.py, where the findings are."""
    path = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(path, {"app.py": "x = 1\ny = 1 / 0\n"}, "divide")
    return path


def _answers(tmp_path: Path, lynx: str) -> dict[str, str]:
    """The three reviewers' answer files (lynx's text as given); id → file name."""
    texts = {
        "hawk": json.dumps({"findings": [DIVISION, NAMING]}),
        "owl": json.dumps({"findings": [DIVISION]}),
        "lynx": lynx,
    }
    for who, text in texts.items():
        (tmp_path / f"{who}.json").write_text(text, encoding="utf-8")
    return {who: f"{who}.json" for who in texts}


def _both(
    repo: Path, tmp_path: Path, lynx: str
) -> tuple[Any, dict[str, Any], Any, dict[str, Any]]:
    """Review the change with replay reviewers answering the files, and consolidate the
    same files: (review's result, its JSON report, consolidate's result, its report)."""
    files = _answers(tmp_path, lynx)
    tables = [reviewer(who, "replay", answer=name) for who, name in files.items()]
    reviewed = review(
        repo,
        tmp_path / "state.json",
        "--fail-on",
        "never",
        "--json",
        str(tmp_path / "review.json"),
        roster_path=roster(tmp_path, *tables),
    )
    sources = [f"{who}={tmp_path / name}" for who, name in files.items()]
    merged = CliRunner().invoke(
        main,
        ["consolidate", *sources, "--fail-on", "never", "--json", str(tmp_path / "merged.json")],
    )
    return (
        reviewed,
        report_of(tmp_path / "review.json"),
        merged,
        report_of(tmp_path / "merged.json"),
    )


def _agreement(report: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """subject → (agreement, raised_by) of each finding of a report."""
    return {f["subject"]: (f.get("agreement"), f.get("raised_by")) for f in report["findings"]}


def test_the_same_tellings_get_the_same_k_of_n(changed: Path, tmp_path: Path) -> None:
    """Three reviewers heard in full: each finding has one "k of n" in both reports."""
    reviewed, by_review, merged, by_consolidate = _both(
        changed, tmp_path, json.dumps({"findings": [DIVISION, IMPORT]})
    )
    assert reviewed.exit_code == 0, reviewed.output
    assert merged.exit_code == 0, merged.output
    assert _agreement(by_consolidate) == _agreement(by_review)
    assert _agreement(by_review) == {
        DIVISION["subject"]: ({"k": 3, "n": 3}, ["hawk", "owl", "lynx"]),
        NAMING["subject"]: ({"k": 1, "n": 3}, None),
        IMPORT["subject"]: ({"k": 1, "n": 3}, None),
    }


def test_a_reviewer_not_heard_in_full_counts_only_where_it_spoke(
    changed: Path, tmp_path: Path
) -> None:
    """lynx's answer is cut off after one entry: it is not heard in full, so it counts in
    the n of the finding it raised and of no other, in both reports alike (both exit 3)."""
    cut = json.dumps({"findings": [DIVISION]})[:-2] + ', {"subject": "and the'
    reviewed, by_review, merged, by_consolidate = _both(changed, tmp_path, cut)
    assert reviewed.exit_code == 3, reviewed.output
    assert merged.exit_code == 3, merged.output
    for report in (by_review, by_consolidate):
        lynx = next(p for p in report["participants"] if p["id"] == "lynx")
        assert lynx["read_in_part"] == "cut-off"
    assert _agreement(by_consolidate) == _agreement(by_review)
    assert _agreement(by_review) == {
        DIVISION["subject"]: ({"k": 3, "n": 3}, ["hawk", "owl", "lynx"]),
        NAMING["subject"]: ({"k": 1, "n": 2}, None),
    }
