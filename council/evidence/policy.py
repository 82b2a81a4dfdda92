"""Verdicts on the scripts a participant's findings show, and the policy that reads them.

At outcome time (:func:`council.round.outcome.harvest_outcome`) the fenced blocks of each
finding of a participant that can run scripts (a model given ``run_script``, a ``command``
reviewer) are matched against its scripts of the SAME attempt; earlier attempts' rows are
counted, never matched. A reviewer with no script tool ran nothing: its blocks are quotes.
``[policy] unverified_scripts`` (:data:`POLICIES`): ``demote`` (the default) holds a
``critical`` finding showing a script that did not run this turn at ``medium``, with a
``severity_note``, per finding and before consolidation, so an invented proof cannot fail
CI on its own; ``keep`` leaves severities alone. A ``kept-out`` block never demotes.
Source: docs/evidence-and-asks.md §1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from council.evidence import (
    MatchedBlock,
    ScriptRow,
    TurnSubmissions,
    UnmatchedBlock,
    match_evidence,
)
from council.model.findings import Finding, Harvest
from council.model.participant import Participant

UnverifiedPolicy = Literal["demote", "keep"]

POLICIES: tuple[UnverifiedPolicy, ...] = ("demote", "keep")
"""The values of ``[policy] unverified_scripts``; the first is the default."""

DEMOTED_TO = "medium"
"""The severity a critical finding with an unverified script is held at."""


def runs_scripts(participant: Participant) -> bool:
    """Whether ``participant`` could have run a script this turn: a model reviewer given
    ``run_script``, or a ``command`` reviewer (``council run-script``)."""
    return "run_script" in (participant.tools or ()) or participant.backend == "command"


def turn_of(rows: Sequence[Sequence[ScriptRow]], attempt: int) -> TurnSubmissions:
    """The submissions of attempt ``attempt`` (from 1): its rows compared, the rows of
    the attempts before it only counted. ``rows`` lists each attempt's rows, in attempt
    order (missing attempts have none). Never raises."""
    current = rows[attempt - 1] if 0 < attempt <= len(rows) else ()
    earlier = [row for rows_of in rows[: max(attempt - 1, 0)] for row in rows_of]
    return TurnSubmissions.of(current, earlier)


def did_not_run(verdict: MatchedBlock | UnmatchedBlock) -> bool:
    """Whether a verdict shows a script that did not run this turn (see the module)."""
    if isinstance(verdict, UnmatchedBlock):
        return verdict.reason != "kept-out"
    return verdict.label in ("not-run", "error")


def with_evidence(harvest: Harvest, turn: TurnSubmissions, policy: UnverifiedPolicy) -> Harvest:
    """``harvest`` with each finding's ``evidence`` (when its discussion shows a block)
    and, under ``demote``, its critical findings held at medium where a shown script did
    not run this turn. Linear in the discussions' sizes. Never raises."""
    findings = [_judged(finding, turn, policy) for finding in harvest.findings]
    return harvest.model_copy(update={"findings": tuple(findings)})


def _judged(finding: Finding, turn: TurnSubmissions, policy: UnverifiedPolicy) -> Finding:
    evidence = match_evidence(finding.discussion, turn)
    if not evidence.blocks:
        return finding
    update: dict[str, object] = {"evidence": evidence.blocks}
    unrun = [v.block for v in evidence.blocks if did_not_run(v)]
    if policy == "demote" and finding.severity == "critical" and unrun:
        shown = ", ".join(str(b) for b in unrun)
        update["severity"] = DEMOTED_TO
        update["severity_note"] = (
            f"held at {DEMOTED_TO}, not critical: the script its discussion shows "
            f"(block {shown}) did not run this turn ([policy] unverified_scripts = "
            f'"demote")'
        )
    return finding.model_copy(update=update)
