"""The interdiff a round stores (workers.coordinator.since_last.interdiff): what changed
since the session's last reviewed head, filtered like the round's change."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from council.roster.document import parse_roster
from tests.gitrepo import commit, new_repo
from workers.coordinator.since_last import interdiff
from workers.git.repository import Repository
from workers.stores.session_memory import Reviewed

ROSTER = '[[reviewers]]\nid = "r"\nbackend = "command"\nprogram = "./r.py"\n'


def test_the_head_reviewed_again_has_an_empty_interdiff_without_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reviewing the last reviewed head again: the interdiff is empty, as git's diff of a
    commit with itself is, and git is not run for it; another head's is read."""
    repo = new_repo(tmp_path / "repo", {"a.py": "x = 1\n"})
    old = Repository(repo).resolve("HEAD")
    head = commit(repo, {"a.py": "x = 2\n"}, "change")
    roster = parse_roster(ROSTER, "council.toml")
    r = Repository(repo)
    r.resolve(head)
    runs: list[object] = []
    real = subprocess.Popen.__init__

    def counted(self: subprocess.Popen[bytes], args: object, *rest: object, **kw: object) -> None:
        runs.append(args)
        real(self, args, *rest, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(subprocess.Popen, "__init__", counted)
    assert interdiff(r, Reviewed(run="1", head=head), head, roster) == ""
    assert runs == []
    changed = interdiff(r, Reviewed(run="1", head=old), head, roster)
    assert changed is not None and "+x = 2" in changed
    assert runs != []
