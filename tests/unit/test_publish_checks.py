"""``council publish github --checks``: ONE check run per run, annotations 50 a request,
idempotent by external_id; and the fake's 422 for what GitHub would refuse."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from council.model.findings import LineAnchor
from tests.fakes.github_api import FakeGitHub
from tests.forge_cases import finding
from tests.forge_outputs import HEAD, PR, REPO, TOKEN, outputs, publish, quick_pacing


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """A fake GitHub holding pull request 7 of octo/app at HEAD, for an App token."""
    with FakeGitHub(token=TOKEN, repo=REPO, pulls=(PR,)) as fake:
        fake.pulls[PR].head = HEAD
        yield fake


@pytest.fixture(autouse=True)
def paced_quickly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pace mutations 20 ms apart."""
    quick_pacing(monkeypatch)


def lines(count: int) -> list[object]:
    """``count`` findings on added lines of app.py."""
    return [
        finding(i + 1, LineAnchor(path="app.py", line=i + 1), severity="medium")
        for i in range(count)
    ]


def check_calls(github: FakeGitHub) -> list[tuple[str, int]]:
    """Each check-run mutation: its method and how many annotations it carried."""
    return [
        (r.method, len(r.body.get("output", {}).get("annotations", [])))
        for r in github.mutations()
        if "check-runs" in r.path
    ]


def test_annotations_are_sent_fifty_a_request(github: FakeGitHub, tmp_path: Path) -> None:
    """120 annotations: created with 50, then two updates of 50 and 20; ONE check run
    on the head, named council, external_id the run id."""
    done = publish(github, "--from", str(outputs(tmp_path, *lines(120))), "--checks")
    assert done.exit_code == 0, done.output
    assert check_calls(github) == [("POST", 50), ("PATCH", 50), ("PATCH", 20)]
    (run,) = github.check_runs
    assert (run["name"], run["head_sha"], run["external_id"]) == ("council", HEAD, "r1")
    assert run["conclusion"] == "success" and run["output"]["annotations_count"] == 120
    assert len({(a["path"], a["start_line"]) for a in github.annotations[run["id"]]}) == 120


def test_the_same_run_again_changes_nothing(github: FakeGitHub, tmp_path: Path) -> None:
    """A re-run finds the check run by external_id, complete: no request changes it."""
    out = outputs(tmp_path, *lines(3))
    assert publish(github, "--from", str(out), "--checks").exit_code == 0
    again = publish(github, "--from", str(out), "--checks")
    assert again.exit_code == 0, again.output
    assert check_calls(github) == [("POST", 3)]
    assert "is up to date (3 annotation(s))" in again.output


def test_a_retry_sends_only_the_missing_annotations(github: FakeGitHub, tmp_path: Path) -> None:
    """GitHub failed on the first update (exit 3, 50 of 120 kept): the retry sends the
    other 70 only, so no annotation is there twice."""
    out = outputs(tmp_path, *lines(120))
    github.fail(500, method="PATCH", path_contains="check-runs")
    broken = publish(github, "--from", str(out), "--checks")
    assert broken.exit_code == 3, broken.output
    (run,) = github.check_runs
    assert run["output"]["annotations_count"] == 50
    retried = publish(github, "--from", str(out), "--checks")
    assert retried.exit_code == 0, retried.output
    assert run["output"]["annotations_count"] == 120
    assert len(github.annotations[run["id"]]) == 120
    assert check_calls(github)[-2:] == [("PATCH", 50), ("PATCH", 20)]


def test_another_run_gets_its_own_check_run(github: FakeGitHub, tmp_path: Path) -> None:
    """A new run on the same head: a new check run (GitHub shows the latest)."""
    assert publish(github, "--from", str(outputs(tmp_path)), "--checks").exit_code == 0
    later = outputs(tmp_path, name="later", run_id="r2")
    assert publish(github, "--from", str(later), "--checks").exit_code == 0
    assert [r["external_id"] for r in github.check_runs] == ["r1", "r2"]


def test_a_tripped_gate_fails_the_check(github: FakeGitHub, tmp_path: Path) -> None:
    """A critical finding: conclusion failure, a failure-level annotation."""
    bad = finding(1, LineAnchor(path="app.py", line=2), severity="critical", subject="div0")
    assert publish(github, "--from", str(outputs(tmp_path, bad)), "--checks").exit_code == 0
    (run,) = github.check_runs
    assert run["conclusion"] == "failure"
    (note,) = github.annotations[run["id"]]
    assert note["annotation_level"] == "failure" and note["title"] == "issue (blocking): div0"


def test_a_personal_token_cannot_create_check_runs(tmp_path: Path) -> None:
    """Check runs are for GitHub Apps: a personal token's 403 says so, naming the
    permission and GITHUB_TOKEN."""
    with FakeGitHub(token=TOKEN, repo=REPO, pulls=(PR,), login="octocat", app=False) as fake:
        fake.pulls[PR].head = HEAD
        done = publish(fake, "--from", str(outputs(tmp_path)), "--checks")
    assert done.exit_code == 2, done.output
    assert "403" in done.output and "checks: write" in done.output
    assert "GitHub App" in done.output and "GITHUB_TOKEN" in done.output


def test_the_fake_refuses_what_github_would(github: FakeGitHub) -> None:
    """The fake answers 422 to payloads missing fields GitHub requires, as GitHub does
    (so a payload it takes is one GitHub takes)."""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    base = f"{github.url}/repos/{REPO}"
    run = {"name": "council", "head_sha": HEAD, "status": "completed", "conclusion": "success"}
    note = {"path": "a.py", "start_line": 1, "end_line": 1, "annotation_level": "notice"}
    cases = [
        (f"{base}/check-runs", {**run, "output": {"title": "t"}}, "output.summary"),
        (f"{base}/check-runs", {"name": "council", "status": "queued"}, "head_sha"),
        (f"{base}/check-runs", {**run, "conclusion": None}, "conclusion"),
        (
            f"{base}/check-runs",
            {**run, "output": {"title": "t", "summary": "s", "annotations": [note]}},
            "annotations.message",
        ),
        (
            f"{base}/check-runs",
            {
                **run,
                "output": {
                    "title": "t",
                    "summary": "s",
                    "annotations": [{**note, "message": "m"}] * 51,
                },
            },
            "Only 50",
        ),
        (
            f"{base}/pulls/{PR}/reviews",
            {"event": "COMMENT", "body": "b", "comments": [{"path": "a.py", "body": "x"}]},
            '"line"',
        ),
        (f"{base}/issues/{PR}/comments", {}, '"body"'),
    ]
    for url, body, word in cases:
        answer = httpx2.post(url, json=body, headers=auth)
        assert answer.status_code == 422, (body, answer.text)
        assert word in answer.json()["message"], (word, answer.text)
    fine = httpx2.post(
        f"{base}/check-runs",
        json={
            **run,
            "output": {"title": "t", "summary": "s", "annotations": [{**note, "message": "m"}]},
        },
        headers=auth,
    )
    assert fine.status_code == 201
