"""Reading a git repository: refs, the diff, files at a ref, and the packed head tree.

The council reads the change from the user's clone with the git command line (no
GitPython), always the same way whatever the user's git configuration says: no colour,
no external diff or textconv, fixed ``a/``/``b/`` prefixes, fixed context, rename
detection on. The same change then gives the same diff, the same prompt and the same
anchors on every host. Workers never read a clone: they get the head tree as a capped
tar.gz (:meth:`Repository.archive`) and unpack it safely (:func:`unpack_tree`).

Runtime layer (runs subprocesses). Source: architecture.md "The shape", "State in Redis"
(tree archive), "Layers".
"""

from __future__ import annotations

import gzip
import io
import os
import posixpath
import re
import subprocess
import tarfile
import tempfile
import zlib
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit, urlunsplit

from council.errors import ChangeTooLarge, RepositoryError

TREE_KNOB = "COUNCIL_MAX_TREE_BYTES"
"""The setting that raises the packed-tree cap (named in :class:`ChangeTooLarge`)."""

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
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
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


class Repository:
    """A git repository on disk, read with the ``git`` command.

    ``path`` is the top-level directory (the git directory of a bare repository).
    Raises :class:`RepositoryError` when ``path`` is not inside a git repository, or
    when git itself cannot run.
    """

    def __init__(self, path: Path | str) -> None:
        start = Path(path).expanduser().absolute()
        fix = "Run council review inside a clone, or pass --repo PATH"
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

    def diff(self, base_sha: str, head_sha: str) -> bytes:
        """The raw ``git diff base head`` bytes, the same whatever the user's git config.

        Bytes, because files need not be UTF-8: decode with
        :func:`council.diff.decode_diff`, which also names the files that were not.
        Raises :class:`RepositoryError` for an unknown ref.
        """
        base, head = self.resolve(base_sha), self.resolve(head_sha)
        return self._must("diff", *_DIFF_OPTIONS, base, head)

    def read_file(self, ref: str, path: str) -> bytes | None:
        """The bytes of ``path`` at ``ref``, or None when no file is at that path.

        A directory is not a file (None). Raises :class:`RepositoryError` for an
        unknown ref.
        """
        sha = self.resolve(ref)
        done = self._git("cat-file", "blob", f"{sha}:{path}")
        return done.stdout if done.returncode == 0 else None

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

    def tree_paths(self, ref: str, cap: int = 1_000_000) -> frozenset[str] | None:
        """Every file path of ``ref``'s tree (``git ls-tree -r``), or None when the tree
        holds more than ``cap`` paths or cannot be listed (then no path is called
        invented)."""
        done = self._git("ls-tree", "-r", "-z", "--name-only", "--full-tree", ref)
        if done.returncode != 0:
            return None
        names = done.stdout.split(b"\0")
        if len(names) > cap + 1:
            return None
        return frozenset(n.decode("utf-8", errors="surrogateescape") for n in names if n)

    def merge_base(self, one: str, other: str) -> str | None:
        """The best common ancestor of two commits (``git merge-base``), or None when
        they share no history."""
        done = self._git("merge-base", one, other)
        if done.returncode != 0:
            return None
        return done.stdout.decode("ascii", errors="replace").strip() or None

    def is_ancestor(self, older: str, newer: str) -> bool:
        """Whether ``older`` is an ancestor of ``newer`` (``git merge-base --is-ancestor``)."""
        return self._git("merge-base", "--is-ancestor", older, newer).returncode == 0

    def changed_paths(self, base_sha: str, head_sha: str) -> list[str]:
        """Every path the change touches, on either side, in git's order, once each.

        A rename contributes its old and its new path. Why: "does this change edit
        council.toml?" must be true when it renames it away too.
        """
        base, head = self.resolve(base_sha), self.resolve(head_sha)
        raw = self._must(
            "diff", "--name-status", "-z", "-M", "--no-relative", "--no-ext-diff", base, head
        )
        fields = raw.decode("utf-8", "replace").split("\0")
        paths: list[str] = []
        i = 0
        while i < len(fields) and fields[i]:
            count = 2 if fields[i][:1] in ("R", "C") else 1
            paths.extend(fields[i + 1 : i + 1 + count])
            i += 1 + count
        return list(dict.fromkeys(paths))

    def archive(self, head_sha: str, cap_bytes: int) -> bytes:
        """The head commit's tree as tar.gz bytes, at most ``cap_bytes`` long.

        ``git archive --format=tar`` is gzipped here (level 6, mtime 0), so the bytes do
        not depend on the user's ``tar.*.command`` settings; the cap is enforced while
        reading, so a huge tree is never held whole. Raises :class:`ChangeTooLarge`
        (``packed head tree``, knob ``COUNCIL_MAX_TREE_BYTES``) past the cap, and
        :class:`RepositoryError` when git fails. Source: architecture.md "State in Redis".
        """
        sha = self.resolve(head_sha)
        packed = io.BytesIO()
        with tempfile.TemporaryFile() as errors:
            proc = subprocess.Popen(
                ["git", "-C", str(self.path), "archive", "--format=tar", sha],
                stdout=subprocess.PIPE,
                stderr=errors,
                stdin=subprocess.DEVNULL,
                env=_git_env(),
            )
            assert proc.stdout is not None  # stdout=PIPE
            try:
                with gzip.GzipFile(fileobj=packed, mode="wb", compresslevel=6, mtime=0) as gz:
                    while chunk := proc.stdout.read(READ_CHUNK):
                        gz.write(chunk)
                        if packed.tell() > cap_bytes:
                            raise ChangeTooLarge(
                                "packed head tree", packed.tell(), cap_bytes, TREE_KNOB
                            )
            finally:
                proc.stdout.close()
                if proc.poll() is None:
                    proc.kill()
                code = proc.wait()
            if code != 0:
                errors.seek(0)
                raise RepositoryError(
                    f"git archive failed in {self.path}: {_first_line(errors.read())}",
                    "Check that the head commit's objects are present (`git fsck`)",
                )
        if packed.tell() > cap_bytes:
            raise ChangeTooLarge("packed head tree", packed.tell(), cap_bytes, TREE_KNOB)
        return packed.getvalue()

    def default_session_key(self, head_ref: str) -> str:
        """The session a change belongs to when ``--session`` is not given.

        ``LOCATION#BRANCH``: LOCATION is the ``origin`` remote URL without credentials,
        else this repository's absolute path; BRANCH is the branch ``head_ref`` names
        (``HEAD`` → the checked-out branch, ``origin/x`` → ``x``). A detached head or a
        bare sha has no branch: ``detached-SHA12``, so unrelated commits never share a
        session. Source: architecture.md "State in Redis" (sessions).
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


def _refuse(name: str, why: str) -> RepositoryError:
    """The error for an archive member that must not be unpacked."""
    return RepositoryError(
        f"the tree archive holds an unsafe member {name!r} ({why})",
        "Rebuild the run's tree with `council review`: a tree archive must come from "
        "`git archive` of the head commit",
    )


def _escapes(path: str) -> bool:
    """Whether a relative POSIX path climbs above where it starts."""
    normal = posixpath.normpath(path)
    return normal == ".." or normal.startswith("../")


def _check_member(member: tarfile.TarInfo) -> None:
    """Refuse absolute names, ``..``, device files and links leaving the tree."""
    name = member.name
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        raise _refuse(name, "absolute path")
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        raise _refuse(name, "'..' in its path")
    if member.ischr() or member.isblk() or member.isfifo() or member.isdev():
        raise _refuse(name, "device file or pipe")
    if member.issym() or member.islnk():
        target = member.linkname
        if target.startswith("/") or PurePosixPath(target).is_absolute():
            raise _refuse(name, f"link to the absolute path {target!r}")
        start = posixpath.dirname(name) if member.issym() else ""
        if _escapes(posixpath.join(start, target)):
            raise _refuse(name, f"link {target!r} points outside the tree")


def unpack_tree(archive: bytes, dest: Path, *, max_bytes: int | None = None) -> None:
    """Extract a tar.gz tree archive into ``dest`` (created when missing), safely.

    Every member is checked before anything is written: an absolute path, a ``..``
    component, a device file or pipe, or a link pointing outside ``dest`` refuses the
    whole archive; ``max_bytes`` (when given) caps the unpacked size. Extraction then
    runs with tarfile's ``data`` filter as a second guard. Raises
    :class:`RepositoryError` for an unsafe, oversized or unreadable archive. Why: the
    archive travels through Redis, and a worker must never write outside its tree.
    """
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            members = tar.getmembers()
            for member in members:
                _check_member(member)
            total = sum(m.size for m in members if m.isfile())
            if max_bytes is not None and total > max_bytes:
                raise RepositoryError(
                    f"the tree archive unpacks to {total} bytes, over the cap of {max_bytes}",
                    f"Narrow the change or raise the cap with {TREE_KNOB}",
                )
            dest.mkdir(parents=True, exist_ok=True)
            tar.extractall(dest, filter="data")
    except tarfile.FilterError as exc:
        raise _refuse(getattr(exc.tarinfo, "name", "?"), str(exc)) from None
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise RepositoryError(
            f"the tree archive cannot be read ({exc})",
            "Rebuild the run's tree with `council review`",
        ) from None
