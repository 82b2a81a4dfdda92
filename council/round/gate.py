"""The merge gate: which findings block a change, and the exit code CI reads.

From a settled :class:`CouncilReport` and its ``gate.fail_on``: **0** passed; **1** an open
finding at or above the threshold; **3** incomplete, winning over 4 and 1 (a gate that saw
only part of the council cannot say the change is clean); **4** waiting on a person,
winning over 1 (the findings waiting may yet be dismissed). Exit 2 belongs to
:mod:`council.errors`. Open findings are this round's and those a ``--since-last`` round
carried (their code is unchanged); one without a severity, suppressed, outside
``--filter``, whose tellings fewer than ``--min-agreement`` reviewers gave at or above
the threshold, or (only when asked) ranked below ``--min-likelihood`` never trips the
gate, nor does ``never``. Source: docs/architecture.md "The
shape", docs/harvest.md §7 (stops are partial), §8 (agreement as a gate).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from council.model.coverage import unseen_phrase
from council.model.findings import Finding, severity_rank
from council.model.gate_choices import FAIL_ON, FailOn

if TYPE_CHECKING:
    # Under TYPE_CHECKING: council.rendering imports this module for its verdict.
    from council.model.report import CouncilReport, ParticipantSummary

EXIT_PASSED = 0
"""Exit code: the council completed and nothing at or above the threshold was found."""

EXIT_TRIPPED = 1
"""Exit code: the council completed and found something at or above the threshold."""

EXIT_INCOMPLETE = 3
"""Exit code: the council could not complete (same code as :class:`IncompleteError`)."""

EXIT_WAITING = 4
"""Exit code: the run waits on a person's answers (``council answer``, then run again)."""

INCOMPLETE_STATUSES: frozenset[str] = frozenset({"open", "judging", "cancelled", "timeout"})
"""Run statuses that mean the council did not complete: never settled, cancelled, or
timed out. ``partial`` is NOT among them: a run where someone stopped or failed still
completed; the quorum decides whether enough reviewers answered."""


def parse_fail_on(text: str) -> FailOn:
    """Check a ``--fail-on`` value and return it typed.

    Why: renderers and the CLI receive the threshold as a plain string; a typo must be
    refused, not read as "never". Raises ValueError naming the accepted values.
    """
    for value in FAIL_ON:
        if text == value:
            return value
    raise ValueError(f"unknown fail-on level {text!r}; use one of: {', '.join(FAIL_ON)}")


def gate_tripped(report: CouncilReport) -> list[Finding]:
    """The open findings (this round's, then those carried) at or above the threshold,
    in filing order, at the report's ``gate.fail_on``.

    Why: the gate and the report's verdict must agree on exactly which findings block;
    a finding carried from an earlier round still stands, so it blocks as it did then.
    A finding without severity never trips; a finding in ``report.suppressed`` (a
    dismissal or a baseline entry) never trips, since accepting it is what suppressing
    means; nor one fewer than ``gate.min_agreement`` reviewers' own tellings put at or
    above the threshold (:func:`agreed_at`: decided on the tellings, so a merge lends no
    telling another's severity); ``never`` returns an empty list.
    Source: docs/architecture.md (exit code from --fail-on).
    """
    level = report.gate.fail_on
    if level == "never":
        return []
    threshold = severity_rank(level)
    least = report.gate.min_agreement
    return [
        f
        for f in report.open_findings
        if f.severity is not None
        and f.id not in report.suppressed
        and f.id not in report.filtered
        and _blocks(f, threshold)
        and agreed_at(f, threshold, least)
        and not below_likelihood(report, f)
    ]


def below_likelihood(report: CouncilReport, finding: Finding) -> bool:
    """Whether ``--min-likelihood`` keeps ``finding`` from gating: asked for, and the
    finding ranked below it (an unranked finding gates as ever: the gate fails closed)."""
    least = report.gate.min_likelihood
    rank = report.ranks.get(finding.id) if finding.id is not None else None
    return least is not None and rank is not None and rank.likelihood < least


def held_by_likelihood(report: CouncilReport) -> int:
    """How many open findings that would gate do not only because ``--min-likelihood``
    ranks them below it."""
    if report.gate.min_likelihood is None:
        return 0
    asked = report.gated(min_likelihood=None)
    return sum(1 for f in gate_tripped(asked) if below_likelihood(report, f))


def tellings_severities(finding: Finding) -> list[str | None]:
    """The severity of each distinct reviewer's telling in a finding, gravest first: each
    member's own; a raiser credited without a telling of its own (a judge's credit, a
    finding of one telling) at the finding's severity. As many as its raisers
    (:attr:`Finding.raisers`), or its members when more."""
    members = finding.members or ()
    told = [m.severity for m in members]
    told += [finding.severity] * max(0, finding.raisers - len(members))
    return sorted(told, key=severity_rank, reverse=True)


def agreed_severity(finding: Finding, min_agreement: int) -> str | None:
    """The gravest severity that ``min_agreement`` distinct reviewers' own tellings in the
    finding reach (for 1, its severity); None when fewer reviewers raised it.

    Why the tellings: a merge can be wrong, and a finding's severity is its gravest
    telling's; a naming nit merged with a lone critical must not make the critical look
    agreed. Source: docs/harvest.md §8 (agreement as a gate).
    """
    if min_agreement <= 1:
        return finding.severity
    told = tellings_severities(finding)
    return told[min_agreement - 1] if len(told) >= min_agreement else None


def agreed_at(finding: Finding, threshold: int, min_agreement: int) -> bool:
    """Whether at least ``min_agreement`` distinct reviewers' tellings in the finding are
    at or above the severity rank ``threshold`` (always, for 1)."""
    return min_agreement <= 1 or severity_rank(agreed_severity(finding, min_agreement)) >= threshold


def apply_min_agreement(report: CouncilReport) -> CouncilReport:
    """The report with ``unagreed`` set: each open finding (this round's and carried)
    whose severity fewer than the report's ``gate.min_agreement`` reviewers' own tellings
    reach (:func:`agreed_severity`), id → how many do (for a finding of one telling, or
    one every raiser rated alike: how many raised it). Such a finding is listed and
    posted, and gates only at a level enough of its tellings reach (:func:`gate_tripped`
    decides on the tellings, whatever the level). Any earlier ``unagreed`` is replaced.
    Source: docs/harvest.md §8 (agreement as a gate).
    """
    least = report.gate.min_agreement
    unagreed: dict[int, int] = {}
    for f in report.open_findings:
        if f.id is None or least <= 1:
            continue
        own = severity_rank(f.severity)
        reach = sum(1 for s in tellings_severities(f) if severity_rank(s) >= own)
        if reach < least:
            unagreed[f.id] = reach
    return report.model_copy(update={"unagreed": unagreed})


def _blocks(finding: Finding, threshold: int) -> bool:
    return severity_rank(finding.severity) >= threshold


def answered_reviewers(report: CouncilReport) -> int:
    """How many reviewers (role ``reviewer``) were heard in full: state ``answered``,
    with an answer read whole (an unreadable answer is not heard; one read only up to a
    break, ``cut-off`` or ``malformed-json``, or up to the reading cap, ``over-cap``, was
    heard in part).

    Why: the quorum counts independent reviews that completed. A stopped reviewer's
    pass is partial (docs/harvest.md §7) and a judge only re-reads what reviewers filed, so
    neither counts towards it.
    """
    return sum(1 for p in report.participants if p.role == "reviewer" and p.heard_in_full)


def incomplete_reasons(report: CouncilReport) -> list[str]:
    """Why the council could not complete, as short phrases; empty when it completed.

    A run is incomplete when its status is ``open``, ``judging``, ``cancelled`` or
    ``timeout``, when a file of the change no prompt reviewer saw though one should have
    (:meth:`~council.model.coverage.Coverage.unseen`: cut by a cap, or every reviewer it
    was sent to not heard), or when not enough reviewers were heard in full. With the report's
    ``gate.quorum`` None (the default: the gate fails closed) every reviewer the roster
    did not mark ``optional`` must be heard in full, and at least one reviewer; the
    phrase names each one that was not, and why. A number counts instead: fewer
    reviewers heard in full than the quorum (0 disables the count).
    """
    quorum = report.gate.quorum
    reasons: list[str] = []
    if report.waits_on_reviewers:
        return reasons  # judged once the reviewers that asked went on (exit 4 meanwhile)
    if report.status in INCOMPLETE_STATUSES:
        reasons.append(_STATUS_PHRASES[report.status])
    if report.coverage is not None and (unseen := unseen_phrase(report.coverage)):
        reasons.append(unseen)
    answered = answered_reviewers(report)
    if quorum is not None:
        if answered < quorum:
            reasons.append(f"{answered} reviewer(s) heard in full, quorum is {quorum}")
        return reasons
    unheard = [p for p in report.participants if p.role == "reviewer" and not p.heard_in_full]
    required = [p for p in unheard if not p.optional]
    if required:
        who = "; ".join(f"{p.id} {not_heard_why(p)}" for p in required)
        reasons.append(f"{len(required)} reviewer(s) not heard in full ({who})")
    elif answered == 0 and report.status not in INCOMPLETE_STATUSES:
        reasons.append("no reviewer was heard in full")
    return reasons


def not_heard_why(p: ParticipantSummary) -> str:
    """Why a reviewer was not heard in full, in a few words: ``failed``, ``stopped by the
    idle clock (idle_ms = 60000 ms)``, ``answered nothing readable (no-json)``,
    ``answered in part (cut-off)``, ``never ran``."""
    if p.state == "failed":
        return "failed"
    if p.state == "stopped":
        return f"stopped by {p.stop.describe()}" if p.stop is not None else "stopped"
    if p.state == "answered" and p.unread is not None:
        return f"answered nothing readable ({p.unread})"
    if p.state == "answered" and p.read_in_part == "exit-status":
        return "exited with an error after its answer (exit-status)"
    if p.state == "answered" and p.read_in_part == "unanalyzed":
        return "could not analyze part of the change (unanalyzed)"
    if p.state == "answered" and p.read_in_part == "journal-lost":
        return "had journal entries Redis lost in a failover (journal-lost)"
    if p.state == "answered" and p.read_in_part is not None:
        return f"answered in part ({p.read_in_part})"
    return "never ran"


_STATUS_PHRASES = {
    "open": "the run never settled",
    "judging": "the judge never finished",
    "cancelled": "the run was cancelled",
    "timeout": "the run timed out",
}


def exit_code(report: CouncilReport) -> int:
    """The process exit code for this report: 0 passed, 1 tripped, 3 incomplete.

    Why: CI gates on one number. Incomplete (3) wins over tripped (1): a council that
    could not complete cannot vouch for the change, whatever it found. The policy is
    the report's own (``report.gate``).
    """
    if incomplete_reasons(report):
        return EXIT_INCOMPLETE
    if report.status == "waiting":
        return EXIT_WAITING
    return EXIT_TRIPPED if gate_tripped(report) else EXIT_PASSED


def held_back(report: CouncilReport, ids: Collection[int]) -> int:
    """How many open findings at or above ``gate.fail_on`` whose id is in ``ids`` (kept
    from gating by one rule: ``report.unagreed``, ``report.filtered``) would otherwise
    gate: suppressed ones are not counted."""
    level = report.gate.fail_on
    if level == "never":
        return 0
    threshold = severity_rank(level)
    return sum(
        1
        for f in report.open_findings
        if f.id in ids
        and f.id not in report.suppressed
        and f.severity is not None
        and _blocks(f, threshold)
    )


def held_by_agreement(report: CouncilReport) -> int:
    """How many open findings at or above ``gate.fail_on`` do not gate only because fewer
    than ``gate.min_agreement`` reviewers' tellings reach it (:func:`agreed_at`);
    suppressed ones are not counted."""
    level = report.gate.fail_on
    if level == "never":
        return 0
    threshold, least = severity_rank(level), report.gate.min_agreement
    return sum(
        1
        for f in report.open_findings
        if f.id not in report.suppressed
        and f.severity is not None
        and _blocks(f, threshold)
        and not agreed_at(f, threshold, least)
    )


def min_agreement_problem(
    min_agreement: int, reviewers: int, whose: str = "the roster has", more: str = "reviewers"
) -> str | None:
    """The usage error for a ``--min-agreement`` no finding could reach (above the
    ``reviewers`` there are, which ``whose`` has; ``more``: what to add), or None."""
    if min_agreement <= reviewers:
        return None
    return (
        f"--min-agreement {min_agreement} asks for more reviewers than {whose} "
        f"({reviewers}): no finding could gate; lower it or add {more}"
    )


def gate_summary(report: CouncilReport) -> str:
    """One line for CI logs saying what the gate decided and why, by ``report.gate``.

    Shapes: ``gate: 2 finding(s) at or above critical → exit 1``;
    ``gate: no finding at or above critical → exit 0``;
    ``gate: no finding at or above critical (1 more at or above critical raised by fewer
    than min_agreement = 2 reviewers, not gated) → exit 0``;
    ``gate: fail-on never, 5 finding(s) not gated → exit 0`` (``… not gated (2 more
    suppressed: dismissed, baselined or not upheld) …`` when some are);
    ``gate: council incomplete (the run timed out; 0 reviewer(s) heard in full, quorum is 1);
    1 finding(s) at or above critical → exit 3``;
    ``gate: council incomplete (1 reviewer(s) not heard in full (ruff failed)); no finding
    at or above critical → exit 3``.
    """
    level = report.gate.fail_on
    reasons = incomplete_reasons(report)
    code = exit_code(report)
    if level == "never":
        listed = [f for f in report.open_findings if f.id not in report.suppressed]
        quiet = len(report.open_findings) - len(listed)
        found = f"fail-on never, {len(listed)} finding(s) not gated"
        if quiet:
            found += f" ({quiet} more suppressed: dismissed, baselined or not upheld)"
    else:
        tripped = len(gate_tripped(report))
        found = (
            f"{tripped} finding(s) at or above {level}"
            if tripped
            else f"no finding at or above {level}"
        )
        filtered = held_back(report, report.filtered)
        if filtered:
            mode = f" {report.gate.filter}" if report.gate.filter else ""
            found += f" ({filtered} more at or above {level} kept from gating by --filter{mode})"
        unagreed = held_by_agreement(report)
        if unagreed:
            found += (
                f" ({unagreed} more at or above {level} raised by fewer than "
                f"min_agreement = {report.gate.min_agreement} reviewers, not gated)"
            )
        unlikely = held_by_likelihood(report)
        if unlikely:
            found += (
                f" ({unlikely} more at or above {level} below likelihood "
                f"{report.gate.min_likelihood:.2f}, --min-likelihood, not gated)"
            )
    if reasons:
        return f"gate: council incomplete ({'; '.join(reasons)}); {found} → exit {code}"
    if report.status == "waiting":
        asked = sum(1 for a in report.asks if a.answer is None)
        return f"gate: waiting on a person ({asked} question(s) to answer); {found} → exit {code}"
    return f"gate: {found} → exit {code}"
