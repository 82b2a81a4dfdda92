"""council: a distributed, multi-model code-review council — the pure domain.

What outside code (a reviewer backend, a renderer, a script over reports) imports is
re-exported here; everything else is reached through its own module. The runtime
(Celery, Redis, the CLI) lives in ``workers``.

Each name is imported from its module on first use (:data:`_EXPORTS`): importing one
submodule (``council.change.filter_modes``) does not load the whole domain and pydantic.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from council.errors import (
        ConfigurationError,
        CouncilError,
        IdentityRefused,
        IncompleteError,
        RosterError,
    )
    from council.harvest import also_recorded, fold_journal, harvest, read_journal
    from council.merging.sameness import says_the_same
    from council.model.findings import (
        Anchor,
        ChangeAnchor,
        FileAnchor,
        Finding,
        Harvest,
        LineAnchor,
        Origin,
        Read,
        Warning,
        canonical,
    )
    from council.model.participant import Clocks, Identity, Participant
    from council.model.report import CouncilReport, ParticipantSummary
    from council.roster import Roster, parse_roster
    from council.session.ledger import Ledger

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        ["ConfigurationError", "CouncilError", "IdentityRefused", "IncompleteError"],
        "council.errors",
    ),
    "RosterError": "council.errors",
    **dict.fromkeys(
        ["also_recorded", "fold_journal", "harvest", "read_journal"], "council.harvest"
    ),
    "says_the_same": "council.merging.sameness",
    **dict.fromkeys(
        ["Anchor", "ChangeAnchor", "FileAnchor", "Finding", "Harvest", "LineAnchor"],
        "council.model.findings",
    ),
    **dict.fromkeys(["Origin", "Read", "Warning", "canonical"], "council.model.findings"),
    **dict.fromkeys(["Clocks", "Identity", "Participant"], "council.model.participant"),
    **dict.fromkeys(["CouncilReport", "ParticipantSummary"], "council.model.report"),
    **dict.fromkeys(["Roster", "parse_roster"], "council.roster"),
    "Ledger": "council.session.ledger",
}
"""Each exported name → the module it is imported from on first use."""


def __getattr__(name: str) -> object:
    """An exported name, imported from its module (:data:`_EXPORTS`) on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'council' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


class _Council(types.ModuleType):
    """This package's module type: ``council.harvest`` stays the function ``harvest``
    (as ``from council import harvest`` always gave), not the subpackage the import
    system binds over it when ``council.harvest`` is first imported."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "harvest" and isinstance(value, types.ModuleType):
            value = value.harvest
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Council


__all__ = [
    "Anchor",
    "ChangeAnchor",
    "Clocks",
    "ConfigurationError",
    "CouncilError",
    "CouncilReport",
    "FileAnchor",
    "Finding",
    "Harvest",
    "Identity",
    "IdentityRefused",
    "IncompleteError",
    "Ledger",
    "LineAnchor",
    "Origin",
    "Participant",
    "ParticipantSummary",
    "Read",
    "Roster",
    "RosterError",
    "Warning",
    "also_recorded",
    "canonical",
    "fold_journal",
    "harvest",
    "parse_roster",
    "read_journal",
    "says_the_same",
]
