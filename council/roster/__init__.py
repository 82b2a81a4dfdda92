"""The roster: who sits on the council, how each is run, and the round's limits.

:func:`parse_roster` reads the TOML text of ``council.toml`` into a checked, frozen
:class:`Roster`; every refusal is a :class:`~council.errors.RosterError` naming the field
path (``reviewers[2].backend``) and the fix. Inside: ``document`` (the whole file),
``entries`` (one participant table and its backend options), ``limits`` (the
``[limits]`` table), ``values`` (one TOML value); ``[prices]`` is read by :mod:`council.round.cost`.
Source: docs/identity-and-clocks.md "Participant".
"""

from __future__ import annotations

from council.roster.document import (
    DEFAULT_MAX_CHANGE_BYTES,
    DEFAULT_MAX_TREE_BYTES,
    Roster,
    parse_roster,
)
from council.roster.participant_tables import BACKEND_OPTIONS, ID_PATTERN
from council.roster.rate_limits import RateLimit, limit_key, limits_for, parse_limits

__all__ = [
    "BACKEND_OPTIONS",
    "DEFAULT_MAX_CHANGE_BYTES",
    "DEFAULT_MAX_TREE_BYTES",
    "ID_PATTERN",
    "RateLimit",
    "Roster",
    "limit_key",
    "limits_for",
    "parse_limits",
    "parse_roster",
]
