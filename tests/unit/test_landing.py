"""Landing a report on its diff: off_diff filled, nothing dropped (council.change.commentable)."""

from __future__ import annotations

from council.change.commentable import land
from council.change.diff import parse_diff
from council.model.findings import LineAnchor
from tests.forge_cases import CAFE, finding, messy_change, messy_findings, messy_report, report

TWO_HUNKS = (
    "diff --git a/m.py b/m.py\n"
    "--- a/m.py\n"
    "+++ b/m.py\n"
    "@@ -1,2 +1,2 @@\n"
    " a\n"
    "-b\n"
    "+B\n"
    "@@ -20,2 +20,2 @@\n"
    " y\n"
    "-z\n"
    "+Z\n"
)


def test_messy_diff_misses_are_named() -> None:
    """Deleted-file new side, binary line and a far line miss; everything else lands."""
    assert messy_report().off_diff == {5: "file-absent", 7: "line-absent", 9: "line-absent"}


def test_nothing_is_dropped() -> None:
    """The findings come back exactly as they went in."""
    assert messy_report().findings == messy_findings()


def test_ranges_across_hunks_and_inverted() -> None:
    """A range spanning two hunks and a reversed range are reported with their codes."""
    crossing = finding(1, LineAnchor(path="m.py", start_line=1, line=21))
    inverted = finding(2, LineAnchor(path="m.py", start_line=21, line=20))
    landed = land(report(crossing, inverted), parse_diff(TWO_HUNKS))
    assert landed.off_diff == {1: "range-crosses-hunks", 2: "range-inverted"}


def test_finding_without_id_is_not_keyed() -> None:
    """A finding without an id cannot be keyed, so off_diff leaves it out."""
    stray = finding(None, LineAnchor(path=CAFE, line=400))
    assert land(report(stray), messy_change()).off_diff == {}


def test_landing_replaces_earlier_verdicts() -> None:
    """Landing replaces any earlier off_diff, so landing twice gives the same report."""
    stale = report(*messy_findings(), off_diff={1: "line-absent"})
    once = land(stale, messy_change())
    assert 1 not in once.off_diff
    assert land(once, messy_change()) == once


def test_empty_report_lands_empty() -> None:
    """Zero findings land as an empty off_diff."""
    assert land(report(), messy_change()).off_diff == {}
