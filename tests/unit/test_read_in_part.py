"""An answer read only up to a break (cut off, or broken JSON) was not heard in full.

What came after the break is unknown: such a reviewer keeps the findings read before it,
but the run is partial and the reviewer does not count towards the quorum, so a broken
answer can no longer pass the merge gate as a clean review.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from council.model.backend_result import ReviewResult, Stop
from council.model.participant import Participant
from council.rendering.markdown import render_markdown
from council.round.filing import RoundFacts, conclude_round, round_status
from council.round.gate import EXIT_INCOMPLETE, EXIT_TRIPPED, answered_reviewers, exit_code
from council.round.outcome import (
    ParticipantOutcome,
    harvest_outcome,
    heard_in_full,
    read_in_part_code,
)
from tests.gitrepo import commit, new_repo
from tests.unit.test_cli_review import report_of, review, reviewer, roster, states

CRITICAL = '{"label": "issue", "subject": "divides by zero", "severity": "critical"}'
MINOR = '{"label": "nitpick", "subject": "name y better", "severity": "minor"}'

ANSWERS = {
    "whole": (f'{{"findings": [{CRITICAL}]}}', None, 1),
    "missing-comma": (
        '{"findings": [{"label": "issue", "subject": "x" "severity": "critical"}]}',
        "malformed-json",
        0,
    ),
    "broken-after-one": (f'{{"findings": [{MINOR}, {{"subject": "y",}}]}}', "malformed-json", 1),
    "cut-mid-entry": (f'{{"findings": [{MINOR}, {{"subject": "divides', "cut-off", 1),
    "cut-before-first": ('Here you go: {"findings": [{"subj', "cut-off", 0),
    "no-json": ("looks fine to me", None, 0),
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose last commit adds one line to app.py."""
    path = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(path, {"app.py": "x = 1\ny = 1 / 0\n"}, "divide")
    return path


def outcome(answer: str, pid: str = "hawk") -> ParticipantOutcome:
    """The outcome of a reviewer that answered ``answer`` (no journal)."""
    return harvest_outcome(pid, "reviewer", ReviewResult(answer=answer), [])


@pytest.mark.parametrize("name", ANSWERS)
def test_read_in_part_code_names_the_break(name: str) -> None:
    """cut-off and malformed-json answers are read in part; the entries before the break
    are kept; a whole answer and an unreadable one are not "read in part"."""
    text, code, kept = ANSWERS[name]
    got = outcome(text)
    assert got.status == "answered"
    assert read_in_part_code(got) == code
    assert len(got.harvest.findings) == kept
    assert heard_in_full(got) == (name == "whole")


def test_a_stopped_reviewer_is_not_read_in_part() -> None:
    """A stop is its own reason (docs/harvest.md §7); read_in_part is for answers only."""
    stopped = harvest_outcome(
        "hawk", "reviewer", ReviewResult(answer='{"findings": [{"sub', stop=Stop(limit="idle")), []
    )
    assert stopped.status == "stopped" and read_in_part_code(stopped) is None


def _round(*answers: str, quorum: int | None = None) -> tuple[str, int, str]:
    """Settle a round of reviewers p0, p1, … answering ``answers``; return its status,
    the gate's exit code at --fail-on critical, and the Markdown report."""
    people = [Participant(id=f"p{i}", backend="replay") for i in range(len(answers))]
    outcomes = {p.id: outcome(a, p.id) for p, a in zip(people, answers, strict=True)}
    status = round_status(people, outcomes)
    facts = RoundFacts(run_id="r1", session="s1")
    _, report = conclude_round(facts, people, outcomes, 1, status=status, settled_ms=0)
    return (
        report.status,
        exit_code(report.gated(fail_on="critical", quorum=quorum)),
        render_markdown(report),
    )


def test_malformed_answer_cannot_pass_the_gate_alone() -> None:
    """The fresh-user case: a critical finding with a missing comma. Before, the reviewer
    counted as answered with 0 findings and the gate passed (exit 0)."""
    status, code, markdown = _round(ANSWERS["missing-comma"][0])
    assert status == "partial"
    assert code == EXIT_INCOMPLETE
    assert "broke off in invalid JSON (`malformed-json`)" in markdown
    assert "0 findings read before the break" in markdown


def test_cut_off_reviewer_keeps_its_findings_but_not_its_vote() -> None:
    """Beside a whole reviewer, a cut-off one is filed; with a quorum of 1 the run gates
    on what was read, and by default (every reviewer heard in full) it fails closed."""
    answers = (f'{{"findings": [{CRITICAL}]}}', ANSWERS["cut-mid-entry"][0])
    status, code, markdown = _round(*answers)
    assert status == "partial"
    assert code == EXIT_INCOMPLETE
    assert _round(*answers, quorum=1)[1] == EXIT_TRIPPED
    assert "`p1` answered, but its answer was cut off (`cut-off`)" in markdown
    assert "name y better" in markdown


def test_quorum_counts_only_reviewers_heard_in_full() -> None:
    """Two reviewers, one read in part: one answered in full."""
    people = [Participant(id="a", backend="replay"), Participant(id="b", backend="replay")]
    outcomes = {
        "a": outcome(ANSWERS["whole"][0], "a"),
        "b": outcome(ANSWERS["cut-mid-entry"][0], "b"),
    }
    facts = RoundFacts(run_id="r1", session="s1")
    _, report = conclude_round(facts, people, outcomes, 1, status="partial", settled_ms=0)
    assert answered_reviewers(report) == 1
    assert [p.read_in_part for p in report.participants] == [None, "cut-off"]
    assert report.partial


def test_cli_broken_answer_exits_incomplete(repo: Path, tmp_path: Path) -> None:
    """End to end: a replay reviewer whose answer lost a comma makes `council review`
    exit 3 with a partial run, not 0."""
    (tmp_path / "broken.txt").write_text(ANSWERS["missing-comma"][0], encoding="utf-8")
    rp = roster(tmp_path, reviewer("rep", "replay", answer="broken.txt"))
    out = tmp_path / "report.json"
    done = review(repo, tmp_path / "state.json", "--json", str(out), roster_path=rp)
    assert done.exit_code == EXIT_INCOMPLETE, done.output
    report = report_of(out)
    assert report["status"] == "partial"
    assert states(report) == {"rep": "answered"}
    assert report["participants"][0]["read_in_part"] == "malformed-json"
    assert "rep answered in part (malformed-json)" in done.stderr
