"""One participant's outcome from the outcomes of its slices.

A participant reviewed in slices (:mod:`council.slicing`) ran one task per slice, each
with its own attempts and journal, each settled to its own outcome. The report knows the
participant, so they are folded into one: every slice's findings and warnings are kept
(nothing a reviewer said is lost); it ``answered`` only if every slice answered, else it
is ``failed`` when a slice failed, ``stopped`` when a slice was stopped (or ``asking``
when one waits on a person), and the failure or stop names the slices.
Source: docs/architecture.md "Slices".
"""

from __future__ import annotations

from collections.abc import Sequence

from council.model.backend_result import Usage
from council.model.findings import Harvest, Warning
from council.round.outcome import ParticipantOutcome, Status


def fold_slices(participant: str, outcomes: Sequence[ParticipantOutcome]) -> ParticipantOutcome:
    """``participant``'s outcome from its slices' ``outcomes`` (in slice order, >= 1).

    Findings, warnings, journal entries, answer characters and usage add up; ``attempts``
    is the most any slice took and ``duration_ms`` the longest slice (they ran side by
    side); ``slices`` is their count. The status is the worst of theirs (failed, stopped,
    asking, answered), and ``failure`` and ``stop`` name which slices failed or stopped.
    """
    count = len(outcomes)
    failed = [(k, o) for k, o in enumerate(outcomes, start=1) if o.status == "failed"]
    stopped = [(k, o) for k, o in enumerate(outcomes, start=1) if o.status == "stopped"]
    asking = any(o.status == "asking" for o in outcomes)
    status: Status = (
        "failed" if failed else "stopped" if stopped else "asking" if asking else "answered"
    )
    failure = (
        "; ".join(f"slice {k} of {count} failed: {o.failure}" for k, o in failed)
        if failed
        else None
    )
    stop = stopped[0][1].stop if stopped else None
    notes = [
        f"slice {k} of {count} was stopped by {o.stop.describe() if o.stop else 'a stop'}"
        for k, o in stopped
    ]
    notes += [
        f"slice {k} of {count}: {n}" for k, o in enumerate(outcomes, start=1) for n in o.notes
    ]
    broke = [o.broke_off for o in outcomes if o.broke_off is not None]
    return ParticipantOutcome(
        participant=participant,
        role=outcomes[0].role,
        status=status,
        harvest=Harvest(
            findings=tuple(f for o in outcomes for f in o.harvest.findings),
            warnings=tuple(_owned(w, participant) for o in outcomes for w in o.harvest.warnings),
            truncated=any(o.harvest.truncated for o in outcomes),
        ),
        stop=stop,
        failure=failure,
        attempts=max(o.attempts for o in outcomes),
        duration_ms=max(o.duration_ms for o in outcomes),
        journal_entries=sum(o.journal_entries for o in outcomes),
        answer_chars=sum(o.answer_chars for o in outcomes),
        usage=_usage([o.usage for o in outcomes if o.usage is not None]),
        notes=tuple(notes),
        broke_off=broke[0] if broke and status == "answered" else None,
        slices=count,
    )


def _owned(warning: Warning, participant: str) -> Warning:
    """A slice's warning about itself (``at`` its unit id) as one about ``participant``,
    its message still naming the slice."""
    if warning.at.startswith(participant + "@"):
        return warning.model_copy(update={"at": participant})
    return warning


def _usage(usages: Sequence[Usage]) -> Usage | None:
    """The slices' token counts added up; None when no slice used any."""
    if not usages:
        return None
    return Usage(
        input=sum(u.input for u in usages),
        output=sum(u.output for u in usages),
        cached=sum(u.cached for u in usages),
        reasoning=sum(u.reasoning for u in usages),
        requests=sum(u.requests for u in usages),
        cache_write=sum(u.cache_write for u in usages),
    )
