"""``--roster`` naming a file of the repository under review: a CI job checks out the head
and passes ``--roster council.toml``, which is the pull request's copy. It is read from the
BASE ref, as the default roster is, and so is what it names beside it (replay files,
programs, personas); a roster only the head holds is refused. Source: docs/security.md
"Trusted configuration"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from tests.gitrepo import commit, git, new_repo
from workers.cli import main

ROUND = "[council]\nbackstop_ms = 60000\nidle_ms = 60000\n"

VAGUE = {"subject": "name is vague", "label": "suggestion"}


def _replay(pid: str, answer: str) -> str:
    return f'[[reviewers]]\nid = "{pid}"\nbackend = "replay"\nanswer = "{answer}"\n'


def _review(repo: Path, roster: Path, tmp_path: Path) -> tuple[Result, dict[str, Any]]:
    """``council review`` of HEAD~1..HEAD in embedded mode with ``--roster``; the result
    and the JSON report (empty when none was written)."""
    out = tmp_path / "report.json"
    argv = ["review", "--repo", str(repo), "--base", "HEAD~1", "--no-progress"]
    argv += ["--state", str(tmp_path / "state.json"), "--roster", str(roster)]
    done = CliRunner().invoke(main, [*argv, "--json", str(out)])
    report = json.loads(out.read_text()) if out.exists() else {}
    return done, report


def _states(report: dict[str, Any]) -> dict[str, str]:
    return {p["id"]: p["state"] for p in report["participants"]}


def _strong_and_weak(tmp_path: Path, strong: str, weak: str) -> Path:
    """A repository whose base holds a roster of two reviewers at ``strong`` and one of
    one reviewer at ``weak`` (the roster a hostile change would rather run)."""
    files = {
        "app.py": "x = 1\n",
        strong: ROUND + _replay("keep", "a.json") + _replay("other", "a.json"),
        weak: ROUND + _replay("other", "a.json"),
        "a.json": json.dumps({"findings": [VAGUE]}),
    }
    return new_repo(tmp_path / "repo", files)


def test_the_heads_copy_of_the_roster_cannot_switch_a_reviewer_off(tmp_path: Path) -> None:
    """The pull request drops ``keep`` from council.toml; CI passes ``--roster
    council.toml`` from its checkout of the head: the base roster runs both, and says so."""
    both = ROUND + _replay("keep", "a.json") + _replay("other", "a.json")
    files = {"app.py": "x = 1\n", "a.json": json.dumps({"findings": [VAGUE]}), "council.toml": both}
    repo = new_repo(tmp_path / "repo", files)
    commit(repo, {"council.toml": ROUND + _replay("other", "a.json"), "app.py": "x = 2\n"}, "pr")
    done, report = _review(repo, repo / "council.toml", tmp_path)
    assert done.exit_code == 0, done.output
    assert _states(report) == {"keep": "answered", "other": "answered"}
    (note,) = [n for n in report["notes"] if "council.toml" in n]
    assert "the change edits council.toml; the base version was used" in note


def test_what_a_roster_in_a_folder_names_is_read_beside_it_in_the_base(tmp_path: Path) -> None:
    """``ci/council.toml`` names ``answer.json`` beside it; the pull request empties that
    answer: the base's answer is the one replayed (no note: the roster is unchanged)."""
    files = {
        "app.py": "x = 1\n",
        "ci/council.toml": ROUND + _replay("keep", "answer.json"),
        "ci/answer.json": json.dumps({"findings": [VAGUE]}),
    }
    repo = new_repo(tmp_path / "repo", files)
    commit(repo, {"ci/answer.json": json.dumps({"findings": []}), "app.py": "x = 2\n"}, "pr")
    done, report = _review(repo, repo / "ci" / "council.toml", tmp_path)
    assert done.exit_code == 0, done.output
    assert [f["subject"] for f in report["findings"]] == ["name is vague"]
    assert not [n for n in report["notes"] if "council.toml" in n]


def test_a_roster_the_change_adds_is_refused(tmp_path: Path) -> None:
    """Only the head holds ``ci/council.toml``: exit 2, naming it and both ways out."""
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    added = {"ci/council.toml": ROUND + _replay("keep", "a.json"), "ci/a.json": "{}"}
    commit(repo, {**added, "app.py": "x = 2\n"}, "pr adds its own roster")
    done, report = _review(repo, repo / "ci" / "council.toml", tmp_path)
    assert done.exit_code == 2, done.output
    assert "ci/council.toml, which the change under review adds" in done.output
    assert "Commit the roster on the base branch first" in done.output
    assert not report


def test_a_local_roster_git_does_not_hold_is_read_from_disk(tmp_path: Path) -> None:
    """An untracked ``local.toml`` in the checkout (neither commit holds it: the change did
    not write it) is read where it is, with its answer beside it."""
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(repo, {"app.py": "x = 2\n"}, "change")
    (repo / "mine.json").write_text(json.dumps({"findings": [VAGUE]}))
    (repo / "local.toml").write_text(ROUND + _replay("mine", "mine.json"))
    done, report = _review(repo, repo / "local.toml", tmp_path)
    assert done.exit_code == 0, done.output
    assert _states(report) == {"mine": "answered"}


def test_a_roster_edited_on_disk_only_is_read_from_the_base_and_said(tmp_path: Path) -> None:
    """The checkout's council.toml has an uncommitted edit (a second reviewer): the base
    version is used, and the note says the file on disk differs."""
    one = ROUND + _replay("keep", "a.json")
    files = {"app.py": "x = 1\n", "a.json": json.dumps({"findings": [VAGUE]}), "council.toml": one}
    repo = new_repo(tmp_path / "repo", files)
    commit(repo, {"app.py": "x = 2\n"}, "change")
    (repo / "council.toml").write_text(one + _replay("extra", "a.json"))
    done, report = _review(repo, repo / "council.toml", tmp_path)
    assert done.exit_code == 0, done.output
    assert _states(report) == {"keep": "answered"}
    assert any("on disk differs from the base ref's" in n for n in report["notes"])


def test_council_check_validates_the_roster_file_being_edited(tmp_path: Path) -> None:
    """``council check --roster council.toml`` in a checkout whose head breaks the roster:
    the file on disk is what is checked (a lint job on the pull request that edits it)."""
    good = ROUND + _replay("keep", "a.json")
    files = {"app.py": "x = 1\n", "a.json": json.dumps({"findings": []}), "council.toml": good}
    repo = new_repo(tmp_path / "repo", files)
    commit(repo, {"council.toml": good + "[[reviewers]]\nid = 7\n", "app.py": "x = 2\n"}, "pr")
    argv = ["check", "--repo", str(repo), "--base", "HEAD~1"]
    argv += ["--state", str(tmp_path / "state.json"), "--roster", str(repo / "council.toml")]
    done = CliRunner().invoke(main, argv)
    assert done.exit_code == 2, done.output
    assert "reviewers[1]" in done.output


def test_council_check_says_when_the_review_will_read_another_roster(tmp_path: Path) -> None:
    """The base's roster names a program that does not exist; the head fixes it. The
    check validates the fixed file (exit 0) but says the review reads the base's copy;
    the review's refusal (exit 2) says so too, so the error matches what it read."""
    broken = ROUND + '[[reviewers]]\nid = "lint"\nbackend = "command"\nprogram = "ruff2"\n'
    fixed = ROUND + _replay("keep", "a.json")
    files = {"app.py": "x = 1\n", "a.json": json.dumps({"findings": []}), "council.toml": broken}
    repo = new_repo(tmp_path / "repo", files)
    commit(repo, {"council.toml": fixed, "app.py": "x = 2\n"}, "pr fixes the roster")
    argv = ["check", "--repo", str(repo), "--base", "HEAD~1"]
    argv += ["--state", str(tmp_path / "state.json"), "--roster", str(repo / "council.toml")]
    checked = CliRunner().invoke(main, argv)
    assert checked.exit_code == 0, checked.output
    assert "council review reads it from the base ref" in checked.output
    done, _ = _review(repo, repo / "council.toml", tmp_path)
    assert done.exit_code == 2, done.output
    assert "ruff2" in done.output and "the base version was used" in done.output


def test_a_roster_reached_through_a_link_the_change_adds_is_refused(tmp_path: Path) -> None:
    """CI names ``ci/council.toml``, which the base lacks; the change adds ``ci`` as a link
    to ``evil/`` holding its own roster: git holds no ``ci/council.toml`` at either commit,
    but the file it leads to is the change's, so the review is refused."""
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    (repo / "ci").symlink_to("evil")
    added = {"evil/council.toml": ROUND + _replay("keep", "a.json"), "evil/a.json": "{}"}
    commit(repo, {**added, "app.py": "x = 2\n"}, "pr links ci to its own roster")
    done, report = _review(repo, repo / "ci" / "council.toml", tmp_path)
    assert done.exit_code == 2, done.output
    assert "goes through ci, a link in the head" in done.output
    assert not report


def test_a_roster_path_through_a_link_of_the_base_is_refused(tmp_path: Path) -> None:
    """The base links ``config -> ci``; the change points it at ``examples/``, whose roster
    runs fewer reviewers: the path is refused, whatever either commit's link says."""
    repo = _strong_and_weak(tmp_path, "ci/council.toml", "examples/council.toml")
    (repo / "config").symlink_to("ci")
    commit(repo, {}, "config links to ci")
    (repo / "config").unlink()
    (repo / "config").symlink_to("examples")
    commit(repo, {"app.py": "x = 2\n"}, "pr repoints the link")
    done, report = _review(repo, repo / "config" / "council.toml", tmp_path)
    assert done.exit_code == 2, done.output
    assert "goes through config, a link in the base ref" in done.output
    assert not report


def test_a_checkout_reached_through_a_linked_folder_still_reads_the_base(
    tmp_path: Path,
) -> None:
    """CI reaches the checkout through a linked folder (``work -> repo``); the change
    replaces council.toml with a link to a roster of fewer reviewers: the base's runs."""
    repo = _strong_and_weak(tmp_path, "council.toml", "weak.toml")
    (repo / "council.toml").unlink()
    (repo / "council.toml").symlink_to("weak.toml")
    commit(repo, {"app.py": "x = 2\n"}, "pr links the roster to a weaker one")
    (tmp_path / "work").symlink_to(repo)
    done, report = _review(repo, tmp_path / "work" / "council.toml", tmp_path)
    assert done.exit_code == 0, done.output
    assert _states(report) == {"keep": "answered", "other": "answered"}


def test_a_roster_inside_a_submodule_is_refused(tmp_path: Path) -> None:
    """The roster sits in a submodule: the change picks the submodule's commit, so it
    would pick the roster; the review is refused, naming the submodule."""
    inner = new_repo(tmp_path / "inner", {"council.toml": ROUND + _replay("keep", "a.json")})
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "cfg")
    git(repo, "commit", "-qm", "cfg as a submodule")
    commit(repo, {"app.py": "x = 2\n"}, "change")
    done, report = _review(repo, repo / "cfg" / "council.toml", tmp_path)
    assert done.exit_code == 2, done.output
    assert "is inside cfg, a submodule in the base ref" in done.output
    assert not report
