"""How a report says whether a finding's shown scripts ran: one phrase per verdict.

Beside each fenced block of a finding's discussion (Markdown), in one line (a GitHub
review comment): ``✔ ran this turn, exit 1 (call 3)`` or ``✗ not run this turn``. The
verdicts are :class:`~council.evidence.MatchedBlock` / :class:`~council.evidence.
UnmatchedBlock` values a finding carries in ``evidence``; JSON and SARIF carry them as
data (:func:`~council.evidence.verdict_json`).

Source: docs/evidence-and-asks.md §1 ("the report shows 'ran, exit 0' or 'not run this
turn' beside it").
"""

from __future__ import annotations

from collections.abc import Sequence

from council.evidence import MatchedBlock, UnmatchedBlock

RAN = "✔"
NOT_RAN = "✗"


def verdict_phrase(verdict: MatchedBlock | UnmatchedBlock) -> str:
    """The verdict in words: ``✔ ran this turn, exit 1 (call 3)``, ``✗ not run this
    turn``, ``proposed change, not a run``. Never raises."""
    if isinstance(verdict, UnmatchedBlock):
        if verdict.reason == "kept-out":
            return "proposed change, not a run"
        if verdict.reason == "over-size":
            return f"{NOT_RAN} not run this turn (longer than any script may be)"
        return f"{NOT_RAN} not run this turn"
    call = f"call {verdict.dispatch}"
    if verdict.also_matches:
        call += f"; also submitted by {verdict.also_matches} other call(s)"
    exit_code = f", exit {verdict.exit_code}" if verdict.exit_code is not None else ""
    if verdict.label in ("ok", "failed"):
        return f"{RAN} ran this turn{exit_code} ({call})"
    if verdict.label == "timeout":
        return f"{RAN} ran this turn, stopped by a time limit{exit_code} ({call})"
    if verdict.label == "error":
        return f"{NOT_RAN} submitted this turn but could not run ({call})"
    return f"{NOT_RAN} submitted this turn but not run ({call})"


def verdict_notes(evidence: Sequence[MatchedBlock | UnmatchedBlock] | None) -> dict[int, str]:
    """Each shown block's verdict as a line of Markdown to write after it, in italics
    (``*✔ ran this turn, exit 0 (call 1)*``), by the block's position (from 1, as
    :func:`~council.evidence.code_regions` counts them and
    :func:`~council.rendering.escape.block` takes them); empty without evidence."""
    return {verdict.block: f"*{verdict_phrase(verdict)}*" for verdict in evidence or ()}


def evidence_line(evidence: Sequence[MatchedBlock | UnmatchedBlock] | None) -> str:
    """Every verdict of a finding in one line (``shown scripts: block 1 ✔ ran this turn,
    exit 1 (call 3); block 2 ✗ not run this turn``); ``""`` without evidence."""
    if not evidence:
        return ""
    said = "; ".join(f"block {v.block} {verdict_phrase(v)}" for v in evidence)
    return f"shown scripts: {said}"
