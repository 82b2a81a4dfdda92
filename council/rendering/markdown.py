"""The Markdown report: what a person reads in a PR comment or ``$GITHUB_STEP_SUMMARY``.

This module holds the page (its layout, top to bottom: docs/architecture.md "Reports, the
CLI and the gate") and its sections about the run: the verdict, the questions for a
person, who was not heard in full, the counts, the participants, notes and warnings. The
sections that list findings are :mod:`council.rendering.finding_sections`; one finding's
Conventional Comments text is :mod:`council.rendering.finding_text`. A pure function of the
report, linear in its size (30,000 findings are one sort and one join).
Source: docs/architecture.md (reports), docs/harvest.md §6 (warnings), §7 (stops).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence

from council.asks.pending import PendingAsk
from council.model.backend_result import Usage
from council.model.coverage import NOT_READABLE, NOT_SHOWN
from council.model.findings import LABELS, SEVERITIES, Warning
from council.model.report import (
    NO_RUN,
    NOT_REVIEWED,
    UNSANDBOXED,
    WITHOUT_KEYS,
    ChangeSize,
    CouncilReport,
    ParticipantSummary,
)
from council.rendering.coverage_section import coverage_section
from council.rendering.escape import cell, code, for_log, inline
from council.rendering.finding_sections import (
    carried_section,
    filtered_section,
    findings_section,
    off_diff_section,
    open_carried,
    outdated_section,
    suppressed_section,
    unagreed_section,
)
from council.rendering.finding_text import counted
from council.round.gate import gate_tripped, held_by_agreement, incomplete_reasons

FAILURE_SHOWN_CHARS = 500
"""How much of a failure text the PARTIAL line shows, in characters; the warnings
section keeps the whole text."""

RUN_WARNINGS = "the run"
"""The group heading for warnings that name no participant."""

CHOICES_SHOWN = 5
"""Options of an inline ``choice`` named beside its answering command."""


def render_markdown(
    report: CouncilReport,
    *,
    posted: Collection[int] = frozenset(),
) -> str:
    """The report as Markdown for people, ending with a newline.

    The report's own gate policy (``report.gate``) decides the verdict in the title
    exactly as :func:`council.round.gate.exit_code` decides the exit code, so the page and
    the CI status never disagree. ``posted`` holds the ids of findings already shown
    elsewhere as line comments (the body of a pull-request review): they are counted, not repeated.
    The page is fit for a CI log as well (:func:`~council.rendering.escape.for_log`: no
    control character, no line a runner reads as a workflow command), since it is
    printed on stdout and ``cat`` in CI jobs.
    """
    sections = [
        _title(report),
        _questions(report),
        _partial(report),
        _counts(report),
        _participants(report),
        findings_section(report, posted),
        off_diff_section(report),
        filtered_section(report),
        unagreed_section(report),
        carried_section(report),
        suppressed_section(report),
        outdated_section(report),
        coverage_section(report.coverage),
        _notes(report),
        _warnings(report),
    ]
    return for_log("\n\n".join(part for part in sections if part) + "\n")


def _title(report: CouncilReport) -> str:
    level = report.gate.fail_on
    reasons = incomplete_reasons(report)
    tripped = len(gate_tripped(report))
    if reasons:
        head = "## ⚠️ Council review: incomplete"
    elif report.status == "waiting":
        head = "## ⏸️ Council review: waiting on a person"
    elif level == "never":
        head = "## ℹ️ Council review: not gated (fail-on never)"
    elif tripped:
        blocking = counted(tripped, "finding")
        head = f"## ❌ Council review: gate tripped ({blocking} at or above {level})"
    elif held := held_by_agreement(report):
        head = (
            f"## ✅ Council review: passed (nothing at or above {level} that "
            f"{report.gate.min_agreement} reviewers raised; {counted(held, 'finding')} at or above "
            "it raised by fewer)"
        )
    else:
        head = f"## ✅ Council review: passed (nothing at or above {level})"
    lines = [head, "", _where(report)]
    if reasons:
        lines += ["", "**Incomplete:** " + inline("; ".join(reasons)) + "."]
    for note in filter(_unsandboxed, report.notes):
        lines += ["", "**Not sandboxed:** " + inline(note)]
    for note in filter(_without_keys, report.notes):
        lines += ["", "**Without keys:** " + inline(note)]
    for note in filter(_not_reviewed, report.notes):
        lines += ["", "**Not reviewed:** " + inline(note)]
    return "\n".join(lines)


def _not_reviewed(note: str) -> bool:
    """Whether a run note names files the change adds that ``[paths]`` left out, or
    files a cap left out or none can read (shown first: no reviewer read them)."""
    return note.startswith((NOT_REVIEWED, NOT_SHOWN, NOT_READABLE))


def _unsandboxed(note: str) -> bool:
    """Whether a run note says the reviewer programs ran unconfined (shown first)."""
    return note.startswith(UNSANDBOXED)


def _without_keys(note: str) -> bool:
    """Whether a run note says the reviewers that need a key were left out (shown first:
    their silence is not a clean review)."""
    return note.startswith(WITHOUT_KEYS)


def _where(report: CouncilReport) -> str:
    parts: list[str] = []
    if report.repository:
        parts.append(code(report.repository))
    if report.base or report.head:
        parts.append(f"{code(report.base[:12] or '?')}..{code(report.head[:12] or '?')}")
    if report.reviewed is not None:
        parts.append(_size(report.reviewed))
    parts.append("no run" if report.run_id == NO_RUN else f"run {code(report.run_id)}")
    parts.append(f"session {code(report.session)}")
    parts.append(f"status {report.status}")
    return " · ".join(parts)


def _size(reviewed: ChangeSize) -> str:
    """What was reviewed, as a pull request's header says it: ``2 files, +34/−1``."""
    return f"{counted(reviewed.files, 'file')}, +{reviewed.added}/−{reviewed.removed}"


def _partial(report: CouncilReport) -> str:
    if not report.partial:
        return ""
    items = [_why_partial(p) for p in report.participants if not p.heard_in_full]
    unseen = report.coverage.unseen() if report.coverage is not None else ()
    if unseen and not items and report.status == "settled":
        return (
            f"**PARTIAL:** {counted(len(unseen), 'file')} of the change no prompt reviewer saw "
            "(see Coverage); a finding in them cannot be below."
        )
    lines = [
        "**PARTIAL:** this review did not hear every reviewer in full (run status "
        f"{report.status}); a finding missing below may simply not have been read."
    ]
    if items:
        lines.append("")
    lines += [f"- {item}" for item in items]
    return "\n".join(lines)


def _takes(ask: PendingAsk) -> tuple[str, str]:
    """What ``council answer`` takes for ``ask`` (``yes|no``, ``OPTION``, ``TEXT``) and a
    hint saying which values (a choice's first options, or where they are listed)."""
    if ask.confirms:
        return "yes|no", ""
    component = ask.ask.component
    if component is None or component.component_id != "choice":
        return "TEXT", ""
    raw = (component.props or {}).get("options")
    options = [
        o if isinstance(o, str) else o.get("value")
        for o in (raw if isinstance(raw, list) else [])
        if isinstance(o, str) or (isinstance(o, dict) and isinstance(o.get("value"), str))
    ]
    if not options:
        return "OPTION", " (one of its options: `council asks --json` lists where they are)"
    shown = ", ".join(code(str(o)) for o in options[:CHOICES_SHOWN])
    more = f" and {len(options) - CHOICES_SHOWN} more" if len(options) > CHOICES_SHOWN else ""
    return "OPTION", f" (one of {shown}{more})"


def _why_partial(p: ParticipantSummary) -> str:
    who = code(p.id)
    if p.state == "stopped":
        how = p.stop.describe() if p.stop is not None else "our clocks"
        return f"{who} was stopped by {inline(how)}; {counted(p.findings, 'finding')} kept."
    if p.state == "asking":
        return f"{who} asked a person a question and goes on once it is answered."
    if p.state == "failed":
        text = p.failure or "no reason given"
        if len(text) > FAILURE_SHOWN_CHARS:
            text = text[:FAILURE_SHOWN_CHARS] + "…"
        return f"{who} failed: {inline(text)}"
    if p.unread is not None:
        return (
            f"{who} answered, but its answer could not be read ({code(p.unread)}); "
            f"{counted(p.findings, 'finding')} from its journal."
        )
    if p.read_in_part == "over-cap":
        return (
            f"{who} answered, but its answer held more entries than the council reads "
            f"({code(p.read_in_part)}); {counted(p.findings, 'finding')} read from the first "
            "ones, the rest were not read."
        )
    if p.read_in_part == "exit-status":
        return (
            f"{who} printed an answer, then exited with an error or was killed "
            f"({code(p.read_in_part)}); {counted(p.findings, 'finding')} read from what it "
            "printed, what it would have said next is unknown."
        )
    if p.read_in_part == "journal-over-cap":
        return (
            f"{who} answered, but recorded more in its journal than the council reads "
            f"({code(p.read_in_part)}: over the entry count or an entry's size); "
            f"{counted(p.findings, 'finding')} read, what the unread entries held is unknown."
        )
    if p.read_in_part == "journal-lost":
        return (
            f"{who} answered, but Redis lost entries of its journal after keeping them "
            f"({code(p.read_in_part)}: a failover to a replica that had not received "
            f"them); {counted(p.findings, 'finding')} from what was left, what the lost "
            "entries held is unknown."
        )
    if p.read_in_part == "unanalyzed":
        return (
            f"{who} answered, but said it could not analyze part of the change "
            f"({code(p.read_in_part)}, its note names the files); "
            f"{counted(p.findings, 'finding')} from what it analyzed."
        )
    if p.read_in_part is not None:
        where = "was cut off" if p.read_in_part == "cut-off" else "broke off in invalid JSON"
        return (
            f"{who} answered, but its answer {where} ({code(p.read_in_part)}); "
            f"{counted(p.findings, 'finding')} read before the break, none after it."
        )
    return f"{who} never answered (still {p.state})."


def _counts(report: CouncilReport) -> str:
    still = len(open_carried(report))  # as listed
    open_line = f"**Still open from earlier rounds:** {counted(still, 'finding')}."
    if not report.findings:
        return f"No new findings. {open_line}" if still else "No findings."
    # the headline counts what is open: a dismissed critical is named under "Not gated"
    shown = [f for f in report.findings if f.id is None or f.id not in report.suppressed]
    severities: Counter[str | None] = Counter(f.severity for f in shown)
    labels: Counter[str] = Counter(f.label for f in shown)
    by_severity = [f"{severities[s]} {s}" for s in reversed(SEVERITIES) if severities[s]]
    if severities[None]:
        by_severity.append(f"{severities[None]} without severity")
    by_label = [f"{labels[label]} {label}" for label in LABELS if labels[label]]
    lines = (
        [
            f"**{counted(len(shown), 'finding')}:** " + " · ".join(by_severity),
            "",
            "**By label:** " + " · ".join(by_label),
        ]
        if shown
        else ["No open findings."]
    )
    if still:
        lines += ["", open_line]
    sources = [
        report.suppressed[f.id].source for f in report.open_findings if f.id in report.suppressed
    ]
    if sources:
        judged = sources.count("judge")
        parts = [f"{len(sources) - judged} dismissed or baselined"] if len(sources) > judged else []
        parts += [f"{judged} not upheld by the judge"] if judged else []
        lines += ["", f"**Not gated:** {', '.join(parts)}."]
    return "\n".join(lines)


def _participants(report: CouncilReport) -> str:
    if not report.participants:
        return ""
    priced = any(p.usage is not None for p in report.participants)
    head = "| participant | backend / model | state | findings | warnings | duration |"
    rule = "|---|---|---|--:|--:|--:|"
    if priced:
        head += " tokens in / out | cost |"
        rule += "--:|--:|"
    lines = [head, rule]
    for p in report.participants:
        name = cell(p.id) + (" (judge)" if p.role == "judge" else "")
        engine = cell(p.backend if p.model is None else f"{p.backend} / {p.model}")
        state = p.state + (f" ({p.attempts} attempts)" if p.attempts > 1 else "")
        state += f" (in {p.slices} slices)" if p.slices > 1 else ""
        unmeasured = p.duration_ms == 0 and p.state in ("failed", "pending")
        duration = "—" if unmeasured else _seconds(p.duration_ms)
        row = f"| {name} | {engine} | {state} | {p.findings} | {p.warnings} | {duration} |"
        if priced:
            tokens = _tokens(p.usage) if p.usage is not None else ""
            cost = _usd(p.cost_usd) if p.cost_usd is not None else ("unpriced" if p.usage else "")
            if p.saved_usd is not None:
                cost += f" ({_saved(p.saved_usd)})"
            row += f" {tokens} | {cost} |"
        lines.append(row)
    if priced:
        if report.cost_usd is None:
            lines.append("\n**Cost:** unknown (no participant's model is priced in the roster)")
        else:
            bound = "" if report.cost_complete else "at least "
            lines.append(f"\n**Cost:** {bound}{_usd(report.cost_usd)}")
        cache = _cache_line(report)
        if cache:
            lines.append("\n" + cache)
    if report.budget is not None:
        lines.append(f"\n**Budget:** {report.budget.describe()}")
    return "\n".join(lines)


def _tokens(usage: Usage) -> str:
    """``in / out``, the input's cached and cache-written parts named when there are any."""
    parts = [f"{usage.cached} cached"] if usage.cached else []
    parts += [f"{usage.cache_write} written to cache"] if usage.cache_write else []
    told = f" ({', '.join(parts)})" if parts else ""
    return f"{usage.input}{told} / {usage.output}"


def _cache_line(report: CouncilReport) -> str:
    """The round's prompt-cache line: the share of input tokens read from the providers'
    caches and what that saved ("" when nothing was read from or written to a cache)."""
    used = [p.usage for p in report.participants if p.usage is not None]
    cached = sum(u.cached for u in used)
    if not cached and not any(u.cache_write for u in used):
        return ""
    total = sum(u.input for u in used)
    share = f"{100 * cached / total:.1f}%" if total else "none"
    line = f"**Prompt cache:** {share} of the input tokens read from cache ({cached} of {total})"
    if report.saved_usd is not None:
        line += f"; {_saved(report.saved_usd)}"
        line += "" if report.cost_complete else " on the priced models"
    return line + "."


def _saved(amount: float) -> str:
    """A saving as people read it; a negative one (cache writes not read back enough) as
    what the cache cost more."""
    return f"saved {_usd(amount)}" if amount >= 0 else f"cache writes cost {_usd(-amount)} more"


def _usd(amount: float) -> str:
    return f"${amount:.4f}" if amount < 1 else f"${amount:.2f}"


def _questions(report: CouncilReport) -> str:
    """The questions a waiting run puts to a person (a policy's confirmations and the
    reviewers' own questions alike), each with the exact command that answers it and
    what it takes (answered ones, on a settled run, with the answer given).

    Shown in the report and so in the forges' summary comment (``council publish``),
    where the person who must answer reads it."""
    if not report.asks:
        return ""
    lines = ["### Questions for a person"]
    for ask in report.asks:
        lines.append("")
        by = f" (asked by {code(ask.participant)})" if ask.participant is not None else ""
        lines.append(f"- {code(ask.id)}{by}: {inline(ask.ask.question)}")
        if ask.answer is not None:
            why = f" ({inline(ask.answer.reason)})" if ask.answer.reason else ""
            lines.append(f"  answered {code(ask.answer.value)}{why}")
            continue
        takes, hint = _takes(ask)
        command = f'council answer {ask.id} {takes} --reason "…"'
        lines.append(f"  answer: {code(command)}{hint}")
    if report.status == "waiting":
        lines += [
            "",
            "Then run the same `council review` again (or `council resume "
            f"{report.run_id}`): the run settles with the answers.",
        ]
    return "\n".join(lines)


def _notes(report: CouncilReport) -> str:
    notes = [
        n for n in report.notes if not (_unsandboxed(n) or _without_keys(n) or _not_reviewed(n))
    ]
    if not notes:
        return ""
    return "\n".join(["### Notes", "", *(f"- {inline(note)}" for note in notes)])


def _warnings(report: CouncilReport) -> str:
    if not report.warnings:
        return ""
    groups = group_warnings(report.warnings, [p.id for p in report.participants])
    lines = [
        "<details>",
        f"<summary>{counted(len(report.warnings), 'warning')}</summary>",
    ]
    for owner, warnings in groups.items():
        lines += ["", f"**{inline(owner)}** ({len(warnings)})", ""]
        lines += [f"- {code(w.at)} {w.code}: {inline(w.message)}" for w in warnings]
    lines += ["", "</details>"]
    return "\n".join(lines)


def group_warnings(
    warnings: Iterable[Warning], participants: Sequence[str]
) -> dict[str, list[Warning]]:
    """Warnings grouped by the participant they concern, in roster order, then the rest.

    A warning concerns participant ``P`` when its ``at`` is ``P`` (round level:
    ``stopped``, ``failed``) or starts with ``P:`` (an entry qualified by its
    participant, ``hawk:findings[2]``); every other warning goes under
    :data:`RUN_WARNINGS`. Empty groups are left out. Why: a reader asks "what went
    wrong with hawk?", not "what went wrong at findings[2]?". Source: docs/harvest.md §6.
    """
    known = set(participants)
    found: dict[str, list[Warning]] = {}
    for warning in warnings:
        found.setdefault(_owner(warning.at, known), []).append(warning)
    order = [*participants, RUN_WARNINGS]
    return {owner: found[owner] for owner in order if owner in found}


def _owner(at: str, known: set[str]) -> str:
    if at in known:
        return at
    position = at.rfind(":")
    while position != -1:
        if at[:position] in known:
            return at[:position]
        position = at.rfind(":", 0, position)
    return RUN_WARNINGS


def _seconds(ms: int) -> str:
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, rest = divmod(ms // 1000, 60)
    return f"{minutes} min {rest:02d} s"
