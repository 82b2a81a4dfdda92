"""When two findings make the same claim: the subject folding and ``says_the_same``.

A reviewer records a finding in its journal the moment it is sure of it, then repeats it
in its answer; two reviewers often raise the same point in slightly different words of
punctuation and case. Counting each telling separately would invent findings (within one
reviewer) or hide agreement (across reviewers), so both the journal fold and the
consolidation ask the one question answered here.

Source: harvest.md §5 (``says_the_same``), §8 (consolidation uses the same relation).
"""

from __future__ import annotations

import re

from council.findings import Finding, anchor_path

_SEPARATORS = re.compile(r"[\s.,;:]+")
"""A run of whitespace (exactly the characters ``str.isspace`` accepts) and ``. , ; :``."""


def fold_subject(subject: str) -> str:
    """The form of a subject that sameness compares: case and separators folded away.

    Unicode casefolding (so ``ß`` and ``SS`` agree), then every run of whitespace (any
    character for which ``str.isspace()`` holds: U+00A0, U+2009, U+001E, U+0085 ...) and
    of ``. , ; :`` becomes one space, and the result is trimmed. Other punctuation is
    kept: "leaks!" and "leaks" differ, because an exclamation can change the claim.

    Why: a journal entry and the answer's repetition of it differ in exactly these
    details, and nothing else should make two claims look different.

    >>> fold_subject("  Pool\\u00a0LEAKS;; on timeout. ")
    'pool leaks on timeout'

    Never raises. Source: harvest.md §5.
    """
    return _SEPARATORS.sub(" ", subject.casefold()).strip(" ")


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

    Source: harvest.md §5, §8.
    """
    if fold_subject(a.subject) != fold_subject(b.subject):
        return False
    path_a, path_b = anchor_path(a.anchor), anchor_path(b.anchor)
    return path_a is None or path_b is None or path_a == path_b
