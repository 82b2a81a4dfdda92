"""What a run is about and how far each participant got: the run record and a
participant's progress, as the run store keeps them (JSON, frozen, no extra fields).

The record (``run:{id}`` field ``record``) is written before any task is sent, and every
task reads the run through it; a participant's progress (``run:{id}:state``) is what the
waiting CLI shows. Times are ms since the epoch. :data:`PROTOCOL` travels in every task
message, so a worker of another version refuses a run instead of misreading it.

Source: docs/architecture.md "State in Redis", "Messages".
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from council.roster.rate_limits import RateLimit
from council.round.cost import PriceTable

PROTOCOL = 1
"""Message protocol number carried by every task; a worker serving another refuses."""


class RunRecord(BaseModel):
    """What a run is about, written before dispatch (times in ms since the epoch)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    session: str
    repository: str = ""
    base: str = ""
    head: str = ""
    witness: str | None = None
    mode: Literal["embedded", "distributed"] = "embedded"
    participants: tuple[str, ...] = ()
    judge: str | None = None
    """The judge's id when the roster has one: it runs after the reviewers are filed."""
    limits: dict[str, RateLimit] = Field(default_factory=dict)
    """The roster's shared rate limits (``openai``, ``openai:MODEL`` → rpm/tpm)."""
    prices: PriceTable = Field(default_factory=PriceTable)
    """The roster's prices, for the cost in the report."""
    changed_paths: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    created_ms: int = 0
    deadline_ms: int = 0
    protocol: int = PROTOCOL
    fail_on: str = "critical"
    """The ``--fail-on`` the round was reviewed with: what ``council resume`` gates a run
    that waited on a person with, unless told otherwise."""
    filter: str = "added"
    """The ``--filter`` mode the round's findings are gated with
    (:mod:`council.change.diff_filter`); applied when the run settles."""
    confirm: str | None = None
    """``[policy] confirm``: the lowest severity a person must confirm before a finding
    may fail the gate (None: nobody is asked)."""
    unverified_scripts: Literal["demote", "keep"] = "demote"
    """``[policy] unverified_scripts``: whether a critical finding showing a script that
    did not run this turn is held at medium (:mod:`council.evidence.policy`)."""
    min_agreement: int = Field(default=1, ge=1)
    """``--min-agreement`` (else ``[council] min_agreement``): a finding gates only when
    at least this many reviewers raised it; applied when the run settles."""
    quorum: int | None = Field(default=1, ge=0)
    """Reviewers that must be heard in full for the round to count as a review of its
    head (``--quorum``, else the roster's); None: every reviewer not marked optional (the
    default, failing closed). An incomplete round does not move the session's reviewed
    head, so ``--since-last`` reviews its commits again. Records written before it was
    kept read as 1."""


class Progress(BaseModel):
    """One participant's progress as the waiting CLI sees it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state: Literal["pending", "running", "answered", "stopped", "failed", "asking"] = "pending"
    started_ms: int | None = None
    updated_ms: int | None = None
    findings: int = 0
    attempt: int = 0
    detail: str = ""
    """Why a participant failed or stopped, for the progress line (at most
    :data:`DETAIL_CHARS` characters; empty while it runs and once it answered)."""


DETAIL_CHARS = 300
"""The longest ``Progress.detail`` kept (the whole reason is in the report)."""
