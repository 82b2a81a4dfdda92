"""Occurrence fingerprints, claims and per-occurrence report values (council.model.fingerprint)."""

from __future__ import annotations

import re

from council.model.findings import ChangeAnchor, FileAnchor, LineAnchor
from council.model.fingerprint import (
    claim,
    fingerprint,
    occurrence,
    occurrence_fingerprints,
    with_fingerprints,
)
from council.rendering import read_json, render_json
from tests.forge_cases import OWL, finding, report

CODE = "c0de" * 8 + ":1"
"""A code hash (council.model.occurrence)."""

POOL = LineAnchor(path="src/pool.py", line=3, code=CODE)


def test_fingerprint_is_64_hex_digits() -> None:
    """A fingerprint is a SHA-256 hex digest."""
    assert re.fullmatch(r"[0-9a-f]{64}", fingerprint(finding(1, POOL)))


def test_recipe_is_pinned() -> None:
    """The recipes never change silently: committed baselines depend on the values. The
    claim is what earlier versions called the fingerprint (the same value as then)."""
    told = finding(1, POOL, subject="Pool leaks on timeout")
    assert fingerprint(told) == "f8a0e18903751d46c44a327b191127b4ca3d99f8defcd3b9bd8edfed6d6787e9"
    assert claim(told) == "c60a071b17ab8fd42d05928c5b7ba6f395250c4efd2a4c86fb34ef23c4b628b8"


def test_moving_lines_keeps_the_fingerprint() -> None:
    """A finding whose code moved lines keeps its value; the claim ignores the place."""
    moved = [
        LineAnchor(path="src/pool.py", line=90, code=CODE),
        LineAnchor(path="src/pool.py", start_line=7, line=12, code=CODE),
    ]
    values = {fingerprint(finding(1, a, subject="leak")) for a in [POOL, *moved]}
    assert len(values) == 1
    places = [POOL, *moved, FileAnchor(path="src/pool.py"), LineAnchor(path="src/pool.py", line=4)]
    assert len({claim(finding(1, a, subject="leak")) for a in places}) == 1


def test_another_occurrence_is_another_fingerprint() -> None:
    """The same rule at other code, on the file as a whole, on the change, or at a line
    whose code was not read (named by its place) is another occurrence."""
    others = [
        LineAnchor(path="src/pool.py", line=3, code="0dd5" * 8 + ":1"),
        LineAnchor(path="src/pool.py", line=3, code="c0de" * 8 + ":2"),
        FileAnchor(path="src/pool.py"),
        LineAnchor(path="src/pool.py", line=3),
    ]
    values = [fingerprint(finding(1, a, subject="leak")) for a in [POOL, *others]]
    assert len(set(values)) == len(values)
    assert [occurrence(finding(1, a)) for a in others[2:]] == ["file", "at:new:3-3"]
    unread = LineAnchor(path="src/pool.py", start_line=9, line=7, side="old")
    assert occurrence(finding(1, unread)) == "at:old:7-9"
    assert occurrence(finding(1, ChangeAnchor())) == "change"


def test_subject_is_folded_like_sameness() -> None:
    """Case, whitespace and . , ; : runs do not change the fingerprint."""
    a = finding(1, POOL, subject="Pool  LEAKS; on\u00a0timeout.")
    b = finding(2, POOL, subject="pool leaks on timeout")
    assert fingerprint(a) == fingerprint(b)


def test_what_is_left_out() -> None:
    """Id, severity, discussion, origin and raisers are not part of the fingerprint."""
    a = finding(1, POOL, subject="leak")
    b = finding(
        9, POOL, subject="leak", severity="critical", discussion="x", origin=OWL, raised_by=("a",)
    )
    assert fingerprint(a) == fingerprint(b)


def test_path_label_and_subject_count() -> None:
    """A different path, label or subject gives a different fingerprint."""
    base = finding(1, POOL, subject="leak")
    others = [
        finding(1, LineAnchor(path="src/other.py", line=3), subject="leak"),
        finding(1, POOL, subject="leak", label="question"),
        finding(1, POOL, subject="leaks!"),
        finding(1, ChangeAnchor(), subject="leak"),
    ]
    assert fingerprint(base) not in {fingerprint(f) for f in others}


def test_fields_cannot_bleed_into_each_other() -> None:
    """Moving text between path and subject cannot produce the same fingerprint."""
    a = finding(1, FileAnchor(path="a"), subject="b c")
    b = finding(1, FileAnchor(path="a b"), subject="c")
    assert fingerprint(a) != fingerprint(b)


def test_occurrences_are_unique_and_keep_the_first() -> None:
    """Repeats get :2, :3 in report order; the first keeps the content fingerprint."""
    twin = finding(1, POOL, subject="leak")
    other = finding(2, FileAnchor(path="x.py"), subject="other")
    prints = occurrence_fingerprints([twin, other, twin, twin])
    base = fingerprint(twin)
    assert prints == [base, fingerprint(other), f"{base}:2", f"{base}:3"]
    assert len(set(prints)) == 4


def test_occurrences_of_nothing() -> None:
    """No findings, no fingerprints."""
    assert occurrence_fingerprints([]) == []


def test_the_report_carries_every_findings_fingerprint() -> None:
    """``with_fingerprints``: this round's, carried and outdated findings, each by id."""
    now, carried, gone = finding(7, POOL), finding(3, POOL, subject="b"), finding(2, POOL)
    marked = with_fingerprints(report(now, carried=(carried,), outdated=(gone,)))
    assert marked.fingerprints == {
        7: fingerprint(now),
        3: fingerprint(carried),
        2: fingerprint(gone),
    }
    assert read_json(render_json(marked)).fingerprints == marked.fingerprints
