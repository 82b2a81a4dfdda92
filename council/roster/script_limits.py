"""The limits of a reviewer's scripts as a roster sets them, and the languages it may use.

``[council] script_limits`` and a reviewer's own ``script_limits`` are read here, by the
roster reader, into :class:`ScriptLimits`; the sandbox (:mod:`reviewers.sandbox.scripts`)
enforces them. Pure data and checks, so the roster never imports the sandbox.

Source: docs/evidence-and-asks.md §1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from council.errors import RosterError

LanguageName = Literal["python", "bash", "sh", "node"]

LANGUAGES: Mapping[str, tuple[str, str]] = {
    "python": ("python3", "main.py"),
    "bash": ("bash", "main.sh"),
    "sh": ("sh", "main.sh"),
    "node": ("node", "main.js"),
}
"""Language → (the interpreter looked up on :data:`SYSTEM_PATH`, the program's file name)."""

ScriptLimitName = Literal["cpu_s", "wall_s", "memory_mb", "processes", "output_bytes"]

LIMIT_BOUNDS: Mapping[str, tuple[int, int]] = {
    "cpu_s": (1, 600),
    "wall_s": (1, 900),
    "memory_mb": (32, 65536),
    "processes": (4, 4096),
    "output_bytes": (256, 16 * 1024 * 1024),
}
"""Each limit's accepted range (inclusive): seconds, seconds, MiB, tasks, bytes."""


@dataclass(frozen=True)
class ScriptLimits:
    """The limits of one script run (roster: ``[council] script_limits`` or a reviewer's
    ``script_limits``, an inline table of these keys).

    * ``cpu_s``: CPU seconds; ``wall_s``: wall-clock seconds;
    * ``memory_mb``: address space in MiB; ``processes``: tasks at once (threads count);
    * ``output_bytes``: stdout and stderr together, in bytes.
    """

    cpu_s: int = 10
    wall_s: int = 30
    memory_mb: int = 512
    processes: int = 64
    output_bytes: int = 64 * 1024

    def as_json(self) -> dict[str, int]:
        """The five limits as a JSON object."""
        return {name: int(getattr(self, name)) for name in LIMIT_BOUNDS}


def read_limits(value: object, where: str, base: ScriptLimits | None = None) -> ScriptLimits:
    """``script_limits`` as written in a roster (a table of whole numbers), over ``base``
    (the round's, or the defaults). Raises :class:`RosterError` at ``{where}.{key}`` for
    an unknown key, a value that is not a whole number, or one outside
    :data:`LIMIT_BOUNDS`."""
    fix = (
        "Write script_limits as a table of whole numbers, e.g. script_limits = "
        "{cpu_s = 10, wall_s = 30, memory_mb = 512, processes = 64, output_bytes = 65536}"
    )
    if not isinstance(value, Mapping):
        raise RosterError(where, "must be a table", fix)
    found: dict[str, int] = (base or ScriptLimits()).as_json()
    for key, number in value.items():
        if key not in LIMIT_BOUNDS:
            raise RosterError(f"{where}.{key}", "is not a script limit", fix)
        low, high = LIMIT_BOUNDS[key]
        if isinstance(number, bool) or not isinstance(number, int):
            raise RosterError(f"{where}.{key}", "must be a whole number", fix)
        if not low <= number <= high:
            raise RosterError(f"{where}.{key}", f"must be from {low} to {high}", fix)
        found[key] = number
    return ScriptLimits(**found)


def limits_of(options: Mapping[str, Any]) -> ScriptLimits:
    """The script limits stored in a participant's options (``script_limits``, already
    checked by the roster reader), or the defaults. Never raises for a checked roster."""
    value = options.get("script_limits")
    if not isinstance(value, Mapping):
        return ScriptLimits()
    try:
        return read_limits(value, "script_limits")
    except RosterError:
        return ScriptLimits()
