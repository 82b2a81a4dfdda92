"""Consolidation across reviewers: one finding per claim, agreement kept in ``raised_by``.

Counting each telling as its own finding would bury the report in repeats and hide
agreement. Filing gives the merged findings their ids in ROSTER order, never completion
order. Source: docs/harvest.md §8; docs/architecture.md (consolidate).

Usage::

    per_participant = [(p, with_origin(h.findings, origins[p])) for p, h in harvests]
    merged = consolidate(per_participant, heard=["hawk", "owl"])   # harvests: roster order
    filed = file_findings(merged, sessions.next_finding_id(session))   # a SessionStore
"""

from __future__ import annotations

import gc
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache

from council.change.diff import Change, landing
from council.merging.agreement import cluster
from council.merging.agreement.relation import Place, place_of, program_clash
from council.merging.sameness import fold_subject, fold_subjects
from council.model.findings import (
    Agreement,
    Anchor,
    Finding,
    LineAnchor,
    Member,
    Origin,
    anchor_path,
    anchor_precision,
    severity_rank,
)


def with_origin(findings: Sequence[Finding], origin: Origin) -> list[Finding]:
    """The findings with ``origin`` set: who filed them, in which run.

    Why: the origin is set by the round, never read from the wire (docs/harvest.md §2), and it
    must be set before :func:`merge_across` so a merged finding names its first raiser.
    """
    return [finding.model_copy(update={"origin": origin}) for finding in findings]


@dataclass
class _Kept:
    """A kept finding while the merge runs, and who contributed to it."""

    finding: Finding
    participants: set[str] = field(default_factory=set)
    """Participants whose findings merged into this one (each merges at most once)."""
    credited: list[str] = field(default_factory=list)
    """Ids credited as raisers, first credit first (sorted into roster order at the end)."""
    carried: bool = False
    """Whether some merged finding carried its own ``raised_by`` (a judge's, say)."""
    tellings: list[int] = field(default_factory=list)
    """Positions (in the walk's order) of the findings merged into this one."""

    def credit(self, participant: str, finding: Finding) -> None:
        """Record who raised ``finding``: its author, and every id of its ``raised_by``.

        A judge's finding is the exception: the judge consolidates, it does not raise,
        so its ``raised_by`` alone names the raisers.
        """
        self.participants.add(participant)
        carried = finding.raised_by or ()
        judged = finding.origin is not None and finding.origin.kind == "judge" and carried
        names = carried if judged else (participant, *carried)
        self.carried = self.carried or bool(carried)
        self.credited.extend(name for name in names if name not in self.credited)

    def absorb(self, participant: str, finding: Finding) -> None:
        """Merge ``finding`` in: sharper anchor, higher severity and confidence, its raisers."""
        kept = self.finding
        update: dict[str, object] = {}
        if anchor_precision(finding.anchor) > anchor_precision(kept.anchor):
            update["anchor"] = finding.anchor
        if severity_rank(finding.severity) > severity_rank(kept.severity):
            update["severity"] = finding.severity
        if finding.confidence is not None and (
            kept.confidence is None or finding.confidence > kept.confidence
        ):
            update["confidence"] = finding.confidence
        if update:
            self.finding = kept.model_copy(update=update)
        self.credit(participant, finding)


class _Index:
    """Where :func:`merge_across` finds a finding's merge target without scanning every kept
    finding (a reviewer's 100,000 findings took minutes: that scan was quadratic).

    Only equal folded subjects can say the same, so kept findings are listed by subject:
    ``placed[(subject, path)]``, first kept with a file (their path never changes, and "this
    participant merged into it" only ever becomes true, so a cursor per list and participant
    skips those for good: amortized O(1)); ``unplaced[subject]``, first kept with no file
    (checked one by one: they are few). Lists hold positions in ``kept`` in increasing order,
    so the target, the EARLIEST suitable, is the least of each list's first suitable one.
    """

    def __init__(self, kept: list[_Kept]) -> None:
        self.kept = kept
        self.placed: dict[tuple[str, str], list[int]] = {}
        self.paths: dict[str, list[str]] = {}
        self.unplaced: dict[str, list[int]] = {}
        self.cursor: dict[tuple[str, str, str], int] = {}

    def add(self, subject: str, path: str | None, position: int) -> None:
        """List the kept finding at ``position`` (appended last to ``kept``)."""
        if path is None:
            self.unplaced.setdefault(subject, []).append(position)
            return
        listed = self.placed.get((subject, path))
        if listed is None:
            listed = self.placed[(subject, path)] = []
            self.paths.setdefault(subject, []).append(path)
        listed.append(position)

    def target(self, participant: str, subject: str, path: str | None) -> int | None:
        """The position of the earliest kept finding that a finding of ``participant``
        with ``subject`` (folded) and ``path`` merges into, or None."""
        found: int | None = None
        for each in self.paths.get(subject, ()) if path is None else (path,):
            first = self._first_open(participant, subject, each)
            if first is not None and (found is None or first < found):
                found = first
        for position in self.unplaced.get(subject, ()):
            if found is not None and position > found:
                break
            k = self.kept[position]
            kept_path = anchor_path(k.finding.anchor)
            if participant not in k.participants and (
                path is None or kept_path is None or kept_path == path
            ):
                found = position
                break
        return found

    def _first_open(self, participant: str, subject: str, path: str) -> int | None:
        listed = self.placed.get((subject, path))
        if not listed:
            return None
        key = (subject, path, participant)
        at = self.cursor.get(key, 0)
        while at < len(listed) and participant in self.kept[listed[at]].participants:
            at += 1
        self.cursor[key] = at
        return listed[at] if at < len(listed) else None


def merge_across(per_participant: Sequence[tuple[str, Sequence[Finding]]]) -> list[Finding]:
    """Merge the findings of several participants that say the same thing, greedily.

    ``per_participant``: ``(participant id, findings with their origin)`` in ROSTER order. A
    finding merges into the EARLIEST kept finding that says the same and that its participant
    has not merged into (one reviewer's repeats stay), else it is kept; nothing is re-merged.
    The kept one takes the most precise anchor and the highest severity and confidence;
    ``raised_by`` lists every raiser in roster order (ids off the roster after), keeps ids
    already carried (a judge's stand for its raisers), and is absent for one raiser. Returns
    kept findings in first-kept order, in about linear time (:class:`_Index`).
    Source: docs/harvest.md §8 (:func:`~council.merging.sameness.says_the_same`).
    """
    order: dict[str, int] = {}
    for participant, _ in per_participant:
        order.setdefault(participant, len(order))
    return _finished(_exact(per_participant), order)


def _exact(per_participant: Sequence[tuple[str, Sequence[Finding]]]) -> list[_Kept]:
    """The greedy ``says_the_same`` walk of :func:`merge_across`: the kept findings, each
    with the positions (in walk order) of the tellings merged into it."""
    kept: list[_Kept] = []
    index = _Index(kept)
    position = 0
    for participant, findings in per_participant:
        for finding in findings:
            subject = fold_subject(finding.subject)
            path = anchor_path(finding.anchor)
            at = index.target(participant, subject, path)
            if at is None:
                fresh = _Kept(finding)
                fresh.credit(participant, finding)
                kept.append(fresh)
                index.add(subject, path, len(kept) - 1)
                at = len(kept) - 1
            else:
                kept[at].absorb(participant, finding)
            kept[at].tellings.append(position)
            position += 1
    return kept


def _finished(kept: Sequence[_Kept], order: dict[str, int]) -> list[Finding]:
    """The kept findings with their ``raised_by``: every raiser in roster order (``order``:
    id → roster position; others after, first-seen first); None for one raiser alone
    who carried none."""
    merged: list[Finding] = []
    for k in kept:
        rank = {name: (order.get(name, len(order)), seen) for seen, name in enumerate(k.credited)}
        names = tuple(sorted(k.credited, key=rank.__getitem__))
        raised_by = names if (k.carried or len(names) >= 2) else None
        merged.append(k.finding.model_copy(update={"raised_by": raised_by}))
    return merged


def file_findings(merged: Sequence[Finding], first_id: int) -> list[Finding]:
    """Give merged findings their session ids, ``first_id``, ``first_id + 1``, … in order.

    Why: ids are per session and never reused; the caller takes ``len(merged)`` ids from
    the session's atomic counter (INCRBY) and passes the first, so filing the same
    findings twice is the caller's bug, refused here. Every finding must already have
    its origin. Raises ValueError when ``first_id`` < 1, a finding already has an id, or
    a finding has no origin. Source: docs/harvest.md §2, §8; docs/architecture.md (finding ids).
    """
    if first_id < 1:
        raise ValueError(f"finding ids start at 1, not {first_id}")
    filed: list[Finding] = []
    for offset, finding in enumerate(merged):
        if finding.id is not None:
            raise ValueError(
                f"finding {finding.subject!r} was already filed as #{finding.id}; "
                "ids are never reused"
            )
        if finding.origin is None:
            raise ValueError(
                f"finding {finding.subject!r} has no origin; set it with with_origin first"
            )
        filed.append(finding.model_copy(update={"id": first_id + offset}))
    return filed


COVER_SLACK = 3
"""Lines: an anchor covers a member's lines when it reaches within this many of them."""

UNION_SPAN = 20
"""Lines: without the change to tell hunks apart, the union of members' ranges is kept as
the anchor when it spans at most this many lines (the relation's window)."""


def consolidate(
    per_participant: Sequence[tuple[str, Sequence[Finding]]],
    *,
    heard: Collection[str] | None = None,
    change: Change | None = None,
    programs: Sequence[Sequence[bool]] = (),
) -> list[Finding]:
    """One finding per problem, credited to every reviewer who found it (docs/harvest.md §8).

    ``per_participant``: ``(participant id, findings with their origin)`` in ROSTER order;
    ``programs``, aligned with it when given: whether each finding is a program's telling
    (an analyzer's: it merges with another only on its own lines, never across rules,
    :func:`~council.merging.agreement.relation.program_clash`). Exact repeats
    (:func:`merge_across`), then the agreement relation
    (:func:`council.merging.agreement.cluster`), joined only where a group keeps one telling
    per reviewer and no program's telling clashes. A group is one finding: its first
    member's words and origin, :func:`covering_anchor` (``change``: does a union stay in one
    hunk; its lines are the code a finding quotes), the highest severity of its tellings,
    ``raised_by`` and ``members`` (k ≥ 2), ``agreement`` k of n (n: the reviewers in
    ``heard``, default all, plus raisers not heard in full). Filing order, whatever order
    reviewers answered in; never raises.
    """
    with collector_paused():
        order: dict[str, int] = {}
        for participant, _ in per_participant:
            order.setdefault(participant, len(order))
        flat = [(p, f) for p, findings in per_participant for f in findings]
        kinds = [bool(k) for told in programs for k in told] if programs else []
        if len(kinds) != len(flat):
            kinds = []
        reviewer_of = [p for p, _ in flat]
        found = [f for _, f in flat]
        groups = cluster(found, reviewer_of, list(order), programs=kinds, change=change)
        ruled = any(kinds)
        places = [place_of(f, k) for f, k in zip(found, kinds, strict=True)] if ruled else []
        groups = _joined(groups, _repeats(flat), reviewer_of, places)
        everyone = set(order) if heard is None else set(heard)
        groups.sort(key=lambda g: (order[reviewer_of[g[0]]], g[0]))
        return [_one(g, flat, everyone, change) for g in groups]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the block (if it was running).

    Why: a consolidation of 100,000 findings makes about a million objects (term
    tuples, scored pairs, members, findings) that all live until it returns and form no
    reference cycles; the collector, started by allocations, walks the whole growing
    heap again and again for nothing (bench/agreement.py: about a fifth of the time).
    Reference counting still frees everything as usual; the collector resumes after
    the block, also when it raises. Touches only the interpreter's collector switch.
    """
    running = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if running:
            gc.enable()


def _repeats(flat: Sequence[tuple[str, Finding]]) -> list[list[int]]:
    """The exact repeats across reviewers (the greedy walk of :func:`merge_across`), as
    lists of positions in ``flat``, first kept first; groups of one left out.

    Only findings whose folded subject two or more reviewers used can repeat each other,
    and the walk never looks across subjects, so it runs on those alone, one subject at a
    time. Each reviewer's tellings of a subject are walked in a fixed order of place and
    content, not the order its answer listed them, so the groups do not depend on it."""
    by_subject: dict[str, list[int]] = {}
    for at, subject in enumerate(fold_subjects(finding.subject for _, finding in flat)):
        listed = by_subject.get(subject)
        if listed is None:
            by_subject[subject] = [at]
        else:
            listed.append(at)
    repeats: list[list[int]] = []
    for positions in by_subject.values():
        if len({flat[i][0] for i in positions}) < 2:
            continue
        places = {i: place_of(flat[i][1]) for i in positions}
        positions.sort(key=lambda i: _walk_key(flat[i][1], places[i], i))
        walk: dict[str, list[Finding]] = {}
        for i in positions:
            walk.setdefault(flat[i][0], []).append(flat[i][1])
        order = [i for who in walk for i in positions if flat[i][0] == who]
        for kept in _exact(list(walk.items())):
            if len(kept.tellings) > 1:
                repeats.append([order[t] for t in kept.tellings])
    return repeats


def _walk_key(finding: Finding, place: Place, at: int) -> tuple[str, str, int, int, str, str, int]:
    """A telling's place in the exact walk among its reviewer's: by place, then content
    (then position, which only orders tellings equal in all of these)."""
    return (
        place.path or "",
        place.side,
        place.first or 0,
        place.last or 0,
        finding.subject,
        finding.discussion,
        at,
    )


def _joined(
    groups: list[list[int]],
    repeats: Sequence[Sequence[int]],
    reviewer_of: Sequence[str],
    places: Sequence[Place] = (),
) -> list[list[int]]:
    """``groups`` joined along exact repeats (each a list of positions, first kept first)
    where the joined group would hold no reviewer twice and, with ``places`` (each
    telling's, program rules set), no program's telling beside one its place forbids;
    members in position order."""
    owner = {i: at for at, g in enumerate(groups) for i in g}
    joined: dict[int, list[int]] = {at: list(g) for at, g in enumerate(groups)}
    for repeat in repeats:
        for other in repeat[1:]:
            a, b = owner[repeat[0]], owner[other]
            if a == b:
                continue
            held = {reviewer_of[i] for i in joined[a]}
            if any(reviewer_of[j] in held for j in joined[b]):
                continue
            if places and any(
                program_clash(places[i], places[j]) for i in joined[a] for j in joined[b]
            ):
                continue
            low, high = min(a, b), max(a, b)
            for j in joined[high]:
                owner[j] = low
            joined[low] = sorted(joined[low] + joined.pop(high))
    return list(joined.values())


def _one(
    group: Sequence[int],
    flat: Sequence[tuple[str, Finding]],
    heard: set[str],
    change: Change | None,
) -> Finding:
    """The consolidated finding of one group (members already in roster order)."""
    tellings = [flat[i] for i in group]
    raisers = [p for p, _ in tellings]
    n = len(heard | set(raisers)) or 1
    lead = tellings[0][1]
    agreement = _agreement(len(raisers), max(n, len(raisers)))
    if len(tellings) == 1:
        return lead.model_copy(update={"raised_by": None, "members": None, "agreement": agreement})
    findings = [f for _, f in tellings]
    severity = max((f.severity for f in findings), key=severity_rank)
    confidences = [f.confidence for f in findings if f.confidence is not None]
    return lead.model_copy(
        update={
            "anchor": covering_anchor([f.anchor for f in findings], change),
            "severity": severity,
            "confidence": max(confidences) if confidences else None,
            "raised_by": tuple(raisers),
            "members": tuple(member_of(p, f) for p, f in tellings),
            "agreement": agreement,
        }
    )


@cache
def _agreement(k: int, n: int) -> Agreement:
    """One frozen ``Agreement`` per (k, n): a round has few distinct ones."""
    return Agreement(k=k, n=n)


def member_of(participant: str, finding: Finding) -> Member:
    """A reviewer's own telling, as a consolidated finding keeps it."""
    return Member(
        participant=participant,
        anchor=finding.anchor,
        label=finding.label,
        subject=finding.subject,
        discussion=finding.discussion,
        origin=finding.origin,
        severity=finding.severity,
        confidence=finding.confidence,
        evidence=finding.evidence,
    )


def _lines(anchor: LineAnchor) -> tuple[int, int]:
    first = anchor.start_line if anchor.start_line is not None else anchor.line
    return min(first, anchor.line), max(first, anchor.line)


def covering_anchor(anchors: Sequence[Anchor], change: Change | None = None) -> Anchor:
    """The anchor of a consolidated finding, from its members' anchors (roster order).

    The most precise kind (line > file > change). Among line anchors, on the path and
    side of the first one: the narrowest member anchor that covers every member's lines
    there (each within :data:`COVER_SLACK` lines); else the union of their ranges when
    it stays within one hunk of ``change`` (without a change: when it spans at most
    :data:`UNION_SPAN` lines); else the first line anchor. Never raises.
    """
    best = max(anchors, key=anchor_precision)
    if not isinstance(best, LineAnchor):
        return next(a for a in anchors if anchor_precision(a) == anchor_precision(best))
    lined = [a for a in anchors if isinstance(a, LineAnchor)]
    first = lined[0]
    same = [a for a in lined if a.path == first.path and a.side == first.side]
    spans = [_lines(a) for a in same]
    low, high = min(lo for lo, _ in spans), max(hi for _, hi in spans)
    # covers every member's lines ⇔ reaches the lowest first line and the highest last
    covering = [
        (hi - lo, at)
        for at, (lo, hi) in enumerate(spans)
        if lo - COVER_SLACK <= low and high <= hi + COVER_SLACK
    ]
    if covering:
        return same[min(covering)[1]]
    union = first.model_copy(update={"line": high, "start_line": low if low < high else None})
    if change is None:
        return union if high - low <= UNION_SPAN else first
    return union if landing(change, union) is None else first
