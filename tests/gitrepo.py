"""Real git repositories for tests: throwaway ones, and one grown from this project's history."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo``; return stdout (raises on failure)."""
    env = {**os.environ, **GIT_ENV, "HOME": str(repo.parent)}
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def new_repo(path: Path, files: Mapping[str, str | bytes]) -> Path:
    """A fresh repository at ``path`` whose first commit holds ``files``."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    commit(path, files, "base")
    return path


def commit(repo: Path, files: Mapping[str, str | bytes | None], message: str) -> str:
    """Write (or delete, for None) files and commit them; return the new sha."""
    for name, content in files.items():
        target = repo / name
        if content is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


SMELLY_CHANGE = """\
import os
import subprocess


def run(cmd):
    print("running", cmd)
    try:
        return subprocess.call(cmd, shell=True)
    except:
        return -1
"""
"""A change that ruff (F401, E722), bandit (B602, B404) and the example reviewer all flag."""


def project_history_repo(dest: Path) -> tuple[Path, str]:
    """A clone of this project's own repository with one smelly commit on top.

    Returns ``(repo, base_sha)``: the change base..HEAD is a real commit over real history.
    Falls back to a fresh repository holding the project's sources when the checkout has
    no history to clone.
    """
    try:
        subprocess.run(
            ["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(dest)],
            check=True,
            capture_output=True,
            env={**os.environ, **GIT_ENV},
        )
    except subprocess.CalledProcessError:
        sources = {
            str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
            for p in (ROOT / "council").rglob("*.py")
        }
        new_repo(dest, sources)
    base = git(dest, "rev-parse", "HEAD")
    commit(dest, {"tools/runner.py": SMELLY_CHANGE}, "add a runner")
    return dest, base
