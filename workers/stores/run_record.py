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

from pydantic import BaseModel, ConfigDict, Field, model_validator

from council.model.coverage import Coverage
from council.model.gate_policy import GatePolicy
from council.roster.rate_limits import RateLimit
from council.round.cost import PriceTable

PROTOCOL = 2
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
    units: tuple[str, ...] = ()
    """The slice units' ids (``{participant}@{k}``) of the reviewers sent in slices: each
    runs as a task with its own keys, which expire with the run's."""
    judge: str | None = None
    """The judge's id when the roster has one: it runs after the reviewers are filed."""
    limits: dict[str, RateLimit] = Field(default_factory=dict)
    """The roster's shared rate limits (``openai``, ``openai:MODEL`` → rpm/tpm)."""
    prices: PriceTable = Field(default_factory=PriceTable)
    """The roster's prices, for the cost in the report and the budget's estimates."""
    max_cost_usd: float | None = None
    """The round's cost budget in USD (``--max-cost-usd``, else ``[council]
    max_cost_usd``; :mod:`workers.stores.budget`); None: no budget."""
    changed_paths: tuple[str, ...] = ()
    coverage: Coverage | None = None
    """The round's coverage plan (files sent, skipped and why, cut by a cap;
    :mod:`council.model.coverage`): the settled report adds each reviewer's share."""
    notes: tuple[str, ...] = ()
    created_ms: int = 0
    deadline_ms: int = 0
    protocol: int = PROTOCOL
    gate: GatePolicy = Field(default_factory=lambda: GatePolicy(quorum=1, filter="added"))
    """The gate's policy the round was opened with (``--fail-on``, ``--quorum``,
    ``--min-agreement``, ``--filter``, else the roster's): the settled report carries it,
    and ``council resume`` gates a run that waited on a person with it unless told
    otherwise. An incomplete round (fewer than the quorum heard in full) does not move the
    session's reviewed head, so ``--since-last`` reviews its commits again."""
    confirm: str | None = None
    """``[policy] confirm``: the lowest severity a person must confirm before a finding
    may fail the gate (None: nobody is asked)."""
    likely_at: float = Field(default=0.5, ge=0.0, le=1.0)
    """``[council] likely_at``: the settled report's ``likely_at`` (docs/ranking.md)."""
    unverified_scripts: Literal["demote", "keep"] = "demote"
    """``[policy] unverified_scripts``: whether a critical finding showing a script that
    did not run this turn is held at medium (:mod:`council.evidence.policy`)."""

    @model_validator(mode="before")
    @classmethod
    def _gate_of_older_records(cls, data: object) -> object:
        """A run written before ``gate`` kept ``fail_on``, ``filter``, ``min_agreement`` and
        ``quorum`` at the top level (a missing quorum read as 1, a missing filter as
        ``added``): read them into ``gate`` so an older run is still read."""
        flat = ("fail_on", "filter", "min_agreement", "quorum")
        if not isinstance(data, dict) or "gate" in data or not (set(flat) & data.keys()):
            return data
        data = dict(data)
        gate = {"quorum": 1, "filter": "added"} | {k: data.pop(k) for k in flat if k in data}
        data["gate"] = gate
        return data


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
