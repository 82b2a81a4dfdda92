"""council: a distributed, multi-model code-review council — the pure domain.

What outside code (a reviewer backend, a renderer, a script over reports) imports is
re-exported here; everything else is reached through its own module. The runtime
(Celery, Redis, the CLI) lives in ``workers``.
"""

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
