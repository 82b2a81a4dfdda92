"""The judge's prompt under its context budget: the whole change, or the parts of it the
filed findings point at.

The judge reads every filed finding beside the change, once, in one prompt: it is not
sliced (a finding on one slice may be judged against code of another). When the whole
prompt is over its budget (less the answer's room and :data:`~council.slicing.plan.MARGIN`),
the diff shown is cut to what fits (:func:`~council.slicing.pointed.pointed_at`): the
hunks the findings' lines fall in, the most severe finding first and each finding a fair
share, then the rest of the files they anchor to; a note says how much of the change is
shown and that the other findings are judged from their own words. A judge without a
budget (a program) gets the whole change. Pure and deterministic. Source:
docs/architecture.md "Slices".
"""

from __future__ import annotations

from collections.abc import Sequence

from council.change.diff import Change
from council.model.findings import Finding
from council.model.participant import Participant
from council.roster.prompt import build_prompt
from council.slicing.plan import usable
from council.slicing.pointed import pointed_at
from council.slicing.tokens import context_budget, estimate, ratio


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

    def note(files: int) -> str:
        return (
            f"The change ({len(change.files)} files, about {estimate(change.text, bpt)} "
            f"tokens) is over the judge's context budget of {budget} tokens: shown are the "
            f"parts the filed findings point at ({files} of {len(change.files)} files); a "
            "finding on code not shown is judged from its own words and the other findings."
        )

    # the room left beside the findings, the instructions and the note at its longest
    bare = prompt(Change(notes=change.notes), (*notes, note(len(change.files))))
    room = fits - estimate(bare, bpt)
    chosen = pointed_at(change, filed, room, bpt) if room > 0 else []
    shown = Change(files=tuple(p.file for p in chosen), notes=change.notes)
    said = note(len({p.path for p in chosen}))
    return prompt(shown, (*notes, said)), said
