"""The judge's prompt under its context budget: the whole change, or the parts of it the
filed findings point at.

The judge reads every filed finding beside the change, once, in one prompt: it is not
sliced (a finding on one slice may be judged against code of another). When the whole
prompt is over its budget (less the answer's room and :data:`~council.slicing.plan.MARGIN`),
the diff shown is cut to what fits, in this order: the hunks a finding's line anchor
falls in, then the rest of the files a finding anchors to, in the diff's order; a note
says how much of the change is shown and that the other findings are judged from their
own words. A judge without a budget (a program) gets the whole change. Pure and
deterministic. Source: docs/architecture.md "Slices".
"""

from __future__ import annotations

from collections.abc import Sequence

from council.change.diff import Change, ChangedFile
from council.model.findings import Finding, LineAnchor
from council.model.participant import Participant
from council.roster.prompt import build_prompt
from council.slicing.pieces import Piece, cut_change
from council.slicing.plan import usable
from council.slicing.tokens import context_budget, estimate, ratio

NOTE_TOKENS = 96
"""Tokens kept for the note that says the change is shown in part."""


def judge_prompt(
    judge: Participant,
    change: Change,
    filed: Sequence[Finding],
    *,
    persona_text: str | None = None,
    notes: Sequence[str] = (),
) -> tuple[str, str | None]:
    """The judge's prompt and, when the change is shown in part, the note saying so
    (it is in the prompt too). Never over the judge's budget while the filed findings
    and instructions fit it; when even they do not, no diff is shown (the note says so)
    and the provider's own limit decides."""

    def prompt(shown: Change, said: Sequence[str]) -> str:
        return build_prompt(
            judge, shown, shown.text, persona_text=persona_text, notes=said, filed=filed
        )

    whole = prompt(change, notes)
    budget = context_budget(judge)
    if budget is None:
        return whole, None
    bpt = ratio(judge)
    fits = usable(judge, budget)
    if estimate(whole, bpt) <= fits:
        return whole, None
    bare = prompt(Change(notes=change.notes), notes)
    room = fits - estimate(bare, bpt) - NOTE_TOKENS
    chosen = _pointed_at(change, filed, room, bpt) if room > 0 else []
    shown = Change(files=tuple(p.file for p in chosen), notes=change.notes)
    files = len({p.path for p in chosen})
    note = (
        f"The change ({len(change.files)} files, about {estimate(change.text, bpt)} tokens) "
        f"is over the judge's context budget of {budget} tokens: shown are the parts the "
        f"filed findings point at ({files} of {len(change.files)} files); a finding on code "
        "not shown is judged from its own words and the other findings."
    )
    return prompt(shown, (*notes, note)), note


def _pointed_at(
    change: Change, filed: Sequence[Finding], room: int, bytes_per_token: float
) -> list[Piece]:
    """The pieces of ``change`` to show the judge within ``room`` tokens: those holding a
    finding's anchored line first, then the rest of the anchored files, in diff order;
    a piece that does not fit is passed over for a smaller one."""
    lines: dict[str, set[int]] = {}
    for finding in filed:
        anchor = finding.anchor
        path = getattr(anchor, "path", None)
        if path is None:
            continue
        held = lines.setdefault(path, set())
        if isinstance(anchor, LineAnchor) and anchor.side == "new":
            held.update(range(anchor.start_line or anchor.line, anchor.line + 1))
    if not lines:
        return []
    anchored = Change(files=tuple(f for f in change.files if f.path in lines))
    pieces, _ = cut_change(anchored, room, bytes_per_token)
    order = {id(p): i for i, p in enumerate(pieces)}
    first = [p for p in pieces if _holds(p.file, lines[p.path])]
    rest = [p for p in pieces if not _holds(p.file, lines[p.path])]
    chosen: list[Piece] = []
    used = 0
    for piece in (*first, *rest):
        if used + piece.cost <= room:
            chosen.append(piece)
            used += piece.cost
    return sorted(chosen, key=lambda p: order[id(p)])


def _holds(file: ChangedFile, lines: set[int]) -> bool:
    """Whether ``file`` (a piece's hunks) covers one of ``lines`` on the new side."""
    return any(first <= n <= last for first, last in file.ranges("new") for n in lines)

