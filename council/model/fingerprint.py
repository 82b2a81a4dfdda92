"""Fingerprints: what a finding is, independent of where its line happens to be today.

Code hosts match one run's findings with the next by a fingerprint (SARIF
``partialFingerprints``, GitLab Code Quality ``fingerprint``), and the baseline keys its
entries by it; with the line number in it, every finding would turn "new" once an edit
above moved it. :func:`fingerprint` is the sha256 of (path or "", label, subject folded as
:func:`council.merging.sameness.fold_subject` folds it, so what sameness calls one claim
shares a fingerprint); :func:`occurrence_fingerprints` makes them unique within a list.
Source: docs/harvest.md §2 (anchors), §5 (sameness), §8 (consolidation).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from council.merging.sameness import fold_subject
from council.model.findings import Finding, anchor_path

if TYPE_CHECKING:
    from council.model.report import CouncilReport

FINGERPRINT_VERSION = "v1"
"""Version of the fingerprint recipe; part of the hashed text, so a new recipe can never
collide with an old value (SARIF key ``councilFingerprint/v1``)."""


def fingerprint(finding: Finding) -> str:
    """The content fingerprint of a finding: 64 lowercase hex digits (SHA-256).

    Hashes the anchor's path (``""`` for a change anchor; the anchor's own path for an
    old-side anchor), the label and the folded subject, as one JSON array so no choice
    of path or subject can make two different triples hash alike. The line, side, range,
    severity, discussion, id and raisers are left out on purpose: a finding that moved
    lines, or that a second reviewer also raised, is still the same finding. Never
    raises. Source: docs/harvest.md §5 (``fold_subject``).
    """
    path = anchor_path(finding.anchor) or ""
    content = json.dumps([FINGERPRINT_VERSION, path, finding.label, fold_subject(finding.subject)])
    return hashlib.sha256(content.encode("ascii")).hexdigest()


def occurrence_fingerprints(findings: Iterable[Finding]) -> list[str]:
    """One fingerprint per finding, unique within the list, in the order given.

    The first finding with a given content fingerprint keeps it unchanged; the n-th
    repeat (n = 2, 3, ...) gets ``<fingerprint>:<n>``. Why: GitLab shows only the first
    of several Code Quality entries that share a fingerprint, so two occurrences of one
    claim in a report need two values; counting in report order keeps the values the
    same from one run to the next when the report is the same. Never raises.
    """
    seen: dict[str, int] = {}
    out: list[str] = []
    for finding in findings:
        value = fingerprint(finding)
        count = seen.get(value, 0) + 1
        seen[value] = count
        out.append(value if count == 1 else f"{value}:{count}")
    return out


def with_fingerprints(report: CouncilReport) -> CouncilReport:
    """The report with ``fingerprints`` set: each finding's id → :func:`fingerprint`
    (this round's, carried and outdated ones), so the JSON report says what dismissals,
    the baseline and later rounds key each by. Never raises."""
    listed = (*report.open_findings, *report.outdated)
    prints = {f.id: fingerprint(f) for f in listed if f.id is not None}
    return report.model_copy(update={"fingerprints": prints})
