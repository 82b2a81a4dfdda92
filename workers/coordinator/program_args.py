"""Files a program reviewer's ``args`` name, read from the BASE tree like its program.

A trusted roster may run ``program = "python3"`` with ``args = ["tools/rev.py"]``; the program
runs in the change's tree, so the change would choose what its reviewer runs. So an entry that
names a regular file of the base is shipped with the run, like a relative ``program``
(:func:`workers.coordinator.trusted_inputs.read_programs`), and the program gets the path of the
worker's copy (:meth:`workers.execution.unpacked_trees.TreeCache.arg_files`). A path is
relative, not ``-``-led, and holds a ``/`` or a ``.`` (a bare ``check`` is far more often a
subcommand: write ``./check``); a directory stays as written. Raises
:class:`~council.errors.RosterError` for an entry that is a symbolic link at the base, that only
the change adds, or that is over :data:`MAX_ARG_FILE_BYTES`.

Source: issue "The change under review is untrusted"; docs/architecture.md "State in Redis".
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from council.errors import RosterError
from council.model.participant import Participant
from workers.git.repository import Repository

PROGRAM_BACKENDS: tuple[str, ...] = ("command", "sarif")
"""Backends whose ``args`` are read here."""

MAX_ARG_FILE_BYTES = 8 * 1024 * 1024
"""Largest file an ``args`` entry may name, in bytes (it travels through Redis)."""

FILE_MODES = {"100644": "644", "100755": "755"}
"""Git modes of regular files → the mode the worker writes them with."""


def repository_path(arg: str) -> str | None:
    """The repository path an ``args`` entry may name (normalized), or None when it
    cannot be one: a flag, an absolute path, a bare word, ``.``, or one leaving the tree."""
    if not arg or arg.startswith(("-", "/", ":")) or "\0" in arg or "\n" in arg:
        return None
    if "/" not in arg and "." not in arg:
        return None
    path = posixpath.normpath(arg)
    if path in (".", "..") or path.startswith("../"):
        return None
    return path


def base_arg_files(
    repo: Repository, base: str, head: str, placed: Sequence[tuple[str, Participant]]
) -> dict[str, dict[str, bytes]]:
    """Participant id → ``{"<index>:<mode>:<path>": bytes}``: the base-tree files its
    ``args`` name (mode ``644`` or ``755``). Participants naming none are left out.

    ``placed`` pairs each participant with its place in the roster (``reviewers[2]``).
    Raises :class:`RosterError` at ``{place}.args`` for a link, a file only the change
    has, or a file over :data:`MAX_ARG_FILE_BYTES` (see the module's docstring).
    """
    out: dict[str, dict[str, bytes]] = {}
    for where, p in placed:
        args = p.options.get("args", [])
        if p.backend not in PROGRAM_BACKENDS or not isinstance(args, list):
            continue
        files: dict[str, bytes] = {}
        for index, arg in enumerate(args):
            path = repository_path(str(arg))
            if path is None:
                continue
            field = f"{where}.args[{index}]"
            named = f"{arg!r} (reviewer {p.id!r})"
            at = f"at the base {base[:12]}"
            mode = repo.tree_mode(base, path)
            if mode == "120000":
                raise RosterError(
                    field,
                    f"{named} is a symbolic link {at}; council runs the files args name "
                    f"from the base tree, and sends their bytes, not links",
                    "Name the file the link points to.",
                )
            if mode is None and repo.tree_mode(head, path) in (*FILE_MODES, "120000"):
                raise RosterError(
                    field,
                    f"{named} is not in the base tree {at}: the change under review adds "
                    f"it, and council runs the files args name from the base tree only",
                    "Commit it on the base branch first, or take it out of args.",
                )
            if mode not in FILE_MODES:
                continue  # a directory (what an analyzer reads in the head) or a word
            blob = repo.read_file(base, path)
            if blob is None:
                continue
            if len(blob) > MAX_ARG_FILE_BYTES:
                raise RosterError(
                    field,
                    f"{named} is {len(blob)} bytes {at}, over the {MAX_ARG_FILE_BYTES} "
                    f"bytes a file named in args may be",
                    "Name a smaller file, or install the tool on the workers and name it "
                    "by its absolute path.",
                )
            files[f"{index}:{FILE_MODES[mode]}:{path}"] = blob
        if files:
            out[p.id] = files
    return out
