"""``council publish github|gitlab --note FILE``: a review that wrote no report (exit 2, or
3 before it had one) still says why it could not gate, as the ONE summary comment or note,
escaped like any body; the next run's summary replaces it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from council.model.findings import LineAnchor
from tests.fakes.github_api import FakeGitHub
from tests.fakes.gitlab_api import FakeGitLab
from tests.forge_cases import finding
from tests.forge_outputs import CI_ENV, HEAD, PR, REPO, TOKEN, outputs, publish, quick_pacing
from workers.cli import main

GL_TOKEN = "glpat-note-test"
MR = 3
WHY = (
    "### ⚠️ council could not gate this pull request (exit 2)\n\n"
    "~~~text\nError: roster council.toml: there is no council.toml at the root of the base "
    "ref 0123abcd0123\n~~~\n\ncc @maintainers\n/approve\n"
)


@pytest.fixture(autouse=True)
def paced_quickly(monkeypatch: pytest.MonkeyPatch) -> None:
    """No pacing between mutations."""
    quick_pacing(monkeypatch)


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """A fake GitHub holding pull request 7 of octo/app at HEAD."""
    with FakeGitHub(token=TOKEN, repo=REPO, pulls=(PR,)) as fake:
        fake.pulls[PR].head = HEAD
        yield fake


def note(tmp_path: Path, text: str = WHY) -> Path:
    """The note file a recipe writes (outside the checkout)."""
    path = tmp_path / "council-note.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_note_is_the_one_summary_comment_until_a_run_replaces_it(
    github: FakeGitHub, tmp_path: Path
) -> None:
    """The note becomes the summary comment (marked as of no run, mentions defused); the
    same note again changes nothing; the next run's outputs edit that same comment."""
    done = publish(github, "--note", str(note(tmp_path)))
    assert done.exit_code == 0, done.output
    (comment,) = github.pulls[PR].comments
    assert comment["body"].startswith(f"<!-- council:summary run=none head={HEAD} -->\n### ⚠️")
    assert "there is no council.toml" in comment["body"] and "@maintainers" not in comment["body"]
    assert github.pulls[PR].reviews == []
    again = publish(github, "--note", str(note(tmp_path)))
    assert again.exit_code == 0 and "up to date" in again.output
    run = outputs(tmp_path, finding(1, LineAnchor(path="app.py", line=2), severity="critical"))
    assert publish(github, "--from", str(run)).exit_code == 0
    (summary,) = github.pulls[PR].comments
    assert summary["id"] == comment["id"]
    assert summary["body"].startswith(f"<!-- council:summary run=r1 head={HEAD} -->\n## ")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--from", "out"], "leave out --from"),
        (["--checks"], "leave out --from, --report and --checks"),
    ],
)
def test_a_note_goes_alone(github: FakeGitHub, tmp_path: Path, args: list[str], said: str) -> None:
    """--note with outputs or a check run: exit 2, nothing sent."""
    done = publish(github, "--note", str(note(tmp_path)), *args)
    assert done.exit_code == 2 and said in done.output
    assert github.requests == []


def test_a_blank_or_missing_note_sends_nothing(github: FakeGitHub, tmp_path: Path) -> None:
    """An empty note (the recipe found no message) or none at all: exit 2, no request."""
    blank = publish(github, "--note", str(note(tmp_path, " \n")))
    assert blank.exit_code == 2 and "is empty" in blank.output
    missing = publish(github, "--note", str(tmp_path / "absent.md"))
    assert missing.exit_code == 2 and "cannot be read" in missing.output
    assert github.requests == []


def gitlab_note(gitlab: FakeGitLab, path: Path) -> Result:
    """``council publish gitlab --note PATH`` against the fake, with GITLAB_TOKEN."""
    argv = ["publish", "gitlab", "--project", "42", "--mr", str(MR), "--api-url", gitlab.url]
    argv += ["--note", str(path), "--head", HEAD]
    return CliRunner().invoke(main, argv, env={**CI_ENV, "GITLAB_TOKEN": GL_TOKEN})


def test_gitlab_a_note_is_the_summary_note_with_no_quick_action(tmp_path: Path) -> None:
    """On GitLab the note is the ONE summary note, no thread; its `/approve` line is not
    run as a quick action and `@maintainers` notifies no one."""
    with FakeGitLab(token=GL_TOKEN, project="42", mrs=(MR,)) as gitlab:
        gitlab.mrs[MR].head = HEAD
        done = gitlab_note(gitlab, note(tmp_path))
        assert done.exit_code == 0, done.output
        (posted,) = gitlab.mrs[MR].notes
        assert gitlab.mrs[MR].discussions == []
    body = posted["body"]
    assert body.startswith(f"<!-- council:summary run=none head={HEAD} -->\n")
    assert "there is no council.toml" in body and "@maintainers" not in body
    assert not any(line.startswith("/approve") for line in body.splitlines())
