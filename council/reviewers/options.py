"""Checking a backend's own roster options, with the field path in every refusal.

Each backend reads its settings from ``Participant.options`` (what the roster table held
beyond the common fields). The roster reader calls :func:`council.reviewers.check_options`
so a mistake stops the round before anything is sent; a backend checks again at review
time and turns a refusal into a failure, because a backend never raises for a reviewer
fault (harvest.md §7).

Source: identity-and-clocks.md "Participant" (every refusal names the field path).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from council.errors import RosterError
from council.participant import Participant

BASE_DIR = "base_dir"
"""Option set by the roster loader: the roster file's directory, for relative paths."""


def where_of(participant: Participant) -> str:
    """The roster path prefix of a participant: ``reviewers[<id>]`` or ``judge``."""
    return "judge" if participant.role == "judge" else f"reviewers[{participant.id}]"


def refuse_unknown(
    options: Mapping[str, Any], known: tuple[str, ...], where: str, backend: str
) -> None:
    """Refuse an option the backend does not read (a typo would otherwise be ignored).

    ``known`` lists the options a roster may write; ``base_dir`` is always accepted.
    Raises :class:`RosterError` at ``{where}.{option}``.
    """
    for key in options:
        if key not in known and key != BASE_DIR:
            raise RosterError(
                f"{where}.{key}",
                f"unknown option for the {backend} backend",
                f"Remove it; this backend reads {', '.join(known)}",
            )
    if not isinstance(options.get(BASE_DIR, ""), str):
        raise RosterError(
            f"{where}.{BASE_DIR}",
            "not a directory path",
            "Leave it to the roster loader, which sets it to the roster's directory",
        )


def check_program_options(options: Mapping[str, Any], where: str, backend: str) -> None:
    """Refuse bad options of a program-running backend (``command``, ``sarif``).

    ``program`` is a non-empty string: a bare name looked up on PATH, an absolute path, or
    a path relative to the roster; ``args`` (optional) a list of strings. Raises
    :class:`RosterError` at ``{where}.program`` / ``{where}.args``.
    """
    refuse_unknown(options, ("program", "args"), where, backend)
    program = options.get("program")
    if not isinstance(program, str) or not program.strip() or "\0" in program:
        raise RosterError(
            f"{where}.program",
            "missing, or not a program name or path",
            'Set program = "NAME" (looked up on PATH) or a path to an executable',
        )
    args = options.get("args", [])
    if not isinstance(args, list | tuple) or not all(isinstance(a, str) for a in args):
        raise RosterError(f"{where}.args", "not a list of strings", 'Write args = ["--flag"]')
