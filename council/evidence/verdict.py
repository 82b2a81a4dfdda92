"""The verdict on one shown block, and the evidence of one text: plain, strict data.

``matched`` names the latest call of this turn that submitted the block, carries its
outcome as ``label`` and its exit code, and counts the others in ``also_matches``;
``unmatched`` carries one reason; never a "nearest" submission. JSON::

    {"block": 1, "label": "ok", "tool_call_id": "call_01", "tool": "run_script",
     "dispatch": 3, "also_matches": 1, "exit_code": 0}        # exit_code only when known
    {"block": 2, "label": "unmatched", "reason": "no-submission-this-turn"}

Frozen, no extra keys, ``label`` discriminates; a STORED one is read more strictly still
(:mod:`council.evidence.reader`). Source: docs/evidence-and-asks.md §1 ("The verdict").
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from council.evidence.outcomes import RunOutcome, exit_code_fits, exit_code_rule

UnmatchedReason = Literal["no-submission-this-turn", "over-size", "kept-out"]
"""Why a block matched nothing: no call of this turn submitted it; it is longer than a
script may be (never compared); it proposes a change (``diff``/``suggestion``), claiming
no run (never compared)."""

UNMATCHED_REASONS: tuple[UnmatchedReason, ...] = (
    "no-submission-this-turn",
    "over-size",
    "kept-out",
)
"""The closed vocabulary of :data:`UnmatchedReason`."""


class _Plain(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class MatchedBlock(_Plain):
    """A block that is exactly a program a call of this turn submitted.

    Raises pydantic's ``ValidationError`` when ``exit_code`` is one ``label`` cannot
    carry (:func:`~council.evidence.outcomes.exit_code_fits`).
    """

    block: int = Field(ge=1)
    """The block's position among the text's regions, from 1."""

    label: RunOutcome
    """The latest matching call's outcome."""

    tool_call_id: str = Field(min_length=1)
    tool: str = Field(min_length=1)
    dispatch: int = Field(ge=1)
    """The latest matching call's position in the turn, from 1."""

    also_matches: int = Field(ge=0)
    """How many OTHER calls of this turn submitted the same program."""

    exit_code: int | None = None
    """The latest matching call's exit code; None (absent in JSON) when it had none."""

    @model_validator(mode="after")
    def _exit_code_fits_label(self) -> Self:
        if not exit_code_fits(self.label, self.exit_code):
            raise ValueError(
                f"exit_code {self.exit_code} does not fit label {self.label!r}: "
                f"{exit_code_rule(self.label)}"
            )
        return self


class UnmatchedBlock(_Plain):
    """A block no call of this turn can be credited with, and why. Names no call."""

    block: int = Field(ge=1)
    """The block's position among the text's regions, from 1."""

    label: Literal["unmatched"] = "unmatched"
    reason: UnmatchedReason


Verdict = Annotated[MatchedBlock | UnmatchedBlock, Field(discriminator="label")]
"""A union discriminated by ``label``: one of the outcomes, or ``unmatched``."""

VERDICT: TypeAdapter[MatchedBlock | UnmatchedBlock] = TypeAdapter(Verdict)
"""Validates one verdict's JSON value (created once, at import)."""


class Evidence(BaseModel):
    """What the matcher found in one text against one turn's submissions.

    JSON: ``{"blocks": [verdict, ...], "regions_dropped", "earlier_turn_rows",
    "prose"}`` (:func:`evidence_json`); ``Evidence.model_validate`` reads that object
    back with strict types, raising pydantic's ``ValidationError``. Stored verdicts are
    read with :func:`council.evidence.reader.read_verdicts`, which also refuses a
    ``null`` and counts what it refuses instead of raising.
    Source: docs/evidence-and-asks.md §1.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    blocks: tuple[Verdict, ...] = ()
    """One verdict per region read (at most 64), in text order."""

    regions_dropped: int = Field(default=0, ge=0, strict=True)
    """Regions past the 64 read: not judged, left in the prose."""

    earlier_turn_rows: int = Field(default=0, ge=0, strict=True)
    """Calls of earlier turns: counted, never compared."""

    prose: str = Field(default="", strict=True)
    """The text with every MATCHED block cut out as whole lines (fence lines included):
    what the other checks read as prose. Unmatched, kept-out and dropped blocks stay."""

    @property
    def matched(self) -> tuple[MatchedBlock, ...]:
        """The verdicts that credit a call, in text order."""
        return tuple(v for v in self.blocks if isinstance(v, MatchedBlock))


def verdict_json(verdict: MatchedBlock | UnmatchedBlock) -> dict[str, Any]:
    """The JSON object of one verdict: keys in the model's order, ``exit_code`` only when
    the call had one (never ``null``). Never raises."""
    return verdict.model_dump(mode="json", exclude_none=True)


def evidence_json(evidence: Evidence) -> dict[str, Any]:
    """The JSON object of an :class:`Evidence`, in the shape of an evidence case's
    ``expect``. Never raises."""
    return {
        "blocks": [verdict_json(v) for v in evidence.blocks],
        "regions_dropped": evidence.regions_dropped,
        "earlier_turn_rows": evidence.earlier_turn_rows,
        "prose": evidence.prose,
    }
