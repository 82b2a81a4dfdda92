"""How a script-tool call ended, and which exit codes each ending may carry.

A row of the turn and a matched block's verdict both carry an outcome label and, only
when the runner reported one, an exit code. The two must agree, or a report could print
"ran, exit 0" beside a failed run: ``ok`` carries 0 or nothing, ``failed`` a non-zero
code, ``error`` and ``not-run`` nothing, ``timeout`` any code or nothing.

Source: docs/evidence-and-asks.md §1 ("Exit codes by label").
"""

from __future__ import annotations

from typing import Literal

RunOutcome = Literal["ok", "failed", "error", "timeout", "not-run"]
"""How one script-tool call ended: the label a matched block carries."""

OUTCOMES: tuple[RunOutcome, ...] = ("ok", "failed", "error", "timeout", "not-run")
"""The closed vocabulary of :data:`RunOutcome`, in the design's order."""


def exit_code_fits(outcome: RunOutcome, exit_code: int | None) -> bool:
    """Whether an ending labelled ``outcome`` can carry ``exit_code`` (None: no code).

    ``ok`` → 0 or none; ``failed`` → a non-zero code (a failure with no code is not
    something a runner reports: it is an ``error``); ``error``, ``not-run`` → none;
    ``timeout`` → any code or none. Never raises. Source: docs/evidence-and-asks.md §1.
    """
    if outcome == "ok":
        return exit_code is None or exit_code == 0
    if outcome == "failed":
        return exit_code is not None and exit_code != 0
    if outcome == "timeout":
        return True
    return exit_code is None


def exit_code_rule(outcome: RunOutcome) -> str:
    """The exit-code rule of ``outcome`` in words, for error messages."""
    return {
        "ok": "an ok run carries exit code 0 or none",
        "failed": "a failed run carries a non-zero exit code",
        "error": "an error carries no exit code",
        "timeout": "a timeout carries any exit code or none",
        "not-run": "a call that did not run carries no exit code",
    }[outcome]
