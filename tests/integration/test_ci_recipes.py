"""The CI recipes in deploy/ci run as written: their shell lines, in a real clone, against
a fake GitHub API over real HTTP; hosted-runner actions are replaced by local equivalents.

The GitHub workflow is run step by step the way a runner does (``bash -eo pipefail``,
``if:`` conditions, a failed step skipping the ones after it unless ``always()``), with
``${{ … }}`` expressions filled from the pull_request event. An expression, a condition
or an action the harness does not know fails the test: the recipe is exercised, never
guessed at. ``pip`` is a recording stand-in (council is installed in the test's Python).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.fakes.github_api import FakeGitHub
from tests.fakes.gitlab_api import FakeGitLab
from tests.gitrepo import ROOT, commit, git, new_repo

pytestmark = pytest.mark.integration

RECIPES = ROOT / "deploy" / "ci"
SARIF_SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "sarif-schema-2.1.0.json"
"""The SARIF 2.1.0 schema, vendored with its notice (tests/schemas/NOTICE.md)."""
SCHEMA = json.loads(SARIF_SCHEMA.read_text())
SARIF = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)

TOKEN = "ghs_recipe-test-token"
GL_TOKEN = "glpat-recipe-test-token"
REPO = "octo/app"
PR = 7
ROUND = "[council]\nbackstop_ms = 60000\nidle_ms = 60000\n"
EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")
HASH_FILES = re.compile(r"hashFiles\('([^']+)'\) (==|!=) ''")
CONTAINS_OUTPUT = re.compile(
    r"contains\(fromJSON\('(\[[^']*\])'\), steps\.([A-Za-z_][\w-]*)\.outputs\.([A-Za-z_][\w-]*)\)"
)
OUTPUT_IS = re.compile(r"steps\.([A-Za-z_][\w-]*)\.outputs\.([A-Za-z_][\w-]*) (==|!=) '([^']*)'")
FORK_EXPRESSION = "github.event.pull_request.head.repo.full_name != github.repository"
"""How the workflow asks whether the pull request comes from a fork."""


def div0(line: int) -> dict[str, Any]:
    """The critical finding the replay reviewer raises on app.py."""
    return {
        "subject": "divides by zero",
        "label": "issue",
        "severity": "critical",
        "location": {"kind": "line", "path": "app.py", "line": line},
    }


class Forge:
    """A bare "origin" with main (roster, app.py) and a feature branch pushed from a
    developer's clone; the CI workspace is a full clone of it. The replay reviewer's
    answer is a file outside every repository, which the roster names by its absolute
    path (a relative one is read from the base branch, never from the pull request)."""

    def __init__(self, tmp: Path, more_reviewers: str = "") -> None:
        self.tmp = tmp
        self.answer = tmp / "answer.json"
        self.answer.write_text('{"findings": []}')
        roster = (
            f'{ROUND}[[reviewers]]\nid = "rep"\nbackend = "replay"\n'
            f"answer = {json.dumps(str(self.answer))}\n{more_reviewers}"
        )
        self.dev = new_repo(tmp / "dev", {"council.toml": roster, "app.py": "x = 1\n"})
        self.origin = tmp / "origin.git"
        git(tmp, "clone", "-q", "--bare", str(self.dev), str(self.origin))
        git(self.dev, "remote", "add", "origin", str(self.origin))
        git(self.dev, "checkout", "-q", "-b", "feature")
        self.workspace = tmp / "workspace"

    def push(self, app: str, *findings: dict[str, Any], extra: dict[str, str] | None = None) -> str:
        """Commit app.py (and ``extra`` files) on feature, push it, and set the replayed
        answer; the new head."""
        self.answer.write_text(json.dumps({"findings": list(findings)}))
        sha = commit(self.dev, {"app.py": app, **(extra or {})}, "push")
        git(self.dev, "push", "-q", "-f", "origin", "feature")
        return sha

    def checkout(self, sha: str) -> None:
        """actions/checkout with fetch-depth 0: a full clone at the head commit."""
        if not self.workspace.exists():
            git(self.tmp, "clone", "-q", str(self.origin), str(self.workspace))
        git(self.workspace, "fetch", "-q", "origin")
        git(self.workspace, "checkout", "-q", "--detach", sha)


@dataclass
class Step:
    """What happened to one step: ran or skipped, its exit code and output."""

    name: str
    ran: bool
    code: int = 0
    output: str = ""


@dataclass
class Job:
    """A job's steps; failed when any step that ran failed."""

    steps: list[Step] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether a step that ran exited non-zero."""
        return any(s.ran and s.code != 0 for s in self.steps)

    def step(self, name: str) -> Step:
        """The step whose name starts with ``name``."""
        return next(s for s in self.steps if s.name.startswith(name))


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    """A bin directory with a recording ``pip`` stand-in."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pip = bin_dir / "pip"
    pip.write_text('#!/bin/sh\necho "$@" >> "$PIP_LOG"\n[ "$1" = install ]\n')
    pip.chmod(0o755)
    return bin_dir


def base_env(tmp: Path, tools: Path, **extra: str) -> dict[str, str]:
    """The runner's environment: a short PATH (the pip stand-in, this Python's scripts,
    which import this checkout's council), no COUNCIL_* from the developer's shell."""
    python_bin = Path(sys.executable).parent
    assert (python_bin / "council").exists(), f"council is not installed in {python_bin}"
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": os.pathsep.join(
            [str(tools), str(python_bin), "/usr/local/bin", "/usr/bin", "/bin"]
        ),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "CI": "true",
        "PIP_LOG": str(tmp / "pip.log"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PYTHONPATH": str(ROOT),  # this checkout's code, also from a git worktree
        **extra,
    }


def bash(script: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run a step's script as a runner does: ``bash --noprofile --norc -eo pipefail``."""
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    return done.returncode, done.stdout + done.stderr


def substitute(text: str, values: dict[str, str]) -> str:
    """Fill ``${{ expr }}``; a secret the test does not set is empty (as on GitHub, for
    a secret the repository lacks or a fork's pull request); any other expression the
    test does not know fails it."""

    def one(match: re.Match[str]) -> str:
        expr = match.group(1)
        if expr.startswith("secrets.") and expr not in values:
            return ""
        assert expr in values, f"the recipe uses ${{{{ {expr} }}}}, which the test does not set"
        return values[expr]

    return EXPRESSION.sub(one, text)


def run_github(
    recipe: dict[str, Any],
    forge: Forge,
    head: str,
    env: dict[str, str],
    secrets: dict[str, str],
    run_id: int,
    *,
    fork: bool = False,
) -> Job:
    """Run the workflow's one job for a pull_request event on ``head`` (from a fork of
    the repository when ``fork``: GitHub then hands the job no secret but a read-only
    GITHUB_TOKEN, which the caller's ``secrets`` must say)."""
    (_, job), *others = recipe["jobs"].items()
    assert not others, "the harness runs one job"
    values = {
        "github.event.pull_request.number": str(PR),
        "github.event.pull_request.head.sha": head,
        "github.run_id": str(run_id),
        FORK_EXPRESSION: "true" if fork else "false",
        "runner.temp": env["RUNNER_TEMP"],
        **{f"secrets.{k}": v for k, v in secrets.items()},
    }
    job_env = {k: substitute(str(v), values) for k, v in job.get("env", {}).items()}
    result = Job()
    outputs: dict[str, dict[str, str]] = {}
    for index, step in enumerate(job["steps"]):
        title = step.get("name") or step.get("uses", "")
        if not _should_run(step.get("if"), result.failed, forge.workspace, outputs):
            result.steps.append(Step(title, ran=False))
            continue
        if "uses" in step:
            with_ = {k: substitute(str(v), values) for k, v in step.get("with", {}).items()}
            code, output = _local_action(step["uses"], with_, forge, env)
        else:
            step_env = {k: substitute(str(v), values) for k, v in step.get("env", {}).items()}
            script = substitute(step["run"], values)
            github_output = forge.tmp / f"github-output-{run_id}-{index}"
            github_output.write_text("")
            runner_env = {
                "GITHUB_WORKSPACE": str(forge.workspace),
                "GITHUB_OUTPUT": str(github_output),
                "GITHUB_RUN_ID": str(run_id),
            }
            code, output = bash(
                script, forge.workspace, {**env, **runner_env, **job_env, **step_env}
            )
            if "id" in step:
                said = dict(
                    line.split("=", 1)
                    for line in github_output.read_text().splitlines()
                    if "=" in line
                )
                outputs[step["id"]] = said
                for name, value in said.items():
                    values[f"steps.{step['id']}.outputs.{name}"] = value
        result.steps.append(Step(title, ran=True, code=code, output=output))
    return result


def _should_run(
    condition: str | None, failed: bool, workspace: Path, outputs: dict[str, dict[str, str]]
) -> bool:
    """A step's ``if:``: ``always()``, ``hashFiles('…') != ''`` (or ``== ''``),
    ``contains(fromJSON('[…]'), steps.ID.outputs.NAME)`` and ``steps.ID.outputs.NAME ==
    '…'`` (or ``!=``; an output never set is ``''``, as on GitHub) joined by ``&&``;
    without ``always()`` a failed job skips it, as GitHub's implied ``success()`` does.
    Anything else fails the test."""
    if condition is None:
        return not failed
    always, holds = False, True
    for term in (t.strip() for t in condition.split("&&")):
        if term == "always()":
            always = True
        elif match := HASH_FILES.fullmatch(term):
            present = (workspace / match.group(1)).exists()
            holds = holds and present == (match.group(2) == "!=")
        elif match := CONTAINS_OUTPUT.fullmatch(term):
            allowed = json.loads(match.group(1))
            holds = holds and outputs.get(match.group(2), {}).get(match.group(3)) in allowed
        elif match := OUTPUT_IS.fullmatch(term):
            value = outputs.get(match.group(1), {}).get(match.group(2), "")
            holds = holds and (value == match.group(4)) == (match.group(3) == "==")
        else:
            raise AssertionError(f"the recipe uses the condition {term!r}, unknown to the test")
    return holds and (always or not failed)


def _local_action(
    uses: str, with_: dict[str, str], forge: Forge, env: dict[str, str]
) -> tuple[int, str]:
    """The local equivalent of a hosted-runner action."""
    action = uses.split("@")[0]
    if action == "actions/checkout":
        assert with_.get("fetch-depth") == "0", "the review needs full history"
        forge.checkout(with_["ref"])
        return 0, "checked out"
    if action == "actions/setup-python":
        assert with_.get("python-version") == "3.11"
        return 0, f"using {sys.version.split()[0]}"
    if action == "actions/cache":
        cached = Path(with_["path"])
        assert cached.is_relative_to(env["RUNNER_TEMP"]), "the state stays outside the checkout"
        return 0, "the runner's temp directory persists between runs: a cache hit"
    if action == "github/codeql-action/upload-sarif":
        SARIF.validate(json.loads((forge.workspace / with_["sarif_file"]).read_text()))
        return 0, "SARIF valid"
    raise AssertionError(f"the recipe uses {uses}, which the test has no local equivalent for")


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """The fake GitHub API holding pull request 7 of octo/app."""
    with FakeGitHub(token=TOKEN, repo=REPO, pulls=(PR,)) as fake:
        yield fake


def github_env(tmp: Path, tools: Path, fake: FakeGitHub) -> dict[str, str]:
    """The default variables a GitHub runner sets for a pull_request event; the runner's
    temp directory exists, as on GitHub."""
    runner_temp = tmp / "runner-temp"
    runner_temp.mkdir(exist_ok=True)
    return base_env(
        tmp,
        tools,
        GITHUB_BASE_REF="main",
        GITHUB_HEAD_REF="feature",
        GITHUB_REPOSITORY=REPO,
        GITHUB_EVENT_NAME="pull_request",
        GITHUB_API_URL=fake.url,
        GITHUB_SERVER_URL="https://github.example",
        GITHUB_STEP_SUMMARY=str(tmp / "step-summary.md"),
        RUNNER_TEMP=str(runner_temp),
    )


def load(name: str) -> dict[str, Any]:
    """A recipe's YAML."""
    data: dict[str, Any] = yaml.safe_load((RECIPES / name).read_text())
    return data


COUNCIL_CALL = re.compile(r"(?m)^\s*council ((?:publish )?[a-z][a-z-]*)([^;&|\n]*)")
"""A ``council`` command starting a line of a recipe's shell: its subcommand, then its
arguments up to the end of the line or of the command (``;``, ``&&``, a pipe)."""
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z-]*)")


def shell_of(name: str) -> str:
    """Every shell line a recipe runs, continuation lines joined, comment lines left out:
    the GitHub workflow's ``run`` steps, the GitLab job's scripts."""
    recipe = load(name)
    if name.startswith("github"):
        (job,) = recipe["jobs"].values()
        scripts = [step["run"] for step in job["steps"] if "run" in step]
    else:
        job = recipe["council"]
        scripts = [*job["before_script"], *job["script"], *job["after_script"]]
    text = "\n".join(scripts).replace("\\\n", " ")
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("github-actions.yml", ["review", "publish github", "publish github"]),
        ("gitlab-ci.yml", ["review", "publish gitlab", "publish gitlab"]),
    ],
)
def test_each_recipe_parses_and_every_council_command_it_runs_takes_its_options(
    tmp_path: Path, tools: Path, name: str, expected: list[str]
) -> None:
    """The recipe is YAML; each ``council`` command in it exists (``--help`` exits 0)
    and takes every option the recipe passes it, so a renamed option fails here, not in
    a team's first pipeline."""
    shell = shell_of(name)
    calls = COUNCIL_CALL.findall(shell)
    assert [command for command, _ in calls] == expected
    (keys,) = set(re.findall(r"keys=\(?\"?(--[a-z-]+)", shell))  # passed to review as $keys
    assert keys == "--without-keys"
    calls[0] = (calls[0][0], f"{calls[0][1]} {keys}")
    env = base_env(tmp_path, tools)
    for command, arguments in calls:
        done = subprocess.run(
            ["council", *command.split(), "--help"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        for option in OPTION.findall(arguments):
            assert f"{option} " in done.stdout or f"{option}," in done.stdout, (command, option)


def test_github_workflow_embedded(tmp_path: Path, tools: Path, github: FakeGitHub) -> None:
    """Embedded: the first push trips the gate after uploading, reviewing and summarising;
    the fix passes, dismisses the stale review and edits the same summary comment."""
    recipe = load("github-actions.yml")
    assert "pull_request" in recipe[True]  # YAML 1.1 reads the key `on` as true
    forge = Forge(tmp_path)
    env = github_env(tmp_path, tools, github)
    secrets = {"GITHUB_TOKEN": TOKEN, "COUNCIL_REDIS_URL": ""}

    head = forge.push("x = 1\ny = 1 / 0\n", div0(2))
    github.pulls[PR].head = head
    first = run_github(recipe, forge, head, env, secrets, run_id=1)
    assert [s.name for s in first.steps if s.ran and s.code] == ["Gate on the council's verdict"]
    assert first.step("Gate").code == 1
    assert first.step("Upload SARIF").ran and first.step("Upload SARIF").code == 0
    pull = github.pulls[PR]
    (review,) = pull.reviews
    assert review["state"] == "CHANGES_REQUESTED"
    posted = github.mutations()[0].body
    assert posted["commit_id"] == head
    assert [(c["path"], c["line"]) for c in posted["comments"]] == [("app.py", 2)]
    (summary,) = pull.comments
    assert summary["body"].startswith("<!-- council:summary run=")
    assert "Council review: gate tripped" in (tmp_path / "step-summary.md").read_text()
    assert "install --quiet council[analyzers]" in (tmp_path / "pip.log").read_text()
    assert TOKEN not in "".join(s.output for s in first.steps)
    (check,) = github.check_runs
    assert (check["head_sha"], check["conclusion"]) == (head, "failure")
    assert [a["path"] for a in github.annotations[check["id"]]] == ["app.py"]

    head = forge.push("x = 1\ny = 1 / 2\n")
    github.pulls[PR].head = head
    second = run_github(recipe, forge, head, env, secrets, run_id=2)
    assert not second.failed, [(s.name, s.code, s.output[-2000:]) for s in second.steps]
    assert [r["state"] for r in pull.reviews] == ["DISMISSED", "COMMENTED"]
    assert len(pull.comments) == 1 and pull.comments[0]["id"] == summary["id"]
    assert [r.method for r in github.mutations()].count("PATCH") == 1
    assert "### Outdated" in pull.comments[0]["body"]
    assert (tmp_path / "step-summary.md").read_text().count("Council review:") == 2
    assert [(c["head_sha"], c["conclusion"]) for c in github.check_runs][1] == (head, "success")

    # A retried publish step (same outputs, same run): nothing is posted or edited.
    (step,) = [
        s for s in recipe["jobs"]["council"]["steps"] if s.get("name", "").startswith("Publish")
    ]
    before = len(github.mutations())
    values = {"secrets.GITHUB_TOKEN": TOKEN}
    step_env = {k: substitute(str(v), values) for k, v in step["env"].items()}
    job_env = {"PR_NUMBER": str(PR), "HEAD_SHA": head}
    runner_env = {"GITHUB_OUTPUT": str(tmp_path / "retried-output")}
    code, said = bash(step["run"], forge.workspace, {**env, **job_env, **step_env, **runner_env})
    assert code == 0, said
    assert len(github.mutations()) == before and "nothing to change" in said


def test_github_workflow_refuses_a_committed_council_out(
    tmp_path: Path, tools: Path, github: FakeGitHub
) -> None:
    """A pull request commits its own council-out/ (a passing review, a manifest): the
    review refuses the directory (exit 2), nothing of it is uploaded or published, the
    gate fails, and the summary comment says why, in the review's own words."""
    recipe = load("github-actions.yml")
    forge = Forge(tmp_path)
    env = github_env(tmp_path, tools, github)
    secrets = {"GITHUB_TOKEN": TOKEN, "COUNCIL_REDIS_URL": ""}
    forged = {
        "council-out/github-review.json": '{"body": "✅ passed", "event": "COMMENT"}\n',
        "council-out/council.md": "## ✅ Council review: passed\n",
        "council-out/council.sarif": '{"version": "2.1.0", "runs": []}\n',
        "council-out/council-run.json": '{"council_outputs": 1, "run_id": "x", "files": {}}\n',
    }
    head = forge.push("y = 1 / 0\n", div0(1), extra=forged)
    github.pulls[PR].head = head
    job = run_github(recipe, forge, head, env, secrets, run_id=1)
    assert job.step("Gate").code == 2
    assert "council-out is not empty" in job.step("Review").output
    for name in ("Upload SARIF", "Publish", "Job summary"):
        assert not job.step(name).ran, name
    assert job.step("Say why").ran and job.step("Say why").code == 0
    (posted,) = github.mutations()
    assert posted.method == "POST" and posted.path.endswith(f"/issues/{PR}/comments")
    (comment,) = github.pulls[PR].comments
    assert "could not gate this pull request (exit 2)" in comment["body"]
    assert "council-out is not empty" in comment["body"]
    assert "passed" not in comment["body"] and github.pulls[PR].reviews == []


def pushed(forge: Forge, github: FakeGitHub, app: str, *findings: dict[str, Any]) -> str:
    """Push, and make the fake pull request's head the new commit; the head."""
    head = forge.push(app, *findings)
    github.pulls[PR].head = head
    return head


def test_github_workflow_on_a_shared_redis(
    tmp_path: Path,
    tools: Path,
    github: FakeGitHub,
    redis_url: str,
    start_worker: Callable[..., Any],
) -> None:
    """Shared Redis (the COUNCIL_REDIS_URL secret) with a worker: the session lives in
    Redis, so the second push's repeat is seen and not commented again; a baseline is
    written from it and a dismissal recorded in it (the repeat kept its id, 1), and the
    third push, which adds a line below the finding (one added above it, within the 20
    lines its block reads, would ask for a fresh decision), passes."""
    start_worker("w1")
    recipe = load("github-actions.yml")
    forge = Forge(tmp_path)
    env = github_env(tmp_path, tools, github)
    secrets = {"GITHUB_TOKEN": TOKEN, "COUNCIL_REDIS_URL": redis_url}

    first = run_github(
        recipe, forge, pushed(forge, github, "y = 1 / 0\n", div0(1)), env, secrets, 1
    )
    assert first.step("Gate").code == 1, first.step("Review").output[-3000:]
    assert "distributed mode" in first.step("Review").output
    second = run_github(
        recipe, forge, pushed(forge, github, "w = 0\ny = 1 / 0\n", div0(2)), env, secrets, 2
    )
    assert second.step("Gate").code == 1
    reviews = [r.body for r in github.mutations() if r.path.endswith("/reviews")]
    assert len(reviews[0]["comments"]) == 1 and reviews[1]["comments"] == []
    assert "seen in an earlier round" in github.pulls[PR].comments[0]["body"]
    assert len(github.pulls[PR].comments) == 1
    redis_env = {**env, "COUNCIL_REDIS_URL": redis_url}
    session = f"{REPO}#{PR}"
    code, said = bash(
        f"council baseline --session '{session}' --output ../baseline.json\n"
        f"council dismiss 1 --session '{session}' --reason 'guarded'",
        forge.workspace,
        redis_env,
    )
    assert code == 0, said
    (entry,) = json.loads((tmp_path / "baseline.json").read_text())["entries"]
    assert entry["subject"] == "divides by zero"
    third = run_github(
        recipe, forge, pushed(forge, github, "w = 0\ny = 1 / 0\nv = 0\n", div0(2)), env, secrets, 3
    )
    assert not third.failed, third.step("Review").output[-3000:]
    assert "guarded" in github.pulls[PR].comments[0]["body"]


def run_gitlab(recipe: dict[str, Any], forge: Forge, head: str, env: dict[str, str]) -> Step:
    """Run the merge-request job: before_script and script as one ``bash -eo pipefail``
    script (a failing line fails the job), then after_script on its own."""
    job = recipe["council"]
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    assert job["variables"]["GIT_DEPTH"] == "0"
    forge.checkout(head)
    job_env = {**env, **{k: str(v) for k, v in job["variables"].items()}}
    script = "\n".join([*job.get("before_script", []), *job["script"]])
    code, output = bash(script, forge.workspace, job_env)
    _, after = bash("\n".join(job.get("after_script", [])), forge.workspace, job_env)
    return Step("council", ran=True, code=code, output=output + after)


def test_gitlab_merge_request_job(tmp_path: Path, tools: Path) -> None:
    """The job fails on a critical finding with a Code Quality artifact GitLab reads, a
    thread on the line and a summary note; it passes once fixed, the artifact then empty
    and the same note edited."""
    recipe = load("gitlab-ci.yml")
    forge = Forge(tmp_path)
    with FakeGitLab(token=GL_TOKEN, project="42", mrs=(3,)) as gitlab:
        env = base_env(
            tmp_path,
            tools,
            CI_PIPELINE_SOURCE="merge_request_event",
            CI_MERGE_REQUEST_TARGET_BRANCH_NAME="main",
            CI_MERGE_REQUEST_SOURCE_BRANCH_NAME="feature",
            CI_MERGE_REQUEST_IID="3",
            CI_PROJECT_ID="42",
            CI_PROJECT_PATH="group/app",
            CI_API_V4_URL=gitlab.url,
            GITLAB_TOKEN=GL_TOKEN,
            CI_JOB_TOKEN="job-token-value",
        )
        report_path = recipe["council"]["artifacts"]["reports"]["codequality"]
        assert recipe["council"]["artifacts"]["when"] == "always"

        head = forge.push("x = 1\ny = 1 / 0\n", div0(2))
        gitlab.mrs[3].head = head
        first = run_gitlab(recipe, forge, head, {**env, "CI_COMMIT_SHA": head})
        assert first.code == 1, first.output[-3000:]
        (entry,) = json.loads((forge.workspace / report_path).read_text())
        assert entry["severity"] == "critical" and entry["location"] == {
            "path": "app.py",
            "lines": {"begin": 2},
        }
        assert len(entry["fingerprint"]) == 64
        assert "Council review: gate tripped" in first.output
        for path in recipe["council"]["artifacts"]["paths"]:
            assert (forge.workspace / path).exists()
        (thread,) = gitlab.mrs[3].discussions
        position = thread["notes"][0]["position"]
        assert (position["new_path"], position["new_line"], position["head_sha"]) == (
            "app.py",
            2,
            head,
        )
        (note,) = gitlab.mrs[3].notes
        assert "gate tripped" in note["body"]

        head = forge.push("x = 1\ny = 1 / 2\n")
        gitlab.mrs[3].head = head
        second = run_gitlab(recipe, forge, head, {**env, "CI_COMMIT_SHA": head})
        assert second.code == 0, second.output[-3000:]
        assert json.loads((forge.workspace / report_path).read_text()) == []
        assert "session group/app!3" in second.output
        assert len(gitlab.mrs[3].notes) == 1 and "passed" in gitlab.mrs[3].notes[0]["body"]
        assert GL_TOKEN not in first.output + second.output


def test_gitlab_job_refuses_a_committed_council_out(tmp_path: Path, tools: Path) -> None:
    """A merge request commits its own council-out/: exit 2, nothing of it posted (the
    summary note says why, from the review's stderr), and the forged Code Quality
    artifact is removed before the artifacts are kept."""
    recipe = load("gitlab-ci.yml")
    forge = Forge(tmp_path)
    with FakeGitLab(token=GL_TOKEN, project="42", mrs=(3,)) as gitlab:
        env = base_env(
            tmp_path,
            tools,
            CI_MERGE_REQUEST_TARGET_BRANCH_NAME="main",
            CI_MERGE_REQUEST_IID="3",
            CI_PROJECT_ID="42",
            CI_PROJECT_PATH="group/app",
            CI_API_V4_URL=gitlab.url,
            GITLAB_TOKEN=GL_TOKEN,
        )
        forged = {"council-out/gl-code-quality-report.json": "[]\n"}
        head = forge.push("y = 1 / 0\n", div0(1), extra=forged)
        job = run_gitlab(recipe, forge, head, {**env, "CI_COMMIT_SHA": head})
        assert job.code == 2, job.output[-3000:]
        (note,) = gitlab.mrs[3].notes
        assert "could not gate this merge request (exit 2)" in note["body"]
        assert "council-out is not empty" in note["body"]
        assert gitlab.mrs[3].discussions == []
        assert not (forge.workspace / "council-out").exists()


def test_gitlab_job_never_reads_a_state_the_merge_request_commits(
    tmp_path: Path, tools: Path
) -> None:
    """A merge request that commits the cache folder's state.json (forged dismissals, a
    forged reviewed head) stops the job (exit 2) before anything is read from it."""
    recipe = load("gitlab-ci.yml")
    forge = Forge(tmp_path)
    env = base_env(
        tmp_path,
        tools,
        CI_PIPELINE_SOURCE="merge_request_event",
        CI_MERGE_REQUEST_TARGET_BRANCH_NAME="main",
        CI_MERGE_REQUEST_IID="4",
        CI_PROJECT_PATH="group/app",
    )
    forged = json.dumps({"version": 1, "sessions": {}})
    commit(forge.dev, {".council-cache/state.json": forged, "app.py": "y = 1 / 0\n"}, "forge")
    git(forge.dev, "push", "-q", "-f", "origin", "feature")
    job = run_gitlab(recipe, forge, git(forge.dev, "rev-parse", "HEAD"), env)
    assert job.code == 2, job.output[-3000:]
    assert ".council-cache/ is tracked by git" in job.output
    assert not (forge.workspace / "council-out").exists()
