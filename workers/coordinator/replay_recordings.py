"""A ``replay`` reviewer's recordings, read where trusted configuration is read.

A replay reviewer names an ``answer`` file (and maybe a ``journal``). A relative path is
configuration, so it resolves like a relative ``program`` (see
``workers.coordinator.trusted_inputs.read_programs``): beside an explicit ``--roster`` file, else
in the BASE tree, never in the working directory, which in CI is the pull request's checkout
(a change could otherwise commit the answer its own review gives). The base-tree texts
travel with the participant as ``options["recorded"]`` (:data:`RECORDED`), so a worker
on another host reads nothing from disk. Source: issue "The change under review is
untrusted".
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from council.errors import RosterError
from council.model.participant import Participant
from council.roster.backend_options import RECORDED, where_of
from council.roster.round_roster import Lineup
from workers.coordinator.trusted_inputs import in_tree
from workers.git.repository import Repository

REPLAY_FILE_MAX_BYTES = 8 * 1024 * 1024
"""The largest replay file read from the base tree (8 MiB): it travels with the run."""

RECORDING_KEYS: tuple[str, ...] = ("answer", "journal")
"""The replay options that name files."""

_FIX = (
    "A relative replay path is read beside an explicit --roster, or from the BASE ref "
    "when the roster is the base tree's council.toml: commit it on the base branch, or "
    "give an absolute path (read on the host that runs the reviewer)."
)


def recorded_lineup(lineup: Lineup, repo: Repository, base: str, beside: str = "") -> Lineup:
    """``lineup`` (of a base-tree roster, in the tree's directory ``beside``) with each
    replay participant's relative files read from the BASE commit ``base``
    (:func:`with_recordings`)."""
    judge = lineup.judge
    return replace(
        lineup,
        reviewers=tuple(with_recordings(p, repo, base, beside) for p in lineup.reviewers),
        judge=with_recordings(judge, repo, base, beside) if judge is not None else None,
    )


def with_recordings(p: Participant, repo: Repository, base: str, beside: str = "") -> Participant:
    """``p`` with the texts of its relative recordings in the BASE commit ``base`` (read
    beside ``beside``, the roster's directory there), as ``options["recorded"]``; an
    absolute path is left to the host that runs it.

    Participants of other backends are returned as they are. Raises
    :class:`RosterError` (exit 2) at ``reviewers[ID].answer`` (or ``.journal``) when a
    relative path is not a file of the base tree, or is larger than
    :data:`REPLAY_FILE_MAX_BYTES`.
    """
    if p.backend != "replay":
        return p
    recorded: dict[str, str] = {}
    for key in RECORDING_KEYS:
        value = p.options.get(key)
        if not isinstance(value, str) or Path(value).expanduser().is_absolute():
            continue
        recorded[key] = _in_base(repo, base, p, key, value, beside)
    if not recorded:
        return p
    return p.model_copy(update={"options": {**p.options, RECORDED: recorded}})


def _in_base(
    repo: Repository, base: str, p: Participant, key: str, value: str, beside: str = ""
) -> str:
    """The text of one relative replay file in the base tree, beside ``beside`` (UTF-8,
    replacement characters for what is not)."""
    path = in_tree(beside, value)
    field = f"{where_of(p)}.{key}"
    at = f"in the base tree at {base[:12]}"
    named = f"replay {key} {value!r} (reviewer {p.id!r})"
    if path is None:
        raise RosterError(field, f"{named} leaves the base tree", _FIX)
    mode = repo.tree_mode(base, path)
    if mode not in ("100644", "100755"):
        what = "is not" if mode is None else f"is not a file (git mode {mode})"
        raise RosterError(field, f"{named} {what} {at}", _FIX)
    size = repo.file_size(base, path)
    if size is None or size > REPLAY_FILE_MAX_BYTES:
        raise RosterError(
            field,
            f"{named} {at} is {size} bytes, over the {REPLAY_FILE_MAX_BYTES} bytes a "
            f"replay file may hold",
            "Record a shorter answer, or give an absolute path",
        )
    blob = repo.read_file(base, path)
    if blob is None:
        raise RosterError(field, f"{named} cannot be read {at}", _FIX)
    return blob.decode("utf-8", errors="replace")
