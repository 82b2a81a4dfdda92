"""The gate's policy: the one value that says what blocks a change.

``fail_on`` (the lowest severity that fails), ``quorum`` (how many reviewers must be
heard in full; None: every reviewer not marked ``optional``), ``min_agreement`` (how many
reviewers must have raised a finding for it to gate), ``filter`` (the ``--filter``
mode the findings were gated with) and ``min_likelihood`` (only when asked: a ranked
finding below it does not gate). A run carries it from the moment it is opened
(``RunRecord.gate``) and its report carries it once settled (``CouncilReport.gate``), so
every renderer, the exit code and the console read the same policy: a threshold handed
to each of them apart is how a console and a CLI came to disagree.

Source: docs/architecture.md "Reports, the CLI and the gate".
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from council.model.gate_choices import DEFAULT_FAIL_ON, FailOn


class GatePolicy(BaseModel):
    """What blocks a change. Frozen; unknown keys are refused (a typo is not a policy)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fail_on: FailOn = DEFAULT_FAIL_ON
    """``--fail-on``: the lowest severity that fails the gate (``never``: report only)."""
    quorum: int | None = Field(default=None, ge=0)
    """``--quorum`` (else the roster's): reviewers that must be heard in full; 0 switches
    the count off; None (the default: the gate fails closed) asks every reviewer the
    roster did not mark ``optional``."""
    min_agreement: int = Field(default=1, ge=1)
    """``--min-agreement`` (else ``[council] min_agreement``): a finding gates only when at
    least this many reviewers raised it (1: every finding may)."""
    filter: str | None = None
    """The ``--filter`` mode the findings were gated with (None: not filtered)."""
    min_likelihood: float | None = Field(default=None, ge=0.0, le=1.0)
    """``--min-likelihood``: a ranked finding below this likelihood does not gate (listed,
    said in the gate line); None (the default): the likelihood never touches the gate."""
