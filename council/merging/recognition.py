"""Recognition: which finding of a new round is which finding remembered from before.

Matching by fingerprint alone made one bug #5, then #28, then #47, and let a reworded
dismissed finding gate again. So new findings are matched one to one to remembered ones (an
earlier round's, a dismissal's, a baseline entry's): equal fingerprints
(:func:`council.model.fingerprint.fingerprint`) first, then pairs by the agreement relation
(:mod:`council.merging.agreement.relation`), best first, each reaching
:data:`~council.merging.agreement.relation.THRESHOLD`; ties to the new finding first in
roster order, then the lowest remembered id. A pair scores the best of its tellings
(``members`` too). Pure. Source: docs/identity-and-clocks.md "Identity of a finding across
rounds"; docs/harvest.md §8 (agreement).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from council.merging.agreement.relation import THRESHOLD, Place, Vocabulary, place_factor, place_of
from council.merging.agreement.words import Reader, Term
from council.model.findings import Finding, anchor_path, severity_rank
from council.model.fingerprint import fingerprint

MatchedBy = Literal["fingerprint", "agreement"]
"""How a new finding was recognized: its own fingerprint, or the agreement relation (it
was reworded)."""


@dataclass(frozen=True)
class Recognition:
    """A new finding recognized as a remembered one."""

    earlier: Finding
    """The remembered finding it is (its id, when it has one, is the one to keep)."""
    at: int
    """The remembered finding's index in the ``earlier`` given to :func:`recognize`."""
    by: MatchedBy
    """``fingerprint`` when their content fingerprints are equal, else ``agreement``."""
    score: float
    """The relation's score of the pair (0 up to 1.5; a fingerprint pair may score 0)."""


def recognize(
    findings: Sequence[Finding],
    earlier: Sequence[Finding],
    roster_order: Sequence[str] = (),
    programs: Collection[str] = frozenset(),
) -> dict[int, Recognition]:
    """The new ``findings`` that are remembered ones: index into ``findings`` →
    :class:`Recognition`, one to one (the module's rule).

    ``findings``: the new ones in filing order; ``earlier``: the remembered ones (any
    order; ids, when given, break ties); ``roster_order``: participant ids in roster
    order (a new finding ranks by its origin's place in it, then by its position).
    Only pairs on one file, or where either names no file, are scored, so the work is
    per file. ``programs`` are the ids of program reviewers (analyzers): a finding only
    programs told is recognized by its fingerprint alone, never by agreement, and so is
    a pair of findings both led by one (:func:`led_by_program`). An analyzer
    never rewords itself (bandit's B602 has one subject), and two of its rules on one
    file share the file's words: by agreement, a new B301 took the id of a fixed B602,
    and the B602 was no longer carried. Nor is a pair recognized by agreement when the
    new finding would lower the earlier one's severity or drop a program's telling of it
    (:func:`keeps_gate`): the findings stay apart. Deterministic; never raises.
    """
    if not findings or not earlier:
        return {}
    order = sorted(range(len(earlier)), key=lambda at: _earlier_key(earlier[at]))
    kept = [earlier[at] for at in order]
    read = Reader()
    new_told = [_terms_and_places(f, read) for f in findings]
    old_told = [_terms_and_places(f, read) for f in kept]
    vocabulary = Vocabulary([t for told in (*new_told, *old_told) for t, _ in told])
    new_prints = [fingerprint(f) for f in findings]
    old_prints = [fingerprint(f) for f in kept]
    by_path: dict[str | None, list[int]] = {}
    for at, f in enumerate(kept):
        by_path.setdefault(anchor_path(f.anchor), []).append(at)
    roster = {name: at for at, name in enumerate(dict.fromkeys(roster_order))}
    old_machine = [told_by_programs(f, programs) for f in kept]
    old_led = [led_by_program(f, programs) for f in kept]
    pairs: list[tuple[int, float, tuple[int, int], int, int]] = []
    for i, finding in enumerate(findings):
        path = anchor_path(finding.anchor)
        pool = (
            range(len(kept)) if path is None else (*by_path.get(path, ()), *by_path.get(None, ()))
        )
        rank = (_roster_rank(finding, roster), i)
        machine = told_by_programs(finding, programs)
        led = led_by_program(finding, programs)
        for j in pool:
            same_print = new_prints[i] == old_prints[j]
            if not same_print and (machine or old_machine[j] or (led and old_led[j])):
                continue
            if not keeps_gate(finding, kept[j], programs):
                continue  # even the same occurrence re-graded lower stays apart
            value = _best(vocabulary, new_told[i], old_told[j])
            if same_print or value >= THRESHOLD:
                pairs.append((0 if same_print else 1, -value, rank, j, i))
    pairs.sort()
    found: dict[int, Recognition] = {}
    claimed: set[int] = set()
    for tier, negative, _, j, i in pairs:
        if i in found or j in claimed:
            continue
        claimed.add(j)
        found[i] = Recognition(
            earlier=kept[j],
            at=order[j],
            by="fingerprint" if tier == 0 else "agreement",
            score=-negative,
        )
    return found


Telling = tuple[tuple[Term, ...], Place]
"""One telling of a finding as the relation reads it: its terms and its place."""


def _terms_and_places(finding: Finding, read: Reader) -> list[Telling]:
    """The terms and place of the finding's own telling, then of each member's (a
    consolidated finding holds every reviewer's: a rewording may agree with any of them)."""
    told: list[Telling] = [(read(finding), place_of(finding))]
    for m in finding.members or ():
        member = m.as_finding()
        told.append((read(member), place_of(member)))
    return told


def _best(vocabulary: Vocabulary[Term], new: Sequence[Telling], old: Sequence[Telling]) -> float:
    """The highest score between a telling of one finding and a telling of the other
    (the relation's: cosine times the place factor)."""
    best = 0.0
    for terms, place in new:
        for other, there in old:
            factor = place_factor(place, there)
            if factor:
                best = max(best, vocabulary.cosine(terms, other) * factor)
    return best


def _earlier_key(finding: Finding) -> tuple[int, int, str]:
    """Remembered findings by id (those without one last), then by fingerprint."""
    ident = finding.id
    return (0 if ident is not None else 1, ident or 0, fingerprint(finding))


def _roster_rank(finding: Finding, roster: dict[str, int]) -> int:
    """The place of a finding's first raiser in the roster (unknown ones after)."""
    who = finding.origin.participant if finding.origin is not None else None
    return roster.get(who, len(roster)) if who is not None else len(roster)


def tellers(finding: Finding) -> set[str]:
    """The reviewers that told ``finding``: its raisers, its origin, its members."""
    told = {*(finding.raised_by or ())}
    if finding.origin is not None and finding.origin.participant is not None:
        told.add(finding.origin.participant)
    told.update(m.participant for m in finding.members or ())
    return told


def told_by_programs(finding: Finding, programs: Collection[str]) -> bool:
    """Whether every reviewer that told ``finding`` (its raisers, its origin, its
    members) is a program reviewer; False when none is known."""
    if not programs:
        return False
    told = tellers(finding)
    return bool(told) and told <= set(programs)


def keeps_gate(new: Finding, earlier: Finding, programs: Collection[str]) -> bool:
    """Whether ``new`` may be recognized as ``earlier`` by agreement without moving what
    gates: it is at least as grave, and every program reviewer that told ``earlier``
    tells it too. Otherwise the two stay apart, so ``earlier`` is carried (or outdated)
    rather than taken over: a model's minor re-raise of the naming nit merged with
    bandit's critical B602 must not take its id and leave the B602 neither carried nor
    raised (issue 20, situation 4: "--since-last turns a failed gate green")."""
    if severity_rank(new.severity) < severity_rank(earlier.severity):
        return False
    return tellers(earlier) & set(programs) <= tellers(new)


def led_by_program(finding: Finding, programs: Collection[str]) -> bool:
    """Whether ``finding``'s own telling (its origin: the first of its members in roster
    order) is a program reviewer's. Two findings both led by analyzers are the same
    problem only when their fingerprints are equal, whoever else told them: an
    analyzer's rule is its subject, so B301 (pickle) and a fixed B307 (eval) are two
    problems even when a model told each beside it and their words agree."""
    origin = finding.origin
    return origin is not None and origin.participant is not None and origin.participant in programs
