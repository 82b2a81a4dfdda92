"""Fail closed, and right on the first run (embedded ``council review``): a reviewer that
was not heard in full makes the council incomplete (exit 3) unless the roster marks it
optional or sets a quorum; the change is read from the merge base; the session comes from
the CI's pull request; analyzers installed beside council's interpreter are found."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from council.model.report import CouncilReport, ParticipantSummary
from council.round.gate import exit_code, gate_summary, incomplete_reasons
from reviewers.programs import supervision
from reviewers.programs.program_search import find_program, interpreter_bin, search_path
from tests.gitrepo import commit, git, new_repo
from tests.unit.test_cli_review import answer, report_of, review, reviewer, roster
from workers.coordinator.ci_session import ci_session

CRITICAL = {"subject": "divides by zero", "label": "issue", "severity": "critical"}


def _report(*people: ParticipantSummary) -> CouncilReport:
    return CouncilReport(run_id="r", session="s", status="partial", participants=people)


HEARD = ParticipantSummary(id="hawk", backend="replay", state="answered")
FAILED = ParticipantSummary(id="ruff", backend="sarif", state="failed", failure="not found")


def test_a_failed_reviewer_fails_the_gate_by_default() -> None:
    report = _report(HEARD, FAILED)
    assert exit_code(report.gated(fail_on="critical")) == 3
    assert incomplete_reasons(report) == ["1 reviewer(s) not heard in full (ruff failed)"]
    assert "ruff failed" in gate_summary(report.gated(fail_on="critical"))


def test_an_optional_reviewer_or_a_quorum_lets_the_council_complete() -> None:
    optional = FAILED.model_copy(update={"optional": True})
    assert exit_code(_report(HEARD, optional).gated(fail_on="critical")) == 0
    assert exit_code(_report(HEARD, FAILED).gated(fail_on="critical", quorum=1)) == 0
    assert exit_code(_report(optional).gated(fail_on="critical")) == 3, "someone must be heard"


def test_unreadable_and_cut_off_answers_are_named() -> None:
    unread = HEARD.model_copy(update={"id": "owl", "unread": "no-json"})
    cut = HEARD.model_copy(update={"id": "kite", "read_in_part": "cut-off"})
    (reason,) = incomplete_reasons(_report(HEARD, unread, cut))
    assert "owl answered nothing readable (no-json)" in reason
    assert "kite answered in part (cut-off)" in reason


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(path, {"app.py": "x = 1\ny = 1 / 0\n"}, "divide")
    return path


def test_review_exits_3_naming_a_reviewer_that_could_not_run(tmp_path: Path, repo: Path) -> None:
    """A command reviewer whose program exits without an answer fails; the other answers."""
    broken = tmp_path / "broken.sh"
    broken.write_text("#!/bin/sh\nexit 7\n")
    broken.chmod(0o755)
    tables = reviewer("rep", "replay", answer=answer(tmp_path, "a.json", CRITICAL))
    tables += reviewer("broken", "command", program=str(broken))
    done = review(
        repo,
        tmp_path / "s.json",
        "--json",
        str(tmp_path / "r.json"),
        "--fail-on",
        "never",
        roster_path=roster(tmp_path, tables),
    )
    assert done.exit_code == 3, done.output
    assert "broken failed" in done.stderr
    marked = roster(tmp_path, tables.replace('id = "broken"', 'id = "broken"\noptional = true'))
    again = review(repo, tmp_path / "s2.json", "--fail-on", "never", roster_path=marked)
    assert again.exit_code == 0, again.output


def test_a_judge_cannot_be_optional(tmp_path: Path, repo: Path) -> None:
    tables = reviewer("rep", "replay", answer=answer(tmp_path, "a.json"))
    tables += '[judge]\nid = "arbiter"\nbackend = "replay"\nanswer = "a.json"\noptional = true\n'
    done = review(repo, tmp_path / "s.json", roster_path=roster(tmp_path, tables))
    assert done.exit_code == 2
    assert "judge cannot be optional" in done.output + done.stderr


def test_the_change_is_read_from_the_merge_base(tmp_path: Path) -> None:
    """main moved on after the branch left it: main's new file is not shown deleted."""
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, {"app.py": "x = 1\ny = 2\n"}, "feature work")
    git(repo, "checkout", "-q", "main")
    commit(repo, {"later.py": "z = 3\n"}, "main moves on")
    git(repo, "checkout", "-q", "feature")
    tables = reviewer("rep", "replay", answer=answer(tmp_path, "a.json"))
    out = tmp_path / "r.json"
    done = review(
        repo,
        tmp_path / "s.json",
        "--json",
        str(out),
        base="main",
        roster_path=roster(tmp_path, tables),
    )
    assert done.exit_code == 0, done.output
    assert "merge base of main and HEAD" in done.stderr
    reported = json.dumps(report_of(out))
    assert "later.py" not in reported
    exact = review(
        repo,
        tmp_path / "s2.json",
        "--json",
        str(out),
        "--base-exact",
        base="main",
        roster_path=roster(tmp_path, tables),
    )
    assert exact.exit_code == 0, exact.output
    assert "merge base" not in exact.stderr


def test_blank_session_is_refused(tmp_path: Path, repo: Path) -> None:
    tables = reviewer("rep", "replay", answer=answer(tmp_path, "a.json"))
    done = review(repo, tmp_path / "s.json", "--session", " ", roster_path=roster(tmp_path, tables))
    assert done.exit_code == 2
    assert "--session is blank" in done.output + done.stderr


def test_ci_variables_name_the_session(tmp_path: Path) -> None:
    github = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_REPOSITORY": "o/n",
        "GITHUB_REF": "refs/pull/7/merge",
    }
    assert ci_session(github) == "github:o/n#pr-7"
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 12}}))
    on_event = {**github, "GITHUB_REF": "refs/heads/x", "GITHUB_EVENT_PATH": str(event)}
    assert ci_session(on_event) == "github:o/n#pr-12"
    gitlab = {"GITLAB_CI": "true", "CI_PROJECT_PATH": "g/p", "CI_MERGE_REQUEST_IID": "3"}
    assert ci_session(gitlab) == "gitlab:g/p#mr-3"
    assert ci_session({"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "o/n"}) is None
    assert ci_session({}) is None


def test_a_detached_head_outside_ci_says_how_to_keep_the_session(
    tmp_path: Path, repo: Path
) -> None:
    git(repo, "checkout", "-q", "--detach")
    tables = reviewer("rep", "replay", answer=answer(tmp_path, "a.json"))
    done = review(
        repo,
        tmp_path / "s.json",
        roster_path=roster(tmp_path, tables),
        env={"GITHUB_ACTIONS": "", "GITLAB_CI": ""},
    )
    assert done.exit_code == 0, done.output
    assert "pass --session" in done.stderr


def test_programs_beside_the_interpreter_are_found_before_path(tmp_path: Path) -> None:
    assert search_path("/usr/bin:relative/bin").split(os.pathsep) == [interpreter_bin(), "/usr/bin"]
    name = Path(sys.executable).name
    assert find_program(name, str(tmp_path)) == str(Path(interpreter_bin()) / name)
    assert find_program("surely-no-such-program-here", str(tmp_path)) is None


def test_a_program_that_crashes_after_its_answer_is_heard_in_part(
    tmp_path: Path, repo: Path
) -> None:
    """The fresh-user case: a command reviewer printing an answer and then dying (an
    uncaught exception, a kill) is not heard in full: exit 3, named."""
    crash = tmp_path / "after.sh"
    crash.write_text("#!/bin/sh\necho '{\"findings\": []}'\nkill -9 $$\n")
    crash.chmod(0o755)
    tables = reviewer("late", "command", program=str(crash))
    out = tmp_path / "r.json"
    done = review(
        repo, tmp_path / "s.json", "--json", str(out), roster_path=roster(tmp_path, tables)
    )
    assert done.exit_code == 3, done.output
    assert "late exited with an error after its answer (exit-status)" in done.stderr
    (person,) = json.loads(out.read_text())["participants"]
    assert person["state"] == "answered" and person["read_in_part"] == "exit-status"


def _program(tmp_path: Path, name: str, body: str) -> Path:
    """A command reviewer: a Python script run by this interpreter."""
    script = tmp_path / name
    script.write_text(f"#!{sys.executable}\nimport json, os, sys\n{body}")
    script.chmod(0o755)
    return script


def _heard_in_part(tmp_path: Path, repo: Path, body: str) -> dict[str, Any]:
    """Review with one command reviewer running ``body``: it must exit 3 (a reviewer
    heard in part); its participant line of the JSON report."""
    tables = reviewer("prog", "command", program=str(_program(tmp_path, "prog.py", body)))
    out = tmp_path / "r.json"
    done = review(
        repo, tmp_path / "s.json", "--json", str(out), roster_path=roster(tmp_path, tables)
    )
    assert done.exit_code == 3, done.output
    (person,) = json.loads(out.read_text())["participants"]
    assert person["state"] == "answered", person
    return dict(person)


def test_a_journal_over_its_cap_is_heard_in_part(tmp_path: Path, repo: Path) -> None:
    """150 entries recorded, 100 read (the cap): the 50 left unread may hold the finding
    that matters, so the reviewer was heard in part: exit 3, not a green gate."""
    body = (
        "with open(os.environ['COUNCIL_JOURNAL'], 'a') as journal:\n"
        "    for i in range(150):\n"
        "        entry = {'subject': f'note {i}', 'label': 'note'}\n"
        "        journal.write(json.dumps(entry) + '\\n')\n"
        "print(json.dumps({'findings': []}))\n"
    )
    person = _heard_in_part(tmp_path, repo, body)
    assert (person["read_in_part"], person["findings"]) == ("journal-over-cap", 100)


def test_a_stdout_over_its_cap_is_heard_in_part_even_when_its_tail_parses(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The middle of an over-cap stdout is not read: an answer there is lost, and the
    tail (a valid empty answer) must not pass the gate."""
    monkeypatch.setattr(supervision, "STDOUT_CAP_BYTES", 4096)
    critical = {
        "subject": "eval of user input",
        "label": "issue",
        "severity": "critical",
        "location": {"kind": "file", "file": "app.py"},
    }
    body = (
        "pad = ('log line\\n' * 800)\n"
        "sys.stdout.write(pad)\n"
        f"print(json.dumps({{'findings': [{critical!r}]}}))\n"
        "sys.stdout.write(pad)\n"
        "print(json.dumps({'findings': []}))\n"
    )
    assert _heard_in_part(tmp_path, repo, body)["read_in_part"] == "cut-off"


def test_a_journal_line_over_the_forwarding_cap_is_heard_in_part(
    tmp_path: Path, repo: Path
) -> None:
    """One journal line of 1.1 MB (a critical with a long discussion) is over the line
    cap and never forwarded: the reviewer was heard in part (exit 3), not "No findings"."""
    body = (
        "entry = {'subject': 'eval of input', 'label': 'issue', 'severity': 'critical',\n"
        "         'discussion': 'x' * 1_100_000}\n"
        "with open(os.environ['COUNCIL_JOURNAL'], 'a') as journal:\n"
        "    journal.write(json.dumps(entry) + '\\n')\n"
        "print(json.dumps({'findings': []}))\n"
    )
    assert _heard_in_part(tmp_path, repo, body)["read_in_part"] == "journal-over-cap"
