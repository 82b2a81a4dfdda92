"""Running the ``git`` command the same way every time: its environment, its output
read as a stream, and its failures as :class:`RepositoryError`.

Every read of a clone goes through here, so no user setting or hook variable can point
git at another repository, prompt for a password or change how paths are quoted; a
large output (a diff, a tree listing) is handed on chunk by chunk and git is stopped as
soon as the reader stops. Raises :class:`RepositoryError` when git is missing or fails.

Runtime layer (runs subprocesses). Source: docs/architecture.md "Layers"; issue "The
change under review is untrusted".
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from council.errors import RepositoryError
from workers.git.git_objects import TreeEntry

READ_CHUNK = 1 << 16
"""Bytes read from git's output at a time (64 KiB): a diff or a tree listing is handed on
in pieces this size."""

_DROPPED_ENV: frozenset[str] = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
        "GIT_DIFF_OPTS",
        "GIT_EXTERNAL_DIFF",
    }
)
"""Variables that would point git at another repository (a git hook sets them) or
change the diff's shape; the child process never sees them."""


def git_env() -> dict[str, str]:
    """The environment for a git child: ours, minus :data:`_DROPPED_ENV`, never prompting."""
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    return env


def first_line(stderr: bytes) -> str:
    """The first non-blank line git wrote to stderr, for an error message."""
    for line in stderr.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()
    return "no message"


class GitCommand:
    """The ``git`` command run in one repository, its output to read whole or as a stream.

    The base of :class:`~workers.git.repository.Repository`: the refs, files, diff and
    tree it reads are all read through these methods.
    """

    path: Path
    """The repository's top-level directory (the git directory of a bare repository)."""

    def _git(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        """Run ``git -C path ARGS``; the result is returned whatever its exit code."""
        try:
            return subprocess.run(
                ["git", "-C", str(self.path), "-c", "core.quotePath=true", *args],
                capture_output=True,
                stdin=subprocess.DEVNULL,
                env=git_env(),
                check=False,
            )
        except FileNotFoundError:
            raise RepositoryError(
                "git is not installed (no `git` on PATH)",
                "Install git, or run council where git is available",
            ) from None

    def _must(self, *args: str) -> bytes:
        """Run git and return its stdout; a failure is a :class:`RepositoryError`."""
        done = self._git(*args)
        if done.returncode != 0:
            raise RepositoryError(
                f"git {args[0]} failed in {self.path}: {first_line(done.stderr)}",
                "Check that the repository is intact (`git fsck`) and readable",
            )
        return done.stdout

    def _stream(
        self,
        args: Sequence[str],
        sink: Callable[[bytes], None],
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        """Run ``git ARGS`` and hand its stdout to ``sink`` chunk by chunk (:data:`READ_CHUNK`).

        Nothing is held here: when ``sink`` raises (a cap was passed), git is killed and
        the error goes on. Raises :class:`RepositoryError` when git fails.
        """
        with self._reading(args, cwd=cwd, env=env) as proc:
            assert proc.stdout is not None  # stdout=PIPE
            while chunk := proc.stdout.read(READ_CHUNK):
                sink(chunk)

    @contextmanager
    def _reading(
        self,
        args: Sequence[str],
        *,
        stdin: int = subprocess.DEVNULL,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> Iterator[subprocess.Popen[bytes]]:
        """``git -C (cwd or path) ARGS`` running, its stdout (and with ``stdin=PIPE`` its
        stdin) to use as it comes.

        Leaving the block early (a cap was passed, the reader stopped) kills git; a
        block that read to the end checks git's exit code, and raises
        :class:`RepositoryError` with git's first line of stderr when it failed.
        """
        argv = [
            "git",
            "-C",
            str(cwd or self.path),
            "-c",
            "core.quotePath=true",
            "-c",
            "core.attributesFile=/dev/null",
            *args,
        ]
        with tempfile.TemporaryFile() as errors:
            try:
                proc = subprocess.Popen(
                    argv,
                    stdout=subprocess.PIPE,
                    stderr=errors,
                    stdin=stdin,
                    env=env or git_env(),
                )
            except FileNotFoundError:
                raise RepositoryError(
                    "git is not installed (no `git` on PATH)",
                    "Install git, or run council where git is available",
                ) from None
            assert proc.stdout is not None  # stdout=PIPE
            finished = False
            try:
                yield proc
                finished = True
            finally:
                if not finished and proc.poll() is None:
                    proc.kill()
                proc.stdout.close()
                if proc.stdin is not None:
                    proc.stdin.close()
                code = proc.wait()
            if code != 0:
                errors.seek(0)
                raise RepositoryError(
                    f"git {args[0]} failed in {self.path}: {first_line(errors.read())}",
                    "Check that the repository is intact (`git fsck`) and readable",
                )

    def _tree_entries(self, sha: str, *, with_trees: bool = True) -> Iterator[TreeEntry]:
        """Every entry of the commit ``sha``'s tree, recursively, in git's order, read
        as a stream (a tree of any size costs no memory here).

        With ``with_trees`` the directories are listed too, each before what it holds.
        A consumer that stops early stops git. Raises :class:`RepositoryError` when git
        fails.
        """
        args = ["ls-tree", "-r", "-z", "-l", "--full-tree", *(["-t"] if with_trees else []), sha]
        with self._reading(args) as proc:
            assert proc.stdout is not None  # stdout=PIPE
            rest = b""
            while chunk := proc.stdout.read(READ_CHUNK):
                *whole, rest = (rest + chunk).split(b"\0")
                for raw in whole:
                    yield TreeEntry.read(raw)
            if rest:
                yield TreeEntry.read(rest)
