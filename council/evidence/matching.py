"""Matching a text's shown blocks against the programs submitted this turn.

Deterministic, with no second model. Each region (:mod:`council.evidence.regions`), in
order: ``kept-out`` when its info string's first word is ``diff`` or ``suggestion`` (ASCII
case-insensitive, the whole word: a proposed change claims no run, whatever its size);
``over-size`` past :data:`SCRIPT_MAX_BYTES` of UTF-8 (no script that long was accepted);
matched when a call of this turn submitted exactly its content
(:meth:`~council.evidence.submissions.TurnSubmissions.lookup`: the latest call, the others
counted); else ``no-submission-this-turn``. A matched block is cut out of the prose the
other checks read; it grounds nothing by itself. Source: docs/evidence-and-asks.md §1.
"""

from __future__ import annotations

from council.evidence.regions import MAX_REGIONS, CodeRegion, code_regions
from council.evidence.submissions import TurnSubmissions
from council.evidence.verdict import Evidence, MatchedBlock, UnmatchedBlock, UnmatchedReason

SCRIPT_MAX_BYTES = 65536
"""The per-script cap, in UTF-8 bytes (64 KiB): a longer block is ``over-size``."""

PROPOSED_CHANGE_WORDS = frozenset({"diff", "suggestion"})
"""Info-string first words that make a block a proposed change (``kept-out``)."""


def match_evidence(text: str, turn: TurnSubmissions) -> Evidence:
    """The verdict on every block of ``text`` against ``turn``, and the prose left.

    ``text`` is any text a participant wrote this turn: the answer's prose, or one
    finding's discussion. Linear in ``len(text)`` plus the size of the rows whose text is
    as long as a compared block. Never raises.
    Source: docs/evidence-and-asks.md §1.
    """
    regions = code_regions(text, MAX_REGIONS)
    screened = [(region, _never_compared(region)) for region in regions.read]
    found = turn.lookup(region.content for region, reason in screened if reason is None)
    verdicts: list[MatchedBlock | UnmatchedBlock] = []
    cut: list[CodeRegion] = []
    for region, reason in screened:
        submission = None if reason is not None else found.get(region.content)
        if submission is None:
            verdicts.append(
                UnmatchedBlock(block=region.position, reason=reason or "no-submission-this-turn")
            )
            continue
        row = submission.latest
        verdicts.append(
            MatchedBlock(
                block=region.position,
                label=row.outcome,
                tool_call_id=row.tool_call_id,
                tool=row.tool,
                dispatch=row.dispatch,
                also_matches=submission.also_matches,
                exit_code=row.exit_code,
            )
        )
        cut.append(region)
    return Evidence(
        blocks=tuple(verdicts),
        regions_dropped=regions.dropped,
        earlier_turn_rows=turn.earlier_turn_rows,
        prose=_without(text, cut),
    )


def _never_compared(region: CodeRegion) -> UnmatchedReason | None:
    """Why ``region`` is not compared at all (kept-out first, then over-size), or None."""
    if proposes_change(region.info):
        return "kept-out"
    if not fits_cap(region.content):
        return "over-size"
    return None


def proposes_change(info: str) -> bool:
    """Whether an info string marks a proposed change: its first word (up to the first
    space or tab of the trimmed string) is ``diff`` or ``suggestion`` in any ASCII case.
    ``diff-go``, ``diffoscope``, ``suggestions`` and ``python diff`` do not. Never raises.
    """
    word = info.strip(" \t").split(" ", 1)[0].split("\t", 1)[0]
    return word.isascii() and word.lower() in PROPOSED_CHANGE_WORDS


def fits_cap(program: str) -> bool:
    """Whether ``program`` is at most :data:`SCRIPT_MAX_BYTES` in UTF-8 (a lone surrogate
    counted as its three bytes). Linear in its length, and O(1) far from the cap."""
    if len(program) > SCRIPT_MAX_BYTES:
        return False  # every character is at least one byte
    if len(program) * 4 <= SCRIPT_MAX_BYTES:
        return True  # every character is at most four bytes
    return len(program.encode("utf-8", "surrogatepass")) <= SCRIPT_MAX_BYTES


def _without(text: str, cut: list[CodeRegion]) -> str:
    """``text`` with the whole lines of each region of ``cut`` (in text order) removed."""
    if not cut:
        return text
    pieces: list[str] = []
    at = 0
    for region in cut:
        pieces.append(text[at : region.start])
        at = region.end
    pieces.append(text[at:])
    return "".join(pieces)
