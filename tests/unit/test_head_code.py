"""Settling reads the head tree's code for occurrences (workers.settling.head_code): from
the run's archive, each file once, the change's likely secrets masked before anything is
hashed; a tree that cannot be had reads as nothing, and says so."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from council.change.secret_masks import MASK, SecretSpan, digest
from tests.gitrepo import git, new_repo
from workers.execution.unpacked_trees import TreeCache
from workers.git.repository import Repository
from workers.settling.head_code import HeadCode

KEY = "AKIAIOSFODNN7EXAMPLE"


def reader(tmp_path: Path, archive: bytes | None, spans: list[SecretSpan]) -> HeadCode:
    """A HeadCode over a run whose store holds ``archive`` and ``spans``."""
    runs = SimpleNamespace(tree=lambda run_id: archive, secrets=lambda run_id: spans)
    rt = SimpleNamespace(trees=TreeCache(tmp_path / "work"), runs=runs)
    record = SimpleNamespace(run_id="r1", witness="head")
    return HeadCode(rt, record)  # type: ignore[arg-type]


def test_the_head_tree_is_read_with_its_secrets_masked(tmp_path: Path) -> None:
    """A file's lines as the tree holds them, the secret's place masked; a path the tree
    lacks is None."""
    repo = new_repo(tmp_path / "repo", {"app.py": f'import os\nkey = "{KEY}"\n'})
    archive = Repository(repo).archive(git(repo, "rev-parse", "HEAD"), 10_000_000)
    start = len('key = "')
    span = SecretSpan(
        secret=0,
        path="app.py",
        line=2,
        start=start,
        end=start + len(KEY),
        kind="AWS",
        digest=digest(KEY),
    )
    code = reader(tmp_path, archive, [span])
    assert code("app.py") == ["import os", f'key = "{MASK}"']
    assert code("missing.py") is None
    assert not code.unread


def test_a_run_without_its_tree_reads_nothing_and_says_so(tmp_path: Path) -> None:
    """No archive in the store (expired): every read is None, and ``unread`` is set for
    the report's note."""
    code = reader(tmp_path, None, [])
    assert code("app.py") is None and code.unread


def test_a_file_over_the_cap_is_not_read_and_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The change is untrusted: a file larger than CODE_MAX_BYTES is not read to hash one
    line; its findings name their place, and the report's note names the file."""
    import workers.settling.head_code as head_code

    repo = new_repo(tmp_path / "repo", {"big.js": "x" * 5000 + "\n", "app.py": "a = 1\n"})
    archive = Repository(repo).archive(git(repo, "rev-parse", "HEAD"), 10_000_000)
    monkeypatch.setattr(head_code, "CODE_MAX_BYTES", 1000)
    code = reader(tmp_path, archive, [])
    assert code("big.js") is None and code("app.py") == ["a = 1"]
    assert code.over_cap == {"big.js"} and not code.unread
    assert "big.js" in head_code.over_cap_note(sorted(code.over_cap))
