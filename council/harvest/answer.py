"""The harvest of one answer: whatever a reviewer sent back, as findings and warnings.

Source: harvest.md §3 (finding the JSON), §4 (reading each entry), §6 (warning order).
"""

from __future__ import annotations

from council.findings import Finding, Harvest, Read, Warning
from council.harvest.entries import read_entry
from council.harvest.locate import locate


def harvest(answer: str, read: Read | None = None) -> Harvest:
    """Turn one reviewer's raw answer into findings, warnings and the truncation flag.

    The findings list is located by harvest.md §3 (candidate, salvage, bare array), then
    each entry is read by §4 with ``at = findings[i]``. Warnings come answer-level first,
    then entry by entry in list order, each entry's in table order. ``read`` says which
    commit the reviewers read; its witness is stamped on every anchor (none when the tree
    was not pinned). An empty list is a clean review: no findings, no warnings.

    Why never raise: a reviewer's text is untrusted input, and one bad answer must cost
    at most that answer's findings, with a warning saying so. Linear in ``len(answer)``
    (a 10 MB answer reads in seconds). Source: harvest.md §3, §4, §6.
    """
    located = locate(answer)
    witness = read.stamp if read is not None else None
    findings: list[Finding] = []
    warnings: list[Warning] = list(located.warnings)
    for index, entry in enumerate(located.entries):
        finding, notes = read_entry(entry, f"findings[{index}]", witness)
        warnings.extend(notes)
        if finding is not None:
            findings.append(finding)
    return Harvest(findings=tuple(findings), warnings=tuple(warnings), truncated=located.truncated)
