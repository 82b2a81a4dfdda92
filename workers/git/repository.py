"""Reading a git repository: refs, the diff, files at a ref, and the packed head tree.

The council reads the change from the user's clone with the git command line (no
GitPython), always the same way whatever the user's git configuration says: no colour,
no external diff or textconv, fixed ``a/``/``b/`` prefixes, fixed context, rename
detection on. The same change then gives the same diff, the same prompt and the same
anchors on every host. Workers never read a clone: they get the head tree as a capped
tar.gz (:meth:`Repository.archive`) and unpack it safely
(:func:`workers.git.tree_archive.unpack_tree`).

The change under review is untrusted, and so are the ``.gitattributes`` files it
carries: ``*.py -diff`` would show every Python file as "Binary files differ", and
``export-ignore`` would leave a file out of ``git archive``. So the diff is read with the
attributes of the trusted BASE tree only (:meth:`Repository.diff`), and the head tree is
packed from ``git ls-tree`` and ``git cat-file`` rather than ``git archive``, with no
attributes at all. Every size read has a cap, enforced while reading: the diff
(``max_diff_bytes``), the packed and the unpacked tree.

Runtime layer (runs subprocesses). Source: docs/architecture.md "The shape", "State in Redis"
(tree archive), "Layers"; issue "The change under review is untrusted".
"""

from __future__ import annotations

import gzip
import io
import json
import os
import posixpath
import re
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from council.change.diff import ChangedFile, parse_diff, selects
from council.errors import ChangeTooLarge, RepositoryError
from workers.git.change_listing import (
    DEFAULT_MAX_CHANGED_FILES,
    ChangeCounter,
    ChangedEntry,
    ChangeListing,
)
from workers.git.diff_stream import DiffCut
from workers.git.git_objects import Blobs, CheckedBlob, TreeEntry
from workers.git.tree_archive import (
    DEFAULT_MAX_UNPACKED_TREE_BYTES,
    LINK_TARGET_MAX_BYTES,
    UNPACKED_TREE_KNOB,
    check_links,
    link_refused,
    tar_bytes,
)

TREE_KNOB = "COUNCIL_MAX_TREE_BYTES"
"""The setting that raises the packed-tree cap (named in :class:`ChangeTooLarge`)."""

DIFF_KNOB = "[council] max_diff_bytes in the roster, or COUNCIL_MAX_DIFF_BYTES (which wins)"
"""Where the diff cap is raised (named in :class:`ChangeTooLarge`)."""

ATTRIBUTES_FILE = ".gitattributes"
"""The name of an in-tree git attributes file."""

ATTRIBUTES_MAX_BYTES = 1024 * 1024
"""The largest BASE-tree ``.gitattributes`` file applied to the diff (1 MiB); a larger
one is not applied (git itself ignores attributes files over 100 MiB)."""

DIFF_FILE_MAX_BYTES = 16 * 1024 * 1024
"""The largest file (either side) git is asked to diff as text (16 MiB): git holds both
sides and a record per line while it diffs, so a 99 MB file of short lines took it
gigabytes. A larger text file of the change is measured instead: refused as over the
diff cap when its size alone passes it, else refused naming it (exclude it with
``[paths]``); one the roster excludes, or a binary one, is diffed as binary (git's
``core.bigFileThreshold``), which costs nothing."""

READ_CHUNK = 1 << 16
"""Bytes read from ``git archive`` at a time while packing (64 KiB)."""

_DIFF_OPTIONS: tuple[str, ...] = (
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "-M",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--no-relative",
    "--unified=3",
    "--inter-hunk-context=0",
    "--diff-algorithm=myers",
    "--indent-heuristic",
    "--submodule=short",
    "-O/dev/null",
)
"""Every diff setting a user's git config could change, pinned (``-O/dev/null``: no
``diff.orderFile``)."""

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

_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_SHORT_SHA = re.compile(r"[0-9a-f]{4,39}")
_RELATIVE = re.compile(r"[~^]|@\{")
"""Where a relative ref (``HEAD~5``, ``main^2``, ``@{upstream}``) starts its steps."""
_SCP_LIKE = re.compile(r"^(?P<user>[^/@]+)@(?P<rest>[^/@:]+:.*)$")


def _git_env() -> dict[str, str]:
    """The environment for a git child: ours, minus :data:`_DROPPED_ENV`, never prompting."""
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    return env


def _first_line(stderr: bytes) -> str:
    """The first non-blank line git wrote to stderr, for an error message."""
    for line in stderr.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()
    return "no message"


def _shown_text(path: str) -> str:
    """A path decoded with surrogates (:func:`os.fsdecode`) as UTF-8 with replacement
    characters instead."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def url_without_credentials(url: str) -> str:
    """A remote URL with any user name, password or token removed.

    ``https://user:tok@host/o/r.git?x=1`` → ``https://host/o/r.git``; the scp-like
    ``git@host:o/r.git`` → ``host:o/r.git``; anything else is returned as is. Why: the
    session key is stored and printed, and CI clones often carry a token in the remote.
    """
    if "://" in url:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit((parts.scheme, host, parts.path, "", ""))
    match = _SCP_LIKE.match(url)
    return match.group("rest") if match else url


def attributes_notes(changed: Sequence[str]) -> list[str]:
    """The run's note when the change edits a ``.gitattributes`` file (any depth), else
    none: its paths JSON-quoted, and what council did about it."""
    edited = [p for p in changed if posixpath.basename(p) == ATTRIBUTES_FILE]
    if not edited:
        return []
    named = ", ".join(json.dumps(p, ensure_ascii=False) for p in edited[:20])
    more = f" and {len(edited) - 20} more" if len(edited) > 20 else ""
    return [
        f"the change edits {named}{more}; the diff was read with the base tree's "
        f".gitattributes and the tree with none (a change cannot mark its own files "
        f"binary, nor leave them out of the tree reviewers read)"
    ]


class Repository:
    """A git repository on disk, read with the ``git`` command.

    ``path`` is the top-level directory (the git directory of a bare repository);
    ``max_changed_files`` caps the list of a change's files (:meth:`changed_entries`).
    Raises :class:`RepositoryError` when ``path`` is not inside a git repository, or
    when git itself cannot run.
    """

    def __init__(
        self, path: Path | str, *, max_changed_files: int = DEFAULT_MAX_CHANGED_FILES
    ) -> None:
        self.max_changed_files = max_changed_files
        start = Path(path).expanduser().absolute()
        fix = "Run council inside a clone of the repository, or pass --repo PATH"
        if not start.is_dir():
            raise RepositoryError(f"{start} is not a git repository (no such directory)", fix)
        self.path = start
        probe = self._git("rev-parse", "--absolute-git-dir")
        if probe.returncode != 0:
            why = _first_line(probe.stderr)
            raise RepositoryError(f"{start} is not a git repository ({why})", fix)
        top = self._git("rev-parse", "--show-toplevel")
        text = (top.stdout if top.returncode == 0 else probe.stdout).decode().strip()
        self.path = Path(text)

    def _git(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        """Run ``git -C path ARGS``; the result is returned whatever its exit code."""
        try:
            return subprocess.run(
                ["git", "-C", str(self.path), "-c", "core.quotePath=true", *args],
                capture_output=True,
                stdin=subprocess.DEVNULL,
                env=_git_env(),
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
                f"git {args[0]} failed in {self.path}: {_first_line(done.stderr)}",
                "Check that the repository is intact (`git fsck`) and readable",
            )
        return done.stdout

    def resolve(self, ref: str) -> str:
        """The full commit sha ``ref`` names (a branch, tag, sha, ``HEAD~2``...).

        Raises :class:`RepositoryError` naming the ref, with the way out, when it is
        unknown or names no commit (shallow CI clones often lack the base).
        """
        if ref and not ref.startswith("-") and "\0" not in ref:
            done = self._git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
            sha = done.stdout.decode().strip()
            if done.returncode == 0 and _SHA.fullmatch(sha):
                return sha
        raise self._unknown_ref(ref)

    def _unknown_ref(self, ref: str) -> RepositoryError:
        """The error for a ref that names no commit, with the way out that fits it.

        Fetching is offered only for a ref that can be fetched (a branch or tag name, a
        full sha): ``git fetch origin HEAD~5`` or ``git fetch origin ''`` would only fail
        again. A relative ref (``~``, ``^``, ``@{``) whose start resolves means the
        history is too short (a shallow clone); an empty ref is said to be empty.
        """
        if not ref.strip():
            return RepositoryError(
                f"the ref is empty ({ref!r}): it names no commit",
                "Pass a branch, a tag or a commit sha (e.g. --base origin/main); an empty "
                "ref often comes from an unset CI variable",
            )
        if not self._names_commit("HEAD") and self._git("rev-parse", "--git-dir").returncode == 0:
            return RepositoryError(
                f"the repository {self.path} has no commits yet, so {ref!r} names nothing",
                "Commit the code to review first (git add, git commit), then review a "
                "range of its history",
            )
        problem = f"unknown ref {ref!r} in {self.path}: it names no commit here"
        start = _RELATIVE.search(ref)
        if start is not None and not ref.startswith("-"):
            root = ref[: start.start()]
            if root and not self._names_commit(root):
                inner = self._unknown_ref(root)
                return RepositoryError(
                    problem, f"Its start {root!r} names no commit here either. {inner.fix}"
                )
            what = root or "HEAD"
            if "@{" in ref:
                return RepositoryError(
                    problem,
                    f"The reflog or upstream entry it names is not in this clone (`git reflog "
                    f"{what}` lists the entries there are), or the history is too short; "
                    "pick a commit from `git log --oneline`",
                )
            return RepositoryError(
                problem,
                f"The history here is too short: {what} has fewer ancestors than it asks "
                "for. A shallow clone needs more depth (`git fetch --deepen=N` or "
                "`git fetch --unshallow`; in CI, fetch-depth 0), or pick a commit from "
                "`git log --oneline`",
            )
        if ref.startswith("-") or "\0" in ref or not self._valid_name(ref):
            return RepositoryError(
                f"{ref!r} is not a ref git can read",
                "Pass a branch, a tag, a commit sha or a relative ref like HEAD~1 (a ref "
                "cannot start with '-' nor hold spaces, ':', '?', '*', '[' or '..')",
            )
        return RepositoryError(problem, self._fetch_hint(ref))

    def _names_commit(self, ref: str) -> bool:
        """Whether ``ref`` names a commit here (no error when it does not)."""
        done = self._git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        return done.returncode == 0

    def _valid_name(self, ref: str) -> bool:
        """Whether ``ref`` is a well-formed ref name or a full sha (something fetchable)."""
        if _SHA.fullmatch(ref):
            return True
        return self._git("check-ref-format", "--allow-onelevel", ref).returncode == 0

    def _fetch_hint(self, ref: str) -> str:
        """How to fetch a branch, tag or full sha this clone lacks (one sentence)."""
        if _SHORT_SHA.fullmatch(ref):
            return (
                f"If {ref} is an abbreviated sha, git cannot fetch it by that: fetch the "
                "branch that holds it, or pass the full sha (a shallow CI clone needs "
                "`git fetch --unshallow` or fetch-depth 0); or pick a commit from "
                "`git log --oneline`"
            )
        remote, name = "origin", ref.removeprefix("refs/remotes/")
        if name != ref or "/" in name:
            remotes = self._git("remote").stdout.decode("utf-8", "replace").split()
            for candidate in sorted(remotes, key=len, reverse=True):
                if name.startswith(candidate + "/"):
                    remote, name = candidate, name.removeprefix(candidate + "/")
                    break
            else:
                # No such remote here: a clone's usual one is origin (``origin/main``).
                name = name.removeprefix("origin/") if name.startswith("origin/") else ref
        return (
            f"Fetch it (`git fetch {remote} {name}`; a shallow CI clone needs "
            "`git fetch --unshallow` or fetch-depth 0), or pick a commit from "
            "`git log --oneline`"
        )

    def diff(
        self,
        base_sha: str,
        head_sha: str,
        *,
        attributes_from: str | None = None,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        cap_bytes: int | None = None,
        knob: str = DIFF_KNOB,
    ) -> bytes:
        """The raw ``git diff base head`` bytes, the same whatever the user's git config.

        Bytes, because files need not be UTF-8: decode with
        :func:`council.change.diff.decode_diff`, which also names the files that were not.

        * Attributes: only the ``.gitattributes`` files of the commit ``attributes_from``
          (the trusted BASE ref; None: none at all) apply, never the change's own nor the
          working tree's (:meth:`_neutral_worktree`).
        * ``include``/``exclude`` (the roster's ``[paths]``): a file they leave out keeps
          only its ``diff --git`` header lines, so :func:`council.change.diff.filter_paths` still
          names it as excluded, and its hunks are never held.
        * ``cap_bytes``: the kept files' bytes are counted while git writes them; past
          the cap git is stopped and :class:`ChangeTooLarge` (``diff``, at least the bytes
          read, ``knob``) is raised, so a huge change is never read whole. The cap counts
          undecoded bytes, never more than :attr:`council.change.diff.Change.total_bytes` of the
          same files, so the caller's check after decoding still decides a change under it.

        Raises :class:`RepositoryError` for an unknown ref or when git fails.
        """
        base, head = self.resolve(base_sha), self.resolve(head_sha)

        def keeps(header: bytes) -> bool:
            files = parse_diff(header.decode("utf-8", "replace")).files
            return not files or selects(files[0], include, exclude)

        cut = DiffCut(keeps if include or exclude else None, cap_bytes, knob)
        with self._neutral_worktree(attributes_from) as (cwd, env):
            self._refuse_big_files(base, head, include, exclude, cap_bytes, knob, cwd, env)
            big = f"core.bigFileThreshold={DIFF_FILE_MAX_BYTES}"
            args = ["-c", big, "diff", *_DIFF_OPTIONS, base, head]
            self._stream(args, cut.feed, cwd=cwd, env=env)
        return cut.finish()

    def _refuse_big_files(
        self,
        base: str,
        head: str,
        include: Sequence[str],
        exclude: Sequence[str],
        cap_bytes: int | None,
        knob: str,
        cwd: Path,
        env: dict[str, str],
    ) -> None:
        """Measure, before git diffs anything, the kept text files over
        :data:`DIFF_FILE_MAX_BYTES` (from ``git diff --raw`` and the blobs' sizes, never
        their content but the first 8000 bytes that tell a binary file). The files are
        listed, within their cap (:meth:`changed_entries`), before any size is read.

        Raises :class:`ChangeTooLarge` (at least the size difference, which the diff must
        hold) when that passes ``cap_bytes``, else :class:`RepositoryError` naming the file
        and the way out. A binary one (a NUL byte early on, or ``-diff`` in the base
        tree's attributes) is left to git, which shows it as binary.
        """
        entries = [
            (e.old, e.new, e.status, ChangedFile(path=e.path, old_path=e.old_path))
            for e in self.changed_entries(base, head)
        ]
        blobs = {sha for old, new, *_ in entries for sha in (old, new) if set(sha) != {"0"}}
        sizes = self._sizes(sorted(blobs))
        for old, new, status, changed in entries:
            old_size, new_size = sizes.get(old, 0), sizes.get(new, 0)
            largest = max(old_size, new_size)
            if largest <= DIFF_FILE_MAX_BYTES or not selects(changed, include, exclude):
                continue
            path = changed.path
            biggest = new if new_size >= old_size else old
            if self._binary(biggest) or self._binary_by_attributes(path, cwd, env):
                continue
            bound = abs(new_size - old_size) if status not in ("A", "D") else largest
            if cap_bytes is not None and bound > cap_bytes:
                raise ChangeTooLarge("diff", bound, cap_bytes, knob, at_least=True)
            raise RepositoryError(
                f"the change's file {path!r} is {largest} bytes, over the "
                f"{DIFF_FILE_MAX_BYTES} bytes council diffs as text (git would hold it "
                f"whole, line by line)",
                "Leave it out of the review with [paths] exclude in the roster (reviewers "
                "still read it in the tree), or split it",
            )

    def _sizes(self, objects: Sequence[str]) -> dict[str, int]:
        """Object id → size in bytes (``git cat-file --batch-check``); missing ones left out."""
        if not objects:
            return {}
        try:
            done = subprocess.run(
                ["git", "-C", str(self.path), "cat-file", "--batch-check"],
                input="".join(f"{o}\n" for o in objects).encode("ascii"),
                capture_output=True,
                env=_git_env(),
                check=False,
            )
        except FileNotFoundError:
            return {}
        out: dict[str, int] = {}
        for line in done.stdout.decode("ascii", "replace").splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[2].isdigit():
                out[parts[0]] = int(parts[2])
        return out

    def _binary(self, obj: str) -> bool:
        """Whether git takes the blob ``obj`` for binary: a NUL byte in its first 8000
        bytes (only those are read; git is stopped after them)."""
        proc = subprocess.Popen(
            ["git", "-C", str(self.path), "cat-file", "blob", obj],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env=_git_env(),
        )
        assert proc.stdout is not None  # stdout=PIPE
        try:
            head = proc.stdout.read(8000)
        finally:
            proc.stdout.close()
            proc.kill()
            proc.wait()
        return b"\0" in head

    def _binary_by_attributes(self, path: str, cwd: Path, env: dict[str, str]) -> bool:
        """Whether the attributes in force (the base tree's) mark ``path`` ``-diff``."""
        done = subprocess.run(
            ["git", "-C", str(cwd), "check-attr", "-z", "diff", "--", path],
            capture_output=True,
            env=env,
            check=False,
        )
        fields = done.stdout.split(b"\0")
        return len(fields) >= 3 and fields[2] == b"unset"

    @contextmanager
    def _neutral_worktree(
        self, attributes_from: str | None
    ) -> Iterator[tuple[Path, dict[str, str]]]:
        """A place to run git where no attributes of the change apply: ``(cwd, env)``.

        git reads ``.gitattributes`` from the working tree (in CI, the checked-out head:
        the change itself). Here git runs in a fresh directory that is its working tree,
        with an empty index of its own, holding only the ``.gitattributes`` files of the
        commit ``attributes_from`` (none when None); the user's global attributes file
        and the system one are off. The clone's ``$GIT_DIR/info/attributes`` (local, not
        from any change) still applies, as git always lets it.
        """
        git_dir = self._must("rev-parse", "--absolute-git-dir").decode().strip()
        with tempfile.TemporaryDirectory(prefix="council-git-") as scratch:
            root = Path(scratch) / "tree"
            root.mkdir()
            if attributes_from is not None:
                for path, blob in self._attributes_files(attributes_from):
                    target = root / path
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(blob)
            env = {
                **_git_env(),
                "GIT_DIR": git_dir,
                "GIT_WORK_TREE": str(root),
                "GIT_INDEX_FILE": str(Path(scratch) / "index"),
                "GIT_ATTR_NOSYSTEM": "1",
            }
            yield root, env

    def _attributes_files(self, ref: str) -> list[tuple[str, bytes]]:
        """The ``.gitattributes`` files of ``ref``'s tree: ``(path, bytes)``, in tree order.

        Only regular files at safe paths (no ``..``) of at most
        :data:`ATTRIBUTES_MAX_BYTES`; the listing is read as a stream, so a tree of any
        size costs no memory.
        """
        sha = self.resolve(ref)
        found: list[tuple[str, str]] = []
        for entry in self._tree_entries(sha, with_trees=False):
            name = entry.path.rsplit("/", 1)[-1]
            if name != ATTRIBUTES_FILE or entry.mode not in ("100644", "100755"):
                continue
            if ".." in entry.path.split("/") or entry.size > ATTRIBUTES_MAX_BYTES:
                continue
            found.append((entry.path, entry.obj))
        out: list[tuple[str, bytes]] = []
        for path, obj in found:
            done = self._git("cat-file", "blob", obj)
            if done.returncode == 0:
                out.append((path, done.stdout))
        return out

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
                    env=env or _git_env(),
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
                    f"git {args[0]} failed in {self.path}: {_first_line(errors.read())}",
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

    def read_file(self, ref: str, path: str) -> bytes | None:
        """The bytes of ``path`` at ``ref``, or None when no file is at that path.

        A directory is not a file (None). Raises :class:`RepositoryError` for an
        unknown ref.
        """
        sha = self.resolve(ref)
        done = self._git("cat-file", "blob", f"{sha}:{path}")
        return done.stdout if done.returncode == 0 else None

    def file_size(self, ref: str, path: str) -> int | None:
        """The size in bytes of the file at ``path`` in ``ref``'s tree, read without
        reading the file; None when no file is there. Raises :class:`RepositoryError`
        for an unknown ref."""
        sha = self.resolve(ref)
        done = self._git("cat-file", "-s", f"{sha}:{path}")
        text = done.stdout.decode().strip()
        return int(text) if done.returncode == 0 and text.isdigit() else None

    def tree_mode(self, ref: str, path: str) -> str | None:
        """The git mode of ``path`` in the tree of ``ref`` (``100755`` an executable
        file, ``100644`` a file, ``120000`` a symbolic link, ``040000`` a directory,
        ``160000`` a submodule), or None when nothing is at that path (or ``path`` is
        empty). Raises :class:`RepositoryError` for an unknown ref."""
        if not path:
            return None
        sha = self.resolve(ref)
        done = self._git("ls-tree", "-z", "--full-tree", sha, "--", path)
        if done.returncode != 0:
            return None
        for entry in done.stdout.split(b"\0"):
            meta, _, name = entry.partition(b"\t")
            if name.decode("utf-8", errors="surrogateescape") == path:
                return meta.split(b" ", 1)[0].decode("ascii", errors="replace")
        return None

    def entries_at(self, ref: str, paths: Sequence[str]) -> dict[str, TreeEntry]:
        """The tree entries of ``ref`` at exactly ``paths`` (files, links, submodules; a
        path with nothing there, or a directory, is left out), read with one ``git
        ls-tree`` per 200 paths. Raises :class:`RepositoryError` for an unknown ref or
        when git fails."""
        sha = self.resolve(ref)
        wanted = set(paths)
        found: dict[str, TreeEntry] = {}
        ordered = list(dict.fromkeys(paths))
        for start in range(0, len(ordered), 200):
            chunk = ordered[start : start + 200]
            raw = self._must("ls-tree", "-z", "-l", "--full-tree", sha, "--", *chunk)
            for record in raw.split(b"\0"):
                if not record:
                    continue
                entry = TreeEntry.read(record)
                if entry.path in wanted and entry.kind != "tree":
                    found[entry.path] = entry
        return found

    def blobs(self, objects: Sequence[str]) -> dict[str, bytes]:
        """The bytes of each blob in ``objects`` (by object id), read by one ``git
        cat-file --batch``. Raises :class:`RepositoryError` when one cannot be read."""
        out: dict[str, bytes] = {}
        if not objects:
            return out
        with self._reading(["cat-file", "--batch"], stdin=subprocess.PIPE) as batch:
            reader = Blobs(batch)
            for obj in dict.fromkeys(objects):
                reader.open(obj)
                out[obj] = reader.read()
        return out

    def tree_paths(self, ref: str, cap: int = 1_000_000) -> frozenset[str] | None:
        """Every file path of ``ref``'s tree (``git ls-tree -r``), or None when the tree
        holds more than ``cap`` paths or cannot be listed (then no path is called
        invented). The listing is read as a stream, and git is stopped at the
        ``cap + 1``-th path: a tree object reused at every level, listing millions of
        paths, is never read whole."""
        names: set[str] = set()
        try:
            for entry in self._tree_entries(self.resolve(ref), with_trees=False):
                if len(names) >= cap:
                    return None
                names.add(entry.path)
        except RepositoryError:
            return None
        return frozenset(names)

    def merge_base(self, one: str, other: str) -> str | None:
        """The best common ancestor of two commits (``git merge-base``), or None when
        they share no history."""
        done = self._git("merge-base", one, other)
        if done.returncode != 0:
            return None
        return done.stdout.decode("ascii", errors="replace").strip() or None

    def tracked(self, path: Path, head: str = "HEAD") -> str | None:
        """The path of ``path`` from the repository's top when git tracks it here, else None.

        Tracked: in the index (what a checkout wrote) or in the tree of ``head``, the
        file itself or any directory on its way as a symbolic link (a committed
        ``.council-state -> elsewhere`` tracks what lies beyond it). ``path`` is looked
        at as given and with its links resolved. A path outside the repository is never
        tracked. Why: a file the change committed is the change's, not ours to trust.
        """
        tops = {self.path.absolute(), self.path.resolve()}
        for candidate in dict.fromkeys([Path(os.path.abspath(path)), path.resolve()]):
            for top in tops:
                if not candidate.is_relative_to(top) or candidate == top:
                    continue
                parts = candidate.relative_to(top).parts
                prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
                if self._tracks(prefixes, head):
                    return "/".join(parts)
        return None

    def _tracks(self, prefixes: list[str], head: str) -> bool:
        """Whether git tracks ``prefixes[-1]``, or a link at one of the others."""
        wanted = set(prefixes)
        specs = [f":(literal){p}" for p in prefixes]
        listed = self._git("ls-files", "-z", "--stage", "--full-name", "--", *specs)
        rows = [row.partition(b"\t") for row in listed.stdout.split(b"\0") if row]
        for meta, _, name in rows:
            if os.fsdecode(name) == prefixes[-1] or (
                os.fsdecode(name) in wanted and meta.startswith(b"120000")
            ):
                return True
        sha = self._git("rev-parse", "--verify", "--quiet", f"{head}^{{commit}}")
        if sha.returncode != 0:
            return False
        tree = self._git(
            "ls-tree", "-z", "--full-tree", sha.stdout.decode().strip(), "--", *prefixes
        )
        for row in tree.stdout.split(b"\0"):
            meta, _, name = row.partition(b"\t")
            if os.fsdecode(name) == prefixes[-1] and not meta.startswith(b"040000"):
                return True
            if os.fsdecode(name) in wanted and meta.startswith(b"120000"):
                return True
        return False

    def is_ancestor(self, older: str, newer: str) -> bool:
        """Whether ``older`` is an ancestor of ``newer`` (``git merge-base --is-ancestor``)."""
        return self._git("merge-base", "--is-ancestor", older, newer).returncode == 0

    def changed_paths(self, base_sha: str, head_sha: str) -> list[str]:
        """Every path the change touches, on either side, in git's order, once each.

        A rename contributes its old and its new path. Why: "does this change edit
        council.toml?" must be true when it renames it away too. Paths that are not
        UTF-8 are decoded with replacement characters. Raises what
        :meth:`changed_entries` raises.
        """
        paths: list[str] = []
        for entry in self.changed_entries(base_sha, head_sha):
            if entry.old_path is not None and entry.old_path != entry.path:
                paths.append(entry.old_path)
            paths.append(entry.path)
        return list(dict.fromkeys(_shown_text(p) for p in paths))

    def changed_entries(self, base_sha: str, head_sha: str) -> list[ChangedEntry]:
        """The change's files as ``git diff --raw -z --no-abbrev -M`` lists them, in
        git's order: modes, object ids, status and paths (:class:`ChangedEntry`).

        First the two trees are walked object by object
        (:class:`~workers.git.change_listing.ChangeCounter`), since git queues a whole diff
        before writing any: past ``max_changed_files`` files and folders that differ,
        :class:`ChangeTooLarge` (``change``, knob ``COUNCIL_MAX_CHANGED_FILES``) is
        raised before git diffs anything. Then the listing is read as a stream
        (:class:`~workers.git.change_listing.ChangeListing`): past ``max_changed_files``
        records git is stopped and :class:`ChangeTooLarge` (``list of the change's
        files``, unit files) is raised, before any size or diff is read; a path over
        :data:`~workers.git.change_listing.PATH_MAX_BYTES` is a :class:`RepositoryError`.
        Raises :class:`RepositoryError` for an unknown ref or when git fails.
        """
        base, head = self.resolve(base_sha), self.resolve(head_sha)
        trees = self._must("rev-parse", f"{base}^{{tree}}", f"{head}^{{tree}}").decode().split()
        with self._reading(["cat-file", "--batch"], stdin=subprocess.PIPE) as batch:
            ChangeCounter(Blobs(batch), self.max_changed_files).walk(trees[0], trees[1])
        listing = ChangeListing(self.max_changed_files)
        args = ["diff", "--raw", "-z", "--no-abbrev", "-M", "--no-relative", "--no-ext-diff"]
        self._stream([*args, base, head], listing.feed)
        return listing.finish()

    def archive(
        self,
        head_sha: str,
        cap_bytes: int,
        *,
        max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_TREE_BYTES,
    ) -> bytes:
        """The head commit's tree as tar.gz bytes, at most ``cap_bytes`` long.

        Built here from ``git ls-tree`` and ``git cat-file`` (not ``git archive``, which
        obeys the tree's own ``export-ignore``/``export-subst`` attributes: a change
        could leave a file out of what analyzers read). Every file, link, directory and
        submodule (an empty directory, as ``git archive`` writes it) of the commit is in
        it; tar entries carry the commit's time, modes 0644/0755/0777, no owner; gzip
        level 6, mtime 0: the same commit packs to the same bytes.

        Caps, each enforced before or while reading, so a huge tree is never held whole:

        * ``max_unpacked_bytes``: the tree's size as :func:`tar_bytes` counts it, summed
          from the listing before any file is read; over it, :class:`ChangeTooLarge`
          (``unpacked head tree``, knob ``COUNCIL_MAX_UNPACKED_TREE_BYTES``).
        * ``cap_bytes``: the packed bytes, checked as they grow; over it,
          :class:`ChangeTooLarge` (``packed head tree``, knob ``COUNCIL_MAX_TREE_BYTES``).

        A symbolic link that is absolute or leads out of the tree, by its text or once
        the tree's other links are followed (``d -> .``, then ``a -> d/d/../..`` leads
        to the tree's parent; :class:`~workers.git.tree_archive.LinkResolver`), or loops,
        or whose target is longer than
        :data:`~workers.git.tree_archive.LINK_TARGET_MAX_BYTES`, raises
        :class:`RepositoryError` naming the link, its target and why, before any file
        is read: a worker refuses to unpack such a tree, so every reviewer would fail
        (the check fails closed). A link's target counts against ``max_unpacked_bytes``
        as content (a tar header holds a long one in extra blocks), so the targets
        held to be checked are capped too.
        Raises :class:`RepositoryError` when git fails. Source: docs/architecture.md "State in
        Redis"; issue "The change under review is untrusted".
        """
        sha = self.resolve(head_sha)
        total = 0
        link_objects: dict[str, str] = {}
        for entry in self._tree_entries(sha):
            total += tar_bytes(entry.size if entry.kind == "blob" else 0)
            if total > max_unpacked_bytes:
                raise ChangeTooLarge(
                    "unpacked head tree",
                    total,
                    max_unpacked_bytes,
                    UNPACKED_TREE_KNOB,
                    at_least=True,
                )
            if entry.mode == "120000":
                if entry.size > LINK_TARGET_MAX_BYTES:
                    raise link_refused(
                        entry.path,
                        f"its target is {entry.size} bytes, longer than any path "
                        f"({LINK_TARGET_MAX_BYTES} bytes)",
                    )
                link_objects[entry.path] = entry.obj
        read = self.blobs(list(link_objects.values()))
        links = {path: os.fsdecode(read[obj]) for path, obj in link_objects.items()}
        check_links(links)
        mtime = int(self._must("show", "-s", "--format=%ct", sha).decode().strip() or 0)
        packed = io.BytesIO()

        def check() -> None:
            if packed.tell() > cap_bytes:
                raise ChangeTooLarge("packed head tree", packed.tell(), cap_bytes, TREE_KNOB)

        with (
            self._reading(["cat-file", "--batch"], stdin=subprocess.PIPE) as batch,
            gzip.GzipFile(fileobj=packed, mode="wb", compresslevel=6, mtime=0) as gz,
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            blobs = Blobs(batch)
            for entry in self._tree_entries(sha):
                info = tarfile.TarInfo(entry.path)
                info.mtime, info.uname, info.gname = mtime, "", ""
                if entry.kind in ("tree", "commit"):
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(info)
                elif entry.mode == "120000":
                    target = links.get(entry.path)
                    if target is None:  # the tree changed under us: fail closed
                        raise RepositoryError(
                            f"the link {entry.path!r} of the head tree was not listed",
                            "Run the review again",
                        )
                    info.type, info.mode, info.linkname = tarfile.SYMTYPE, 0o777, target
                    tar.addfile(info)
                else:
                    info.size = blobs.open(entry.obj)
                    info.mode = 0o755 if entry.mode == "100755" else 0o644
                    tar.addfile(info, CheckedBlob(blobs, check))
                check()
        check()
        return packed.getvalue()

    def default_session_key(self, head_ref: str) -> str:
        """The session a change belongs to when ``--session`` is not given.

        ``LOCATION#BRANCH``: LOCATION is the ``origin`` remote URL without credentials,
        else this repository's absolute path; BRANCH is the branch ``head_ref`` names
        (``HEAD`` → the checked-out branch, ``origin/x`` → ``x``). A detached head or a
        bare sha has no branch: ``detached-SHA12``, so unrelated commits never share a
        session. Source: docs/architecture.md "State in Redis" (sessions).
        """
        url = self._git("config", "--get", "remote.origin.url")
        remote = url.stdout.decode("utf-8", "replace").strip() if url.returncode == 0 else ""
        location = url_without_credentials(remote) if remote else str(self.path)
        return f"{location}#{self._branch(head_ref)}"

    def _branch(self, ref: str) -> str:
        """The branch name ``ref`` stands for, or ``detached-SHA12``."""
        sha = self.resolve(ref)
        full = self._git("rev-parse", "--symbolic-full-name", ref).stdout.decode().strip()
        if full == "HEAD" or not full:
            full = self._git("symbolic-ref", "--quiet", "HEAD").stdout.decode().strip()
            if not full or self.resolve(full) != sha:
                return f"detached-{sha[:12]}"
        if full.startswith("refs/heads/"):
            return full.removeprefix("refs/heads/")
        if full.startswith("refs/remotes/"):
            rest = full.removeprefix("refs/remotes/")
            remotes = self._git("remote").stdout.decode().split()
            for name in sorted(remotes, key=len, reverse=True):
                if rest.startswith(name + "/"):
                    return rest.removeprefix(name + "/")
            return rest.partition("/")[2] or rest
        return full.removeprefix("refs/tags/") if full.startswith("refs/") else full
