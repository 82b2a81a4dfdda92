"""Incremental rounds: which findings an earlier round of the session already reported.

Each round after the first marks this round's findings **seen** when an earlier round
reported them (shown and gating, never posted again); the last round's open findings
whose code the new commits edited or removed **outdated** (listed, not silently gone); and
with ``--since-last``, those the new commits left alone, nobody suppressed and this round
did not raise again, **carried** (they still gate: a re-run cannot turn a failed gate
green). ``change`` is the *interdiff*, from the last reviewed head to this one
(:func:`touched`). Pure: the runtime reads the session and computes the interdiff.
Source: docs/architecture.md "State in Redis" (sessions, incremental rounds);
docs/harvest.md §2 (anchors), §5 (sameness).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from council.change.diff import Change, ChangedFile
from council.merging.agreement import best_agreeing
from council.merging.agreement.relation import Place, place_of
from council.merging.recognition import keeps_gate, led_by_program, told_by_programs
from council.model.findings import (
    ChangeAnchor,
    FileAnchor,
    Finding,
    LineAnchor,
    anchor_path,
    severity_rank,
)
from council.model.fingerprint import claim, fingerprint
from council.model.participant import PROGRAM_BACKENDS
from council.model.report import CouncilReport, RunStatus
from council.round.gate import incomplete_reasons
from council.session.remembered import recalled

COMPLETED: frozenset[RunStatus] = frozenset({"settled", "partial"})
"""Statuses of a run that reviewed its head: its findings count as reported, and its head
as reviewed. A cancelled or timed-out run did neither (its report was likely never
posted), so the next round reviews and posts what it found again."""


@dataclass(frozen=True)
class RoundMemory:
    """What a completed round leaves its session for the rounds after it.

    ``reported``: content fingerprint → the ids it was reported under (this round's
    findings and those it carried), ascending and comma-separated (``"3,7"``: one claim
    made at two places, bandit's ``shell=True`` twice in a file, say), so a later round
    marks each of them *seen*. ``still_open``:
    the findings still open after it, which also marks its head as reviewed for
    ``--since-last``; None when the gate found the round incomplete.
    """

    reported: Mapping[str, str]
    still_open: tuple[Finding, ...] | None
    heard: tuple[str, ...] = ()
    """The reviewers heard in full in it: their last heard head becomes its head."""
    reviewers: tuple[str, ...] = ()
    """Every reviewer of the round, heard or not."""
    recall: tuple[Finding, ...] = ()
    """The session's memory of findings after it (:func:`council.session.remembered.recalled`):
    what later rounds recognize their findings among, to keep their ids."""


def remembered(report: CouncilReport, recall: Sequence[Finding] = ()) -> RoundMemory | None:
    """What the session keeps of a round that settled with ``report`` (None unless it
    completed: :data:`COMPLETED`). ``recall``: the session's memory of findings before
    it; the round's findings and those it carried go first
    (:func:`council.session.remembered.recalled`).

    Why the head is not always marked: a round the gate called incomplete (exit 3: fewer
    than ``report.gate.quorum`` heard in full) reviewed nothing for sure; marking its head reviewed
    would let the next ``--since-last`` find "nothing to review" and pass. Its findings
    are still remembered as reported, so a new round does not post them again.
    """
    if report.status not in COMPLETED:
        return None
    ids: dict[str, list[int]] = {}
    for f in report.open_findings:
        if f.id is not None:
            ids.setdefault(fingerprint(f), []).append(f.id)
    reported = {print_: ",".join(map(str, sorted(found))) for print_, found in ids.items()}
    reviewers = tuple(p.id for p in report.participants if p.role == "reviewer")
    heard = tuple(p.id for p in report.participants if p.role == "reviewer" and p.heard_in_full)
    kept = still_open(report) if not incomplete_reasons(report) else None
    return RoundMemory(
        reported=reported,
        still_open=kept,
        heard=heard,
        reviewers=reviewers,
        recall=recalled(report.open_findings, recall),
    )


def mark_round(
    report: CouncilReport,
    earlier_findings: Iterable[Finding],
    earlier_fingerprints: Reported,
    change: Change,
    recognizing: Iterable[Finding] = (),
) -> CouncilReport:
    """The report with ``seen``, ``outdated`` and ``seen_by_agreement`` filled for this round.

    ``seen``: this round's findings an earlier round reported by fingerprint
    (``earlier_fingerprints``: fingerprint → ids, or a plain collection), in filing order.
    ``outdated``: ``earlier_findings`` (open after the last reviewed round) not raised again
    and :func:`touched` by ``change``; one fingerprint at one place counts once.
    ``seen_by_agreement``: id → earlier id, for findings filing recalled or that restate one of
    ``recognizing`` (:func:`recognized`), also ``seen``, their earlier self not outdated; never
    one only program reviewers told. Findings without an id are never marked. Idempotent and
    never raises.
    """
    seen = seen_by_fingerprint(report.findings, earlier_fingerprints)
    earlier = list(earlier_findings)
    own = {f.id for f in report.findings if f.id is not None}
    filed = {i: e for i, e in report.seen_by_agreement.items() if i in own}
    programs = {p.id for p in report.participants if p.backend in PROGRAM_BACKENDS}
    pool = [f for f in recognizing if f.id not in own and not told_by_programs(f, programs)]
    told = [f for f in report.findings if not told_by_programs(f, programs)]
    agreed = {**filed, **recognized(told, pool, {*seen, *filed}, programs)}
    seen_set = {*seen, *agreed}
    seen = [f.id for f in report.findings if f.id is not None and f.id in seen_set]
    raised_again = {agreed[i] for i in agreed}
    outdated = tuple(
        f
        for f in _not_raised_again(report, earlier, change)
        if f.id not in raised_again and touched(change, f)
    )
    return report.model_copy(
        update={"seen": tuple(seen), "outdated": outdated, "seen_by_agreement": agreed}
    )


Reported = Mapping[str, Collection[int] | int | None] | Collection[str]
"""What earlier rounds reported: fingerprint → the ids it was reported under (an id, or
None when unknown, stands for one occurrence), or a plain collection of fingerprints
(one occurrence each, ids unknown)."""


def seen_by_fingerprint(findings: Iterable[Finding], earlier: Reported) -> list[int]:
    """The ids of ``findings`` an earlier round reported, by fingerprint, one to one.

    A finding is seen when its fingerprint was reported under its id (it kept it). The
    other findings with a reported fingerprint are seen, in filing order, while there
    are earlier findings of it whose id no finding of this round holds (they took new
    ids); any beyond are new and NOT seen: posted. So an occurrence an earlier round
    reported twice is seen twice, and a third finding of it is new. A finding whose
    fingerprint was never reported is seen by its claim (an earlier council reported
    claims) only when it kept an id reported under that claim: a new occurrence of a
    claim an earlier council reported is posted. In filing order; never raises."""
    ids: dict[str, set[int | None]] = {}
    if isinstance(earlier, Mapping):
        for print_, given in earlier.items():
            if given is None or isinstance(given, int):
                ids[print_] = {given}
            else:
                ids[print_] = set(given) or {None}
    else:
        ids = {print_: {None} for print_ in earlier}
    listed = [(f.id, fingerprint(f), claim(f)) for f in findings if f.id is not None]
    held = {ident for ident, _, _ in listed}
    unheld = {p: len(ids[p] - held) for _, p, _ in listed if p in ids}
    seen: list[int] = []
    for ident, print_, told in listed:
        earlier_ids = ids.get(print_)
        if earlier_ids is None:
            if ident in ids.get(told, ()):
                seen.append(ident)
            continue
        if ident in earlier_ids:
            seen.append(ident)
        elif unheld[print_] > 0:
            unheld[print_] -= 1
            seen.append(ident)
    return seen


def recognized(
    findings: Iterable[Finding],
    earlier: Iterable[Finding],
    already: Collection[int],
    programs: Collection[str] = frozenset(),
) -> dict[int, int]:
    """This round's findings (id → earlier id) that restate a finding of an earlier round
    in other words (the agreement relation, :func:`council.merging.agreement.best_agreeing`,
    whoever tells it), leaving out those in ``already`` (seen by fingerprint); each
    earlier finding recognized once, in filing order. Candidates are the earlier
    findings on the same file (or naming none), so the work is per file; a finding led
    by a program reviewer (``programs``) never restates another led by one
    (:func:`council.merging.recognition.led_by_program`), nor one it would make less
    grave or take a program's telling from (:func:`council.merging.recognition.keeps_gate`)."""
    by_path: dict[str | None, list[Finding]] = {}
    for f in earlier:
        if f.id is not None:
            by_path.setdefault(anchor_path(f.anchor), []).append(f)
    taken: set[int] = set()
    found: dict[int, int] = {}
    for f in findings:
        if f.id is None or f.id in already:
            continue
        path = anchor_path(f.anchor)
        led = led_by_program(f, programs)
        pool = [
            e
            for e in (*by_path.get(path, ()), *(by_path.get(None, ()) if path else ()))
            if e.id not in taken
            and not (led and led_by_program(e, programs))
            and keeps_gate(f, e, programs)
        ]
        at = best_agreeing(f, pool) if pool else None
        if at is not None and pool[at].id is not None:
            found[f.id] = pool[at].id
            taken.add(pool[at].id)
    return found


def carry(
    report: CouncilReport, earlier_findings: Iterable[Finding], change: Change
) -> CouncilReport:
    """The report with ``carried`` filled: earlier findings that still stand at its head.

    For a round that reviewed only the commits after the last reviewed head
    (``--since-last``; ``change`` is that interdiff, empty when there were none). Of
    ``earlier_findings`` (the findings still open after the last reviewed round), those
    this round did not raise again and whose anchor ``change`` did not touch
    (:func:`touched`: those are ``outdated``) are carried, each anchored on the new head
    (:func:`follow`). Dismissed and baselined ones are carried too: whether a decision
    still covers one (it may be graver than what was accepted, or past a baseline
    entry's count) is :func:`council.session.baseline.suppress`'s to say, after carrying.
    Several with one fingerprint at one place are carried once (the one filed last), at
    two places each. In filing order. Any earlier ``carried`` is replaced. Never raises.
    """
    carried = tuple(
        follow(change, f, report.head or None)
        for f in _not_raised_again(report, earlier_findings, change)
        if not touched(change, f)
    )
    return report.model_copy(update={"carried": carried})


def still_open(report: CouncilReport) -> tuple[Finding, ...]:
    """The findings that stand after ``report``'s round, which the next round checks for
    outdated code and carries: its findings, then those it carried, less those the judge
    did not uphold (the council withdrew them). Dismissed and baselined ones are kept:
    the next round checks them against the dismissals and baseline of its own time.
    Never raises.
    """
    withdrawn = {ident for ident, s in report.suppressed.items() if s.source == "judge"}
    return tuple(f for f in report.open_findings if f.id is None or f.id not in withdrawn)


def _not_raised_again(
    report: CouncilReport, earlier: Iterable[Finding], change: Change
) -> list[Finding]:
    """The earlier findings this round did not raise again, in filing order.

    Raised again: one of this round's findings holds its id (it kept it), or, for one
    whose id none holds, a finding of this round with its fingerprint took a new id (one
    such finding per earlier one, the latest first); an earlier finding an earlier
    council filed without its code (:func:`_unread_place`) is raised again by a new
    finding of its claim at the very lines it moved to over ``change`` (the interdiff).
    Earlier findings of one fingerprint at one place and one severity are one finding
    told in two rounds: the latest is kept; at two places, or two severities (a re-grade
    never hides the graver), they are two, and both stand. A finding of this
    round itself is skipped."""
    earlier = list(earlier)  # read twice below: a generator would be empty the second time
    own = {f.id for f in report.findings if f.id is not None}
    latest: dict[tuple[str, Place, int], Finding] = {}
    for finding in sorted(earlier, key=lambda f: f.id or 0):
        if finding.id is not None and finding.id in own:
            continue  # one told again at a lower grade is another finding: both stand
        latest[(fingerprint(finding), place_of(finding), severity_rank(finding.severity))] = finding
    known = {f.id for f in earlier if f.id is not None}
    new = [f for f in report.findings if f.id not in known]
    programs = {p.id for p in report.participants if p.backend in PROGRAM_BACKENDS}
    fresh: dict[str, list[Finding]] = {}
    for f in new:
        fresh.setdefault(fingerprint(f), []).append(f)
    placed = Counter(_claim_at(f) for f in new)
    kept: list[Finding] = []
    for (print_, _, _), finding in sorted(latest.items(), key=lambda item: -(item[1].id or 0)):
        told = fresh.get(print_, [])
        again = next((f for f in told if keeps_gate(f, finding, programs)), None)
        if again is not None:  # a re-grade lower, or without its program, is not it again
            told.remove(again)
            continue
        unread = _unread_place(change, finding)
        if unread is not None and placed[unread] > 0:
            placed[unread] -= 1
            continue
        kept.append(finding)
    return sorted(kept, key=lambda f: f.id or 0)


def _claim_at(finding: Finding) -> tuple[str, str, int, int] | None:
    """A new-side line finding's claim and lines (None for any other anchor)."""
    anchor = finding.anchor
    if not isinstance(anchor, LineAnchor) or anchor.side != "new":
        return None
    first = anchor.start_line if anchor.start_line is not None else anchor.line
    return claim(finding), anchor.path, min(first, anchor.line), max(first, anchor.line)


def _unread_place(change: Change, finding: Finding) -> tuple[str, str, int, int] | None:
    """For an earlier new-side line finding filed without its code (by an earlier council,
    or where it could not be read): its claim at the lines it moved to over ``change``,
    when ``change`` left them alone (:func:`follow`); None otherwise. The same claim at
    those very lines is that finding told again; any other place is another occurrence."""
    anchor = finding.anchor
    if not isinstance(anchor, LineAnchor) or anchor.side != "new" or anchor.code is not None:
        return None
    if touched(change, finding):
        return None
    return _claim_at(follow(change, finding))


def touched(change: Change, finding: Finding) -> bool:
    """Whether the interdiff ``change`` edited or removed the code ``finding`` names.

    A change anchor: never (the change as a whole is still under review). A file anchor or a
    new-side line anchor: when the interdiff deletes its file (a rename still holds it:
    :func:`follow` moves it), or a line of it (``start_line`` to ``line``) is a removed ``-``
    line of a hunk (context lines and pure insertions edit nothing). An old-side line anchor
    names base code the change removed; later commits do not edit the base, so only a file
    added again at that path touches it. Never raises.
    """
    anchor = finding.anchor
    if isinstance(anchor, ChangeAnchor):
        return False
    if isinstance(anchor, LineAnchor) and anchor.side == "old":
        return any(f.status == "added" and f.path == anchor.path for f in change.files)
    changed = _old_side(change, anchor.path)
    if changed is None:
        return False
    if changed.status == "deleted":
        return True
    if isinstance(anchor, FileAnchor):
        return False
    first = anchor.start_line if anchor.start_line is not None else anchor.line
    low, high = min(first, anchor.line), max(first, anchor.line)
    return any(low <= line <= high for hunk in changed.hunks for line in hunk.removed)


def follow(change: Change, finding: Finding, head: str | None = None) -> Finding:
    """``finding`` anchored on the new side of ``change``: its lines moved by what the
    interdiff inserted or removed above them.

    For a new-side line anchor ``change`` did not touch (:func:`touched`) in a file it
    modified or renamed (a renamed file's anchor takes the new path), and a file anchor
    on a renamed file (its path only); any other finding is returned as it is (a change
    anchor has no place, and an old-side anchor names the base, which later commits do
    not edit). A moved anchor's ``witness`` becomes ``head`` (the commit ``change`` ends
    at; the same lines sit there at the new numbers), when both are given. Never raises.
    """
    anchor = finding.anchor
    if isinstance(anchor, FileAnchor):
        renamed = _old_side(change, anchor.path)
        if renamed is None or renamed.status == "deleted" or renamed.path == anchor.path:
            return finding
        moved_file = anchor.model_copy(update={"path": renamed.path})
        return finding.model_copy(update={"anchor": moved_file})
    if not isinstance(anchor, LineAnchor) or anchor.side == "old":
        return finding
    changed = _old_side(change, anchor.path)
    if changed is None or changed.status == "deleted":
        return finding
    removed = sorted(line for hunk in changed.hunks for line in hunk.removed)
    added = sorted(line for hunk in changed.hunks for line in hunk.added)

    def moved(line: int) -> int:
        # The old line is the n-th line the interdiff kept; on the new side it is the
        # n-th line that is not an added one.
        kept = line - bisect_left(removed, line)
        for new in added:
            if new > kept:
                break
            kept += 1
        return kept

    start = moved(anchor.start_line) if anchor.start_line is not None else None
    update: dict[str, object] = {
        "line": moved(anchor.line),
        "start_line": start,
        "path": changed.path,
    }
    if anchor.witness is not None and head is not None:
        update["witness"] = head
    return finding.model_copy(update={"anchor": anchor.model_copy(update=update)})


def _old_side(change: Change, path: str) -> ChangedFile | None:
    """The file of ``change`` whose old side is ``path`` (None: the interdiff left it)."""
    for changed in change.files:
        if changed.side_path("old") == path:
            return changed
    return None
