"""Kinds: which tellings of a finding a program reviewer told, so a decision never crosses kinds.

A model's finding is an opinion, and a prompt in the change can make a model copy an
analyzer's subject onto a harmless line; a person's "no" to that finding must not then hide
the analyzer's own finding. So a dismissal or baseline entry records the fingerprints of the
program tellings of what it was decided on (:func:`program_prints`), and covers a finding
only when every program telling of it is among them: a program's suppression needs the
program's own rule and occurrence. A telling is a program's when its origin says so
(``Origin.program``, set at filing) or its participant is a program reviewer of the round
(``programs``: ids whose backend is ``command`` or ``sarif``; findings filed before origins
said so). Pure. Source: docs/identity-and-clocks.md "Occurrences"; issue 20, "A decision
never crosses kinds".
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from council.model.findings import Finding, Member, Origin
from council.model.fingerprint import claim, fingerprint


def _program(origin: Origin | None, participant: str | None, programs: Collection[str]) -> bool:
    """Whether one telling is a program's: its origin says so, or its participant is a
    program reviewer of the round (either is enough: when unsure, a program's)."""
    if origin is not None and origin.program:
        return True
    return participant is not None and participant in programs


def program_tellings(finding: Finding, programs: Collection[str]) -> list[Finding]:
    """The tellings of ``finding`` that program reviewers told, each as a finding: its
    members' (a consolidated finding keeps every reviewer's telling), else the finding
    itself when its origin or any of its raisers is a program reviewer (a judge's
    restatement of an analyzer's finding names it in ``raised_by``). Never raises."""
    if finding.members:
        return [m.as_finding() for m in finding.members if _member_program(m, programs)]
    origin = finding.origin
    raisers = (*(finding.raised_by or ()), *((origin.participant,) if origin else ()))
    if _program(origin, None, programs) or any(r in programs for r in raisers if r):
        return [finding]
    return []


def _member_program(member: Member, programs: Collection[str]) -> bool:
    return _program(member.origin, member.participant, programs)


def program_prints(
    finding: Finding, programs: Collection[str], key: Callable[[Finding], str] = fingerprint
) -> frozenset[str]:
    """The fingerprints (``key``: :func:`~council.model.fingerprint.fingerprint`, or
    :func:`~council.model.fingerprint.claim` for decisions written before occurrences
    were kept) of the program tellings of ``finding`` (:func:`program_tellings`)."""
    return frozenset(key(t) for t in program_tellings(finding, programs))


def program_claims(finding: Finding, programs: Collection[str]) -> frozenset[str]:
    """:func:`program_prints` by claim (path, label, subject: the program's rule)."""
    return program_prints(finding, programs, claim)
