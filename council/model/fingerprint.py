"""Fingerprints: which occurrence a finding is about, independent of its line number.

Code hosts match one run's findings with the next by a fingerprint (SARIF
``partialFingerprints``, GitLab Code Quality ``fingerprint``), and dismissals and the
baseline are keyed by it; with the line number in it, every finding would turn "new" once
an edit above moved it, and with only the rule in it (path, label, subject: what earlier
versions hashed, now :func:`claim`) a decision about one ``shell=True`` covered every other
one in the file. So :func:`fingerprint` hashes the path, the label, the subject folded as
:func:`council.merging.sameness.fold_subject` folds it, and the *occurrence*
(:func:`occurrence`): the anchored code's hash (:mod:`council.model.occurrence`), the file
for a file anchor, the change for a change anchor. :func:`occurrence_fingerprints` makes
them unique within a list. Source: docs/identity-and-clocks.md "Occurrences";
docs/harvest.md §2 (anchors), §5 (sameness).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from council.merging.sameness import fold_subject
from council.model.findings import ChangeAnchor, FileAnchor, Finding, anchor_path

if TYPE_CHECKING:
    from council.model.report import CouncilReport

FINGERPRINT_VERSION = "v2"
"""Version of the fingerprint recipe; part of the hashed text, so a new recipe can never
collide with an old value (SARIF key ``councilFingerprint/v2``)."""

CLAIM_VERSION = "v1"
"""The recipe of :func:`claim`: the fingerprint earlier versions keyed dismissals, the
baseline and the session's memory by (so those keep reading)."""


def occurrence(finding: Finding) -> str:
    """The occurrence a finding is about, as its fingerprint names it: ``change`` (the
    change as a whole), ``file`` (one file, no line), ``line:<code>`` (a line anchor whose
    code was read: the code hash), or ``at:<side>:<first>-<last>`` (a line anchor whose
    code was not read: the place itself, which does not follow a move and never names
    other code). Never raises."""
    anchor = finding.anchor
    if isinstance(anchor, ChangeAnchor):
        return "change"
    if isinstance(anchor, FileAnchor):
        return "file"
    if anchor.code is not None:
        return f"line:{anchor.code}"
    first = anchor.start_line if anchor.start_line is not None else anchor.line
    return f"at:{anchor.side}:{min(first, anchor.line)}-{max(first, anchor.line)}"


def fingerprint(finding: Finding) -> str:
    """The fingerprint of a finding's occurrence: 64 lowercase hex digits (SHA-256).

    Hashes the anchor's path (``""`` for a change anchor; the anchor's own path for an
    old-side anchor), the label, the folded subject and :func:`occurrence`, as one JSON
    array so no choice of path or subject can make two different tuples hash alike. The
    line number, severity, discussion, id and raisers are left out on purpose: a finding
    whose code moved lines, or that a second reviewer also raised, is still the same
    occurrence; the same rule at other code is another one. Never raises. Source:
    docs/identity-and-clocks.md "Occurrences".
    """
    path = anchor_path(finding.anchor) or ""
    content = json.dumps(
        [
            FINGERPRINT_VERSION,
            path,
            finding.label,
            fold_subject(finding.subject),
            occurrence(finding),
        ]
    )
    return hashlib.sha256(content.encode("ascii")).hexdigest()


def claim(finding: Finding) -> str:
    """The fingerprint of a finding's claim, wherever it is made: path, label and folded
    subject (the recipe earlier versions called the fingerprint, :data:`CLAIM_VERSION`).
    A dismissal or baseline entry keyed by it was written before occurrences were kept;
    it covers only what it can be shown to cover (:mod:`council.session.decisions`), and
    a session's memory from before keeps reading through it. Never raises."""
    path = anchor_path(finding.anchor) or ""
    content = json.dumps([CLAIM_VERSION, path, finding.label, fold_subject(finding.subject)])
    return hashlib.sha256(content.encode("ascii")).hexdigest()


def code_read(finding: Finding) -> bool:
    """Whether the finding's occurrence is named by its code (a line anchor with a code
    hash), rather than by its file, the change or a bare place."""
    return occurrence(finding).startswith("line:")


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
