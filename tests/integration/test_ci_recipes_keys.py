"""The CI recipes with model keys, forks, a review that cannot gate, the base's baseline
and a container without the sandbox, run as written by the harness of
``test_ci_recipes.py`` (a real clone, fake GitHub, GitLab and OpenAI APIs over real HTTP).

* The keys come from the forge's secrets and reach the model reviewer, never a log.
* A fork's pull request is reviewed without keys: the model reviewer is left out and said
  so, the replay reviewer still gates, nothing is posted from its read-only token.
* A key the roster needs and the repository lacks: exit 2, and the summary says why.
* A baseline committed to the base branch after the pull request left it holds.
* Where bubblewrap cannot create its namespaces, the report says so in its words.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.github_api import FakeGitHub
from tests.fakes.gitlab_api import FakeGitLab
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scenario import Scenario
from tests.gitrepo import commit, git
from tests.integration import test_ci_recipes
from tests.integration.test_ci_recipes import (
    GL_TOKEN,
    PR,
    REPO,
    TOKEN,
    Forge,
    base_env,
    div0,
    github_env,
    load,
    run_github,
    run_gitlab,
)

pytestmark = pytest.mark.integration
tools = test_ci_recipes.tools
"""The harness's recording ``pip`` stand-in (a fixture)."""

OPENAI_KEY = "sk-recipe-test-key"
HAWK_SAYS = {
    "findings": [
        {
            "location": {"kind": "line", "file": "app.py", "start": 2},
            "label": "issue",
            "subject": "y = 1 / 0 divides by zero",
            "severity": "medium",
        }
    ]
}


@pytest.fixture
def openai() -> Iterator[FakeOpenAI]:
    """A fake OpenAI-compatible server that takes only OPENAI_KEY."""
    with FakeOpenAI(api_key=OPENAI_KEY) as server:
        server.script(Scenario(text=json.dumps(HAWK_SAYS)))
        yield server


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """The fake GitHub API holding pull request 7 of octo/app."""
    with FakeGitHub(token=TOKEN, repo=REPO, pulls=(PR,)) as fake:
        yield fake


def hawk(server: FakeOpenAI) -> str:
    """A model reviewer on the fake server; its key from OPENAI_API_KEY (the default)."""
    return (
        f'[[reviewers]]\nid = "hawk"\nbackend = "openai"\nmodel = "gpt-test"\n'
        f"base_url = {json.dumps(server.base_url)}\nanswer_ms = 0\n"
    )


def pushed(forge: Forge, github: FakeGitHub, app: str, *findings: dict[str, Any]) -> str:
    """Push, and make the fake pull request's head the new commit; the head."""
    head = forge.push(app, *findings)
    github.pulls[PR].head = head
    return head


def test_github_the_keys_come_from_secrets_and_reach_the_model(
    tmp_path: Path, tools: Path, github: FakeGitHub, openai: FakeOpenAI
) -> None:
    """The OPENAI_API_KEY secret is the model reviewer's key: the fake provider saw it,
    the model's finding is in the summary, and no step printed it."""
    recipe = load("github-actions.yml")
    forge = Forge(tmp_path, more_reviewers=hawk(openai))
    env = github_env(tmp_path, tools, github)
    secrets = {"GITHUB_TOKEN": TOKEN, "OPENAI_API_KEY": OPENAI_KEY}
    head = pushed(forge, github, "x = 1\ny = 1 / 0\n", div0(2))
    job = run_github(recipe, forge, head, env, secrets, run_id=1)
    assert job.step("Gate").code == 1, job.step("Review").output[-3000:]
    assert openai.count == 1 and openai.requests[0].credential_ok is True
    (summary,) = github.pulls[PR].comments
    assert "raised by rep, hawk (2 of 2)" in summary["body"]
    assert OPENAI_KEY not in "".join(s.output for s in job.steps)
    assert not job.step("Say why").ran


def test_github_a_fork_is_reviewed_without_keys_and_posts_nothing(
    tmp_path: Path, tools: Path, github: FakeGitHub, openai: FakeOpenAI
) -> None:
    """A fork's pull request (no secrets): the model reviewer is left out, said under
    the report's title; the replay reviewer's critical finding still fails the gate; no
    request reaches GitHub (its token is read-only) nor the model."""
    recipe = load("github-actions.yml")
    forge = Forge(tmp_path, more_reviewers=hawk(openai))
    env = github_env(tmp_path, tools, github)
    head = pushed(forge, github, "x = 1\ny = 1 / 0\n", div0(2))
    job = run_github(recipe, forge, head, env, {"GITHUB_TOKEN": TOKEN}, run_id=1, fork=True)
    assert job.step("Gate").code == 1, job.step("Review").output[-3000:]
    for name in ("Upload SARIF", "Publish", "Say why"):
        assert not job.step(name).ran, name
    summary = (tmp_path / "step-summary.md").read_text()
    assert "**Without keys:** reviewed without API keys (--without-keys): hawk" in summary
    assert "raised by rep (1 of 1)" in summary
    assert github.requests == [] and openai.count == 0


def test_github_a_missing_key_fails_closed_and_says_why(
    tmp_path: Path, tools: Path, github: FakeGitHub, openai: FakeOpenAI
) -> None:
    """The roster names a model, the repository has no OPENAI_API_KEY secret: exit 2,
    nothing reviewed, and the summary comment says which variable is missing."""
    recipe = load("github-actions.yml")
    forge = Forge(tmp_path, more_reviewers=hawk(openai))
    env = github_env(tmp_path, tools, github)
    head = pushed(forge, github, "x = 1\ny = 1 / 0\n", div0(2))
    job = run_github(recipe, forge, head, env, {"GITHUB_TOKEN": TOKEN}, run_id=1)
    assert job.step("Gate").code == 2
    assert job.step("Say why").code == 0, job.step("Say why").output
    (comment,) = github.pulls[PR].comments
    body = comment["body"]
    assert "could not gate this pull request (exit 2)" in body
    assert "hawk: its API key variable OPENAI_API_KEY is not set" in body
    assert "https://github.example/octo/app/actions/runs/1" in body
    assert github.pulls[PR].reviews == [] and openai.count == 0


def accept_on_main(forge: Forge, report: Path) -> None:
    """Write the baseline accepting ``report``'s findings and commit it to main AFTER
    the feature branch left it (main moves past the merge base); push main."""
    baseline = forge.tmp / "baseline.json"
    done = subprocess.run(
        ["council", "baseline", "--from-json", str(report), "--output", str(baseline)],
        env=base_env(forge.tmp, forge.tmp / "bin"),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    git(forge.dev, "checkout", "-q", "main")
    commit(forge.dev, {".council-baseline.json": baseline.read_text()}, "accept div0")
    git(forge.dev, "push", "-q", "origin", "main")
    git(forge.dev, "checkout", "-q", "feature")


def test_github_a_baseline_committed_to_the_base_later_holds(
    tmp_path: Path, tools: Path, github: FakeGitHub
) -> None:
    """The pull request trips the gate; the critical finding is accepted in a baseline
    committed to main after the branch left it; the next push passes, the finding listed
    as baselined (the recipe passes the base branch, whose tip holds the baseline)."""
    recipe = load("github-actions.yml")
    forge = Forge(tmp_path)
    env = github_env(tmp_path, tools, github)
    secrets = {"GITHUB_TOKEN": TOKEN}
    first = run_github(
        recipe, forge, pushed(forge, github, "x = 1\ny = 1 / 0\n", div0(2)), env, secrets, 1
    )
    assert first.step("Gate").code == 1
    accept_on_main(forge, forge.workspace / "council-out" / "council.json")
    head = pushed(forge, github, "x = 1\ny = 1 / 0\nz = 2\n", div0(2))
    second = run_github(recipe, forge, head, env, secrets, 2)
    assert second.step("Gate").code == 0, second.step("Review").output[-3000:]
    report = json.loads((forge.workspace / "council-out" / "council.json").read_text())
    assert [s["source"] for s in report["suppressed"].values()] == ["baseline"]


def gitlab_env(tmp: Path, tools: Path, gitlab: FakeGitLab, **extra: str) -> dict[str, str]:
    """The variables GitLab sets for a merge request pipeline of project 42, !3."""
    variables = {
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
        "CI_MERGE_REQUEST_IID": "3",
        "CI_MERGE_REQUEST_PROJECT_ID": "42",
        "CI_PROJECT_ID": "42",
        "CI_PROJECT_PATH": "group/app",
        "CI_API_V4_URL": gitlab.url,
        "GITLAB_TOKEN": GL_TOKEN,
    }
    return base_env(tmp, tools, **{**variables, **extra})


@pytest.mark.parametrize(
    ("pipeline_project", "posts"), [("42", True), ("99", False)], ids=["parent", "fork"]
)
def test_gitlab_a_fork_is_reviewed_without_keys(
    tmp_path: Path, tools: Path, openai: FakeOpenAI, pipeline_project: str, posts: bool
) -> None:
    """A merge request from a fork (source project 99): the keys are unset even when the
    pipeline runs in this project, the model is left out and said so; the pipeline in
    this project posts the summary, the one in the fork's project posts nothing."""
    recipe = load("gitlab-ci.yml")
    forge = Forge(tmp_path, more_reviewers=hawk(openai))
    with FakeGitLab(token=GL_TOKEN, project="42", mrs=(3,)) as gitlab:
        env = gitlab_env(
            tmp_path,
            tools,
            gitlab,
            CI_MERGE_REQUEST_SOURCE_PROJECT_ID="99",
            CI_PROJECT_ID=pipeline_project,
            OPENAI_API_KEY=OPENAI_KEY,
        )
        head = forge.push("x = 1\ny = 1 / 0\n", div0(2))
        gitlab.mrs[3].head = head
        job = run_gitlab(recipe, forge, head, {**env, "CI_COMMIT_SHA": head})
        assert job.code == 1, job.output[-3000:]
        assert "**Without keys:** reviewed without API keys (--without-keys): hawk" in job.output
        assert openai.count == 0
        notes = gitlab.mrs[3].notes
        assert len(notes) == (1 if posts else 0)
        assert posts or gitlab.requests == []


def test_gitlab_a_baseline_committed_to_the_target_later_holds(
    tmp_path: Path, tools: Path
) -> None:
    """As on GitHub: the target branch's tip holds the baseline the merge request is
    gated by, though it was committed after the merge request left."""
    recipe = load("gitlab-ci.yml")
    forge = Forge(tmp_path)
    with FakeGitLab(token=GL_TOKEN, project="42", mrs=(3,)) as gitlab:
        env = gitlab_env(tmp_path, tools, gitlab)
        head = forge.push("x = 1\ny = 1 / 0\n", div0(2))
        gitlab.mrs[3].head = head
        assert run_gitlab(recipe, forge, head, {**env, "CI_COMMIT_SHA": head}).code == 1
        accept_on_main(forge, forge.workspace / "council-out" / "council.json")
        head = forge.push("x = 1\ny = 1 / 0\nz = 2\n", div0(2))
        gitlab.mrs[3].head = head
        second = run_gitlab(recipe, forge, head, {**env, "CI_COMMIT_SHA": head})
        assert second.code == 0, second.output[-3000:]


def test_gitlab_without_the_containers_permission_the_report_says_why(
    tmp_path: Path, tools: Path
) -> None:
    """A runner whose container refuses bubblewrap its namespaces (a stand-in bwrap
    answering as it does there): the program reviewer fails, never runs unsandboxed, the
    job exits 3, and the summary note (the report) names bubblewrap's refusal."""
    refusing = tools / "bwrap"
    refusing.write_text(
        "#!/bin/sh\necho 'bwrap: Creating new namespace failed: Operation not permitted' >&2\n"
        "exit 1\n"
    )
    refusing.chmod(0o755)
    program = tmp_path / "lint.sh"
    program.write_text('#!/bin/sh\necho \'{"findings": []}\'\n')
    program.chmod(0o755)
    lint = f'[[reviewers]]\nid = "lint"\nbackend = "command"\nprogram = "{program}"\n'
    recipe = load("gitlab-ci.yml")
    forge = Forge(tmp_path, more_reviewers=lint)
    with FakeGitLab(token=GL_TOKEN, project="42", mrs=(3,)) as gitlab:
        env = gitlab_env(tmp_path, tools, gitlab)
        head = forge.push("x = 2\n")
        gitlab.mrs[3].head = head
        job = run_gitlab(recipe, forge, head, {**env, "CI_COMMIT_SHA": head})
        assert job.code == 3, job.output[-3000:]
        said = "cannot create its sandbox here: bwrap: Creating new namespace failed: "
        said += "Operation not permitted"
        assert said in job.output
        (note,) = gitlab.mrs[3].notes
        assert "Council review: incomplete" in note["body"] and said in note["body"]
