"""The base's analyzer configuration, read for the program reviewers of a round.

A pull request can switch its own analyzers off (``[tool.ruff] exclude = ["src"]``, a deleted
``.bandit``). So the coordinator reads the BASE versions of the changed files that configure
analyzers (:func:`council.change.analyzer_config.config_changes`) and ships them with the run
in ``run:{run}:config``, field → bytes: ``644:PATH`` or ``755:PATH`` a file, ``link:PATH`` a
link's target, ``-:PATH`` (empty) a file the change added, removed. A worker lays them over
its copy of the tree for each program reviewer with ``config_from = "base"``
(:meth:`workers.execution.unpacked_trees.TreeCache.overlaid`); model reviewers read the head
tree as it is.

Source: issue "The change under review is untrusted"; docs/architecture.md "State in Redis".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from council.change.analyzer_config import (
    CONFIG_OPTION,
    DEFAULT_CONFIG_SOURCE,
    ConfigChange,
    config_changes,
    config_note,
    config_reason,
)
from council.model.participant import Participant
from workers.git.git_objects import TreeEntry
from workers.git.repository import Repository

PROGRAM_BACKENDS: tuple[str, ...] = ("command", "sarif")
"""Backends whose program reads the analyzer configuration (``config_from`` applies)."""

REMOVED = "-"
"""The kind of a shipped field whose file is removed from the tree."""

LINK = "link"
"""The kind of a shipped field that is a symbolic link (its target as the bytes)."""


@dataclass(frozen=True)
class ConfigOverlay:
    """What a round ships for its program reviewers' trees: the changed analyzer
    configuration files (``changes``) and the base's side of them (``files``, field →
    bytes, the shapes in the module's docstring). Empty when the change edits none.

    ``shown``: the changes the round's note names, those its reviewed range makes (a
    ``--since-last`` round's new commits: the files they did not touch were named by an
    earlier round, and are still laid over); None: all of ``changes``."""

    changes: tuple[ConfigChange, ...] = ()
    files: dict[str, bytes] = field(default_factory=dict)
    shown: tuple[ConfigChange, ...] | None = None


def reads_base_config(participant: Participant) -> bool:
    """Whether ``participant`` runs a program that reads the base's analyzer
    configuration (``config_from = "base"``, the default for command and sarif)."""
    source = participant.options.get(CONFIG_OPTION, DEFAULT_CONFIG_SOURCE)
    return participant.backend in PROGRAM_BACKENDS and source == "base"


def read_config_overlay(
    repo: Repository, base: str, head: str, since: str | None = None
) -> ConfigOverlay:
    """The analyzer configuration files the change ``base..head`` edits, and the base's
    side of them (see the module's docstring). Whatever ``[paths]`` excludes is read
    too: an excluded config file still configures the analyzer. With ``since`` (a
    ``--since-last`` round's start), ``shown`` holds those of them ``since..head`` edits,
    as that range changed them. Raises :class:`~council.errors.RepositoryError` when git
    fails."""
    changes, at_base, blobs = _changes(repo, base, head)
    if not changes:
        return ConfigOverlay()
    shown: tuple[ConfigChange, ...] | None = None
    if since is not None and since != base:
        overlaid = {c.path for c in changes}
        shown = tuple(c for c in _changes(repo, since, head)[0] if c.path in overlaid)
    files: dict[str, bytes] = {}
    for change in changes:
        entry = at_base.get(change.path)
        if entry is None:
            files[f"{REMOVED}:{change.path}"] = b""
        elif entry.mode == "120000":
            files[f"{LINK}:{change.path}"] = blobs[entry.obj]
        else:
            mode = "755" if entry.mode == "100755" else "644"
            files[f"{mode}:{change.path}"] = blobs[entry.obj]
    return ConfigOverlay(tuple(changes), files, shown)


def _changes(
    repo: Repository, start: str, head: str
) -> tuple[list[ConfigChange], dict[str, TreeEntry], dict[str, bytes]]:
    """The analyzer configuration changes of ``start..head``, the entries of those files
    at ``start``, and the blobs read (object id → bytes)."""
    candidates = [p for p in repo.changed_paths(start, head) if config_reason(p) is not None]
    if not candidates:
        return [], {}, {}
    at_start = _files(repo.entries_at(start, candidates))
    at_head = _files(repo.entries_at(head, candidates))
    blobs = repo.blobs([e.obj for e in (*at_start.values(), *at_head.values())])

    def side(entries: dict[str, TreeEntry], path: str) -> bytes | None:
        entry = entries.get(path)
        return blobs[entry.obj] if entry is not None else None

    changes = config_changes((p, side(at_start, p), side(at_head, p)) for p in candidates)
    return changes, at_start, blobs


def overlay_note(overlay: ConfigOverlay, participants: Sequence[Participant]) -> str | None:
    """The run's note naming the changed analyzer configuration and who read which side
    (:func:`council.change.analyzer_config.config_note`), or None when the change edits
    none, or the round's range (``overlay.shown``) touched none of it."""
    programs = [p for p in participants if p.backend in PROGRAM_BACKENDS]
    return config_note(
        overlay.changes if overlay.shown is None else overlay.shown,
        [p.id for p in programs if reads_base_config(p)],
        [p.id for p in programs if not reads_base_config(p)],
    )


def _files(entries: dict[str, TreeEntry]) -> dict[str, TreeEntry]:
    """The entries that are files or links (a submodule is neither: left out)."""
    return {path: e for path, e in entries.items() if e.kind == "blob"}
