"""``council publish`` posts only outputs a run at the head CI names provably wrote: a
pull request's own ``council-out/``, another head's outputs, a changed or unlisted file
are refused (exit 2) before any request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from council.rendering import render_json
from tests.fakes.github_api import FakeGitHub
from tests.forge_cases import report
from tests.forge_outputs import HEAD, PR, REPO, TOKEN, outputs, publish, quick_pacing
from workers.forge.manifest import MANIFEST_NAME, render_manifest

OTHER = "0badc0de" * 5


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """A fake GitHub holding pull request 7 of octo/app at HEAD."""
    with FakeGitHub(token=TOKEN, repo=REPO, pulls=(PR,)) as fake:
        fake.pulls[PR].head = HEAD
        yield fake


@pytest.fixture(autouse=True)
def paced_quickly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pace mutations 20 ms apart."""
    quick_pacing(monkeypatch)


def test_a_committed_council_out_without_manifest_is_refused(
    github: FakeGitHub, tmp_path: Path
) -> None:
    """The pull request committed council-out/github-review.json ("passed"): refused,
    naming the manifest it lacks; nothing is sent."""
    out = tmp_path / "council-out"
    out.mkdir()
    (out / "github-review.json").write_text('{"body": "✅ passed", "event": "COMMENT"}')
    (out / "council.md").write_text("## ✅ Council review: passed\n")
    done = publish(github, "--from", str(out))
    assert done.exit_code == 2, done.output
    assert MANIFEST_NAME in done.output and github.requests == []


def test_a_forged_manifest_cannot_name_the_head(github: FakeGitHub, tmp_path: Path) -> None:
    """A committed manifest cannot hold the hash of the commit holding it: it names
    another head, and is refused."""
    out = outputs(tmp_path, head=OTHER)
    done = publish(github, "--from", str(out))
    assert done.exit_code == 2, done.output
    assert f"at head {OTHER[:12]}, not of {HEAD[:12]}" in done.output
    assert github.requests == []


def test_a_changed_file_is_refused(github: FakeGitHub, tmp_path: Path) -> None:
    """A file edited after the run (its SHA-256 differs from the manifest's)."""
    out = outputs(tmp_path)
    (out / "github-review.json").write_text('{"body": "✅ passed", "event": "COMMENT"}')
    done = publish(github, "--from", str(out))
    assert done.exit_code == 2, done.output
    assert "github-review.json is not the file run r1 wrote" in done.output
    assert github.requests == []


def test_an_unlisted_file_is_refused(github: FakeGitHub, tmp_path: Path) -> None:
    """--checks with a github-checks.json the run did not write (the manifest does not
    list it): refused, never rendered around."""
    out = outputs(tmp_path, formats=("github-review", "markdown", "json"))
    (out / "github-checks.json").write_text('{"output": {"title": "passed"}}')
    done = publish(github, "--from", str(out), "--checks")
    assert done.exit_code == 2, done.output
    assert "github-checks.json is not an output of run r1" in done.output
    assert github.requests == []


def test_a_report_of_another_run_is_refused(github: FakeGitHub, tmp_path: Path) -> None:
    """council.json swapped for another run's (and the manifest re-hashed to match):
    its run id differs from the manifest's."""
    out = outputs(tmp_path, formats=("json",))
    (out / "council.json").write_text(render_json(report(run_id="r2")))
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    files = {"council.json": (out / "council.json").read_bytes()}
    (out / MANIFEST_NAME).write_text(
        render_manifest(run_id="r1", session="s1", head=manifest["head"], base="", files=files)
    )
    done = publish(github, "--from", str(out))
    assert done.exit_code == 2 and "is of run r2" in done.output


def test_a_report_of_another_head_is_refused(github: FakeGitHub, tmp_path: Path) -> None:
    """--report FILE names its head: another head's report is refused."""
    path = tmp_path / "council.json"
    path.write_text(render_json(report(head=OTHER)))
    done = publish(github, "--report", str(path))
    assert done.exit_code == 2 and "not of 0123abcd0123" in done.output


def test_the_head_is_required(github: FakeGitHub, tmp_path: Path) -> None:
    """No --head and no CI variable naming one: exit 2 saying what to pass."""
    done = publish(github, "--from", str(outputs(tmp_path)), head=None)
    assert done.exit_code == 2 and "pass --head SHA" in done.output
    short = publish(github, "--from", str(outputs(tmp_path, name="o2")), head="0123abc")
    assert short.exit_code == 2 and "not a full commit sha" in short.output


def test_the_head_is_read_from_the_actions_event(github: FakeGitHub, tmp_path: Path) -> None:
    """In GitHub Actions, the pull request's head in GITHUB_EVENT_PATH wins over
    GITHUB_SHA (on pull_request events, a merge commit the review did not run on)."""
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"head": {"sha": HEAD}}}))
    env: dict[str, str | None] = {"GITHUB_EVENT_PATH": str(event), "GITHUB_SHA": OTHER}
    done = publish(github, "--from", str(outputs(tmp_path)), head=None, env=env)
    assert done.exit_code == 0, done.output
    merge = publish(
        github, "--from", str(outputs(tmp_path, name="o2")), head=None, env={"GITHUB_SHA": OTHER}
    )
    assert merge.exit_code == 2 and "not of 0badc0de0bad" in merge.output
