"""Reading a git repository: refs, the diff, files at a ref, and the packed head tree.

The change is read with the git command line, the same way whatever the user's git
configuration says (no colour, external diff or textconv; fixed ``a/``/``b/`` prefixes and
context; renames detected), so the same change gives the same diff, prompt and anchors on
every host. Its ``.gitattributes`` are untrusted (``*.py -diff``, ``export-ignore``): the
diff uses the BASE tree's only, and the head tree is packed from ``git ls-tree`` and ``git
cat-file`` with none. Workers never read a clone; they unpack the capped archive
(:func:`workers.git.tree_unpacking.unpack_tree`). :class:`Repository` has one part per concept:
:mod:`~workers.git.git_command`, :mod:`~workers.git.refs`, :mod:`~workers.git.files_at_ref`,
:mod:`~workers.git.diff_reading`, :mod:`~workers.git.change_sorting`,
:mod:`~workers.git.tree_packing`. Source:
docs/architecture.md "The shape", "State in Redis" (tree archive), "Layers"; issue "The
change under review is untrusted".
"""

from __future__ import annotations

from pathlib import Path

from council.errors import RepositoryError
from workers.git.change_listing import DEFAULT_MAX_CHANGED_FILES, ChangedEntry
from workers.git.change_sorting import ChangeSorting
from workers.git.git_command import first_line
from workers.git.tree_packing import TreePacking


class Repository(ChangeSorting, TreePacking):
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
        self._commits: set[str] = set()
        self._listings: dict[tuple[str, str, int], tuple[ChangedEntry, ...]] = {}
        self._attributes: dict[str, list[tuple[str, bytes]]] = {}
        self._git_dir: str | None = None
        top_level = self._top_level()
        if top_level is not None:
            self.path = top_level
            return
        probe = self._git("rev-parse", "--absolute-git-dir")
        if probe.returncode != 0:
            why = first_line(probe.stderr)
            raise RepositoryError(f"{start} is not a git repository ({why})", fix)
        top = self._git("rev-parse", "--show-toplevel")
        text = (top.stdout if top.returncode == 0 else probe.stdout).decode().strip()
        self.path = Path(text)

    def _top_level(self) -> Path | None:
        """The top-level directory in one git call, when git names it plainly (a work
        tree whose paths hold no newline and are UTF-8); None otherwise, and the two
        separate calls then decide, as they always did."""
        both = self._git("rev-parse", "--absolute-git-dir", "--show-toplevel")
        if both.returncode != 0:
            return None
        try:
            parts = both.stdout.decode().split("\n")
        except UnicodeDecodeError:
            return None
        if len(parts) != 3 or parts[2] or not parts[1].strip():
            return None
        return Path(parts[1].strip())
