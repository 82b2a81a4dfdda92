"""[policy] confirm = "critical": a person confirms each critical finding before it may
fail the gate. The run waits (exit 4), `council answer` answers, the next `council
review` of the session settles it: "no" dismisses with the person's reason (exit 0),
"yes" lets it gate (exit 1). Embedded mode, the state file keeping the waiting run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from council.round.lifecycle import step
from tests.unit.test_cli_review import ROUND, answer, review, reviewer, roster
from tests.unit.test_fail_closed import repo  # noqa: F401  (the fixture)
from workers.cli import main

CRITICAL = {
    "subject": "divides by zero",
    "label": "issue",
    "severity": "critical",
    "location": {"kind": "line", "file": "app.py", "line": 2},
}


def _roster(tmp_path: Path) -> Path:
    tables = reviewer("rep", "replay", answer=answer(tmp_path, "a.json", CRITICAL))
    return roster(tmp_path, tables, head=ROUND + '[policy]\nconfirm = "critical"\n')


def _cli(state: Path, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--state", str(state)])


def _asks(state: Path) -> list[dict[str, Any]]:
    listed = _cli(state, "asks", "--json")
    assert listed.exit_code == 0, listed.output
    out: list[dict[str, Any]] = json.loads(listed.stdout)
    return out


def test_a_critical_finding_waits_for_a_person_who_rejects_it(
    tmp_path: Path,
    repo: Path,  # noqa: F811
) -> None:
    state, rp = tmp_path / "state.json", _roster(tmp_path)
    first = review(repo, state, roster_path=rp)
    assert first.exit_code == 4, first.output
    assert "waiting on a person" in first.stdout and "council answer ask_" in first.stdout
    (ask,) = _asks(state)
    assert ask["component"]["component_id"] == "confirm-finding"
    assert ask["component"]["props"]["finding"]["subject"] == "divides by zero"
    still = review(repo, state, roster_path=rp)
    assert still.exit_code == 4, "an unanswered ask never passes the gate"
    refused = _cli(state, "answer", ask["id"], "maybe")
    assert refused.exit_code == 2 and "yes or no" in refused.output
    said = _cli(state, "answer", ask["id"], "no", "--reason", "false positive: y is never 0")
    assert said.exit_code == 0, said.output
    assert _asks(state) == []
    out = tmp_path / "r.json"
    settled = review(repo, state, "--json", str(out), roster_path=rp)
    assert settled.exit_code == 0, settled.output
    report = json.loads(out.read_text())
    assert report["status"] == "settled"
    (suppression,) = report["suppressed"].values()
    assert suppression == {"source": "dismissed", "reason": "false positive: y is never 0"}
    again = review(repo, state, "--json", str(out), roster_path=rp)
    assert again.exit_code == 0, "the dismissal holds for the next round"


def test_a_confirmed_finding_gates(tmp_path: Path, repo: Path) -> None:  # noqa: F811
    state, rp = tmp_path / "state.json", _roster(tmp_path)
    assert review(repo, state, roster_path=rp).exit_code == 4
    (ask,) = _asks(state)
    assert _cli(state, "answer", ask["id"], "yes").exit_code == 0
    resumed = _cli(state, "resume", ask["run"])
    assert resumed.exit_code == 1, resumed.output
    assert "gate tripped" in resumed.stdout


def test_an_unknown_ask_is_refused(tmp_path: Path) -> None:
    done = _cli(tmp_path / "state.json", "answer", "ask_nope", "yes")
    assert done.exit_code == 2 and "no run waits on an ask" in done.output


@pytest.mark.parametrize("whole", ["whole", "in part"])
def test_the_lifecycle_waits_only_where_it_would_settle(whole: str) -> None:
    assert step("open", "reviewers_settled", ask=True).target == "waiting"
    assert step("open", "reviewers_settled", judge=True, ask=True).target == "judging"
    assert step("judging", "judge_settled", ask=True).target == "waiting"
    assert step("open", "cancelled", ask=True).target == "cancelled"
    resumed = step("waiting", "answered", whole=whole)  # type: ignore[arg-type]
    assert resumed.target == ("settled" if whole == "whole" else "partial")
    assert step("open", "reviewers_settled", ask=True).parks


def test_resume_gates_with_the_reviews_fail_on(tmp_path: Path, repo: Path) -> None:  # noqa: F811
    """The fresh-user case: a run reviewed with --fail-on medium and resumed without it
    still gates at medium (its record keeps the threshold); a bad --fail-on is exit 2."""
    medium = {**CRITICAL, "subject": "slow loop", "severity": "medium"}
    tables = reviewer("rep", "replay", answer=answer(tmp_path, "a.json", CRITICAL, medium))
    rp = roster(tmp_path, tables, head=ROUND + '[policy]\nconfirm = "critical"\n')
    state = tmp_path / "state.json"
    assert review(repo, state, "--fail-on", "medium", roster_path=rp).exit_code == 4
    (ask,) = _asks(state)
    assert _cli(state, "answer", ask["id"], "no", "--reason", "fixture").exit_code == 0
    bad = _cli(state, "resume", ask["run"], "--fail-on", "bogus")
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    resumed = _cli(state, "resume", ask["run"])
    assert resumed.exit_code == 1, resumed.output
    assert "PARTIAL" not in resumed.stdout


def test_a_push_after_an_answer_is_reviewed_not_passed_on_the_old_heads_gate(
    tmp_path: Path,
    repo: Path,  # noqa: F811
) -> None:
    """H1 waits (exit 4) and the person answers "no". The author then pushes H2 with
    another critical: the next review sets the old run aside (its dismissal kept) and
    reviews H2: its report is at H2's head and H2's new critical waits for a person in
    turn (exit 4). Before, it exited 0 with H1's report and H2 was never reviewed."""
    from tests.gitrepo import commit, git

    state, rp = tmp_path / "state.json", _roster(tmp_path)
    assert review(repo, state, roster_path=rp).exit_code == 4
    (ask,) = _asks(state)
    assert _cli(state, "answer", ask["id"], "no", "--reason", "guarded").exit_code == 0
    answer(
        tmp_path,
        "a.json",
        CRITICAL,
        {
            **CRITICAL,
            "subject": "runs a shell command from input",
            "location": {"kind": "line", "file": "evil.py", "line": 1},
        },
    )
    commit(repo, {"evil.py": "import os; os.system(input())\n"}, "H2")
    out = tmp_path / "r2.json"
    second = review(repo, state, "--json", str(out), base="HEAD~2", roster_path=rp)
    assert "set aside" in second.output or "settled with its answers" in second.output
    report = json.loads(out.read_text())
    assert report["head"] == git(repo, "rev-parse", "HEAD")
    assert second.exit_code == 4, second.output  # H2's new critical waits for a person
    subjects = {f["subject"] for f in report["findings"]}
    assert "runs a shell command from input" in subjects


def test_council_asks_prints_no_raw_control_characters(tmp_path: Path) -> None:
    """The change names a file with a terminal escape and a workflow command in it; a
    critical finding on it is put to a person: `council asks` prints the question with
    the escape written out and no line a CI runner reads as a command, in text and JSON."""
    from tests.gitrepo import commit, new_repo

    name = "x\x1b]0;PWN\x07\n::error file=a::owned.py"
    hostile = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(hostile, {name: "y = 1 / 0\n"}, "hostile name")
    hit = {**CRITICAL, "location": {"kind": "line", "file": name, "line": 1}}
    tables = reviewer("rep", "replay", answer=answer(tmp_path, "a.json", hit))
    rp = roster(tmp_path, tables, head=ROUND + '[policy]\nconfirm = "critical"\n')
    state = tmp_path / "state.json"
    assert review(hostile, state, roster_path=rp).exit_code == 4
    for args in (("asks",), ("asks", "--json")):
        shown = _cli(state, *args)
        assert shown.exit_code == 0, shown.output
        assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout
        assert not any(line.startswith("::") for line in shown.stdout.splitlines())


def test_a_reviewer_cannot_raise_the_policys_component_nor_a_huge_question() -> None:
    """`confirm-finding` is the policy's (a reviewer's would look like it, and its "no"
    dismisses nothing); a question over 4000 characters is refused at the source."""
    from council.asks.ask import QUESTION_MAX_CHARS, checked_ask
    from council.errors import AskRefused

    confirm = {"component_id": "confirm-finding", "props": {"finding": {"id": 1}}}
    with pytest.raises(AskRefused) as caught:
        checked_ask("Real?", confirm, None, door="ask_human", reviewer=True)
    assert caught.value.code == "shape"
    assert checked_ask("Real?", confirm, None, door="policy").component is not None
    with pytest.raises(AskRefused) as caught:
        checked_ask("?" * (QUESTION_MAX_CHARS + 1), None, None, door="ask_human")
    assert caught.value.code == "shape"


def test_no_to_one_of_two_like_findings_dismisses_that_one_only(tmp_path: Path) -> None:
    """Two criticals with one fingerprint (the same subject on one file, lines 2 and 9);
    the person says "no" to the first, "yes" to the second. In the next round the first
    stays dismissed and the second gates (before, the session kept the second as the
    dismissed finding, and the dismissal moved to it)."""
    from tests.gitrepo import commit, new_repo

    lines = "".join(f"v{n} = {n}\n" for n in range(1, 10))
    two = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(two, {"app.py": lines}, "divide twice")
    first = {**CRITICAL, "location": {"kind": "line", "file": "app.py", "line": 2}}
    second = {**CRITICAL, "location": {"kind": "line", "file": "app.py", "line": 9}}
    tables = reviewer("rep", "replay", answer=answer(tmp_path, "a.json", first, second))
    rp = roster(tmp_path, tables, head=ROUND + '[policy]\nconfirm = "critical"\n')
    state = tmp_path / "state.json"
    assert review(two, state, roster_path=rp).exit_code == 4
    asks = {a["component"]["props"]["finding"]["anchor"]["line"]: a["id"] for a in _asks(state)}
    assert _cli(state, "answer", asks[2], "no", "--reason", "line 2 is fine").exit_code == 0
    assert _cli(state, "answer", asks[9], "yes").exit_code == 0
    settled = review(two, state, roster_path=rp)
    assert settled.exit_code == 1, settled.output
    out = tmp_path / "next.json"
    again = review(two, state, "--json", str(out), roster_path=rp)
    report = json.loads(out.read_text())
    by_line = {f["anchor"]["line"]: f["id"] for f in report["findings"]}
    assert str(by_line[2]) in report["suppressed"]
    assert str(by_line[9]) not in report["suppressed"]
    assert again.exit_code in (1, 4), again.output


def test_a_half_answered_run_says_which_question_is_left(tmp_path: Path) -> None:
    """Two questions, one answered: the next review still waits (exit 4), says one is
    left, and its report marks the answered one as answered."""
    from tests.gitrepo import commit, new_repo

    lines = "".join(f"v{n} = {n}\n" for n in range(1, 10))
    two = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(two, {"app.py": lines}, "two")
    first = {**CRITICAL, "location": {"kind": "line", "file": "app.py", "line": 2}}
    other = {
        **CRITICAL,
        "subject": "unbounded loop",
        "location": {"kind": "line", "file": "app.py", "line": 9},
    }
    tables = reviewer("rep", "replay", answer=answer(tmp_path, "a.json", first, other))
    rp = roster(tmp_path, tables, head=ROUND + '[policy]\nconfirm = "critical"\n')
    state = tmp_path / "state.json"
    assert review(two, state, roster_path=rp).exit_code == 4
    one = _asks(state)[0]["id"]
    assert _cli(state, "answer", one, "yes").exit_code == 0
    again = review(two, state, roster_path=rp)
    assert again.exit_code == 4
    assert "(1 question(s) to answer)" in again.output
    assert "answered `yes`" in again.stdout
