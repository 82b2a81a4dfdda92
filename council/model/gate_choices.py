"""The gate's choices as the command line offers them: ``--fail-on`` and ``--filter``.

Plain values with no model around them, so a command's ``--help`` can list them without
loading pydantic; :mod:`council.model.gate_policy` and :mod:`council.change.diff_filter`
hold the rules that use them.
"""

from __future__ import annotations

from typing import Literal

FailOn = Literal["critical", "medium", "minor", "never"]
"""The lowest severity that fails the gate, or ``never`` to report without gating."""

FAIL_ON: tuple[FailOn, ...] = ("critical", "medium", "minor", "never")
"""Every accepted ``--fail-on`` value, highest threshold first."""

DEFAULT_FAIL_ON: FailOn = "critical"
"""The threshold when none is given: only critical findings block."""

FilterMode = Literal["added", "diff_context", "file", "nofilter"]
"""How close to the change a finding must be to gate and post inline."""

FILTER_MODES: tuple[FilterMode, ...] = ("added", "diff_context", "file", "nofilter")
"""Every accepted ``--filter`` value."""

DEFAULT_FILTER: FilterMode = "added"
"""The filter when none is given: a finding gates when it touches an added line."""
