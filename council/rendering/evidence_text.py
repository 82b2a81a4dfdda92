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

from council.evidence import MAX_REGIONS, MatchedBlock, UnmatchedBlock, code_regions

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


def with_verdicts(discussion: str, evidence: Sequence[MatchedBlock | UnmatchedBlock] | None) -> str:
    """``discussion`` with each block's verdict on the line after the block, in italics
    (``*✔ ran this turn, exit 0 (call 1)*``); the text as it is without evidence."""
    if not evidence:
        return discussion
    by_block = {verdict.block: verdict for verdict in evidence}
    regions = code_regions(discussion, MAX_REGIONS).read
    pieces: list[str] = []
    at = 0
    for region in regions:
        verdict = by_block.get(region.position)
        if verdict is None:
            continue
        pieces.append(discussion[at : region.end])
        if not pieces[-1].endswith("\n"):
            pieces.append("\n")
        pieces.append(f"*{verdict_phrase(verdict)}*\n")
        at = region.end
    pieces.append(discussion[at:])
    return "".join(pieces).rstrip("\n")


def evidence_line(evidence: Sequence[MatchedBlock | UnmatchedBlock] | None) -> str:
    """Every verdict of a finding in one line (``shown scripts: block 1 ✔ ran this turn,
    exit 1 (call 3); block 2 ✗ not run this turn``); ``""`` without evidence."""
    if not evidence:
        return ""
    said = "; ".join(f"block {v.block} {verdict_phrase(v)}" for v in evidence)
    return f"shown scripts: {said}"
