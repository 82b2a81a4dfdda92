"""Each reviewer's prompts under its context budget: the whole change, or its slices.

A reviewer whose whole prompt fits its budget (less the answer's room and a margin for
the estimate's error) gets it as before, under its own id. One over it is sent slices: the
change cut (:mod:`council.slicing.pieces`) and packed (:mod:`council.slicing.packing`)
into the room its instructions leave, one prompt per slice under the unit id
``{id}@{k}`` (:func:`~council.model.participant.unit_id`). A budget that cannot hold the
instructions is refused (:class:`~council.errors.ContextTooSmall`, exit 2).
Pure and deterministic. Source: docs/architecture.md "Slices".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from council.change.diff import Change
from council.change.quoted_paths import shown
from council.errors import ContextTooSmall
from council.model.participant import Participant, SliceTag, unit_id
from council.roster.prompt import Prompt, prompt_parts
from council.slicing.packing import Slice, holders, pack, slice_section
from council.slicing.pieces import Skipped, cut_change
from council.slicing.tokens import answer_room, context_budget, estimate, ratio

MARGIN = 0.10
"""The share of a budget left unused for the estimate's error (docs/architecture.md
"Slices": the estimate errs high on code; this covers denser text)."""

MIN_DIFF_TOKENS = 1024
"""The least room for the diff a slice must have, in tokens: below it a budget is refused."""

SECTION_TOKENS = 1024
"""The most a slice's own section takes (what the other slices hold), in tokens."""


@dataclass(frozen=True)
class SlicePlan:
    """The round's prompts under the reviewers' budgets.

    ``prompts``: a reviewer's id (whole change) or its units' ids (slices) → prompt;
    ``slices``: a sliced reviewer's id → its slices' count (>= 2); ``shown``: each
    prompt's id → the paths it shows (in order); ``notes``: what no slice of a reviewer
    shows (a line over every budget), for the round's notes; ``cut``: a reviewer's id →
    the paths of which its prompts leave a line out, with the first such line's reason.
    """

    prompts: dict[str, Prompt]
    slices: dict[str, int] = field(default_factory=dict)
    shown: dict[str, tuple[str, ...]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    cut: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)

    def units(self, reviewers: Sequence[Participant]) -> tuple[Participant, ...]:
        """The slice units of ``reviewers`` (their current entries, so a later change to a
        reviewer, an output cap say, reaches its slices), in roster then slice order."""
        return tuple(
            p.model_copy(
                update={"id": unit_id(p.id, k), "slice": SliceTag(owner=p.id, index=k, count=n)}
            )
            for p in reviewers
            if (n := self.slices.get(p.id, 0)) > 1
            for k in range(1, n + 1)
        )


def usable(p: Participant, budget: int) -> int:
    """Tokens of ``budget`` a prompt of ``p`` may take: less :data:`MARGIN` and the
    answer's room."""
    return math.floor(budget * (1 - MARGIN)) - answer_room(p)


def plan_prompts(
    reviewers: Sequence[Participant],
    change: Change,
    personas: Mapping[str, str],
    notes: Sequence[str],
) -> SlicePlan:
    """Each reviewer's prompt, or its slices' prompts (see the module). Raises
    :class:`ContextTooSmall` for a budget whose instructions leave under
    :data:`MIN_DIFF_TOKENS` for the diff."""
    prompts: dict[str, Prompt] = {}
    counts: dict[str, int] = {}
    shown_: dict[str, tuple[str, ...]] = {}
    said: list[str] = []
    cut: dict[str, tuple[tuple[str, str], ...]] = {}
    cuts: dict[tuple[int, float], tuple[list[Slice], list[Skipped]]] = {}
    for p in reviewers:
        persona = personas.get(p.id)
        whole = prompt_parts(p, change, change.text, persona_text=persona, notes=notes)
        budget = context_budget(p)
        if budget is None:
            prompts[p.id], shown_[p.id] = whole, change.paths
            continue
        bpt = ratio(p)
        fits = usable(p, budget)
        if estimate(whole.text, bpt) <= fits:
            prompts[p.id], shown_[p.id] = whole, change.paths
            continue
        bare = prompt_parts(p, Change(notes=change.notes), "", persona_text=persona, notes=notes)
        overhead = estimate(bare.text, bpt) + 32  # the summary line's numbers, say
        section = max(256, min(SECTION_TOKENS, (fits - overhead) // 8))
        room = fits - overhead - section
        if room < MIN_DIFF_TOKENS:
            least = overhead + SECTION_TOKENS + MIN_DIFF_TOKENS + answer_room(p)
            needs = math.ceil(least / (1 - MARGIN))
            why = (
                f"its instructions take about {overhead} tokens, its answer "
                f"{answer_room(p)}, and a slice needs {section + MIN_DIFF_TOKENS} for the "
                f"diff and its place in the change, with {int(MARGIN * 100)}% kept for the "
                "estimate's error"
            )
            raise ContextTooSmall(p.id, budget, needs, why)
        key = (room, bpt)
        if key not in cuts:
            pieces, skipped = cut_change(change, room, bpt)
            cuts[key] = (pack(pieces, room), skipped)
        slices, skipped = cuts[key]
        if skipped:
            said.append(_skipped_note(p.id, budget, skipped))
            first: dict[str, str] = {}
            for line in skipped:
                first.setdefault(line.path, line.reason)
            cut[p.id] = tuple(first.items())
        held = holders(slices)
        count = len(slices)
        for index, s in enumerate(slices):
            pid = p.id if count == 1 else unit_id(p.id, index + 1)
            part = slice_section(slices, index, held, skipped, section, bpt) if count > 1 else None
            if count == 1 and skipped:
                part = slice_section(slices, 0, held, skipped, section, bpt)
            shown_slice = s.change(change.notes)
            prompt = prompt_parts(
                p, shown_slice, shown_slice.text, persona_text=persona, notes=notes, part=part
            )
            if estimate(prompt.text, bpt) > fits:  # never sent past the budget
                raise RuntimeError(
                    f"slice {index + 1} of {count} of {p.id} came out over its budget: a "
                    "bug in council.slicing (report it with the change's size)"
                )
            prompts[pid] = prompt
            shown_[pid] = tuple(dict.fromkeys(piece.path for piece in s.pieces))
        if count > 1:
            counts[p.id] = count
    return SlicePlan(prompts=prompts, slices=counts, shown=shown_, notes=tuple(said), cut=cut)


SKIPPED_SHOWN = 5
"""At most this many skipped lines are named in a reviewer's note."""


def _skipped_note(pid: str, budget: int, skipped: Sequence[Skipped]) -> str:
    """The round's note on what no slice of ``pid`` shows (no silent loss)."""
    named = "; ".join(f"{shown(s.path)} {s.reason}" for s in skipped[:SKIPPED_SHOWN])
    more = f" and {len(skipped) - SKIPPED_SHOWN} more" if len(skipped) > SKIPPED_SHOWN else ""
    return (
        f"{pid} was not shown {len(skipped)} line(s) of the change, each alone over its "
        f"context budget of {budget} tokens: {named}{more}"
    )
