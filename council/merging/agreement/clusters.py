"""Clustering findings that agree into groups: one group per problem, conservatively.

:func:`cluster` puts each finding in exactly one group holding at most ONE finding per
reviewer (a reviewer's two findings are two claims), as indices, first raiser first, groups
in roster order. Average linkage, not single: groups merge, best first, while the average
score over all their cross pairs (unscored pairs count 0) reaches the threshold, so a chain
A~B, B~C with A≁C does not become one group unless B and C carry A. When two groups to
merge hold findings of one reviewer, the one agreeing better stays and the other leaves (at
most :data:`LEAVES` times, so it ends): else an early stray keeps a better telling out.
Deterministic: ties go to roster order, then content; scores are integer millionths.
Source: docs/harvest.md §8 (agreement); bench/agreement.py (precision, recall, speed).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from itertools import combinations, repeat

from council.change.diff import Change
from council.merging.agreement.pairs import SCALE, Adjacency, scored_pairs
from council.merging.agreement.quoting import demoted, quotes_of, unquoted
from council.merging.agreement.relation import (
    THRESHOLD,
    Place,
    Vocabulary,
    norms_of,
    place_of,
    program_clash,
)
from council.merging.agreement.words import Lexicon, text_of
from council.model.findings import Finding

LEAVES = 2
"""How many times one finding may be made to leave a group for a better telling of its
reviewer. Bounded so merging ends (every leave spends one); once is not enough: a stray
telling that joined early then locks its reviewer's better one out of a second merge
too (bench/agreement.py: recall 0.88 at once, 0.89 at twice, no better at three)."""


def cluster(
    findings: Sequence[Finding],
    reviewer_of: Sequence[str],
    roster_order: Sequence[str] = (),
    *,
    threshold: float = THRESHOLD,
    programs: Sequence[bool] = (),
    change: Change | None = None,
) -> list[list[int]]:
    """Group the findings that describe the same problem; every finding in one group.

    ``reviewer_of[i]`` is the participant id that raised ``findings[i]``;
    ``roster_order`` lists participant ids in roster order (ids not in it rank after,
    by id); ``programs[i]``: whether ``findings[i]`` is a program's telling (none when
    empty); ``change``: the change under review, whose lines a line finding points at
    are quoted code, not its prose (:mod:`~council.merging.agreement.quoting`). Returns
    groups of indices into ``findings``: each group in (roster position, index) order, so
    its first member is the first raiser; groups ordered by their first member the same
    way. A group never holds two findings of one reviewer, nor a program's telling and
    one its place forbids (:func:`~council.merging.agreement.relation.program_clash`).
    ``threshold``: the average score a group must keep (for benchmarks; consolidation
    uses the default). Time and memory about linear in the number of findings.
    Raises ValueError when ``reviewer_of`` (or a non-empty ``programs``) is not as long
    as ``findings``.
    """
    reviewer = reviewer_numbers(reviewer_of, roster_order, len(findings))
    if programs and len(programs) != len(findings):
        raise ValueError(f"programs says {len(programs)} findings' kind for {len(findings)}")
    places = [place_of(f, bool(programs) and programs[i]) for i, f in enumerate(findings)]
    adjacency = pairs_of(findings, places, reviewer, threshold, change)
    return groups_of(findings, places, reviewer, adjacency, threshold)


def reviewer_numbers(
    reviewer_of: Sequence[str], roster_order: Sequence[str], findings: int
) -> list[int]:
    """Each finding's reviewer as a number: its place in roster order (ids not in the
    roster after, by id). Raises ValueError unless there is one id per finding."""
    if len(reviewer_of) != findings:
        raise ValueError(
            f"reviewer_of names {len(reviewer_of)} reviewers for {findings} findings; "
            "give one participant id per finding"
        )
    roster = {name: at for at, name in enumerate(dict.fromkeys(roster_order))}
    names = sorted(set(reviewer_of), key=lambda name: (roster.get(name, len(roster)), name))
    number = {name: at for at, name in enumerate(names)}
    return [number[name] for name in reviewer_of]


def pairs_of(
    findings: Sequence[Finding],
    places: Sequence[Place],
    reviewer: Sequence[int],
    threshold: float,
    change: Change | None = None,
) -> Adjacency:
    """The scored pairs (:func:`~council.merging.agreement.pairs.scored_pairs`): the findings read
    into term ids and prose (less the code they quote from ``change``), weighed over all
    of them, then blocked and scored. None when a single reviewer raised everything (its
    findings never merge)."""
    if len(set(reviewer)) < 2:
        return {}
    lexicon = Lexicon()
    quotes = quotes_of(places, change, lexicon)
    read = [
        lexicon.read(f)
        if q is None
        else demoted(lexicon.read_text(unquoted(text_of(f), q.grams)), q.words)
        for f, q in zip(findings, quotes, strict=True)
    ]
    terms = [r.terms for r in read]
    vocabulary = Vocabulary(terms, lexicon.identifiers)
    squared = vocabulary.squared
    norms = norms_of(terms, squared)
    return scored_pairs(read, places, reviewer, squared, norms, vocabulary.used, threshold)


def groups_of(
    findings: Sequence[Finding],
    places: Sequence[Place],
    reviewer: Sequence[int],
    adjacency: Adjacency,
    threshold: float,
) -> list[list[int]]:
    """The groups :func:`cluster` returns, from the scored pairs: components joined by
    pairs reaching the threshold; one whose pairs all reach it (of distinct reviewers) is
    one group at once, any other is merged by average linkage."""
    bar = round(threshold * SCALE)
    groups: list[list[int]] = []
    tangled: list[list[int]] = []
    for component in _components(adjacency, bar):
        if len(component) <= 2 or _clique(component, adjacency, reviewer, bar):
            groups.append(component)
        else:
            tangled.append(component)
    if tangled:
        rank = _ranks(findings, reviewer, places, [i for c in tangled for i in c])
        for component in tangled:
            merging = _Agglomeration(component, adjacency, reviewer, rank, bar, places)
            groups.extend(merging.run())
    grouped = {i for group in groups for i in group}
    groups.extend([i] for i in range(len(findings)) if i not in grouped)
    for group in groups:
        group.sort(key=lambda i: (reviewer[i], i))
    groups.sort(key=lambda group: (reviewer[group[0]], group[0]))
    return groups


def _ranks(
    findings: Sequence[Finding],
    reviewer: Sequence[int],
    places: Sequence[Place],
    among: Sequence[int],
) -> dict[int, int]:
    """The positions of the findings ``among`` in a fixed order of (reviewer in roster
    order, place, content).

    Why: ties must be broken the same way whatever order the findings came in. Two
    findings equal in every compared field are interchangeable, so their relative order
    cannot change a result. Only findings that may be tied need a rank.
    """

    def key(i: int) -> tuple[int, str, str, int, int, str, str, str, str, float]:
        f = findings[i]
        p = places[i]
        return (
            reviewer[i],
            p.path or "",
            p.side,
            p.first or 0,
            p.last or 0,
            f.subject,
            f.discussion,
            f.label,
            f.severity or "",
            -1.0 if f.confidence is None else f.confidence,
        )

    return {i: at for at, i in enumerate(sorted(among, key=key))}


def _clique(component: list[int], adjacency: Adjacency, reviewer: Sequence[int], bar: int) -> bool:
    """Whether a component is one group by any merge order: all of different reviewers,
    every pair scoring at least ``bar`` (so every average does)."""
    if len({reviewer[i] for i in component}) < len(component):
        return False
    at_bar = bar.__le__
    for i in component:
        if sum(map(at_bar, map(adjacency[i].get, component, repeat(0)))) < len(component) - 1:
            return False
    return True


def _components(adjacency: Adjacency, bar: int) -> list[list[int]]:
    """The connected groups of findings joined by pairs scoring at least ``bar``, each of
    two or more findings (a group can only ever merge within one: an average reaches the
    bar only if some pair does). A walk over the strong pairs, each finding once."""
    strong: dict[int, list[int]] = {}
    for i, row in adjacency.items():
        near = [j for j, value in row.items() if value >= bar]
        if near:
            strong[i] = near
    seen: set[int] = set()
    components: list[list[int]] = []
    for start in strong:
        if start in seen:
            continue
        seen.add(start)
        members = [start]
        for i in members:  # grows while walked: every member's strong neighbours join
            for j in strong[i]:
                if j not in seen:
                    seen.add(j)
                    members.append(j)
        components.append(members)
    return components


class _Agglomeration:
    """Average-linkage merging of one component, best average first.

    A heap holds candidate merges ``(-average, first rank, second rank, bound, id, id,
    leaving)``; groups never change once made (a merge makes a new id), so an entry is
    current while both its ids live. A merge of two groups holding a finding of one
    reviewer is first pushed with an upper BOUND of its average (``bound`` = 1) and
    planned only when popped (then pushed again with its exact average, or dropped): a
    dense component would otherwise plan every neighbour at every merge. A merge that
    would put a program's telling beside one its place forbids
    (:func:`~council.merging.agreement.relation.program_clash`) is never made, whatever
    the average (such a pair scores 0, but others may carry the average).
    """

    def __init__(
        self,
        component: list[int],
        adjacency: Adjacency,
        reviewer: Sequence[int],
        rank: dict[int, int],
        bar: int,
        places: Sequence[Place],
    ) -> None:
        self.adjacency = adjacency
        self.places = places
        self.ruled = {i for i in component if places[i].rule is not None}
        """The members that are a program's tellings (few, usually none)."""
        self.reviewer = reviewer
        self.rank = rank
        self.bar = bar
        self.groups: dict[int, list[int]] = {}
        self.owner: dict[int, int] = {}
        self.key: dict[int, int] = {}
        """Group → the least rank of its members (its place in ties)."""
        self.held: dict[int, int] = {}
        """Group → the reviewers of its members, as a bit mask (bit r: reviewer r)."""
        self.left: dict[int, int] = {}
        self.heap: list[tuple[float, int, int, int, int, int, tuple[int, ...]]] = []
        self.fresh = 0
        for i in component:
            self._make([i])
        owner, key, heap = self.owner, self.key, self.heap
        for i in component:
            mine, a = rank[i], owner[i]
            for j, value in adjacency[i].items():
                # any order: the heap orders entries by value, then by ranks (each entry
                # distinct, so heapify below pops them as pushing one by one would)
                if value >= bar and j in owner and mine < rank[j]:
                    b = owner[j]
                    low, high = (key[a], key[b]) if key[a] < key[b] else (key[b], key[a])
                    heap.append((-(value / 1), low, high, 0, a, b, ()))
        heapq.heapify(heap)

    def _make(self, members: list[int]) -> int:
        gid = self.fresh
        self.fresh += 1
        self.groups[gid] = members
        mask = 0
        for i in members:
            mask |= 1 << self.reviewer[i]
        self.held[gid] = mask
        self.key[gid] = min(self.rank[i] for i in members)
        for i in members:
            self.owner[i] = gid
        return gid

    def _push(
        self, a: int, b: int, total: int, pairs: int, leaving: tuple[int, ...], bound: int = 0
    ) -> None:
        first, second = self.key[a], self.key[b]
        low, high = (first, second) if first < second else (second, first)
        heapq.heappush(self.heap, (-(total / pairs), low, high, bound, a, b, leaving))

    def _score(self, i: int, j: int) -> int:
        return self.adjacency.get(i, {}).get(j, 0)

    def _merge_plan(self, a: int, b: int, cross: int) -> tuple[int, int, tuple[int, ...]] | None:
        """(total, pairs, leaving) of merging groups ``a`` and ``b``, or None if refused.

        ``cross`` is the sum of scores over the two groups' cross pairs. When both hold a
        finding of one reviewer, the one agreeing less with the rest of the merged group
        leaves (ties: the later in rank); refused if that one already left
        :data:`LEAVES` times, if a side would be emptied, or if a side, without the
        leaver, would no longer average the bar over its own pairs (so every group keeps
        its average).
        """
        first, second = self.groups[a], self.groups[b]
        by_reviewer = {self.reviewer[i]: i for i in first}
        clashes = [
            (by_reviewer[self.reviewer[j]], j) for j in second if self.reviewer[j] in by_reviewer
        ]
        if not clashes:
            return cross, len(first) * len(second), ()
        union = first + second
        leaving: list[int] = []
        for x, y in clashes:
            others = [u for u in union if self.reviewer[u] != self.reviewer[x]]
            fit_x = sum(self._score(x, u) for u in others)
            fit_y = sum(self._score(y, u) for u in others)
            stays_x = fit_x > fit_y or (fit_x == fit_y and self.rank[x] < self.rank[y])
            leaver = y if stays_x else x
            if self.left.get(leaver, 0) >= LEAVES:
                return None
            leaving.append(leaver)
        gone = set(leaving)
        kept_a = [i for i in first if i not in gone]
        kept_b = [j for j in second if j not in gone]
        if not kept_a or not kept_b:
            return None
        for kept in (kept_a, kept_b):
            if len(kept) > 1 and not self._holds(kept):
                return None
        total = sum(self._score(i, j) for i in kept_a for j in kept_b)
        return total, len(kept_a) * len(kept_b), tuple(sorted(gone, key=self.rank.__getitem__))

    def _holds(self, members: list[int]) -> bool:
        """Whether the average score over all pairs of ``members`` reaches the bar.

        True of every group a plain merge makes (both sides and their cross pairs do);
        a group that lost a member must be checked again.
        """
        pairs = len(members) * (len(members) - 1) // 2
        total = sum(self._score(i, j) for i, j in combinations(members, 2))
        return total >= self.bar * pairs

    def _push_neighbours(self, gid: int) -> None:
        """Push every merge of group ``gid`` with a group it has scored pairs with."""
        cross: dict[int, int] = {}
        owned, adjacency = self.owner.get, self.adjacency
        empty: dict[int, int] = {}
        add = cross.get
        for i in self.groups[gid]:
            for j, value in adjacency.get(i, empty).items():
                other = owned(j)
                if other is not None:
                    cross[other] = add(other, 0) + value
        cross.pop(gid, None)
        groups, held, bar = self.groups, self.held, self.bar
        size, mine = len(groups[gid]), held[gid]
        # the order of pushes does not matter: the heap orders entries by their values
        for other, total in cross.items():
            if total < bar:
                continue
            theirs = len(groups[other])
            clashes = (mine & held[other]).bit_count()
            if not clashes:
                if total >= bar * size * theirs:
                    self._push(gid, other, total, size * theirs, ())
                continue
            # at least one member leaves per clash, from either side: the fewest pairs left
            fewest = min((size - clashes) * theirs, size * (theirs - clashes))
            if fewest > 0 and total >= bar * fewest:
                self._push(gid, other, total, fewest, (), bound=1)

    def _clash(self, first: list[int], second: list[int], gone: set[int]) -> bool:
        """Whether some program's telling of one side may not be one finding with some
        telling of the other (``gone``: those leaving, not compared)."""
        ruled, places = self.ruled, self.places
        return any(
            program_clash(places[i], places[j])
            for i in first
            if i not in gone
            for j in second
            if j not in gone and (i in ruled or j in ruled)
        )

    def run(self) -> list[list[int]]:
        """Merge until no candidate reaches the bar; the resulting groups."""
        while self.heap:
            _, _, _, bound, a, b, leaving = heapq.heappop(self.heap)
            if a not in self.groups or b not in self.groups:
                continue
            if bound:
                cross = sum(self._score(i, j) for i in self.groups[a] for j in self.groups[b])
                plan = self._merge_plan(a, b, cross)
                if plan is not None and plan[0] >= self.bar * plan[1]:
                    self._push(a, b, *plan)
                continue
            gone = set(leaving)
            if self.ruled and self._clash(self.groups[a], self.groups[b], gone):
                continue
            del self.key[a], self.key[b], self.held[a], self.held[b]
            merged = [i for i in self.groups.pop(a) + self.groups.pop(b) if i not in gone]
            gid = self._make(merged)
            for i in leaving:
                self.left[i] = self.left.get(i, 0) + 1
            alone = [self._make([i]) for i in leaving]
            self._push_neighbours(gid)
            for single in alone:
                self._push_neighbours(single)
        return list(self.groups.values())
