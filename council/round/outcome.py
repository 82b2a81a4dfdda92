"""What one participant's review came to: answered, stopped or failed, with its harvest.

:func:`harvest_outcome` is the one rule that turns a backend's result plus every attempt's
journal into a :class:`ParticipantOutcome`, in embedded and distributed mode alike.

Source: docs/harvest.md §5 (every attempt's journal is folded), §7 (stops are not failures).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from council.evidence import ScriptRow
from council.evidence.policy import UnverifiedPolicy, turn_of, with_evidence
from council.harvest import (
    ANSWER_MAX_ENTRIES,
    DEFAULT_CAPS,
    JournalCaps,
    fold_journal,
    harvest,
    read_journal,
)
from council.model.backend_result import ReviewResult, Stop, Usage
from council.model.findings import Harvest, Read, Warning
from council.model.participant import Role

Status = Literal["answered", "stopped", "failed", "asking"]
"""``asking``: a model reviewer paused on a question to a person (``ask_human``); its
conversation waits in the run's store and goes on once answered."""

UNREAD_CODES = frozenset({"said-nothing", "no-json", "no-findings-array"})
"""Answer-level codes meaning nothing at all could be read from the answer."""

ANSWER_SHAPE_CODES = frozenset(
    {"said-nothing", "no-json", "no-findings-array", "cut-off", "malformed-json", "bare-array"}
)
"""Answer-level complaints about the shape of a text; replaced by ``stopped`` for a stop.

``several-lists`` and ``over-cap`` are not among them: the first warns about where the
kept findings came from (a quoted list may be among them), the second is a cut the
harvest made, which must never be silent (docs/harvest.md §6)."""


def _unreadable(h: Harvest) -> bool:
    """Whether nothing at all could be read from an answer (blank, no JSON, no list)."""
    return any(w.at == "answer" and w.code in UNREAD_CODES for w in h.warnings)


def unread_code(outcome: ParticipantOutcome) -> str | None:
    """The code saying an ANSWERED participant's answer could not be read, or None.

    Why: "the reviewer had nothing to say" and "we could not read what it said" must
    not look alike (docs/harvest.md principle 2); such a participant does not count towards
    the quorum.
    """
    if outcome.status != "answered":
        return None
    for w in outcome.harvest.warnings:
        if w.at == "answer" and w.code in UNREAD_CODES:
            return w.code
    return None


READ_IN_PART_CODES = ("cut-off", "malformed-json", "over-cap")
"""Answer-level codes meaning the answer was read only up to a break (docs/harvest.md §3.3) or
up to the reading cap (§6): the entries before it were kept, any after it were never
read."""

JOURNAL_CUT = "journal-over-cap"
"""The journal code meaning we left recorded entries unread (over the entry count or an
entry's size, docs/harvest.md §5): what they held is unknown, so the reviewer was heard
in part, as for an answer over its cap."""

BROKE_OFF_CODES = ("exit-status", "unanalyzed", "journal-lost", "cut-off", JOURNAL_CUT)
"""Backend codes (:attr:`ParticipantOutcome.broke_off`) meaning the same: the reviewer
ended badly after its answer (``exit-status``), printed more than its stdout cap, whose
middle was not read (``cut-off``, even when what was kept still parses), or said it did
not analyze some of the change (``unanalyzed``: a SARIF analyzer's invocation
notifications), so what it would have said of the rest is unknown; or Redis lost
journal entries it had said it kept (``journal-lost``: a failover to a replica that had
not received them); or a program's journal line was over the line cap or refused by
the store (:data:`JOURNAL_CUT`)."""


def read_in_part_code(outcome: ParticipantOutcome) -> str | None:
    """The code saying an ANSWERED participant's answer was read only in part, or None.

    ``cut-off`` when the text ended inside the findings list (``harvest.truncated``, a
    reply cut at the output limit, a stdout over its cap), ``malformed-json`` when the
    list broke at an entry that is not JSON, ``over-cap`` when the answer held more
    entries than the harvest's reading cap (docs/harvest.md §6) and the rest were not read,
    :data:`JOURNAL_CUT` when journal entries were left unread at their caps (§5).
    None when the answer was read whole or could not be read at all (that is
    :func:`unread_code`).

    Why: whatever came after the break is unknown, so such a participant was not heard in
    full: the run is partial and it does not count towards the quorum, exactly like a
    stopped reviewer whose findings were kept. A cut the harvest made itself is no
    different: what it did not read may hold the finding that matters.
    """
    if outcome.status != "answered" or unread_code(outcome) is not None:
        return None
    if outcome.broke_off is not None:
        return outcome.broke_off
    for w in outcome.harvest.warnings:
        if w.at == "answer" and w.code in READ_IN_PART_CODES:
            return w.code
    if outcome.harvest.truncated:
        return "cut-off"
    if any(w.code == JOURNAL_CUT for w in outcome.harvest.warnings):
        return JOURNAL_CUT
    return None


def heard_in_full(outcome: ParticipantOutcome) -> bool:
    """Whether a participant answered and its answer was read whole (neither unread nor
    read only in part)."""
    return (
        outcome.status == "answered"
        and unread_code(outcome) is None
        and read_in_part_code(outcome) is None
    )


class ParticipantOutcome(BaseModel):
    """The settled result of one participant in one run (small, JSON, Celery-safe).

    * ``status``: ``answered`` (a normal answer), ``stopped`` (our clocks, a cancel or a
      lost worker stopped it; what was read is kept), ``failed`` (no findings; ``failure``
      says why, verbatim).
    * ``harvest``: findings (no ids, no origins yet) and warnings.
    * ``attempts``: how many task attempts ran; all their journals were folded.
    * ``duration_ms``: wall time of the last attempt's backend call.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    participant: str
    role: Role = "reviewer"
    status: Status
    harvest: Harvest = Harvest()
    stop: Stop | None = None
    failure: str | None = None
    attempts: int = 1
    duration_ms: int = 0
    journal_entries: int = 0
    answer_chars: int = 0
    usage: Usage | None = None
    """Tokens a model reviewer used over every request of its last attempt."""
    notes: tuple[str, ...] = ()
    """What the backend did to the answer or journal that is neither a stop nor a
    failure ("stdout was over … the middle was dropped"), for the report."""
    broke_off: str | None = None
    """The backend's reason the answer is not whole though it was read, one of
    :data:`BROKE_OFF_CODES` (``exit-status``: the program exited non-zero or was killed
    after printing it); see :func:`read_in_part_code`."""
    slices: int = 1
    """How many slices of the change it was sent (:mod:`council.round.slice_outcomes`)."""


@dataclass(frozen=True)
class ReadingPolicy:
    """How a run's answers and journals are read into outcomes: one value per run, so a
    worker folding an attempt and the settling folding a lost one read alike.

    ``read``: the commit the reviewers read, stamped on every anchor (None: no witness);
    ``caps``: the journal's reading caps (docs/harvest.md §5); ``answer_max_entries``:
    the answer's (§6); ``unverified_scripts``: the policy for a critical finding whose
    shown script did not run this turn (:mod:`council.evidence.policy`).
    """

    read: Read | None = None
    caps: JournalCaps = DEFAULT_CAPS
    answer_max_entries: int = ANSWER_MAX_ENTRIES
    unverified_scripts: UnverifiedPolicy = "demote"


DEFAULT_READING = ReadingPolicy()
"""The defaults of every cap and policy, with no witness (tests, one-off readings)."""


def harvest_outcome(
    participant: str,
    role: Role,
    result: ReviewResult | None,
    journals: Sequence[Sequence[str | bytes]],
    *,
    policy: ReadingPolicy = DEFAULT_READING,
    attempts: int = 1,
    lost: Stop | None = None,
    scripts: Sequence[Sequence[ScriptRow]] | None = None,
) -> ParticipantOutcome:
    """Harvest one participant's answer and fold every attempt's journal into its outcome.

    ``journals``: each attempt's raw entries, in attempt order, read as one journal so a
    redelivered task keeps what a dead attempt wrote down. ``result`` None (no attempt
    returned): a stop with ``lost`` (default ``worker-lost``) from the journals alone. A judge's
    journal is read only when its answer could not be read at all. A failure keeps no answer
    findings but files its journal; a stop replaces answer-shape complaints with ``stopped``.
    ``scripts`` (None: no script tool): each attempt's rows; findings are matched against
    attempt ``attempts``' and held to ``policy.unverified_scripts``.
    Source: docs/harvest.md §5, §7, §8; docs/evidence-and-asks.md §1.
    """
    read = policy.read
    entries: list[str | bytes] = [raw for attempt in journals for raw in attempt]
    reading = read_journal(entries, policy.caps)
    if result is None:
        stop: Stop | None = lost or Stop(limit="worker-lost")
        answer, failure, duration_ms = "", None, 0
    else:
        stop, answer, failure = result.stop, result.answer, result.failure
        duration_ms = result.duration_ms
    answered = harvest(
        "" if failure is not None else answer, read, max_entries=policy.answer_max_entries
    )
    if role == "judge" and not _unreadable(answered):
        # A judge's answer is its decision, even an empty one; its journal is only a
        # fallback for an answer that could not be read at all (docs/harvest.md §8).
        folded = answered
    else:
        folded = fold_journal(answered, reading, read)
    if scripts is not None:
        folded = with_evidence(folded, turn_of(scripts, attempts), policy.unverified_scripts)
    status: Status = "failed" if failure is not None else "stopped" if stop else "answered"
    if status == "answered" and result is not None and result.paused is not None:
        status = "asking"
    warnings = list(folded.warnings)
    if status == "asking":  # no answer yet: it comes once the person answered
        warnings = [w for w in warnings if w.code not in ANSWER_SHAPE_CODES]
    elif status == "failed":
        warnings = [w for w in warnings if w.code not in ANSWER_SHAPE_CODES]
        warnings.append(
            Warning(code="failed", at=participant, message=failure or "no reason given")
        )
    elif stop is not None:
        warnings = [w for w in warnings if w.code not in ANSWER_SHAPE_CODES]
        kept = len(folded.findings)
        warnings.append(
            Warning(
                code="stopped",
                at=participant,
                message=(
                    f"{participant} was stopped by {stop.describe()}; {kept} finding(s) "
                    f"were kept from what it had written, and the pass is partial."
                ),
            )
        )
    return ParticipantOutcome(
        participant=participant,
        role=role,
        status=status,
        harvest=Harvest(
            findings=folded.findings,
            warnings=tuple(warnings),
            truncated=folded.truncated or stop is not None,
        ),
        stop=stop,
        failure=failure,
        attempts=attempts,
        duration_ms=duration_ms,
        journal_entries=len(entries),
        answer_chars=len(answer),
        notes=result.notes if result is not None else (),
        usage=result.usage if result is not None else None,
        broke_off=result.broke_off if result is not None and status == "answered" else None,
    )
