"""Output directories as ``council review --output`` writes them (``council-run.json``
and all), and ``council publish github`` run against a fake: shared by the publish tests.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tests.fakes.github_api import FakeGitHub
from tests.forge_cases import report
from workers.cli import main
from workers.cli import publish as publish_module
from workers.cli.outputs import plan_outputs, write_outputs
from workers.forge.github import GitHubClient
from workers.forge.gitlab import GitLabClient
from workers.forge.manifest import MANIFEST_NAME, render_manifest

TOKEN = "ghs_s3cr3t-token-value"
REPO = "octo/app"
PR = 7
HEAD = "0123abcd" * 5
"""The head of the reports of :mod:`tests.forge_cases`, and of the fake pull request."""

FORMATS = ("github-review", "markdown", "json", "github-checks", "gitlab-discussions")

CI_ENV: dict[str, str | None] = {
    "GITHUB_EVENT_PATH": None,
    "GITHUB_SHA": None,
    "CI_COMMIT_SHA": None,
    "GITLAB_TOKEN": None,
    "CI_JOB_TOKEN": None,
    "CI_API_V4_URL": None,
    "CI_PROJECT_ID": None,
    "CI_MERGE_REQUEST_IID": None,
}
"""The CI variables publish reads, unset (a test run inside CI must not see its own)."""


def quick_pacing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pace mutations 20 ms apart (the 1 s default has its own test)."""
    monkeypatch.setattr(
        publish_module, "GitHubClient", functools.partial(GitHubClient, min_interval_s=0.02)
    )
    monkeypatch.setattr(
        publish_module, "GitLabClient", functools.partial(GitLabClient, min_interval_s=0.0)
    )


def outputs(
    tmp_path: Path,
    *findings: Any,
    name: str = "out",
    run_id: str = "r1",
    formats: tuple[str, ...] = FORMATS,
    change: Any = None,
    **fields: Any,
) -> Path:
    """A --output directory as `council review` writes it, for a report of ``findings``
    by run ``run_id``."""
    out = tmp_path / name
    rep = report(*findings, run_id=run_id, **fields)
    plan = plan_outputs(formats, out, None, None)
    write_outputs(rep.gated(fail_on="critical", quorum=1), plan, change=change)
    return out


def rewrite(out: Path, file: str, text: str) -> None:
    """Replace one output as if the run had written it (the manifest follows)."""
    (out / file).write_text(text)
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    files = {n: (out / n).read_bytes() for n in manifest["files"]}
    files[file] = text.encode()
    fields = {k: manifest[k] for k in ("run_id", "session", "head", "base")}
    (out / MANIFEST_NAME).write_text(render_manifest(**fields, files=files))


def publish(
    github: FakeGitHub,
    *args: str,
    token: str | None = TOKEN,
    head: str | None = HEAD,
    env: dict[str, str | None] | None = None,
) -> Result:
    """Run ``council publish github --head HEAD`` against the fake."""
    environ: dict[str, str | None] = {**CI_ENV, "GITHUB_TOKEN": token or "", **(env or {})}
    argv = ["publish", "github", "--repo", REPO, "--pr", str(PR), "--api-url", github.url]
    if head is not None:
        argv += ["--head", head]
    return CliRunner().invoke(main, [*argv, *args], env=environ)
