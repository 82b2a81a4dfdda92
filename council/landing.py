"""Landing a report on its diff: which findings a code host can show on a changed line.

A code host accepts a line comment only on a line its diff shows, and a range only
within one hunk (:func:`council.diff.landing`). A finding whose anchor does not land is
still a finding: it is kept in the report and listed "not on a changed line", never
dropped. This module records the answer once, in :attr:`CouncilReport.off_diff`, so every
renderer reads the same verdict. Source: harvest.md §2 (anchors).
"""

from __future__ import annotations

from council.diff import Change, landing
from council.report.model import CouncilReport


def land(report: CouncilReport, change: Change) -> CouncilReport:
    """The report with ``off_diff`` filled: finding id → why its anchor misses the diff.

    Every finding of the round is checked with :func:`council.diff.landing` (codes
    ``file-absent``, ``line-absent``, ``range-crosses-hunks``, ``range-inverted``);
    the findings themselves are returned unchanged, so nothing is ever dropped. A
    finding without an id cannot be keyed and is left out of ``off_diff``; renderers
    treat it as not landed. Any earlier ``off_diff`` is replaced, so landing twice on
    the same change gives the same report. Never raises. Source: harvest.md §2.
    """
    off_diff: dict[int, str] = {}
    for finding in report.findings:
        if finding.id is None:
            continue
        miss = landing(change, finding.anchor)
        if miss is not None:
            off_diff[finding.id] = miss
    return report.model_copy(update={"off_diff": off_diff})
