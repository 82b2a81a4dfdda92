"""Decisions: a person's dismissals and the committed baseline, applied to a round's findings.

A dismissal (``council dismiss``, a "no" to a confirm-finding ask) and a baseline entry are
decisions about an OCCURRENCE: the code a person saw flagged, wherever it moves
(:mod:`council.model.occurrence`), never another place the same rule is raised. Sameness is
a claim, not a fact, so every way a decision may cover a finding is narrow, and what it
does not cover gates, with a note saying why:

1. **By fingerprint** (:func:`~council.model.fingerprint.fingerprint`: rule, path and
   anchored code): a dismissal covers one finding, a baseline entry its ``count``.
2. **A model's rewording at the same code**: a finding no program told that kept the
   dismissed finding's id, or that agrees with a dismissed finding or an entry with text
   (:func:`council.merging.agreement.recognize`), at the same path and occurrence.
3. **Written before occurrences were kept** (keyed by :func:`~council.model.fingerprint.
   claim`): only a finding of that claim whose anchored code the change did not touch
   (it was in the base as it is: :func:`untouched`), noted.

A decision never crosses kinds (:mod:`council.session.kinds`): a finding a program
reviewer told is covered only by a decision that lists that program's own telling (its
rule and occurrence); a graver finding than the one decided on is never covered. A
dismissal wins over the baseline. A decision carries to a finding at or above the gate's
``fail_on`` only while the block holding its code is as it was decided on
(:mod:`council.session.stale`). Pure. Source: docs/identity-and-clocks.md "Occurrences";
docs/guide.md "Dismissals and the baseline".
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from council.change.diff import Change
from council.merging.agreement import recognize
from council.merging.sameness import fold_subject
from council.model.findings import (
    ChangeAnchor,
    FileAnchor,
    Finding,
    LineAnchor,
    anchor_path,
    severity_rank,
)
from council.model.fingerprint import claim, fingerprint, occurrence
from council.model.gate_choices import FailOn
from council.model.participant import PROGRAM_BACKENDS
from council.model.report import CouncilReport, Reworded, Suppression
from council.session.baseline import Baseline, BaselineEntry
from council.session.kinds import program_claims, program_prints
from council.session.stale import stale, stale_note

Source = Literal["dismissed", "baseline"]


@dataclass
class Decision:
    """One dismissal or baseline entry, as :func:`suppress` applies it."""

    source: Source
    key: str
    """The fingerprint it is keyed by (an occurrence's, or a claim's when ``legacy``)."""
    reason: str
    accepted: Finding
    """What was decided on (the dismissed finding, or the entry as a finding): its path,
    subject and severity are read by the notes and the graver check."""
    text: Finding | None = None
    """What the agreement relation reads for a rewording (None: fingerprint only)."""
    occurrence: str | None = None
    """The occurrence it covers (None: unknown, for a legacy decision)."""
    legacy: bool = False
    """Keyed by the claim: written before occurrences were kept."""
    either: bool = False
    """Keyed by a fingerprint of unknown recipe (a dismissal that kept no finding): it may
    match as an occurrence's or, as a legacy one, by claim; one use either way."""
    programs: frozenset[str] | None = frozenset()
    """Fingerprints (claims, for a legacy decision) of the program tellings it accepts;
    None: unknown, and a legacy baseline entry's claim is the rule itself."""
    budget: int = 1
    count: int = 1
    ident: int | None = None
    """The id of the dismissed finding, when known."""
    severity_kept: bool = True
    """False for a baseline entry that kept no severity (it holds nothing back)."""
    block: str | None = None
    """The hash of the block its code was in when decided on (None: not kept)."""

    @property
    def path(self) -> str:
        return anchor_path(self.accepted.anchor) or ""


@dataclass
class _Pass:
    """What :func:`suppress` builds up: suppressions, and one note per finding left."""

    suppressed: dict[int, Suppression]
    notes: dict[int, str] = field(default_factory=dict)
    matched: set[int] = field(default_factory=set)
    change: Change | None = None
    fail_on: FailOn | None = None

    def hold(self, finding: Finding, suppression: Suppression, note: str | None = None) -> None:
        assert finding.id is not None
        self.suppressed[finding.id] = suppression
        self.matched.add(finding.id)
        if note is not None:
            self.notes[finding.id] = note
        else:
            self.notes.pop(finding.id, None)

    def refuse(self, finding: Finding, note: str, *, final: bool = True) -> None:
        """Note why a decision does not cover ``finding`` (``final``: no later way may)."""
        assert finding.id is not None
        self.notes.setdefault(finding.id, note)
        if final:
            self.matched.add(finding.id)


def suppress(
    report: CouncilReport,
    baseline: Baseline,
    dismissals: Mapping[str, str],
    dismissed: Mapping[str, Finding] | None = None,
    *,
    change: Change | None = None,
) -> CouncilReport:
    """The report with ``suppressed`` filled from the session's dismissals and the baseline.

    ``dismissals``: fingerprint → a person's reason; ``dismissed``: fingerprint → the
    finding dismissed, where known; ``change``: the pull request's change (what a decision
    written before occurrences were kept can be shown to cover: :func:`untouched`; None:
    nothing). Program reviewers are the report's participants with a program backend.
    A decision does not take out of the gate (``report.gate.fail_on``) a finding whose
    block changed (:func:`council.session.stale.stale`): it gates, with a note.
    Each open finding (carried ones too) is matched as the module says; nothing leaves
    ``findings``; findings without an id are never suppressed; each finding a decision of
    its claim did not cover gets a note saying why. Never raises. Source:
    docs/identity-and-clocks.md "Occurrences".
    """
    programs = {p.id for p in report.participants if p.backend in PROGRAM_BACKENDS}
    decisions = [
        *_dismissals(dismissals, dismissed or {}, programs),
        *_entries(baseline),
    ]
    done = _Pass(dict(report.suppressed), change=change, fail_on=report.gate.fail_on)
    seen = set(report.seen)
    owned = {d.ident for d in decisions if d.ident is not None}
    listed = [f for f in report.open_findings if f.id is not None]
    # The finding that kept a dismissed id first, then seen ones: an occurrence an earlier
    # round reported is the one decided on.
    ordered = sorted(listed, key=lambda f: (f.id not in owned, f.id not in seen))
    _by_fingerprint(ordered, decisions, programs, done)
    models = [f for f in ordered if f.id not in done.matched and not program_prints(f, programs)]
    _by_kept_id(models, decisions, done)
    roster = [p.id for p in report.participants]
    # A finding the session reported under an id of its own (seen, or carried) is another
    # problem than a dismissed finding of another id: never its rewording.
    known = {*seen, *(f.id for f in report.carried if f.id is not None)}
    for source in ("dismissed", "baseline"):
        pool = [d for d in decisions if d.source == source and not d.legacy]
        left = [f for f in models if f.id not in done.matched]
        _by_agreement(left, pool, roster, done, known)
    left = [f for f in ordered if f.id not in done.matched]
    _legacy([f for f in left if f.id not in done.suppressed], decisions, programs, change, done)
    by_subject: dict[str, list[Decision]] = {}
    for d in decisions:
        by_subject.setdefault(fold_subject(d.accepted.subject), []).append(d)
    for finding in report.open_findings:
        if finding.id is not None and finding.id not in done.suppressed:
            near = by_subject.get(fold_subject(finding.subject), [])
            note = _other_occurrence(finding, near, change) if near else None
            if note is not None:
                done.notes.setdefault(finding.id, note)
    order = {f.id: at for at, f in enumerate(report.open_findings)}
    notes = [done.notes[i] for i in sorted(done.notes, key=lambda i: order.get(i, 0))]
    update: dict[str, object] = {"suppressed": done.suppressed}
    fresh = tuple(n for n in dict.fromkeys(notes) if n not in report.notes)
    if fresh:
        update["notes"] = (*report.notes, *fresh)
    return report.model_copy(update=update)


def _dismissals(
    reasons: Mapping[str, str], dismissed: Mapping[str, Finding], programs: Collection[str]
) -> list[Decision]:
    """The session's dismissals as decisions. One that kept its finding is an occurrence's
    when keyed by the finding's fingerprint, else (keyed by its claim) a legacy one; one
    without its finding may be either (:attr:`Decision.either`), for a model's finding
    only (its kind is unknown), and holds back no severity (none is known)."""
    out: list[Decision] = []
    for key, reason in reasons.items():
        seen = dismissed.get(key)
        if seen is None:
            blank = Finding(anchor=ChangeAnchor(), label="issue", subject="(a dismissed finding)")
            out.append(Decision("dismissed", key, reason, blank, either=True, severity_kept=False))
            continue
        legacy = fingerprint(seen) != key
        out.append(
            Decision(
                "dismissed",
                key,
                reason,
                seen,
                text=seen if not legacy else None,
                occurrence=None if legacy else occurrence(seen),
                legacy=legacy,
                programs=(program_claims if legacy else program_prints)(seen, programs),
                ident=seen.id,
                block=seen.anchor.block if isinstance(seen.anchor, LineAnchor) else None,
            )
        )
    return out


def _entries(baseline: Baseline) -> list[Decision]:
    """The baseline's entries as decisions, the first of each fingerprint only."""
    firsts: dict[str, BaselineEntry] = {}
    for entry in baseline.entries:
        firsts.setdefault(entry.fingerprint, entry)
    return [
        Decision(
            "baseline",
            e.fingerprint,
            e.reason,
            e.as_accepted(),
            text=e.as_finding() if not e.legacy else None,
            occurrence=e.occurrence,
            legacy=e.legacy,
            programs=None if e.legacy else frozenset(e.programs),
            budget=e.count,
            count=e.count,
            severity_kept=bool(e.severity),
            block=e.block,
        )
        for e in firsts.values()
    ]


def _covers_kind(decision: Decision, finding: Finding, programs: Collection[str]) -> bool:
    """Whether every program telling of ``finding`` is among the decision's (a program's
    suppression needs the program's own rule and occurrence)."""
    if decision.programs is None:
        return True
    by_claim = decision.legacy or decision.either
    told = (program_claims if by_claim else program_prints)(finding, programs)
    return told <= decision.programs


def _graver(finding: Finding, decision: Decision) -> bool:
    """Whether ``finding`` is graver than what was decided on: a decision covers what the
    person saw, so it is not suppressed (a consolidated finding has its gravest telling's
    severity). A baseline entry that kept no severity holds nothing back."""
    if not decision.severity_kept:
        return False
    return severity_rank(finding.severity) > severity_rank(decision.accepted.severity)


def _apply(
    finding: Finding, decision: Decision, done: _Pass, how: str, note: str | None = None
) -> bool:
    """Suppress ``finding`` by ``decision`` (used up by one), unless it is graver; True
    when the decision was used either way."""
    decision.budget -= 1
    if _graver(finding, decision):
        done.refuse(finding, graver_note(finding, decision, how))
        return True
    if not decision.legacy and stale(finding, decision.block, done.change, done.fail_on):
        kept = decision.block is not None
        done.refuse(finding, stale_note(finding, _what(decision), kept_block=kept))
        return True
    reworded = None
    if how == "agreement":
        seen = decision.text or decision.accepted
        reworded = Reworded(fingerprint=decision.key, id=decision.ident, subject=seen.subject)
    held = Suppression(source=decision.source, reason=decision.reason, by_agreement=reworded)
    done.hold(finding, held, note)
    return True


def _by_fingerprint(
    findings: Sequence[Finding],
    decisions: Sequence[Decision],
    programs: Collection[str],
    done: _Pass,
) -> None:
    """Way 1: the decisions keyed by a finding's own fingerprint, dismissals first."""
    keyed: dict[str, list[Decision]] = {}
    for d in decisions:
        if not d.legacy:
            keyed.setdefault(d.key, []).append(d)
    for finding in findings:
        options = keyed.get(fingerprint(finding), [])
        if not options:
            continue
        usable = [d for d in options if _covers_kind(d, finding, programs)]
        if not usable:
            done.refuse(finding, kind_note(finding, options[0]))
            continue
        left = [d for d in usable if d.budget > 0]
        if not left:
            done.refuse(finding, beyond_note(finding, usable[0]))
            continue
        _apply(finding, left[0], done, "fingerprint")


def _by_kept_id(findings: Sequence[Finding], decisions: Sequence[Decision], done: _Pass) -> None:
    """Way 2, by id: a model's finding that kept a dismissed finding's id, at its path and
    occurrence (a rewording of it, recognized across rounds)."""
    by_id = {
        d.ident: d
        for d in decisions
        if d.source == "dismissed" and not d.legacy and d.ident is not None and d.budget > 0
    }
    for finding in findings:
        d = by_id.get(finding.id) if finding.id is not None else None
        if d is None or finding.id in done.matched or d.budget <= 0:
            continue
        if (anchor_path(finding.anchor) or "", occurrence(finding)) != (d.path, d.occurrence):
            continue
        _apply(finding, d, done, "agreement")


def _by_agreement(
    findings: Sequence[Finding],
    pool: Sequence[Decision],
    roster: Sequence[str],
    done: _Pass,
    known: Collection[int] = (),
) -> None:
    """Way 2, by agreement: each group of one path and occurrence is recognized one to one
    against the decisions with text at that path and occurrence (an entry counts as many
    times as it has left). A finding whose id is in ``known`` (reported earlier under it)
    is never a rewording of a dismissal of another id: a person decided on that one."""
    groups: dict[tuple[str, str | None], list[Finding]] = {}
    for finding in findings:
        groups.setdefault((anchor_path(finding.anchor) or "", occurrence(finding)), []).append(
            finding
        )
    for (path, at), members in groups.items():
        there = [
            d
            for d in pool
            if d.text is not None and d.budget > 0 and (d.path, d.occurrence) == (path, at)
        ]
        slots = [d for d in there for _ in range(min(d.budget, len(members)))]
        if not slots:
            continue
        found = recognize(members, [d.text for d in slots if d.text is not None], roster)
        for index, finding in enumerate(members):
            seen = found.get(index)
            if seen is None or finding.id in done.matched:
                continue
            decision = slots[seen.at]
            other = decision.ident is not None and decision.ident != finding.id
            if decision.budget > 0 and not (other and finding.id in known):
                _apply(finding, decision, done, "agreement")


def _legacy(
    findings: Sequence[Finding],
    decisions: Sequence[Decision],
    programs: Collection[str],
    change: Change | None,
    done: _Pass,
) -> None:
    """Way 3: decisions written before occurrences were kept, by the finding's claim, for
    a finding whose code the change did not touch only; each use is noted."""
    keyed: dict[str, list[Decision]] = {}
    for d in decisions:
        if d.legacy or d.either:
            keyed.setdefault(d.key, []).append(d)
    for finding in findings:
        named = keyed.get(claim(finding), [])
        if not named:
            continue
        if not untouched(change, finding):
            done.refuse(finding, legacy_note(finding, named[0], shown=False))
            continue
        options = [d for d in named if d.budget > 0]
        if not options:
            done.refuse(finding, beyond_note(finding, named[0]))
            continue
        usable = [d for d in options if _covers_kind(d, finding, programs)]
        if not usable:
            done.refuse(finding, kind_note(finding, options[0]))
            continue
        _apply(finding, usable[0], done, "fingerprint", legacy_note(finding, usable[0], shown=True))


def untouched(change: Change | None, finding: Finding) -> bool:
    """Whether ``finding``'s anchored code is as the base has it: its file is not in the
    change, or (a new-side line anchor) none of its lines is an added one. A change
    anchor, an old-side line and any finding without a change are never shown so. What a
    decision written before occurrences were kept can cover: that code predates the
    change, so it is no occurrence the change brought. Never raises."""
    if change is None or isinstance(finding.anchor, ChangeAnchor):
        return False
    anchor = finding.anchor
    if not isinstance(anchor, FileAnchor) and anchor.side == "old":
        return False
    changed = next((f for f in change.files if f.side_path("new") == anchor.path), None)
    if changed is None:
        return True
    if isinstance(anchor, FileAnchor) or changed.status == "added":
        return False
    first = anchor.start_line if anchor.start_line is not None else anchor.line
    low, high = min(first, anchor.line), max(first, anchor.line)
    return not any(low <= n <= high for hunk in changed.hunks for n in hunk.added)


def _other_occurrence(
    finding: Finding, decisions: Sequence[Decision], change: Change | None
) -> str | None:
    """The note for a finding a decision of its subject (``decisions``), or of its code in
    another file, did not cover (another occurrence, a renamed file); None when no
    decision comes near."""
    path = anchor_path(finding.anchor) or ""
    at = occurrence(finding)
    for d in decisions:
        if d.path == path and not d.legacy and d.occurrence != at:
            return other_code_note(finding, d)
        if d.path != path and d.occurrence == at and at.startswith("line:"):
            renamed = change is not None and any(
                f.path == path and f.old_path == d.path and f.status == "renamed"
                for f in change.files
            )
            return other_file_note(finding, d, renamed)
    return None


def _what(decision: Decision) -> str:
    if decision.source == "dismissed":
        return f"#{decision.ident}, dismissed" if decision.ident is not None else "a dismissal"
    return "a baseline entry"


_GATES = (
    "it is not suppressed and gates until a person dismisses it or the baseline is written again"
)


def beyond_note(finding: Finding, decision: Decision) -> str:
    """The note for a further finding of an occurrence (a claim, for a decision written
    before occurrences were kept) whose decision is used up."""
    many = "one finding" if decision.count == 1 else f"{decision.count} findings"
    of = "the claim" if decision.legacy else "the occurrence"
    same = "" if decision.legacy else ", the same code"
    return (
        f"#{finding.id} is a further finding of {of} of {_what(decision)} "
        f"({finding.subject[:80]!r}{same}), which accepted {many}: {_GATES}"
    )


def other_code_note(finding: Finding, decision: Decision) -> str:
    """The note for the same claim at other code than the one a person decided on."""
    return (
        f"#{finding.id} makes the same claim as {_what(decision)} ({finding.subject[:80]!r}), "
        f"but at other code: a decision covers the occurrence a person saw, never another "
        f"one of the same rule, so {_GATES}"
    )


def other_file_note(finding: Finding, decision: Decision, renamed: bool) -> str:
    """The note for the claim of a decision, at the same code, in another file."""
    how = "the file was renamed" if renamed else "the code is in another file"
    return (
        f"#{finding.id} makes the claim of {_what(decision)} at the same code, but "
        f"{how} ({decision.path} then): a decision does not follow code to another path, "
        f"so {_GATES}"
    )


def kind_note(finding: Finding, decision: Decision) -> str:
    """The note for a program's finding a decision about another telling would cover."""
    return (
        f"#{finding.id} is a program reviewer's finding, and {_what(decision)} was decided "
        f"on another reviewer's telling: a program's finding is suppressed only by a "
        f"decision on the program's own rule and occurrence, so {_GATES}"
    )


def legacy_note(finding: Finding, decision: Decision, *, shown: bool) -> str:
    """The note for a decision written before occurrences were kept: used (its code is as
    the base has it) or not (the change touched it)."""
    what = "dismissal" if decision.source == "dismissed" else "baseline entry"
    if shown:
        return (
            f"#{finding.id} is covered by a {what} written before council kept occurrences, "
            f"by its claim: its code is as the base has it, so it is no occurrence this "
            f"change brought (record the occurrence itself: dismiss it again, or write the "
            f"baseline again)"
        )
    return (
        f"#{finding.id} makes the claim of a {what} written before council kept occurrences, "
        f"which cannot be shown to cover it (its code is not shown to be as the base has it: "
        f"the change touches it), so {_GATES}"
    )


def graver_note(finding: Finding, decision: Decision, how: str = "agreement") -> str:
    """The note for a finding held back from a suppression because it is graver than what
    was decided on (``how``: ``fingerprint`` or ``agreement``)."""
    what = "dismissed" if decision.source == "dismissed" else "in the baseline"
    earlier = decision.accepted
    name = f"#{decision.ident}" if decision.ident is not None else repr(earlier.subject[:80])
    said = "makes the same claim as" if how == "fingerprint" else "rewords"
    by = "" if how == "fingerprint" else ", by agreement,"
    return (
        f"#{finding.id} {said} {name}, {what}{by} but is graver "
        f"({finding.severity or 'no severity'} over {earlier.severity or 'no severity'}): "
        f"it is not suppressed and gates until a person dismisses it again"
    )
