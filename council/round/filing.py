"""Filing a run: from every participant's outcome to the findings it files and its report.

The same rule runs in the consolidation task, the errback finalizer and the waiting CLI's
watchdog, so a council settles the same way whoever settles it. Source: docs/harvest.md §8
(file in roster order, merge across reviewers), docs/architecture.md (the shape).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from council.change.commentable import resolve_findings
from council.change.diff import Change
from council.merging.agreement import best_agreeing
from council.merging.consolidation import consolidate, with_origin
from council.merging.sameness import says_the_same
from council.model.findings import Agreement, Finding, Member, Origin, Warning
from council.model.occurrence import AddedLines, CodeReader, stamp
from council.model.participant import PROGRAM_BACKENDS, Participant
from council.model.report import (
    ChangeSize,
    CouncilReport,
    ParticipantSummary,
    RunStatus,
    Suppression,
)
from council.round.cost import PriceTable, cost_usd, saved_usd, sum_costs, sum_savings
from council.round.outcome import ParticipantOutcome, heard_in_full, read_in_part_code, unread_code
from council.round.overrule import OVERRULE_OPTION, Overrule
from council.session.remembered import file_recalled, kept_ids


@dataclass(frozen=True)
class RoundFacts:
    """What the report says about the run besides its outcomes (times in ms)."""

    run_id: str
    session: str
    repository: str = ""
    base: str = ""
    head: str = ""
    mode: str = "embedded"
    notes: tuple[str, ...] = ()
    created_ms: int = 0
    prices: PriceTable = field(default_factory=PriceTable)


def round_status(
    participants: Sequence[Participant],
    outcomes: Mapping[str, ParticipantOutcome],
    forced: RunStatus | None = None,
) -> RunStatus:
    """``settled`` when every participant was heard in full (it answered, and its answer
    was read whole: :func:`council.round.outcome.heard_in_full`); else ``partial`` (or
    ``forced``)."""
    if forced is not None:
        return forced
    whole = all(p.id in outcomes and heard_in_full(outcomes[p.id]) for p in participants)
    return "settled" if whole else "partial"


@dataclass(frozen=True)
class Heard:
    """What one participant said in a round, as the filing reads it.

    ``summary``: its report line (whether it was heard in full decides the n of "k of
    n"); ``findings``: what it told, no ids (the filing sets their origins); ``warnings``:
    its harvest's, placed under it by the filing; ``notes``: sentences for the report,
    each already naming who said it (``hawk: stdout was cut …``). A review builds it from
    an outcome (:func:`conclude_round`), ``council consolidate`` from the files it reads
    (:mod:`council.readers.report_files`): one filing for both.
    """

    summary: ParticipantSummary
    findings: Sequence[Finding] = ()
    warnings: Sequence[Warning] = ()
    notes: Sequence[str] = ()
    programs: Sequence[bool] = ()
    """Whether each of ``findings`` is a program's telling (an analyzer's: it merges only
    on its own lines and rule); empty: all are, or none, as the summary's backend says."""

    def program_tellings(self) -> list[bool]:
        """Whether each of ``findings`` is a program's telling."""
        if len(self.programs) == len(self.findings):
            return [bool(p) for p in self.programs]
        return [self.summary.backend in PROGRAM_BACKENDS] * len(self.findings)


def heard_from(p: Participant, outcome: ParticipantOutcome | None, prices: PriceTable) -> Heard:
    """What ``p`` said in a review: its summary (:func:`summarize`), its harvest, its
    backend's notes (nothing but a ``pending`` line when it has no outcome yet)."""
    summary = summarize(p, outcome, prices)
    if outcome is None:
        return Heard(summary)
    return Heard(
        summary,
        outcome.harvest.findings,
        outcome.harvest.warnings,
        tuple(f"{p.id}: {note}" for note in outcome.notes),
    )


def conclude_round(
    facts: RoundFacts,
    participants: Sequence[Participant],
    outcomes: Mapping[str, ParticipantOutcome],
    first_id: int,
    *,
    status: RunStatus,
    settled_ms: int,
    change: Change | None = None,
    remembered: Sequence[Finding] = (),
    code: CodeReader | None = None,
    added: AddedLines | None = None,
) -> tuple[list[Finding], CouncilReport]:
    """File a review's round: :func:`file_round` of what each participant said
    (:func:`heard_from`), in ROSTER order.

    ``outcomes`` must hold one outcome per participant (the caller settles the missing
    ones as stops first).
    """
    heard = [heard_from(p, outcomes.get(p.id), facts.prices) for p in participants]
    return file_round(
        facts,
        heard,
        first_id,
        status=status,
        settled_ms=settled_ms,
        change=change,
        remembered=remembered,
        code=code,
        added=added,
    )


def file_round(
    facts: RoundFacts,
    heard: Sequence[Heard],
    first_id: int,
    *,
    status: RunStatus,
    settled_ms: int | None,
    change: Change | None = None,
    remembered: Sequence[Finding] = (),
    code: CodeReader | None = None,
    added: AddedLines | None = None,
) -> tuple[list[Finding], CouncilReport]:
    """Merge, number and report one round's findings: ``(filed findings, report)``.

    Merged in ROSTER order (``heard``'s) by :func:`council.merging.consolidation.consolidate`:
    one function, so a review and ``council consolidate`` mean the same "k of n". A
    ``raisedBy`` an ordinary reviewer wrote is dropped with a note. With ``change``, anchor
    paths are first read as repository paths (:func:`council.change.commentable.resolve_findings`).
    The report states the size of ``change`` (:func:`change_size`) when there is one.
    A finding recognized among ``remembered`` keeps its id
    (:func:`council.session.remembered.file_recalled`), the others take ids from ``first_id``.
    ``code`` reads the head tree the reviewers read: each consolidated finding's anchor and
    its members' are given their occurrence (:func:`council.model.occurrence.stamp`) before
    they are recognized, so a fingerprint names the code (None: anchors stay as they are);
    ``added``: the pull request's added lines, which count last among identical code.
    ``settled_ms``: ms since the epoch (None: no clock read). Raises ValueError as
    :func:`council.merging.consolidation.file_findings` does.
    """
    tellings, uncredited = _participant_findings(facts, heard, change)
    whole = [h.summary.id for h in heard if h.summary.heard_in_full]
    kinds = [h.program_tellings() for h in heard]
    merged = consolidate(tellings, heard=whole, change=change, programs=kinds)
    if code is not None:
        merged = stamp(merged, code, added)
    programs = {h.summary.id for h in heard if h.summary.backend in PROGRAM_BACKENDS}
    roster = [h.summary.id for h in heard]
    filed, reworded = file_recalled(merged, first_id, remembered, roster, programs)
    summaries = tuple(h.summary for h in heard)
    warnings = [_attributed(w, h.summary.id) for h in heard for w in h.warnings]
    notes = [note for h in heard for note in h.notes]
    costs = sum_costs(s.cost_usd for s in summaries if s.usage is not None)
    report = CouncilReport(
        run_id=facts.run_id,
        cost_usd=costs.total_usd,
        cost_complete=costs.complete,
        saved_usd=sum_savings(s.saved_usd for s in summaries),
        session=facts.session,
        repository=facts.repository,
        base=facts.base,
        head=facts.head,
        status=status,
        mode="distributed" if facts.mode == "distributed" else "embedded",
        participants=summaries,
        findings=tuple(filed),
        warnings=tuple(warnings),
        notes=(*facts.notes, *notes, *uncredited),
        created_ms=facts.created_ms,
        settled_ms=settled_ms,
        seen_by_agreement=reworded,
        reviewed=change_size(change) if change is not None else None,
    )
    return filed, report


def change_size(change: Change) -> ChangeSize:
    """How much ``change`` holds: its files, and the lines they add and remove."""
    return ChangeSize(
        files=len(change.files),
        added=sum(f.added for f in change.files),
        removed=sum(f.removed for f in change.files),
    )


def _participant_findings(
    facts: RoundFacts, heard: Sequence[Heard], change: Change | None
) -> tuple[list[tuple[str, list[Finding]]], list[str]]:
    """Each participant's findings, in roster order, with their origin set and their
    anchor paths read against the change (so two spellings of one path can merge); and
    a note for each reviewer whose own ``raisedBy`` was dropped (docs/harvest.md §8: a
    reviewer's claim that others agree is not agreement; the consolidation credits)."""
    roots = (facts.repository,) if facts.repository else ()
    tellings: list[tuple[str, list[Finding]]] = []
    notes: list[str] = []
    for h in heard:
        who, role = h.summary.id, h.summary.role
        found = h.findings
        if change is not None:
            found = resolve_findings(found, change, roots)
        crediting = sum(1 for f in found if f.raised_by)
        if crediting and role != "judge":
            found = [f.model_copy(update={"raised_by": None}) for f in found]
            notes.append(
                f"{who}: raisedBy on {crediting} finding(s) was dropped: a reviewer does "
                "not credit raisers, the consolidation does"
            )
        program = h.summary.backend in PROGRAM_BACKENDS
        origin = Origin(kind=role, run_id=facts.run_id, participant=who, program=program)
        tellings.append((who, with_origin(found, origin)))
    return tellings, notes


def summarize(
    p: Participant, outcome: ParticipantOutcome | None, prices: PriceTable
) -> ParticipantSummary:
    """The report's line for one participant: its state, stop or failure, what was read,
    its usage and cost (``pending`` with nothing when it has no outcome yet)."""
    if outcome is None:
        return ParticipantSummary(
            id=p.id,
            role=p.role,
            backend=p.backend,
            model=p.model,
            state="pending",
            optional=p.optional,
        )
    return ParticipantSummary(
        id=p.id,
        role=p.role,
        backend=p.backend,
        model=p.model,
        optional=p.optional,
        state=outcome.status,
        stop=outcome.stop,
        failure=outcome.failure,
        findings=len(outcome.harvest.findings),
        warnings=len(outcome.harvest.warnings),
        attempts=outcome.attempts,
        duration_ms=outcome.duration_ms,
        slices=outcome.slices,
        unread=unread_code(outcome),
        read_in_part=read_in_part_code(outcome),
        usage=outcome.usage,
        cost_usd=(
            cost_usd(outcome.usage, p.backend, p.model, prices)
            if outcome.usage is not None
            else None
        ),
        saved_usd=(
            saved_usd(outcome.usage, p.backend, p.model, prices)
            if outcome.usage is not None
            else None
        ),
    )


def _attributed(warning: Warning, participant: str) -> Warning:
    """Prefix an entry-level warning's place with its participant (``hawk: findings[2]``)."""
    if warning.at == participant:
        return warning
    return warning.model_copy(update={"at": f"{participant}: {warning.at}"})


def read_whole(outcome: ParticipantOutcome) -> bool:
    """Whether a judge's answer was read whole, so leaving a finding out is a verdict.

    True only for a judge heard in full (:func:`council.round.outcome.heard_in_full`: it
    answered, and its answer was neither unreadable nor cut off nor broken off nor over
    the reading cap; a bare array is whole) whose entries all could be read (an entry
    that could not may have restated a filed finding). Source: docs/harvest.md §3.3 (a
    cut-off list: absence means unknown), §6 (the reading cap), §8.
    """
    if not heard_in_full(outcome):
        return False
    return not any(w.at.startswith("findings[") for w in outcome.harvest.warnings)


def conclude_judge(
    interim: CouncilReport,
    judge: Participant,
    outcome: ParticipantOutcome,
    first_id: int,
    *,
    status: RunStatus,
    settled_ms: int,
    prices: PriceTable | None = None,
    change: Change | None = None,
    remembered: Sequence[Finding] = (),
    code: CodeReader | None = None,
    added: AddedLines | None = None,
) -> tuple[list[Finding], CouncilReport]:
    """Apply the judge's consolidated answer to the reviewers' filed findings; settle.

    A judge finding that says the same as a filed one updates it in place, under its id (its
    anchor, label, severity, confidence; its raisers joined); one matching none is filed new
    (origin judge, an id from ``first_id`` or a ``remembered`` one:
    :func:`council.session.remembered.kept_ids`); credited ids not of the round are dropped with
    a note. A filed finding left out is suppressed ("not upheld") only when the judge was read
    WHOLE (:func:`read_whole`), else its silence is unknown, not a verdict; a program
    reviewer's stays (:mod:`council.round.overrule`). ``change`` and ``code``: as in
    :func:`file_round` (the judge's findings are given their occurrence).
    Returns ``(findings to write, report)``; nothing is dropped. Source: docs/harvest.md §8,
    docs/architecture.md (chord → judge → settle).
    """
    origin = Origin(kind="judge", run_id=interim.run_id, participant=judge.id, program=False)
    verdicts, strangers = _credited_on_roster(_verdicts(interim, outcome, change), interim)
    if code is not None:
        verdicts = stamp(verdicts, code, added)
    may = Overrule.of(interim.participants, judge.options.get(OVERRULE_OPTION))
    updated, filed = _match_verdicts(interim.findings, verdicts, origin, first_id, may)
    own = {f.id for f in interim.findings if f.id is not None}
    earlier = [f for f in remembered if f.id not in own]
    roster = [p.id for p in interim.participants]
    programs = {p.id for p in interim.participants if p.backend in PROGRAM_BACKENDS}
    filed, reworded = kept_ids(filed, first_id, earlier, roster, programs)
    updated = {i: may.restated(f, updated[i]) for f in interim.findings if (i := f.id) in updated}
    suppressed = dict(interim.suppressed)
    if read_whole(outcome):
        suppressed.update(_not_upheld(interim, updated, judge, may))
    everyone = (*interim.participants, summarize(judge, outcome, prices or PriceTable()))
    costs = sum_costs(s.cost_usd for s in everyone if s.usage is not None)
    report = interim.model_copy(
        update={
            "status": status,
            "cost_usd": costs.total_usd,
            "cost_complete": costs.complete,
            "saved_usd": sum_savings(s.saved_usd for s in everyone),
            "participants": everyone,
            "findings": (
                *(updated.get(f.id, f) if f.id is not None else f for f in interim.findings),
                *filed,
            ),
            "suppressed": suppressed,
            "warnings": (
                *interim.warnings,
                *(_attributed(w, judge.id) for w in outcome.harvest.warnings),
            ),
            "notes": (
                *interim.notes,
                *_judge_notes(judge, outcome, strangers),
                *(may.note(judge.id, interim, updated) if read_whole(outcome) else ()),
            ),
            "settled_ms": settled_ms,
            "seen_by_agreement": {**interim.seen_by_agreement, **reworded},
        }
    )
    return [*updated.values(), *filed], report


def _verdicts(
    interim: CouncilReport, outcome: ParticipantOutcome, change: Change | None
) -> Sequence[Finding]:
    """The judge's findings, their anchor paths read against the change (as a round's)."""
    if change is None:
        return outcome.harvest.findings
    roots = (interim.repository,) if interim.repository else ()
    return resolve_findings(outcome.harvest.findings, change, roots)


def _credited_on_roster(
    verdicts: Sequence[Finding], interim: CouncilReport
) -> tuple[list[Finding], list[str]]:
    """The verdicts with ``raised_by`` kept to the round's participants, and the ids left
    out (first seen first). Why: the judge names raisers; it cannot invent them."""
    roster = {p.id for p in interim.participants}
    strangers: list[str] = []
    kept: list[Finding] = []
    for verdict in verdicts:
        named = verdict.raised_by or ()
        strangers += [r for r in named if r not in roster and r not in strangers]
        if any(r not in roster for r in named):
            on_roster = tuple(r for r in named if r in roster)
            verdict = verdict.model_copy(update={"raised_by": on_roster or None})
        kept.append(verdict)
    return kept, strangers


def _match_verdicts(
    filed: Sequence[Finding],
    verdicts: Sequence[Finding],
    origin: Origin,
    first_id: int,
    may: Overrule,
) -> tuple[dict[int, Finding], list[Finding]]:
    """Each verdict updates one filed finding it restates (each filed finding at most
    once), or is filed new with ids from ``first_id``. Returns (filed id → updated
    finding, new findings).

    A verdict restates the first open filed finding that ``says_the_same`` as it or as
    one of its members (docs/harvest.md §5); else the one the agreement relation scores
    highest with it, at or above its threshold (the judge reworded it), ties in filing
    order. A restatement whose ``raisedBy`` names only some of a consolidated finding's
    members SPLITS it (the judge thinks the merge wrong; its restatement wins): the
    finding keeps the members it names; a new verdict naming the others takes them;
    members no verdict names are filed alone, as new findings that gate as any does
    (they are not "not upheld": the judge ruled on the merge, not on them), so a wrong
    merge never loses a telling. A finding the judge may not overrule
    (``may``: a program's telling is in it) is never split: splitting it would take a
    raiser from the analyzer's finding, and with it, under ``--min-agreement``, its gate.
    """
    updated: dict[int, Finding] = {}
    new: list[Finding] = []
    left: list[Member] = []
    heard = 1
    open_ones = [f for f in filed if f.id is not None]
    for verdict in verdicts:
        match = _restates(open_ones, updated, verdict)
        if match is None or match.id is None:
            new.append(verdict.model_copy(update={"origin": origin, "id": first_id + len(new)}))
            continue
        restated, split_off = _restated(match, verdict, split=may.rules(match))
        updated[match.id] = restated
        left.extend(split_off)
        heard = max(heard, match.agreement.n if match.agreement is not None else 1)
    new = [_taking(f, left, heard) for f in new]
    for member in left:
        new.append(member.as_finding().model_copy(update={"id": first_id + len(new)}))
    return updated, new


def _restates(
    filed: Sequence[Finding], updated: Mapping[int, Finding], verdict: Finding
) -> Finding | None:
    """The open filed finding a verdict restates, or None (see :func:`_match_verdicts`)."""
    candidates = [f for f in filed if f.id not in updated]
    for f in candidates:
        if says_the_same(f, verdict) or any(
            says_the_same(m.as_finding(), verdict) for m in f.members or ()
        ):
            return f
    at = best_agreeing(verdict, candidates)
    return candidates[at] if at is not None else None


def _taking(verdict: Finding, left: list[Member], heard: int) -> Finding:
    """A new judge finding takes the split-off members its ``raisedBy`` names (removed
    from ``left``); ``heard``: the n of the agreement of the findings split."""
    named = set(verdict.raised_by or ())
    taken = [m for m in left if m.participant in named]
    if not taken:
        return verdict
    for m in taken:
        left.remove(m)
    update: dict[str, object] = {"agreement": Agreement(k=len(named), n=max(heard, len(named)))}
    if len(taken) >= 2:
        update["members"] = tuple(taken)
    return verdict.model_copy(update=update)


def _restated(match: Finding, verdict: Finding, split: bool) -> tuple[Finding, list[Member]]:
    """A filed finding as the judge restated it, and the members it split off.

    The judge's subject (when it reworded it), discussion (when it gave one), anchor,
    label, severity and confidence (its corrections). ``raised_by``: with the judge's
    ``raisedBy`` naming only some members and ``split`` allowed, those members and any
    member saying the same as the verdict word for word (a split); otherwise the filed
    raisers joined to the ones it names.
    """
    named = verdict.raised_by or ()
    members = list(match.members or ())
    kept = [m for m in members if m.participant in named or says_the_same(m.as_finding(), verdict)]
    split_off: list[Member] = []
    raisers: list[str | None]
    if split and members and named and kept and len(kept) < len(members):
        split_off = [m for m in members if m.participant not in named]
        raisers = [m.participant for m in kept]
        raisers += [r for r in named if r not in raisers]
    else:
        kept = members
        raisers = list(match.raised_by or ((match.origin.participant,) if match.origin else ()))
        raisers += [r for r in named if r not in raisers]
    raised = tuple(r for r in raisers if r)
    update: dict[str, object] = {
        "subject": verdict.subject,
        "discussion": verdict.discussion or match.discussion,
        "anchor": verdict.anchor,
        "label": verdict.label,
        "severity": verdict.severity or match.severity,
        "confidence": verdict.confidence or match.confidence,
        "raised_by": raised or None,
        "members": tuple(kept) if len(kept) >= 2 else None,
    }
    if match.agreement is not None:
        k = max(1, len(raised))
        update["agreement"] = Agreement(k=k, n=max(match.agreement.n, k))
    return match.model_copy(update=update), split_off


def _not_upheld(
    interim: CouncilReport, updated: Mapping[int, Finding], judge: Participant, may: Overrule
) -> dict[int, Suppression]:
    """The filed findings a judge heard in full left out: kept and listed, suppressed
    (they neither gate nor post), when the judge may overrule them (``may``). Those
    already suppressed keep their reason."""
    return {
        f.id: Suppression(source="judge", reason=f"the judge {judge.id} did not uphold it")
        for f in interim.findings
        if f.id is not None
        and f.id not in updated
        and f.id not in interim.suppressed
        and may.rules(f)
    }


def _judge_notes(
    judge: Participant, outcome: ParticipantOutcome, strangers: Sequence[str]
) -> tuple[str, ...]:
    """The judge's backend notes, and one naming the raisers it credited off the roster."""
    notes = tuple(f"{judge.id}: {n}" for n in outcome.notes)
    if not strangers:
        return notes
    return (
        *notes,
        f"{judge.id}: credited raisers who are not on the roster "
        f"({', '.join(strangers)}); they were left out of raised_by",
    )
