"""Script evidence: is a block a reviewer shows a program it really ran this turn?

Byte for byte, with no second model, against the CURRENT turn's script-tool calls; pure,
linear in the text's size. Source: docs/evidence-and-asks.md §1.

* :mod:`~council.evidence.regions`: the fenced code blocks (CommonMark fences);
* :mod:`~council.evidence.outcomes`: how a call ended, and the exit codes each may carry;
* :mod:`~council.evidence.submissions`: a turn's rows, indexed (:class:`TurnSubmissions`);
* :mod:`~council.evidence.matching`: :func:`match_evidence`, the verdict on every block;
* :mod:`~council.evidence.verdict`: the verdicts and their JSON (:func:`evidence_json`);
* :mod:`~council.evidence.reader`: the strict reader of stored ones (:func:`read_verdicts`).
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
