"""Consolidation across reviewers: one finding per claim, agreement kept in ``raised_by``.

Several reviewers often see the same problem. Counting each telling as its own finding
would bury the report in repeats and hide agreement; merging them into one finding that
lists who raised it does both jobs. Filing then gives the merged findings their session
ids in ROSTER order, never completion order, so ids do not depend on who answered first.

Usage::

    per_participant = [("hawk", with_origin(hawk_harvest.findings, hawk_origin)),
                       ("owl", with_origin(owl_harvest.findings, owl_origin))]
    merged = merge_across(per_participant)
    first_id = store.issue(len(merged))          # INCRBY on session:{session}:issued
    filed = file_findings(merged, first_id)

Source: harvest.md §8; architecture.md (consolidate).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from council.findings import Finding, Origin, anchor_path, anchor_precision, severity_rank
from council.sameness import fold_subject


def with_origin(findings: Sequence[Finding], origin: Origin) -> list[Finding]:
    """The findings with ``origin`` set: who filed them, in which run.

    Why: the origin is set by the round, never read from the wire (harvest.md §2), and it
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
    """Where :func:`merge_across` looks for a finding's merge target, without scanning
    every kept finding (which made a reviewer's 100,000 findings take minutes: the scan
    was quadratic).

    Two findings can only say the same thing when their folded subjects are equal, so
    kept findings are listed by folded subject, then by the path they were kept with:

    * ``placed[(subject, path)]``: kept findings first kept with a file. Their path never
      changes (they absorb only findings of that path or of none), so all of them suit a
      finding of that path, and the only question is whether this participant already
      merged into them. That only ever becomes true, so one cursor per (list,
      participant) skips those for good: amortized O(1) per finding.
    * ``unplaced[subject]``: kept findings first kept with no file (a change anchor).
      Absorbing a finding with a file gives them one, so they are checked one by one
      (there are few: findings about the whole change are rare).

    Lists hold positions in ``kept`` in increasing order, so the target, the EARLIEST
    suitable kept finding, is the smallest position among each list's first suitable one.
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

    ``per_participant`` is ``(participant id, its findings)`` in ROSTER order; each
    finding should already carry its origin (:func:`with_origin`). Walking in that order,
    a finding merges into the EARLIEST kept finding that :func:`~council.sameness.
    says_the_same` as it and that no finding of the same participant merged into yet
    (merging is ACROSS reviewers: one reviewer's own repeats stay as it wrote them);
    otherwise it is kept. The relation is not transitive and nothing is re-merged. The
    kept finding keeps its label, subject, discussion and origin; takes the most precise
    anchor (line > file > change; the first among equals) and the highest severity and
    confidence given; and ``raised_by`` lists everyone who raised it, the first raiser
    included, in roster order (ids not in the roster after, in first-seen order). Ids a
    finding already carries in ``raised_by`` are kept; a judge's carried ids stand for
    its raisers (the judge itself is not one). A finding raised by one participant alone,
    carrying no ``raised_by``, has none.
    Result: kept findings in the order they were first kept. Time: about linear in the
    number of findings (:class:`_Index`). Source: harvest.md §8.
    """
    order: dict[str, int] = {}
    for participant, _ in per_participant:
        order.setdefault(participant, len(order))
    kept: list[_Kept] = []
    index = _Index(kept)
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
            else:
                kept[at].absorb(participant, finding)
    return _finished(kept, order)


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
    a finding has no origin. Source: harvest.md §2, §8; architecture.md (finding ids).
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
