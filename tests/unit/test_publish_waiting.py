"""Publishing a round that waits on a person keeps the standing verdict (issue 24, part 4).

Replayed against the fake forges over real HTTP, with output directories as ``council
review --output`` writes them: round 1 trips the gate (REQUEST_CHANGES); round 2 waits on
a reviewer's question (exit 4) with the analyzer's critical still open, and publishing it
dismisses nothing and posts no review (GitHub never changes a submitted review's verdict,
and the run settles under the same run id); the summary lists the critical and the
question. Round 2 then settles and passes: only then is round 1's review dismissed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from council.asks.ask import Ask
from council.asks.pending import Answer, PendingAsk
from council.model.findings import LineAnchor, Origin
from council.model.report import ParticipantSummary, Suppression
from tests.fakes.github_api import FakeGitHub
from tests.fakes.gitlab_api import FakeGitLab
from tests.forge_cases import CAFE, finding, messy_change
from tests.forge_outputs import CI_ENV, HEAD, PR, REPO, TOKEN, outputs, publish, quick_pacing
from workers.cli import main

BANDIT = Origin(kind="reviewer", run_id="r1", participant="bandit", program=True)
"""The analyzer whose critical stays open."""
CRITICAL = finding(
    1, LineAnchor(path="app.py", line=2), severity="critical", subject="B602", origin=BANDIT
)
QUESTION = "Which deployment profile does app.py run under?"
ASK = PendingAsk(id="ask_1111", run="r2", participant="hawk", ask=Ask(question=QUESTION))
WAITING = {
    "status": "waiting",
    "asks": (ASK,),
    "participants": (
        ParticipantSummary(id="hawk", backend="openai", state="asking"),
        ParticipantSummary(id="bandit", backend="sarif", state="answered", findings=1),
    ),
}
"""Round 2 as settling writes it: hawk asked a person, bandit answered with its critical."""
ANSWERED = {
    "asks": (ASK.model_copy(update={"answer": Answer(value="safe")}),),
    "suppressed": {1: Suppression(source="dismissed", reason="the shell is fixed")},
}
"""Round 2 settled once answered, the critical dismissed meanwhile: the round passes."""


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """A fake GitHub holding pull request 7 of octo/app at HEAD."""
    with FakeGitHub(token=TOKEN, repo=REPO, pulls=(PR,)) as fake:
        fake.pulls[PR].head = HEAD
        yield fake


@pytest.fixture(autouse=True)
def paced_quickly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pace mutations 20 ms apart in these tests."""
    quick_pacing(monkeypatch)


def _states(github: FakeGitHub) -> list[str]:
    return [r["state"] for r in github.pulls[PR].reviews]


def test_a_waiting_round_keeps_the_request_for_changes_until_a_round_passes(
    github: FakeGitHub, tmp_path: Path
) -> None:
    """Round 1 (exit 1) requests changes; round 2 waiting on hawk's question posts no
    review, dismisses nothing, and its summary names the open critical and the question;
    the check run fails without annotations. Round 2 settled and passing posts its review
    and dismisses round 1's."""
    first = publish(github, "--from", str(outputs(tmp_path, CRITICAL)), "--checks")
    assert first.exit_code == 0, first.output
    assert _states(github) == ["CHANGES_REQUESTED"]

    waiting = outputs(tmp_path, CRITICAL, name="waiting", run_id="r2", **WAITING)
    second = publish(github, "--from", str(waiting), "--checks")
    assert second.exit_code == 0, second.output
    assert _states(github) == ["CHANGES_REQUESTED"], "no review posted, none dismissed"
    assert "waits on a person" in second.output and "dismissed" not in second.output
    (summary,) = github.pulls[PR].comments
    body = summary["body"]
    assert "waiting on a person" in body.splitlines()[1]
    assert "No findings." not in body
    assert "B602" in body and "critical" in body
    assert QUESTION in body and "council answer ask_1111" in body
    run = next(r for r in github.check_runs if r["external_id"] == "r2")
    assert run["conclusion"] == "failure" and github.annotations.get(run["id"], []) == []

    settled = outputs(tmp_path, CRITICAL, name="settled", run_id="r2", **ANSWERED)
    third = publish(github, "--from", str(settled), "--checks")
    assert third.exit_code == 0, third.output
    assert _states(github) == ["DISMISSED", "COMMENTED"]
    assert "dismissed review" in third.output
    assert "passed" in github.pulls[PR].comments[0]["body"].splitlines()[1]
    assert next(r for r in github.check_runs if r["external_id"] == "r2")["conclusion"] == (
        "success"
    )


def test_a_round_that_did_not_pass_dismisses_nothing(github: FakeGitHub, tmp_path: Path) -> None:
    """An incomplete round (exit 3) posts a review that requests no changes, and round 1's
    request stands: only a passing round dismisses."""
    assert publish(github, "--from", str(outputs(tmp_path, CRITICAL))).exit_code == 0
    unheard = ParticipantSummary(id="owl", backend="replay", state="failed", failure="boom")
    out = outputs(tmp_path, name="incomplete", run_id="r2", participants=(unheard,))
    done = publish(github, "--from", str(out))
    assert done.exit_code == 0, done.output
    assert _states(github) == ["CHANGES_REQUESTED", "COMMENTED"]
    assert "dismissed" not in done.output


def test_without_a_report_whether_the_round_passed_is_unknown(
    github: FakeGitHub, tmp_path: Path
) -> None:
    """Outputs without council.json: the review is posted, nothing is dismissed, and
    publish says why (fail closed)."""
    assert publish(github, "--from", str(outputs(tmp_path, CRITICAL))).exit_code == 0
    clean = outputs(tmp_path, name="clean", run_id="r2", formats=("github-review", "markdown"))
    done = publish(github, "--from", str(clean))
    assert done.exit_code == 0, done.output
    assert _states(github) == ["CHANGES_REQUESTED", "COMMENTED"]
    assert "no council.json" in done.output and "--format json" in done.output


GL_TOKEN = "glpat-s3cr3t-value"


def test_gitlab_a_waiting_round_starts_no_thread_and_its_note_lists_the_critical(
    tmp_path: Path,
) -> None:
    """GitLab: the waiting round starts no thread (they would stay under its run id,
    which the settled round reuses); its summary note lists the critical and the
    question. Once settled (still tripped), the run starts the critical's thread."""
    env = {**CI_ENV, "GITLAB_TOKEN": GL_TOKEN}
    with FakeGitLab(token=GL_TOKEN, project="42", mrs=(3,)) as gitlab:
        gitlab.mrs[3].head = HEAD
        argv = ["publish", "gitlab", "--project", "42", "--mr", "3", "--api-url", gitlab.url]
        argv += ["--head", HEAD, "--from"]
        on_diff = CRITICAL.model_copy(update={"anchor": LineAnchor(path=CAFE, line=2)})
        waiting = outputs(
            tmp_path, on_diff, name="waiting", run_id="r2", change=messy_change(), **WAITING
        )
        done = CliRunner().invoke(main, [*argv, str(waiting)], env=env)
        assert done.exit_code == 0, done.output
        assert gitlab.mrs[3].discussions == []
        (note,) = [n for n in gitlab.mrs[3].notes if not n.get("system")]
        assert "B602" in note["body"] and QUESTION in note["body"]
        assert "No findings." not in note["body"]
        settled = outputs(tmp_path, on_diff, name="settled", run_id="r2", change=messy_change())
        done = CliRunner().invoke(main, [*argv, str(settled)], env=env)
        assert done.exit_code == 0, done.output
        (thread,) = gitlab.mrs[3].discussions
        assert "B602" in thread["notes"][0]["body"]
        assert json.loads((waiting / "gitlab-discussions.json").read_text())["discussions"] == []
