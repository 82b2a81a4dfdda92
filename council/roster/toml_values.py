"""Reading one TOML value of a roster, with the field path in every refusal.

Each reader takes the table, the key, the table's path (``reviewers[2]``) and the fix to
tell the author, and either returns the checked value (None when the key is absent) or
raises :class:`~council.errors.RosterError` at ``{where}.{key}`` (``{where}.{key}[i]``
for a list item). Source: docs/identity-and-clocks.md "Participant" (every refusal names the
field path and says how to fix it).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any, cast

from council.errors import RosterError


def refuse_unknown(
    table: Mapping[str, object],
    allowed: Sequence[str],
    where: str,
    elsewhere: Mapping[str, Sequence[str]] | None = None,
) -> None:
    """Refuse the first key of ``table`` that is not in ``allowed``.

    Why: a misspelt key (``idle_sm``) would otherwise be ignored and the default used
    silently. The fix lists the allowed keys and, when one is close, suggests it; when
    ``elsewhere`` (owner → its keys) owns the key, it says whose setting it is. A key
    named ``api_key`` is refused as a secret in the roster. ``where`` is the table's path
    (empty for the top level).
    """
    for key in table:
        if key in allowed:
            continue
        path = f"{where}.{key}" if where else key
        if key == "api_key":
            raise RosterError(
                path,
                "a secret does not belong in the roster",
                "Put the key in an environment variable and name it with api_key_env",
            )
        close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
        hint = f"Did you mean {close[0]!r}? " if close else ""
        owners = [owner for owner, keys in (elsewhere or {}).items() if key in keys]
        if owners:
            hint += f"{key!r} is a setting of the {' and '.join(owners)} backend. "
        raise RosterError(path, f"unknown key {key!r}", f"{hint}Allowed here: {', '.join(allowed)}")


def table_at(value: object, path: str, how: str) -> dict[str, Any]:
    """A TOML table, or a RosterError at ``path`` saying how to write it."""
    if not isinstance(value, dict):
        raise RosterError(path, f"must be a table, not {type(value).__name__}", how)
    return cast(dict[str, Any], value)


def text(table: Mapping[str, object], key: str, where: str, fix: str) -> str | None:
    """A non-blank text value, or None when absent."""
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, str):
        raise RosterError(f"{where}.{key}", f"must be text, not {value!r}", fix)
    if not value.strip():
        raise RosterError(f"{where}.{key}", "is blank", fix)
    return value


def required_text(table: Mapping[str, object], key: str, where: str, fix: str) -> str:
    """A non-blank text value that must be there (``is missing`` otherwise)."""
    value = text(table, key, where, fix)
    if value is None:
        raise RosterError(f"{where}.{key}", "is missing", fix)
    return value


def text_list(
    table: Mapping[str, object],
    key: str,
    where: str,
    fix: str,
    *,
    non_empty: bool,
    blank_ok: bool,
) -> tuple[str, ...] | None:
    """A list of text values, or None when absent; each item is judged at its own path.

    ``non_empty`` refuses ``[]``; ``blank_ok`` allows items that are only whitespace
    (a program argument may be ``""``; a tool name or a pattern may not).
    """
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, list):
        raise RosterError(f"{where}.{key}", f"must be a list of text, not {value!r}", fix)
    if non_empty and not value:
        raise RosterError(f"{where}.{key}", "is an empty list", fix)
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise RosterError(f"{where}.{key}[{index}]", f"must be text, not {item!r}", fix)
        if not blank_ok and not item.strip():
            raise RosterError(f"{where}.{key}[{index}]", "is blank", fix)
    return tuple(cast(list[str], value))


def flag(table: Mapping[str, object], key: str, where: str, fix: str) -> bool | None:
    """A TOML boolean (``true``/``false``), or None when absent; ``"yes"`` or ``1`` is not."""
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, bool):
        raise RosterError(f"{where}.{key}", f"must be true or false, not {value!r}", fix)
    return value


def whole(
    table: Mapping[str, object], key: str, where: str, fix: str, *, low: int, high: int | None
) -> int | None:
    """A whole number in ``[low, high]`` (no upper bound when ``high`` is None), or None.

    A TOML float (``1.0``) or boolean is not a whole number here.
    """
    if key not in table:
        return None
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise RosterError(f"{where}.{key}", f"{value!r} is not a whole number", fix)
    if value < low:
        raise RosterError(f"{where}.{key}", f"{value} is below {low}", fix)
    if high is not None and value > high:
        raise RosterError(f"{where}.{key}", f"{value} is above {high}", fix)
    return value
