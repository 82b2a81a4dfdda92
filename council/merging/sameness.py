"""When two findings make the same claim: the subject folding and ``says_the_same``.

A reviewer records a finding in its journal the moment it is sure of it, then repeats it
in its answer (or gives a draft list, then its final one); two reviewers often raise the
same point in slightly different words of punctuation and case. Counting each telling
separately would invent findings (within one reviewer) or hide agreement (across
reviewers), so the answer's several lists, the journal fold and the consolidation ask the
one question answered here.

Source: docs/harvest.md §3.1 (repeats across an answer's lists), §5 (``says_the_same``), §8
(consolidation uses the same relation).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import partial
from itertools import repeat

from council.model.findings import (
    Anchor,
    ChangeAnchor,
    Finding,
    LineAnchor,
    anchor_path,
    severity_rank,
)

ANALYZER_RULE = re.compile(r"^([A-Za-z][A-Za-z0-9_.-]*[0-9]+):\s")
"""An analyzer's rule id at the start of a subject (``F401: ``, ``B602: ``, ``E722: ``)."""

_SEPARATORS = re.compile(r"[\s.,;:]+")
"""A run of whitespace (exactly the characters ``str.isspace`` accepts) and ``. , ; :``."""


def fold_subject(subject: str) -> str:
    """The form of a subject that sameness compares: case and separators folded away.

    Unicode casefolding (``ß`` and ``SS`` agree), then every run of whitespace
    (``str.isspace()``: U+00A0, U+0085 ...) and of ``. , ; :`` becomes one space, trimmed;
    other punctuation stays ("leaks!" is not "leaks": it can change the claim). Why: a journal
    entry and the answer's repetition of it differ in exactly these details. Never raises.
    Source: docs/harvest.md §5.

    >>> fold_subject("  Pool\\u00a0LEAKS;; on timeout. ")
    'pool leaks on timeout'
    """
    return _SEPARATORS.sub(" ", subject.casefold()).strip(" ")


def program_rule(subject: str) -> str:
    """The rule a program's finding reports: the analyzer rule id opening its subject
    (``B602: subprocess call with shell=True`` → ``B602``), else its folded subject (a
    program says one rule in one subject). Why: two results of different rules are two
    problems, whatever their words share. Never raises."""
    found = ANALYZER_RULE.match(subject)
    return found.group(1) if found else fold_subject(subject)


def fold_subjects(subjects: Iterable[str]) -> list[str]:
    """:func:`fold_subject` of each subject, in order: the same rule in bulk (a chain of
    C-level calls, no Python frame per subject), for a consolidation's 100,000 subjects.
    Never raises. Source: docs/harvest.md §5."""
    folded = map(partial(_SEPARATORS.sub, " "), map(str.casefold, subjects))
    return list(map(str.strip, folded, repeat(" ")))


def says_the_same(a: Finding, b: Finding) -> bool:
    """Whether two findings make the same claim about the same file.

    True when the folded subjects (:func:`fold_subject`) are equal AND either finding
    names no file (a change anchor) or both name the same file. A line anchor and a file
    anchor on the same path are the same finding; labels, severities, discussions and
    line numbers are not compared.

    Why: a reviewer journals a finding, then repeats it in its answer, and counting both
    would invent agreement; a vague telling ("somewhere in the change") of a claim made
    precisely elsewhere is the same claim. The relation is symmetric but not transitive.
    Never raises.

    Source: docs/harvest.md §5, §8.
    """
    if fold_subject(a.subject) != fold_subject(b.subject):
        return False
    path_a, path_b = anchor_path(a.anchor), anchor_path(b.anchor)
    return path_a is None or path_b is None or path_a == path_b


class KeptFindings:
    """One reviewer's findings kept so far, to tell whether a later telling of its own
    REPEATS one of them and may be dropped (the journal fold, an answer's lists).

    Stricter than :func:`says_the_same`, since dropping a telling loses what only it
    said: a telling repeats a kept one when their folded subjects are equal, the kept one
    is at least as grave (:func:`~council.model.findings.severity_rank`), and its place
    says at least as much (:func:`covers`): the same words at other lines of a file
    (lines a kept range does not hold), or graver, are kept.
    A duplicate costs a line; a lost occurrence can cost a bug. Indexed by folded
    subject, so a fold stays linear. Source: docs/harvest.md §3.1, §5.
    """

    def __init__(self, findings: Iterable[Finding] = ()) -> None:
        self._by_subject: dict[str, list[Finding]] = {}
        for finding in findings:
            self.add(finding)

    def add(self, finding: Finding) -> None:
        """Index one more kept finding."""
        self._by_subject.setdefault(fold_subject(finding.subject), []).append(finding)

    def repeats(self, finding: Finding) -> bool:
        """Whether some kept finding says all that ``finding`` says (see the class)."""
        kept = self._by_subject.get(fold_subject(finding.subject), ())
        grave = severity_rank(finding.severity)
        return any(
            severity_rank(k.severity) >= grave and covers(k.anchor, finding.anchor) for k in kept
        )


def covers(kept: Anchor, told: Anchor) -> bool:
    """Whether the place ``kept`` says at least what ``told`` says (see
    :class:`KeptFindings`): either naming no file (a vague telling of a precise claim is
    the same claim, docs/harvest.md §5, and the answer's telling wins); a file, or lines,
    by a place on that file that is not a line range other than theirs (a file and a
    line of it are one claim); a line range by one holding all of it, on one side (lines
    1-4 do not say what 4-6 says)."""
    if isinstance(told, ChangeAnchor) or isinstance(kept, ChangeAnchor):
        return True
    if kept.path != told.path:
        return False
    if not isinstance(kept, LineAnchor) or not isinstance(told, LineAnchor):
        return True
    first_kept, first_told = kept.start_line or kept.line, told.start_line or told.line
    return kept.side == told.side and first_kept <= first_told and told.line <= kept.line
