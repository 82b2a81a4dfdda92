"""The judge: after the reviewers are filed, it reads them and answers (embedded mode)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from council.model.backend_result import ReviewResult
from council.model.findings import Harvest
from council.round.outcome import harvest_outcome
from tests.gitrepo import commit, new_repo
from tests.unit.test_cli_review import answer, journal, report_of, review, reviewer, roster, states

SAME = {
    "subject": "divides by zero",
    "label": "issue",
    "severity": "medium",
    "location": {"kind": "line", "file": "app.py", "start": 2},
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose last commit adds a division by zero to app.py."""
    path = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(path, {"app.py": "x = 1\ny = 1 / 0\n"}, "divide")
    return path


def judge_table(**options: object) -> str:
    """A [judge] table of a roster."""
    lines = ["[judge]", 'id = "arbiter"', 'backend = "replay"']
    lines += [f"{key} = {json.dumps(value)}" for key, value in options.items()]
    return "\n".join(lines) + "\n"


def run(tmp_path: Path, repo: Path, judge: str) -> dict[str, Any]:
    """Two replay reviewers that agree, then the judge; the JSON report."""
    path = roster(
        tmp_path,
        reviewer("hawk", "replay", answer=answer(tmp_path, "h.json", SAME)),
        reviewer("owl", "replay", answer=answer(tmp_path, "o.json", SAME)),
        judge,
    )
    out = tmp_path / "report.json"
    done = review(
        repo, tmp_path / "state.json", "--json", str(out), "--fail-on", "never", roster_path=path
    )
    assert done.exit_code == 0, done.output
    return report_of(out)


def test_judge_upholding_a_finding_updates_it_in_place(tmp_path: Path, repo: Path) -> None:
    """The judge restates the reviewers' finding: no duplicate; its corrections apply."""
    verdict = dict(SAME, severity="critical", raisedBy=["hawk", "owl"])
    report = run(tmp_path, repo, judge_table(answer=answer(tmp_path, "j.json", verdict)))
    assert report["status"] == "settled"
    assert states(report) == {"hawk": "answered", "owl": "answered", "arbiter": "answered"}
    (only,) = report["findings"]
    assert only["origin"]["kind"] == "reviewer" and only["severity"] == "critical"
    assert only["raised_by"] == ["hawk", "owl"]
    assert not report.get("suppressed")


def test_judge_adds_a_finding_and_rules_out_the_rest(tmp_path: Path, repo: Path) -> None:
    """A finding only the judge raises is filed new; one it left out is listed, not upheld."""
    verdict = dict(SAME, subject="the divisor comes from user input", raisedBy=["owl"])
    report = run(tmp_path, repo, judge_table(answer=answer(tmp_path, "j.json", verdict)))
    first, last = report["findings"]
    assert first["origin"]["kind"] == "reviewer"
    assert report["suppressed"][str(first["id"])]["source"] == "judge"
    assert last["origin"] == {
        "kind": "judge",
        "run_id": report["run_id"],
        "participant": "arbiter",
        "program": False,
    }
    assert last["raised_by"] == ["owl"] and last["id"] == first["id"] + 1


def test_empty_judge_answer_upholds_nothing(tmp_path: Path, repo: Path) -> None:
    """A judge answering {"findings": []} (journal or not) upholds no filed finding."""
    report = run(
        tmp_path,
        repo,
        judge_table(answer=answer(tmp_path, "j.json"), journal=journal(tmp_path, "j.jsonl", 2)),
    )
    assert [f["origin"]["kind"] for f in report["findings"]] == ["reviewer"]
    assert [s["source"] for s in report["suppressed"].values()] == ["judge"]


def test_unreadable_judge_answer_falls_back_to_journal(tmp_path: Path, repo: Path) -> None:
    """A judge whose answer cannot be read: its journal is filed, nothing is ruled out."""
    (tmp_path / "prose.txt").write_text("I looked and thought hard.", encoding="utf-8")
    report = run(
        tmp_path, repo, judge_table(answer="prose.txt", journal=journal(tmp_path, "j.jsonl", 2))
    )
    judged = [f for f in report["findings"] if f["origin"]["kind"] == "judge"]
    assert [f["subject"] for f in judged] == ["recorded finding 0", "recorded finding 1"]
    assert not report.get("suppressed")


def test_judge_journal_rule_in_the_domain() -> None:
    """harvest_outcome reads a judge's journal only when its answer says nothing readable."""
    entry = [b'{"subject": "kept in the journal", "label": "issue"}']
    decided = harvest_outcome("j", "judge", ReviewResult(answer='{"findings": []}'), [entry])
    silent = harvest_outcome("j", "judge", ReviewResult(answer="no json here"), [entry])
    reviewer_too = harvest_outcome(
        "r", "reviewer", ReviewResult(answer='{"findings": []}'), [entry]
    )
    assert decided.harvest == Harvest()
    assert [f.subject for f in silent.harvest.findings] == ["kept in the journal"]
    assert [f.subject for f in reviewer_too.harvest.findings] == ["kept in the journal"]


@pytest.mark.parametrize(
    "cut",
    [
        '{"findings": [{"subject": "divides by ze',  # cut inside the first entry
        '{"findings": [{"subject": "another claim", "label": "issue", "location": '
        '{"kind": "change"}}, {"subject": "divides',  # one whole entry, then cut
        '{"findings": [{"label": "issue"}]}',  # an entry that could not be read
    ],
    ids=["cut-in-first", "cut-after-one", "unreadable-entry"],
)
def test_a_judge_answer_not_read_whole_rules_nothing_out(
    tmp_path: Path, repo: Path, cut: str
) -> None:
    """A judge whose answer was cut off (or lost an entry) gave no verdict on what it did
    not restate: the reviewers' finding is not suppressed and still gates (exit 1)."""
    (tmp_path / "j.txt").write_text(cut, encoding="utf-8")
    path = roster(
        tmp_path,
        reviewer("hawk", "replay", answer=answer(tmp_path, "h.json", SAME)),
        judge_table(answer="j.txt"),
    )
    out = tmp_path / "report.json"
    done = review(
        repo, tmp_path / "state.json", "--json", str(out), "--fail-on", "medium", roster_path=path
    )
    assert done.exit_code == 1, done.output
    report = report_of(out)
    subjects = {f["subject"]: f for f in report["findings"]}
    kept = subjects["divides by zero"]
    assert str(kept["id"]) not in (report.get("suppressed") or {})


def test_the_report_says_not_upheld_by_the_judge(tmp_path: Path, repo: Path) -> None:
    """The Markdown names the judge's rejections as such, not as dismissals."""
    verdict = dict(SAME, subject="the divisor comes from user input", raisedBy=["owl"])
    path = roster(
        tmp_path,
        reviewer("hawk", "replay", answer=answer(tmp_path, "h.json", SAME)),
        judge_table(answer=answer(tmp_path, "j.json", verdict)),
    )
    done = review(repo, tmp_path / "state.json", "--fail-on", "never", roster_path=path)
    assert done.exit_code == 0, done.output
    assert "**Not gated:** 1 not upheld by the judge." in done.stdout


def test_raisers_the_judge_invents_are_left_out_with_a_note(tmp_path: Path, repo: Path) -> None:
    """raisedBy naming someone not on the roster: not credited, and the report says so."""
    verdict = dict(SAME, raisedBy=["hawk", "nobody"])
    report = run(tmp_path, repo, judge_table(answer=answer(tmp_path, "j.json", verdict)))
    (only,) = report["findings"]
    assert "nobody" not in (only.get("raised_by") or [])
    assert any("not on the roster (nobody)" in note for note in report["notes"])
