"""Reading a repository's refs: the commit a ref names, and why it names none; common
ancestors; and the session a change belongs to by default.

A ref the clone cannot resolve is the most common way a review fails to start (a shallow
CI clone lacks the base), so the error says which case it is and the way out: fetch it,
deepen the history, or fix a ref that is empty or malformed. Raises
:class:`RepositoryError`.

Runtime layer (runs subprocesses). Source: docs/architecture.md "The shape", "State in
Redis" (sessions).
"""

from __future__ import annotations

import difflib
import re
from urllib.parse import urlsplit, urlunsplit

from council.errors import RepositoryError
from workers.git.git_command import GitCommand

_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_SHORT_SHA = re.compile(r"[0-9a-f]{4,39}")
_RELATIVE = re.compile(r"[~^]|@\{")
"""Where a relative ref (``HEAD~5``, ``main^2``, ``@{upstream}``) starts its steps."""
_SCP_LIKE = re.compile(r"^(?P<user>[^/@]+)@(?P<rest>[^/@:]+:.*)$")

NEAR_REFS_READ = 5000
"""The most ref names an unknown ref is compared with for "did you mean" (a repository
may hold hundreds of thousands of tags)."""


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


class RefReading(GitCommand):
    """The refs of a repository: what they name, how they relate, and the branch a ref
    stands for (:meth:`default_session_key`)."""

    _commits: set[str]
    """The full shas already found to name a commit here: a sha names the same commit
    for good, so :meth:`resolve` asks git once per sha (a round resolves the same two
    a few dozen times). A branch or ``HEAD`` moves, and is asked every time."""

    def resolve(self, ref: str) -> str:
        """The full commit sha ``ref`` names (a branch, tag, sha, ``HEAD~2``...).

        Raises :class:`RepositoryError` naming the ref, with the way out, when it is
        unknown or names no commit (shallow CI clones often lack the base).
        """
        if ref in self._commits:
            return ref
        if ref and not ref.startswith("-") and "\0" not in ref:
            done = self._git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
            sha = done.stdout.decode().strip()
            if done.returncode == 0 and _SHA.fullmatch(sha):
                self._commits.add(sha)
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
        return RepositoryError(problem, self._near(ref) + self._fetch_hint(ref))

    def _near(self, ref: str) -> str:
        """``Did you mean 'origin/main'? Otherwise: `` for the refs here whose names are close to
        ``ref`` (a typo), or ``""``; reads at most :data:`NEAR_REFS_READ` ref names."""
        done = self._git("for-each-ref", f"--count={NEAR_REFS_READ}", "--format=%(refname:short)")
        names = done.stdout.decode("utf-8", "replace").split() if done.returncode == 0 else []
        close = difflib.get_close_matches(ref, names, n=3, cutoff=0.75)
        if not close:
            return ""
        return "Did you mean " + " or ".join(repr(name) for name in close) + "? Otherwise: "

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

    def merge_base(self, one: str, other: str) -> str | None:
        """The best common ancestor of two commits (``git merge-base``), or None when
        they share no history."""
        done = self._git("merge-base", one, other)
        if done.returncode != 0:
            return None
        return done.stdout.decode("ascii", errors="replace").strip() or None

    def is_shallow(self) -> bool:
        """Whether this is a shallow clone (its history cut at some depth)."""
        done = self._git("rev-parse", "--is-shallow-repository")
        return done.returncode == 0 and done.stdout.strip() == b"true"

    def is_ancestor(self, older: str, newer: str) -> bool:
        """Whether ``older`` is an ancestor of ``newer`` (``git merge-base --is-ancestor``)."""
        return self._git("merge-base", "--is-ancestor", older, newer).returncode == 0

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
