"""Unit tests for the fast paths of agreement (council.merging.agreement): term ids read the same
terms as the string reader, every scored pair carries the relation's exact score, and
the consolidation's collector pause is undone."""

from __future__ import annotations

import gc
import random

import pytest

from council.merging.agreement import score
from council.merging.agreement.clusters import pairs_of, reviewer_numbers
from council.merging.agreement.pairs import SCALE
from council.merging.agreement.relation import THRESHOLD, place_of
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
