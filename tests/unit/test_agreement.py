"""Unit tests for agreement across reviewers (council.merging.agreement): the relation, the
clustering's linkage, determinism and odd input."""

from __future__ import annotations

import random
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from council.merging.agreement import THRESHOLD, agrees_with, cluster, score
from council.merging.agreement.words import terms_of
from council.model.findings import Anchor, ChangeAnchor, FileAnchor, Finding, LineAnchor, Origin


def _f(
    subject: str, discussion: str = "", anchor: Anchor | None = None, who: str | None = None
) -> Finding:
    """A finding with a change anchor unless told, by ``who`` when given."""
    origin = Origin(kind="reviewer", participant=who) if who is not None else None
    return Finding(
        anchor=anchor if anchor is not None else ChangeAnchor(),
        label="issue",
        subject=subject,
        discussion=discussion,
        origin=origin,
    )


def _line(path: str, line: int, start: int | None = None) -> LineAnchor:
    """A line anchor on the new side."""
    return LineAnchor(path=path, line=line, start_line=start)


BACKGROUND = [
    _f("The retry loop ignores the deadline and spins under load"),
    _f("Typo in the README: teh should be the"),
    _f("Missing test for the empty input case"),
    _f("The config parser drops unknown keys silently"),
    _f("Logging the token leaks a secret into the logs"),
    _f("The cache is never invalidated after an update"),
]
"""Unrelated findings, so that words are weighed among others as in a real round."""


def _contents(
    groups: list[list[int]], findings: list[Finding], reviewers: list[str]
) -> list[tuple[tuple[str, str], ...]]:
    """Groups by content: each a sorted tuple of (reviewer, finding JSON), all sorted.

    Why content, not positions: two equal findings of one reviewer are interchangeable,
    so which of them joins a group may follow the input order; what the groups say may not.
    """
    return sorted(
        tuple(sorted((reviewers[i], findings[i].model_dump_json()) for i in group))
        for group in groups
    )


# -- the words ------------------------------------------------------------------------------


def test_identifiers_are_read_as_code() -> None:
    """Backticked code, dotted paths, camelCase and snake_case become identifier terms."""
    terms = terms_of(_f("`santizeAnchors` drops order.productId", "in _load_config and fooBar()"))
    for identifier in (
        "`santizeanchors",
        "`order.productid",
        "`productid",
        "`_load_config",
        "`foobar",
    ):
        assert identifier in terms
    assert "~the" not in terms and "~in" not in terms


def test_prose_abbreviations_are_not_identifiers() -> None:
    """'e.g.' and sentence-final dots do not make identifiers."""
    terms = terms_of(_f("Leaks the handle, e.g. on timeout."))
    assert not any(isinstance(t, str) and t.startswith("`") for t in terms)


# -- the relation ---------------------------------------------------------------------------


def test_a_shared_identifier_weighs_more_than_a_shared_word() -> None:
    """Two tellings sharing a code name and two words score higher than two sharing a
    plain word instead of the name."""
    a1, a2 = _f("alpha `fooBarBaz` leaks memory"), _f("gamma `fooBarBaz` leaks memory")
    b1, b2 = _f("alpha widget leaks memory"), _f("gamma widget leaks memory")
    among = [*BACKGROUND, a1, a2, b1, b2]
    assert score(a1, a2, among) > score(b1, b2, among) > 0


def test_a_shared_code_name_alone_is_not_agreement() -> None:
    """Naming the same code says where, not what: tellings sharing only names (or one
    word) score 0, whatever their lines."""
    a = _f("alpha `fooBarBaz` beta", anchor=_line("a.py", 3), who="hawk")
    b = _f("gamma `fooBarBaz` delta", anchor=_line("a.py", 3), who="owl")
    c = _f("gamma `fooBarBaz` delta beta", anchor=_line("a.py", 3), who="owl")
    assert score(a, b, BACKGROUND) == score(a, c, BACKGROUND) == 0.0


def test_the_same_problem_in_different_words_agrees() -> None:
    """Two models' tellings of one problem, naming the same code, agree."""
    hawk = _f(
        "`santizeAnchors` drops order.productId when the anchor list is empty",
        anchor=_line("src/cart.ts", 40, 38),
        who="hawk",
    )
    owl = _f(
        "order.productId is lost: santizeAnchors returns early on an empty list",
        anchor=_line("src/cart.ts", 41),
        who="owl",
    )
    assert agrees_with(hawk, owl, BACKGROUND)


def test_different_problems_do_not_agree() -> None:
    """Findings about different code in different words do not agree."""
    hawk = _f("`santizeAnchors` drops order.productId", who="hawk")
    owl = _f("The retry budget in `fetchWithBackoff` is never reset", who="owl")
    assert not agrees_with(hawk, owl, BACKGROUND)


def test_different_files_never_agree() -> None:
    """The very same words about two files are two problems; on one file they agree."""
    a = _f("Missing null check on user.email", anchor=FileAnchor(path="a.py"), who="hawk")
    b = _f("Missing null check on user.email", anchor=FileAnchor(path="b.py"), who="owl")
    same = _f("Missing null check on user.email", anchor=FileAnchor(path="a.py"), who="owl")
    assert score(a, b, BACKGROUND) == 0.0
    assert not agrees_with(a, b, BACKGROUND)
    assert agrees_with(a, same, BACKGROUND)


def test_nearby_lines_weigh_for_and_far_lines_against() -> None:
    """Overlapping lines raise the score, a file anchor is neutral, far lines forbid."""
    words = "The lock is released before the cache write in `buildIndex`"
    base = _f(words, anchor=_line("idx.go", 50, 48))
    overlapping = _f(words, anchor=_line("idx.go", 49))
    near = _f(words, anchor=_line("idx.go", 60))
    file_only = _f(words, anchor=FileAnchor(path="idx.go"))
    far = _f(words, anchor=_line("idx.go", 400))
    among = [*BACKGROUND, base]
    assert (
        score(base, overlapping, among) > score(base, near, among) > score(base, file_only, among)
    )
    assert score(base, far, among) == 0.0


def test_a_finding_without_a_file_is_compared_on_its_words() -> None:
    """A change anchor neither helps nor hurts: the score is the words' alone."""
    words = "The lock is released before the cache write in `buildIndex`"
    placed = _f(words, anchor=_line("idx.go", 50))
    unplaced = _f(words)
    file_only = _f(words, anchor=FileAnchor(path="idx.go"))
    assert score(placed, unplaced, BACKGROUND) == pytest.approx(
        score(file_only, unplaced, BACKGROUND)
    )
    assert agrees_with(placed, unplaced, BACKGROUND)


def test_one_reviewer_never_agrees_with_itself() -> None:
    """agrees_with refuses two findings whose origins name the same participant."""
    a = _f("`santizeAnchors` drops order.productId when the cart is empty", who="hawk")
    b = _f("`santizeAnchors` drops order.productId when the cart is empty", who="hawk")
    assert score(a, b, BACKGROUND) > THRESHOLD
    assert not agrees_with(a, b, BACKGROUND)


def test_score_is_symmetric() -> None:
    """score(a, b) == score(b, a)."""
    a = _f("`santizeAnchors` drops order.productId", anchor=_line("a.ts", 3))
    b = _f("order.productId vanishes in santizeAnchors", anchor=_line("a.ts", 9))
    assert score(a, b, BACKGROUND) == score(b, a, BACKGROUND)


# -- the clustering -------------------------------------------------------------------------


def test_one_problem_from_three_reviewers_is_one_group_in_roster_order() -> None:
    """Three tellings of one problem merge; the group lists the first raiser first."""
    findings = [
        _f("order.productId is lost by `santizeAnchors` on an empty cart"),
        *BACKGROUND,
        _f("`santizeAnchors` drops order.productId when the cart is empty"),
        _f("santizeAnchors() forgets the order's productId for an empty cart"),
    ]
    reviewers = ["owl", *["hawk"] * len(BACKGROUND), "hawk", "kite"]
    groups = cluster(findings, reviewers, ["hawk", "owl", "kite"])
    merged = [g for g in groups if len(g) > 1]
    assert merged == [[len(BACKGROUND) + 1, 0, len(BACKGROUND) + 2]]
    assert sorted(i for g in groups for i in g) == list(range(len(findings)))


def test_two_findings_of_one_reviewer_are_never_merged() -> None:
    """Identical findings by one reviewer stay apart; a second reviewer joins only one."""
    same = "`santizeAnchors` drops order.productId when the cart is empty"
    findings = [_f(same), _f(same), _f(same), *BACKGROUND]
    reviewers = ["hawk", "hawk", "owl", *["kite"] * len(BACKGROUND)]
    groups = cluster(findings, reviewers, ["hawk", "owl", "kite"])
    for group in groups:
        assert len({reviewers[i] for i in group}) == len(group)
    assert [0, 2] in groups and [1] in groups


def test_a_chain_does_not_become_one_group() -> None:
    """A~B and B~C but A≁C: average linkage does not merge all three (single would)."""
    a = _f("apple kiwi mango plum")
    b = _f("mango plum grape olive")
    c = _f("grape olive cherry lemon")
    findings = [a, b, c, *BACKGROUND]
    ab, bc, ac = score(a, b, findings), score(b, c, findings), score(a, c, findings)
    threshold = min(ab, bc)
    assert ac == 0.0 and max(ab, bc) / 2 < threshold
    reviewers = ["hawk", "owl", "kite", *["wren"] * len(BACKGROUND)]
    groups = cluster(findings, reviewers, ["hawk", "owl", "kite", "wren"], threshold=threshold)
    assert not any({0, 1, 2} <= set(g) for g in groups)
    assert any({0, 1} <= set(g) or {1, 2} <= set(g) for g in groups)


def test_every_group_keeps_its_average() -> None:
    """On a mixed round, each group's average score over its pairs reaches the threshold."""
    findings, reviewers = _round(random.Random(5), 60)
    groups = cluster(findings, reviewers, sorted(set(reviewers)))
    for group in groups:
        if len(group) > 1:
            pairs = list(combinations(group, 2))
            average = sum(score(findings[i], findings[j], findings) for i, j in pairs) / len(pairs)
            assert average >= THRESHOLD * 0.99


_SUBJECTS = [
    "`santizeAnchors` drops order.productId",
    "order.productId is lost in santizeAnchors",
    "The retry loop ignores the deadline in `fetchWithBackoff`",
    "fetchWithBackoff never checks the deadline",
    "Typo in README",
    "Missing null check on user.email",
    "user.email may be None here",
    "The lock is released before the cache write in `buildIndex`",
]
_PATHS = ["a.py", "b.py", None]


def _round(rng: random.Random, count: int) -> tuple[list[Finding], list[str]]:
    """A random round: findings drawn from a few subjects, files and lines, 4 reviewers."""
    findings: list[Finding] = []
    reviewers: list[str] = []
    for _ in range(count):
        path = rng.choice(_PATHS)
        anchor: Anchor
        if path is None:
            anchor = ChangeAnchor()
        elif rng.random() < 0.3:
            anchor = FileAnchor(path=path)
        else:
            anchor = _line(path, rng.randint(1, 60))
        findings.append(
            _f(rng.choice(_SUBJECTS), rng.choice(["", "see `buildIndex`", "on retry"]), anchor)
        )
        reviewers.append(rng.choice(["hawk", "owl", "kite", "wren"]))
    return findings, reviewers


@settings(max_examples=40, deadline=None)
@given(
    st.integers(min_value=0, max_value=10_000), st.integers(min_value=0, max_value=40), st.randoms()
)
def test_the_same_groups_whatever_the_input_order(
    seed: int, count: int, shuffler: random.Random
) -> None:
    """Permuting the input permutes the indices, never the groups."""
    findings, reviewers = _round(random.Random(seed), count)
    roster = ["owl", "hawk", "kite", "wren"]
    order = list(range(count))
    shuffler.shuffle(order)
    shuffled = [findings[k] for k in order], [reviewers[k] for k in order]
    first = cluster(findings, reviewers, roster)
    second = cluster(*shuffled, roster)
    assert _contents(first, findings, reviewers) == _contents(second, *shuffled)


# -- odd input ------------------------------------------------------------------------------


def _twice(findings: list[Finding], reviewers: list[str], roster: list[str]) -> list[list[int]]:
    """Cluster twice and check both runs agree; the groups."""
    first = cluster(findings, reviewers, roster)
    assert cluster(findings, reviewers, roster) == first
    assert sorted(i for g in first for i in g) == list(range(len(findings)))
    return first


def test_no_findings() -> None:
    """Nothing to cluster gives no groups."""
    assert _twice([], [], ["hawk"]) == []


def test_empty_discussions_and_change_anchors_only() -> None:
    """Findings with no discussion, all about the change as a whole, consolidate."""
    findings = [_f("Typo in README"), _f("README has a typo"), _f("!!"), _f("the of and")]
    groups = _twice(findings, ["hawk", "owl", "hawk", "owl"], ["hawk", "owl"])
    assert [2] in groups and [3] in groups


def test_identical_subjects_on_different_files_stay_apart() -> None:
    """One generic subject on five files, by two reviewers: one group per file."""
    subject = "Missing error handling"
    findings = [_f(subject, anchor=FileAnchor(path=f"m{k}.py")) for k in range(5)]
    findings += [_f(subject, anchor=FileAnchor(path=f"m{k}.py")) for k in range(5)]
    groups = _twice(findings, ["hawk"] * 5 + ["owl"] * 5, ["hawk", "owl"])
    assert sorted(groups) == [[k, k + 5] for k in range(5)]


def test_ten_thousand_findings_of_one_reviewer() -> None:
    """One reviewer's 10,000 findings, many alike on one line: all stand alone, quickly."""
    findings = [
        _f(f"`handler{k % 50}` leaks the connection", anchor=_line("svc.py", 10 + k % 3))
        for k in range(10_000)
    ]
    groups = _twice(findings, ["hawk"] * len(findings), ["hawk"])
    assert len(groups) == len(findings)


def test_a_crowd_on_one_line_is_not_quadratic() -> None:
    """Two reviewers' 4,000 findings on three lines of one file consolidate quickly."""
    findings = [
        _f(f"`handler{k % 500}` leaks the connection", anchor=_line("svc.py", 10 + k % 3))
        for k in range(4_000)
    ]
    reviewers = ["hawk" if k % 2 else "owl" for k in range(4_000)]
    groups = _twice(findings, reviewers, ["hawk", "owl"])
    assert all(len({reviewers[i] for i in g}) == len(g) for g in groups)


def test_one_reviewer_only_and_a_silent_one() -> None:
    """A roster naming a reviewer with no finding, and ids not in the roster, work."""
    findings = [
        _f("`santizeAnchors` drops order.productId on an empty cart"),
        _f("santizeAnchors loses productId when the cart is empty"),
    ]
    assert _twice(findings, ["hawk", "hawk"], ["owl", "hawk"]) == [[0], [1]]
    assert _twice(findings, ["hawk", "stranger"], ["owl", "hawk"]) == [[0, 1]]


def test_reviewer_of_must_match_the_findings() -> None:
    """One reviewer id per finding, or ValueError."""
    with pytest.raises(ValueError, match="one participant id per finding"):
        cluster([_f("x")], [], ["hawk"])
