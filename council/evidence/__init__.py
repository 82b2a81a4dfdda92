"""Script evidence: is a block a reviewer shows a program it really ran this turn?

An agentic reviewer runs scripts through tools, then pastes a fenced block into a finding
as proof. This package decides, with no second model, whether each block is byte for
byte a program a script-tool call of the CURRENT turn submitted. It is pure: values in,
values out, linear in the text's size. Split by concept:

* :mod:`~council.evidence.regions` — the fenced code blocks of a text (CommonMark fences);
* :mod:`~council.evidence.outcomes` — how a call ended, and the exit codes each ending
  may carry;
* :mod:`~council.evidence.submissions` — the rows of one turn (:class:`ScriptRow`),
  indexed for exact lookup (:class:`TurnSubmissions`);
* :mod:`~council.evidence.matching` — :func:`match_evidence`, the verdict on every block;
* :mod:`~council.evidence.verdict` — the verdict models and their JSON;
* :mod:`~council.evidence.reader` — the strict reader of stored verdicts.

Usage::

    turn = TurnSubmissions.of(current_rows, earlier_rows)    # once per participant and turn
    evidence = match_evidence(finding.discussion, turn)      # any text of that turn
    evidence.blocks, evidence.prose
    evidence_json(evidence)            # {"blocks", "regions_dropped", "earlier_turn_rows", "prose"}
    read_verdicts(stored).verdicts     # stored verdicts back, refusing what no writer wrote

Source: docs/evidence-and-asks.md §1.
"""

from __future__ import annotations

from council.evidence.matching import SCRIPT_MAX_BYTES, match_evidence, proposes_change
from council.evidence.outcomes import OUTCOMES, RunOutcome, exit_code_fits
from council.evidence.reader import VerdictReading, read_verdict, read_verdicts
from council.evidence.regions import MAX_REGIONS, CodeRegion, Regions, code_regions
from council.evidence.submissions import ScriptRow, Submission, TurnSubmissions
from council.evidence.verdict import (
    UNMATCHED_REASONS,
    VERDICT,
    Evidence,
    MatchedBlock,
    UnmatchedBlock,
    UnmatchedReason,
    Verdict,
    evidence_json,
    verdict_json,
)

__all__ = [
    "MAX_REGIONS",
    "OUTCOMES",
    "SCRIPT_MAX_BYTES",
    "UNMATCHED_REASONS",
    "VERDICT",
    "CodeRegion",
    "Evidence",
    "MatchedBlock",
    "Regions",
    "RunOutcome",
    "ScriptRow",
    "Submission",
    "TurnSubmissions",
    "UnmatchedBlock",
    "UnmatchedReason",
    "Verdict",
    "VerdictReading",
    "code_regions",
    "evidence_json",
    "exit_code_fits",
    "match_evidence",
    "proposes_change",
    "read_verdict",
    "read_verdicts",
    "verdict_json",
]
