"""Reading the change: the raw ``git diff`` under its cap and with the trusted base
tree's attributes only, and the list of the change's files.

The diff is read the same way whatever the user's git configuration says (no colour, no
external diff or textconv, fixed ``a/``/``b/`` prefixes and context, rename detection
on), so the same change gives the same prompt and anchors on every host. The change's
own ``.gitattributes`` are untrusted (``*.py -diff`` would show every Python file as
binary), so only the base tree's apply. Sizes are capped while they are read: the list of
files, each file git diffs as text, the diff itself. Raises :class:`ChangeTooLarge` and
:class:`RepositoryError`.

Runtime layer (runs subprocesses). Source: docs/architecture.md "The shape"; issue "The
change under review is untrusted".
"""

from __future__ import annotations

import json
import posixpath
import subprocess
import tempfile
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from council.change.diff import ChangedFile, parse_diff, selects
from council.errors import ChangeTooLarge, RepositoryError
from workers.git.change_listing import ChangeCounter, ChangedEntry, ChangeListing
from workers.git.diff_stream import DiffCut
from workers.git.git_command import git_env
from workers.git.git_objects import Blobs
from workers.git.refs import RefReading

DIFF_KNOB = "[council] max_change_bytes in the roster, or COUNCIL_MAX_CHANGE_BYTES (which wins)"
"""Where the hard cap of a change is raised (named in :class:`ChangeTooLarge`)."""

ATTRIBUTES_FILE = ".gitattributes"
"""The name of an in-tree git attributes file."""

ATTRIBUTES_MAX_BYTES = 1024 * 1024
"""The largest BASE-tree ``.gitattributes`` file applied to the diff (1 MiB); a larger
one is not applied (git itself ignores attributes files over 100 MiB)."""

DIFF_FILE_MAX_BYTES = 16 * 1024 * 1024
"""The largest file (either side) git is asked to diff as text (16 MiB): git holds both
sides and a record per line while it diffs, so a 99 MB file of short lines took it
gigabytes. A larger text file of the change is measured instead: refused as over the
diff cap when its size alone passes it, else refused naming it, unless the caller leaves
it out (a round does: :mod:`workers.git.change_sorting` names it "over the per-file
cap"); one the roster excludes, or a binary one, is diffed as binary (git's
``core.bigFileThreshold``), which costs nothing."""

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


def shown_text(path: str) -> str:
    """A path decoded with surrogates (:func:`os.fsdecode`) as UTF-8 with replacement
    characters instead."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _keeping(
    include: Sequence[str], exclude: Sequence[str], leave_out: Collection[str]
) -> Callable[[bytes], bool] | None:
    """Whether a file's ``diff --git`` header names a file kept whole (None: every file)."""
    if not (include or exclude or leave_out):
        return None

    def keeps(header: bytes) -> bool:
        files = parse_diff(header.decode("utf-8", "replace")).files
        if not files:
            return True
        return selects(files[0], include, exclude) and files[0].path not in leave_out

    return keeps


def _diff_args(base: str, head: str) -> list[str]:
    """``git diff`` with every setting pinned, text files over the per-file cap as binary."""
    return [
        "-c",
        f"core.bigFileThreshold={DIFF_FILE_MAX_BYTES}",
        "diff",
        *_DIFF_OPTIONS,
        base,
        head,
    ]


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


class DiffReading(RefReading):
    """The change between two commits: its diff (:meth:`diff`) and its files
    (:meth:`changed_entries`, :meth:`changed_paths`)."""

    max_changed_files: int
    """The most files (and folders that differ) a change may list (:meth:`changed_entries`)."""

    _listings: dict[tuple[str, str, int], tuple[ChangedEntry, ...]]
    """:meth:`changed_entries` by ``(base sha, head sha, max_changed_files)``: two commits
    list the same files for good, and a round asks for them a dozen times."""

    _attributes: dict[str, list[tuple[str, bytes]]]
    """:meth:`_attributes_files` by commit sha (a commit's tree never changes)."""

    _git_dir: str | None
    """``git rev-parse --absolute-git-dir``, once asked."""

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
        leave_out: Collection[str] = frozenset(),
    ) -> bytes:
        """The raw ``git diff base head`` bytes, the same whatever the user's git config.

        Bytes, because files need not be UTF-8 (:func:`council.change.diff.decode_diff`). Only
        the ``.gitattributes`` of the commit ``attributes_from`` apply (the trusted BASE; None:
        none), never the change's nor the working tree's. A file ``include``/``exclude`` leave
        out keeps only its ``diff --git`` header, so it is still named as excluded; so does
        a file whose new-side path is in ``leave_out`` (skipped, or over a cap). Past
        ``cap_bytes`` (the kept files' undecoded bytes, counted as git writes them; never more
        than :attr:`council.change.diff.Change.total_bytes`, so the check after decoding still
        decides) git is stopped and :class:`ChangeTooLarge` naming ``knob`` is raised: a huge
        change is never read whole. Raises :class:`RepositoryError` for an unknown ref or when
        git fails.
        """
        base, head = self.resolve(base_sha), self.resolve(head_sha)

        cut = DiffCut(_keeping(include, exclude, leave_out), cap_bytes, knob)
        with self._neutral_worktree(attributes_from) as (cwd, env):
            self._refuse_big_files(
                base, head, include, exclude, cap_bytes, knob, cwd, env, leave_out
            )
            self._stream(_diff_args(base, head), cut.feed, cwd=cwd, env=env)
        return cut.finish()

    def diff_sizes(
        self,
        base_sha: str,
        head_sha: str,
        *,
        attributes_from: str | None,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        leave_out: Collection[str] = frozenset(),
    ) -> list[tuple[str, int]]:
        """Each kept file's share of :meth:`diff` in bytes, ``(new-side path, bytes)`` in
        diff order, read as a stream and never held: how a change over its hard cap is
        weighed. The files over :data:`DIFF_FILE_MAX_BYTES` must be in ``leave_out``
        (else git shows them as binary, a few bytes). Raises :class:`RepositoryError`."""
        base, head = self.resolve(base_sha), self.resolve(head_sha)
        cut = DiffCut(_keeping(include, exclude, leave_out), None, DIFF_KNOB, measure=True)
        with self._neutral_worktree(attributes_from) as (cwd, env):
            self._stream(_diff_args(base, head), cut.feed, cwd=cwd, env=env)
        cut.finish()
        return list(cut.sizes.items())

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
        leave_out: Collection[str] = frozenset(),
    ) -> None:
        """Measure, before git diffs anything, the kept text files (not in ``leave_out``) over
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
            if changed.path in leave_out:
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
                env=git_env(),
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
            env=git_env(),
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
        if self._git_dir is None:
            self._git_dir = self._must("rev-parse", "--absolute-git-dir").decode().strip()
        git_dir = self._git_dir
        with tempfile.TemporaryDirectory(prefix="council-git-") as scratch:
            root = Path(scratch) / "tree"
            root.mkdir()
            if attributes_from is not None:
                for path, blob in self._attributes_files(attributes_from):
                    target = root / path
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(blob)
            env = {
                **git_env(),
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
        if sha not in self._attributes:
            self._attributes[sha] = self._read_attributes_files(sha)
        return list(self._attributes[sha])

    def _read_attributes_files(self, sha: str) -> list[tuple[str, bytes]]:
        """:meth:`_attributes_files` of the commit ``sha``, read from git."""
        found: list[tuple[str, str]] = []
        for entry in self._tree_entries(sha, with_trees=False):
            name = entry.path.rsplit("/", 1)[-1]
            if name != ATTRIBUTES_FILE or entry.mode not in ("100644", "100755"):
                continue
            if ".." in entry.path.split("/") or entry.size > ATTRIBUTES_MAX_BYTES:
                continue
            found.append((entry.path, entry.obj))
        out: list[tuple[str, bytes]] = []
        for path, obj in found:  # one it cannot read fails the round: its rules are unknown
            out.append((path, self._must("cat-file", "blob", obj)))
        return out

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
        return list(dict.fromkeys(shown_text(p) for p in paths))

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
        key = (base, head, self.max_changed_files)
        if key in self._listings:
            return list(self._listings[key])
        trees = self._must("rev-parse", f"{base}^{{tree}}", f"{head}^{{tree}}").decode().split()
        with self._reading(["cat-file", "--batch"], stdin=subprocess.PIPE) as batch:
            ChangeCounter(Blobs(batch), self.max_changed_files).walk(trees[0], trees[1])
        listing = ChangeListing(self.max_changed_files)
        args = ["diff", "--raw", "-z", "--no-abbrev", "-M", "--no-relative", "--no-ext-diff"]
        self._stream([*args, base, head], listing.feed)
        entries = listing.finish()
        self._listings[key] = tuple(entries)
        return entries
