"""Unit tests for the fast paths of agreement (council.merging.agreement): term ids read the same
terms as the string reader, every scored pair carries the relation's exact score, and
the consolidation's collector pause is undone."""

from __future__ import annotations

import gc
import random
from collections import Counter
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from council.merging.agreement import score
from council.merging.agreement.clusters import groups_of, pairs_of, reviewer_numbers
from council.merging.agreement.pairs import (
    DENSE,
    FLOOR_SHARE,
    RARE_PER_REVIEWER,
    SCALE,
    Adjacency,
)
from council.merging.agreement.relation import (
    THRESHOLD,
    WINDOW,
    Place,
    Vocabulary,
    combined,
    least_shared,
    norms_of,
    place_factor,
    place_of,
    prose_cosine,
)
from council.merging.agreement.words import Lexicon, Reader
from council.merging.consolidation import collector_paused
from council.model.findings import Anchor, ChangeAnchor, FileAnchor, Finding, LineAnchor

_SUBJECTS = [
    "`santizeAnchors` drops order.productId",
    "order.productId is lost in santizeAnchors",
    "The retry loop ignores the deadline in `fetchWithBackoff`",
    "fetchWithBackoff never checks the deadline",
    "Missing null check on user.email",
    "user.email may be None here",
    "The lock is released before the cache write in `buildIndex`",
    "Typo in README",
]
_DISCUSSIONS = ["", "see `buildIndex` and the write lock", "on retry the deadline is gone"]


def _round(seed: int, count: int) -> tuple[list[Finding], list[str]]:
    """A random round over two files and the change as a whole: lines, files only, no
    file at all, both sides of the diff, four reviewers."""
    rng = random.Random(seed)
    findings: list[Finding] = []
    reviewers: list[str] = []
    for _ in range(count):
        path = rng.choice(["a.py", "b.py", None])
        anchor: Anchor
        if path is None:
            anchor = ChangeAnchor()
        elif rng.random() < 0.3:
            anchor = FileAnchor(path=path)
        else:
            side = "old" if rng.random() < 0.2 else "new"
            anchor = LineAnchor(path=path, line=rng.randint(1, 80), side=side)
        subject = rng.choice(_SUBJECTS)
        findings.append(
            Finding(
                anchor=anchor, label="issue", subject=subject, discussion=rng.choice(_DISCUSSIONS)
            )
        )
        reviewers.append(rng.choice(["hawk", "owl", "kite", "wren"]))
    return findings, reviewers


def test_term_ids_stand_for_the_reader_terms() -> None:
    """One id per term: as many ids as terms, and two findings share as many ids as terms."""
    findings, _ = _round(3, 30)
    read, lexicon = Reader(), Lexicon()
    terms = [set(read(f)) for f in findings]
    ids = [set(lexicon(f)) for f in findings]
    for k, f in enumerate(findings):
        assert len(ids[k]) == len(terms[k]), f.subject
        for m in range(k):
            assert len(ids[k] & ids[m]) == len(terms[k] & terms[m])


def test_identifier_ids_are_the_identifier_terms() -> None:
    """The lexicon knows which ids are code identifiers: as many as the reader's."""
    finding = Finding(
        anchor=ChangeAnchor(), label="issue", subject="`santizeAnchors` drops order.productId"
    )
    lexicon = Lexicon()
    ids = lexicon(finding)
    named = [t for t in Reader()(finding) if isinstance(t, str) and t.startswith("`")]
    assert len(lexicon.identifiers & set(ids)) == len(named) > 0


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_every_scored_pair_has_the_exact_score(seed: int) -> None:
    """Blocking chooses which pairs are scored; a scored pair's value is score() itself
    (weighed among the other findings), in millionths, for lines, files only, other
    sides and no file alike."""
    findings, reviewers = _round(seed, 60)
    number = reviewer_numbers(reviewers, ["hawk", "owl", "kite", "wren"], len(findings))
    places = [place_of(f) for f in findings]
    adjacency = pairs_of(findings, places, number, THRESHOLD)
    assert adjacency, "the round should have scored pairs"
    for i, row in adjacency.items():
        for j, value in row.items():
            assert reviewers[i] != reviewers[j]
            others = [f for k, f in enumerate(findings) if k not in (i, j)]
            assert value == round(score(findings[i], findings[j], others) * SCALE)
            assert adjacency[j][i] == value


def test_one_reviewer_scores_no_pair() -> None:
    """A single reviewer's findings are never compared (they never merge)."""
    findings, _ = _round(5, 20)
    places = [place_of(f) for f in findings]
    assert pairs_of(findings, places, [0] * len(findings), THRESHOLD) == {}


def test_the_collector_pause_is_undone() -> None:
    """The collector runs again after the block, also when it raises, and stays off when
    it was off before."""
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


# -- blocking is a claim: the scored pairs are exactly those the rules name ---------------

_WORDS = [
    "`buildIndex`",
    "parse_limit",
    "fetchWithBackoff()",
    "user.email",
    "deadline",
    "retry",
    "cache",
    "lock",
    "null",
    "query",
    "token",
    "leak",
    "overflow",
    "order",
    "released",
    "write",
    "missing",
    "check",
    "the",
    "is",
]

_ANCHORS = st.one_of(
    st.just(ChangeAnchor()),
    st.builds(FileAnchor, path=st.sampled_from(["a.py", "b.py"])),
    st.builds(
        LineAnchor,
        path=st.sampled_from(["a.py", "b.py"]),
        line=st.integers(1, 60),
        side=st.sampled_from(["new", "new", "old"]),
    ),
)

_FINDING = st.builds(
    lambda anchor, subject, discussion: Finding(
        anchor=anchor, label="issue", subject=" ".join(subject), discussion=" ".join(discussion)
    ),
    _ANCHORS,
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6),
    st.lists(st.sampled_from(_WORDS), max_size=8),
)


def _brute_pairs(findings: list[Finding], places: list[Place], reviewer: list[int]) -> Adjacency:
    """Every pair of different reviewers the blocking rules name, each scored exactly as the
    relation scores it, by brute force over all pairs: two line findings of one file and
    side (within the window, which a non-zero place factor says); a finding without lines
    or on the old side and one of its file sharing a term used by at most the cap of the
    file's findings; a finding naming no file and any other sharing a term used by at most
    the cap of all findings. Two line findings of which the earlier (by first line, last
    line, index) has more than DENSE others after it in its window (a crowd) need a shared
    term used by at most the cap of their side's findings. Kept from the floor (threshold
    / 4) up, as the scorer keeps."""
    if len(set(reviewer)) < 2:
        return {}
    lexicon = Lexicon()
    read = [lexicon.read(f) for f in findings]
    terms = [r.terms for r in read]
    vocabulary = Vocabulary(terms, lexicon.identifiers)
    squared = vocabulary.squared
    norms = norms_of(terms, squared)
    prose = [sum(squared[t] for t in r.prose) for r in read]
    cap = RARE_PER_REVIEWER * len(set(reviewer))
    floor = round(THRESHOLD * SCALE / FLOOR_SHARE)
    in_file: dict[str | None, Counter[int]] = {}
    for place, listed in zip(places, terms, strict=True):
        in_file.setdefault(place.path, Counter()).update(listed)

    def loose(place: Place) -> bool:
        return place.first is None or place.side == "old"

    # a crowd: a line finding with more than DENSE others of its file and side after it
    # (by first line, last line, index) within its window is paired only by a term at
    # most the cap of that side's findings use
    on_side: dict[tuple[str | None, str], list[int]] = {}
    for k, place in enumerate(places):
        if place.first is not None:
            on_side.setdefault((place.path, place.side), []).append(k)
    position: dict[int, int] = {}
    crowded: set[int] = set()
    side_used: dict[tuple[str | None, str], Counter[int]] = {}
    for key, members in on_side.items():
        order = sorted(members, key=lambda k: (places[k].first, places[k].last, k))
        side_used[key] = Counter(t for k in members for t in terms[k])
        for at, k in enumerate(order):
            position[k] = at
            last = places[k].last or 0
            after = sum(1 for m in order[at + 1 :] if (places[m].first or 0) <= last + WINDOW)
            if after > DENSE:
                crowded.add(k)

    adjacency: Adjacency = {}
    for i, j in combinations(range(len(findings)), 2):
        a, b = places[i], places[j]
        factor = place_factor(a, b)
        if reviewer[i] == reviewer[j] or not factor or not norms[i] or not norms[j]:
            continue
        shared = set(terms[i]).intersection(terms[j])
        if a.path is None or b.path is None:
            named = any(1 < vocabulary.used[t] <= cap for t in shared)
        else:
            lined = a.first is not None and b.first is not None and a.side == b.side
            if lined and (i if position[i] < position[j] else j) in crowded:
                used_here = side_used[(a.path, a.side)]
                lined = any(used_here[t] <= cap for t in shared)
            rare = (loose(a) or loose(b)) and any(in_file[a.path][t] <= cap for t in shared)
            named = lined or rare
        if not named or not shared:
            continue
        whole = sum(squared[t] for t in shared) / (norms[i] * norms[j])
        if round(whole * factor * SCALE) < floor:
            continue
        least = least_shared(a, b)
        said = prose_cosine(squared.__getitem__, read[i], prose[i], read[j], prose[j], least)
        value = round(combined(whole, said) * factor * SCALE)
        if value >= floor:
            adjacency.setdefault(i, {})[j] = value
            adjacency.setdefault(j, {})[i] = value
    return adjacency


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_FINDING, st.integers(0, 3)), min_size=2, max_size=30),
)
def test_blocking_scores_exactly_the_pairs_its_rules_name(told: list[tuple[Finding, int]]) -> None:
    """Whatever the findings (most naming no file), the fast path (postings split by
    asker, the rare-term accumulator, the bound that drops a candidate untouched) scores
    the same pairs with the same values as brute force over all pairs under the same
    rules, so the groups are the same: it never merges what the relation keeps apart,
    nor keeps apart what it merges. (Up to interchangeable findings: two equal tellings
    of one reviewer may trade places, as the order pairs were scored in decides.)"""
    findings = [f for f, _ in told]
    reviewer = [r for _, r in told]
    places = [place_of(f) for f in findings]
    fast = pairs_of(findings, places, reviewer, THRESHOLD)
    brute = _brute_pairs(findings, places, reviewer)
    assert fast == brute
    same: dict[tuple[int, str], int] = {}
    first = [same.setdefault((r, f.model_dump_json()), i) for i, (f, r) in enumerate(told)]

    def canonical(groups: list[list[int]]) -> list[list[int]]:
        return sorted(sorted(first[i] for i in group) for group in groups)

    by_fast = groups_of(findings, places, reviewer, fast, THRESHOLD)
    by_brute = groups_of(findings, places, reviewer, brute, THRESHOLD)
    assert canonical(by_fast) == canonical(by_brute)


_NEW_LINE = st.builds(LineAnchor, path=st.just("a.py"), line=st.integers(1, 12))
_CROWDED_ANCHORS = st.one_of(
    _NEW_LINE,
    _NEW_LINE,
    _NEW_LINE,
    st.just(ChangeAnchor()),
    st.just(FileAnchor(path="a.py")),
    st.builds(LineAnchor, path=st.just("a.py"), line=st.integers(1, 12), side=st.just("old")),
)

_TEXT = st.tuples(
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6).map(" ".join),
    st.lists(st.sampled_from(_WORDS), max_size=8).map(" ".join),
)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(_TEXT, min_size=1, max_size=3),
    st.lists(_CROWDED_ANCHORS, min_size=1, max_size=4),
    st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(0, 3)),
        min_size=2 + DENSE,
        max_size=120,
    ),
)
def test_twins_score_exactly_the_pairs_brute_force_scores(
    texts: list[tuple[str, str]], anchors: list[Anchor], picks: list[tuple[int, int, int]]
) -> None:
    """Up to 120 reviewers filing the same few tellings (twins: read alike, scored once
    per finding and place factor) at a few places, crowded past DENSE on a few lines of
    one file: the same pairs with the same values as brute force over all pairs, so the
    same groups."""
    findings = [
        Finding(
            anchor=anchors[a % len(anchors)],
            label="issue",
            subject=texts[t % len(texts)][0],
            discussion=texts[t % len(texts)][1],
        )
        for t, a, _ in picks
    ]
    reviewer: list[int] = []
    for k, (_, _, again) in enumerate(picks):  # one in four told by the previous reviewer
        reviewer.append(reviewer[-1] if k and not again else k)
    places = [place_of(f) for f in findings]
    fast = pairs_of(findings, places, reviewer, THRESHOLD)
    brute = _brute_pairs(findings, places, reviewer)
    assert fast == brute
    same: dict[tuple[int, str], int] = {}
    first = [
        same.setdefault((r, f.model_dump_json()), i)
        for i, (f, r) in enumerate(zip(findings, reviewer, strict=True))
    ]

    def canonical(groups: list[list[int]]) -> list[list[int]]:
        return sorted(sorted(first[i] for i in group) for group in groups)

    by_fast = groups_of(findings, places, reviewer, fast, THRESHOLD)
    by_brute = groups_of(findings, places, reviewer, brute, THRESHOLD)
    assert canonical(by_fast) == canonical(by_brute)


def test_five_hundred_reviewers_filing_one_finding_are_one_group() -> None:
    """500 reviewers telling one finding on one line (the crowd past DENSE, every one a
    twin): one group of all 500 in roster order, every pair scored as brute force does."""
    told = Finding(
        anchor=LineAnchor(path="app.py", line=2), label="nitpick", subject="debug print left in"
    )
    findings = [told.model_copy() for _ in range(500)]
    reviewer = list(range(500))
    places = [place_of(f) for f in findings]
    fast = pairs_of(findings, places, reviewer, THRESHOLD)
    assert sum(map(len, fast.values())) == 500 * 499
    assert fast == _brute_pairs(findings, places, reviewer)
    assert groups_of(findings, places, reviewer, fast, THRESHOLD) == [list(range(500))]
