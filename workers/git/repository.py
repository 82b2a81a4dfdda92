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

:class:`Repository` is one object made of one part per concept: running git
(:mod:`workers.git.git_command`), refs (:mod:`workers.git.refs`), files at a ref
(:mod:`workers.git.files_at_ref`), the diff and the change's files
(:mod:`workers.git.diff_reading`), the packed head tree (:mod:`workers.git.tree_packing`).

Runtime layer (runs subprocesses). Source: docs/architecture.md "The shape", "State in Redis"
(tree archive), "Layers"; issue "The change under review is untrusted".
"""

from __future__ import annotations

from pathlib import Path

from council.errors import RepositoryError
from workers.git.change_listing import DEFAULT_MAX_CHANGED_FILES
from workers.git.diff_reading import DiffReading
from workers.git.git_command import first_line
from workers.git.tree_packing import TreePacking


class Repository(DiffReading, TreePacking):
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
            why = first_line(probe.stderr)
            raise RepositoryError(f"{start} is not a git repository ({why})", fix)
        top = self._git("rev-parse", "--show-toplevel")
        text = (top.stdout if top.returncode == 0 else probe.stdout).decode().strip()
        self.path = Path(text)
