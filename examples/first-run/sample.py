#!/usr/bin/env python3
"""Build the README's sample change and print where: a git repository to review.

``python examples/first-run/sample.py [DIR]`` makes DIR (default ``.first-run`` in the
current folder) afresh: ``DIR/shop`` is a git repository whose ``main`` holds the small
``shop`` package of ``before/`` and whose ``feature`` adds one commit, ``change.patch``,
with fixed authors and dates, so every machine reviews the same commits (the recorded
answers in ``answers/`` name their files and lines). It prints ``DIR/shop`` on stdout,
for ``council review --repo "$(…)" --base main --head feature``. DIR is removed first only
when this script made it (it holds :data:`MARKER`); any other existing DIR is refused.
Stdlib only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

MARKER = ".council-first-run"
"""The file that marks a folder this script made, and may remove."""

SAMPLE_DATE = "2025-01-06T09:00:00+00:00"
"""The commits' author and committer date: the same shas on every machine."""


def git(repo: Path, *args: str) -> None:
    """Run git in ``repo`` without the user's configuration (no signing, no hooks, no
    template), as a fixed author at :data:`SAMPLE_DATE`."""
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Sample Author",
        "GIT_AUTHOR_EMAIL": "author@example.com",
        "GIT_AUTHOR_DATE": SAMPLE_DATE,
        "GIT_COMMITTER_NAME": "Sample Author",
        "GIT_COMMITTER_EMAIL": "author@example.com",
        "GIT_COMMITTER_DATE": SAMPLE_DATE,
    }
    subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, stdout=subprocess.DEVNULL)


def sample_repository(repo: Path) -> None:
    """``main``: the shop of ``before/``; ``feature``: one commit on it, ``change.patch``."""
    shutil.copytree(HERE / "before", repo)
    git(repo, "init", "--quiet", "--template=", "--initial-branch=main")
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "--no-verify", "--message", "shop: orders and totals")
    git(repo, "checkout", "--quiet", "-b", "feature")
    git(repo, "apply", "--index", str(HERE / "change.patch"))
    git(repo, "commit", "--quiet", "--no-verify", "--message", "shop: averages, archives")


def fresh(folder: Path) -> Path:
    """``folder`` emptied and made again, with the sample repository in ``folder/shop``.
    Exits with a message when ``folder`` is a symbolic link, holds the current folder or
    this script, or exists and this script did not make it (its marker, a regular file
    and no link): a tree that is not ours is never removed."""
    if folder.is_symlink():
        sys.exit(f"first-run: {folder} is a symbolic link; name a real folder")
    where = Path(os.path.abspath(folder))  # ".." folded, links left as they are
    for inside in (Path(os.path.abspath(Path.cwd())), HERE):
        if inside == where or where in inside.parents:
            sys.exit(f"first-run: {folder} holds {inside}; name a folder of its own")
    if folder.exists():
        marker = folder / MARKER
        if marker.is_symlink() or not marker.is_file():
            sys.exit(f"first-run: {folder} exists and was not made by this script; name another")
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / MARKER).write_text("made by examples/first-run/sample.py\n")
    sample_repository(folder / "shop")
    return (folder / "shop").resolve()


if __name__ == "__main__":
    print(fresh(Path(sys.argv[1] if len(sys.argv) > 1 else ".first-run")))
