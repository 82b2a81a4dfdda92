"""What a console page shows, read from the council's Redis: plain values, no markup.

:func:`index_view`: the runs Redis still holds (newest first) and every unanswered question
(as ``council runs`` and ``council asks``). :func:`run_view`: one run's status, participants
(live while it is open), findings with agreement, likelihood and evidence, cost, and asks
rendered through :mod:`workers.console.registry`. Nothing is written but the expired-run pruning of
:meth:`~workers.stores.runs.RunStore.recent` (as ``council runs`` does). Times are ms since the
epoch shown as UTC, durations shown in seconds, costs in US dollars. Raises what the Redis
client raises when Redis does not answer (the app answers 503).

Source: docs/evidence-and-asks.md §2, docs/architecture.md "State in Redis".
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import BaseModel, JsonValue

from council.asks.pending import Answer, PendingAsk
from council.model.findings import ChangeAnchor, FileAnchor, Finding
from council.model.report import CouncilReport, ParticipantSummary, RunStatus
from council.round.gate import gate_summary
from council.round.lifecycle import is_final
from workers.app.clock import now_ms
from workers.app.services import Runtime
from workers.console.registry import Props, Rendering, rendering
from workers.stores.run_record import Progress, RunRecord

RUNS_SHOWN = 50
"""How many of the most recent runs the index lists."""


@dataclass(frozen=True)
class RunRow:
    """One run in the index."""

    run_id: str
    created: str
    status: str
    participants: int
    head: str
    session: str


@dataclass(frozen=True)
class AskRow:
    """One unanswered question in the index."""

    ask_id: str
    run_id: str
    session: str
    question: str
    component_id: str | None


@dataclass(frozen=True)
class IndexView:
    """The index page: recent runs, and the questions waiting for an answer."""

    runs: tuple[RunRow, ...]
    asks: tuple[AskRow, ...]


@dataclass(frozen=True)
class ParticipantRow:
    """One participant of a run: its live state, attempts and findings so far, and,
    once the run has a report, its backend, model and cost."""

    id: str
    state: str
    attempt: int
    findings: int
    elapsed: str
    detail: str
    backend: str = ""
    model: str = ""
    cost: str = ""


@dataclass(frozen=True)
class FindingCard:
    """One finding: where, what, who agrees, its evidence, and why it does not gate
    (suppressed, outside the filter) when that is so."""

    id: str
    severity: str
    label: str
    subject: str
    where: str
    discussion: str
    raised_by: tuple[str, ...]
    agreement: str
    evidence: tuple[str, ...]
    standing: str
    """"" when the finding stands; else why not (``dismissed: the reason``)."""
    likelihood: str = ""
    """How likely it is real (``0.62``; docs/ranking.md); "" when the report is unranked."""
    why: str = ""
    """The likelihood's reason in words (who raised it, with what record)."""
    less_likely: bool = False
    """Ranked below the report's ``likely_at``: the Markdown report folds it."""


@dataclass(frozen=True)
class AskCard:
    """One question of a run: its prose, how the registry renders it, its answer."""

    id: str
    question: str
    shown: Rendering
    answer: Answer | None
    answered: str
    """When and by whom it was answered, in words ("" while unanswered)."""
    pinned: str | None = None
    """The artifact ref the question's component pins (sent back with the answer, so an
    answer to another version of the question is refused as stale)."""


@dataclass(frozen=True)
class RunView:
    """The run page."""

    record: RunRecord
    status: str
    created: str
    participants: tuple[ParticipantRow, ...]
    findings: tuple[FindingCard, ...]
    cost: str
    asks: tuple[AskCard, ...]
    waiting: bool
    """The run waits on a person (status ``waiting``)."""
    settled_with_answers: bool
    """The run asked, every ask was answered, and it settled: the page says so."""
    gate: str
    """The gate's one line (``gate: … → exit N``) once the run has a report."""
    notes: tuple[str, ...]

    @property
    def unanswered(self) -> int:
        """How many of the run's asks still wait for an answer."""
        return sum(1 for a in self.asks if a.answer is None)


def index_view(rt: Runtime) -> IndexView:
    """The runs Redis holds (at most :data:`RUNS_SHOWN`) and the unanswered asks."""
    records = rt.runs.recent(RUNS_SHOWN)
    statuses = rt.runs.status_map([r.run_id for r in records]) if records else {}
    runs = tuple(
        RunRow(
            run_id=r.run_id,
            created=when(r.created_ms),
            status=statuses.get(r.run_id, "expired"),
            participants=len(r.participants),
            head=r.head[:12],
            session=r.session,
        )
        for r in records
    )
    asks: list[AskRow] = []
    sessions = rt.sessions
    for name in sessions.waiting_sessions():
        answers = sessions.answers(name)
        for parked in sessions.waiting(name):
            for ask in parked.report.asks:
                if ask.answer is not None or ask.id in answers:
                    continue
                component = ask.ask.component
                asks.append(
                    AskRow(
                        ask_id=ask.id,
                        run_id=ask.run,
                        session=name,
                        question=ask.ask.question,
                        component_id=component.component_id if component else None,
                    )
                )
    return IndexView(runs=runs, asks=tuple(asks))


def run_view(rt: Runtime, run_id: str) -> RunView | None:
    """The run ``run_id``; None when Redis holds no such run (unknown or expired)."""
    record = rt.runs.record(run_id)
    if record is None:
        return None
    status: RunStatus = rt.runs.status(run_id) or "open"
    report = rt.runs.report(run_id)
    progress = rt.runs.progress(run_id)
    counts = rt.journals.recorded_counts(run_id) if status in ("open", "judging") else {}
    summaries = {p.id: p for p in report.participants} if report is not None else {}
    order = [*record.participants, *((record.judge,) if record.judge else ())]
    order += [p for p in (*progress, *summaries) if p not in order]
    rows = tuple(
        _participant(pid, progress.get(pid), summaries.get(pid), counts.get(pid)) for pid in order
    )
    answers = rt.sessions.answers(record.session) if status == "waiting" else {}
    asks = tuple(_ask_card(rt, run_id, a, answers) for a in report.asks) if report else ()
    reviewers = len(record.participants) or len(rows)
    return RunView(
        record=record,
        status=status,
        created=when(record.created_ms),
        participants=rows,
        findings=_findings(report, reviewers) if report is not None else (),
        cost=_cost(report),
        asks=asks,
        waiting=status == "waiting",
        settled_with_answers=bool(asks) and is_final(status),
        gate=gate_summary(report) if report is not None else "",
        notes=report.notes if report is not None else record.notes,
    )


def props_of(rt: Runtime, run_id: str, ask: PendingAsk) -> tuple[Props | None, str | None]:
    """An ask's props as its component's template reads them: the inline ``props``, with
    the object a ``props_ref`` names in the run's artifact store merged in (inline keys
    win); and the problem, when the ref does not resolve or is not a JSON object."""
    component = ask.ask.component
    if component is None:
        return None, None
    props: dict[str, JsonValue] = dict(component.props or {})
    if component.props_ref is None:
        return props, None
    artifact = rt.artifacts.get(run_id, component.props_ref)
    if artifact is None:
        return None, "its props_ref names no artifact of this run (expired, or another run's)"
    if artifact.kind != "json":
        return None, "its props_ref names bytes, not a JSON object"
    value = artifact.value()
    if not isinstance(value, dict):
        return None, "its props_ref names a JSON value that is not an object"
    return {**value, **props}, None


def when(ms: int | None) -> str:
    """``ms`` since the epoch as ``YYYY-MM-DD HH:MM:SSZ`` ("—" for none)."""
    if not ms:
        return "—"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _participant(
    pid: str, live: Progress | None, summary: ParticipantSummary | None, recorded: int | None
) -> ParticipantRow:
    state = live.state if live is not None else (summary.state if summary else "pending")
    findings = live.findings if live is not None else 0
    if live is not None and live.state == "running" and recorded is not None:
        findings = recorded
    if summary is not None and state not in ("pending", "running"):
        findings = summary.findings
    elapsed = ""
    if summary is not None and summary.duration_ms:
        elapsed = _seconds(summary.duration_ms)
    elif live is not None and live.started_ms:
        end = live.updated_ms if live.state != "running" else now_ms()
        elapsed = _seconds(max(0, (end or live.started_ms) - live.started_ms))
    detail = live.detail if live is not None else ""
    if summary is not None and summary.failure:
        detail = summary.failure
    cost = ""
    if summary is not None:
        cost = (
            _usd(summary.cost_usd)
            if summary.cost_usd is not None
            else ("unpriced" if summary.usage else "")
        )
    return ParticipantRow(
        id=pid,
        state=state,
        attempt=(live.attempt if live is not None else (summary.attempts if summary else 0)),
        findings=findings,
        elapsed=elapsed,
        detail=detail,
        backend=summary.backend if summary else "",
        model=(summary.model or "") if summary else "",
        cost=cost,
    )


def _findings(report: CouncilReport, reviewers: int) -> tuple[FindingCard, ...]:
    cards: list[FindingCard] = []
    for finding in report.open_findings:
        fid = finding.id
        standing = ""
        if fid is not None and fid in report.suppressed:
            held = report.suppressed[fid]
            standing = f"{held.source}: {held.reason}" if held.reason else held.source
        elif fid is not None and fid in report.filtered:
            standing = f"outside the filter: {report.filtered[fid]}"
        raisers = finding.raised_by or ()
        rank = report.ranks.get(fid) if fid is not None else None
        cards.append(
            FindingCard(
                id=str(fid) if fid is not None else "—",
                severity=finding.severity or "",
                label=finding.label,
                subject=finding.subject,
                where=_where(finding),
                discussion=finding.discussion,
                raised_by=raisers,
                agreement=(
                    f"{len(raisers)} of {reviewers} reviewer(s)" if raisers else "not attributed"
                ),
                evidence=evidence_lines(getattr(finding, "evidence", None)),
                standing=standing,
                likelihood=f"{rank.likelihood:.2f}" if rank is not None else "",
                why=rank.why if rank is not None else "",
                less_likely=rank is not None and rank.likelihood < report.likely_at,
            )
        )
    return tuple(cards)


def evidence_lines(evidence: object) -> tuple[str, ...]:
    """A finding's ``evidence`` in words, one line per shown block (``block 1: ran
    (ok), exit 0``, ``block 2: not run this turn``); a value of another shape is shown
    as its compact JSON. () when there is none. Never raises."""
    if evidence is None:
        return ()
    if isinstance(evidence, BaseModel):
        evidence = evidence.model_dump(mode="json", exclude_none=True)
    blocks = evidence.get("blocks") if isinstance(evidence, Mapping) else evidence
    if isinstance(blocks, Sequence) and not isinstance(blocks, str | bytes):
        lines = [_verdict(b) for b in blocks]
        if all(line is not None for line in lines):
            return tuple(line for line in lines if line is not None)
    try:
        return (json.dumps(evidence, ensure_ascii=False, separators=(",", ":"), default=str),)
    except (TypeError, ValueError):
        return (repr(evidence),)


_UNMATCHED = {
    "no-submission-this-turn": "not run this turn",
    "over-size": "too large to compare",
    "kept-out": "a proposed edit (not compared)",
}


def _verdict(block: object) -> str | None:
    """One verdict (``council.evidence.verdict`` JSON) in words; None when it is not one."""
    if isinstance(block, BaseModel):
        block = block.model_dump(mode="json", exclude_none=True)
    if not isinstance(block, Mapping) or not isinstance(block.get("label"), str):
        return None
    n = block.get("block", "?")
    label = str(block["label"])
    if label == "unmatched":
        reason = str(block.get("reason", ""))
        return f"block {n}: {_UNMATCHED.get(reason, reason or 'unmatched')}"
    code = block.get("exit_code")
    ran = "ran" if label in ("ok", "failed") else label
    shown = f"block {n}: {ran} ({label})" if ran == "ran" else f"block {n}: {ran}"
    return shown + (f", exit {code}" if code is not None else "")


def _ask_card(rt: Runtime, run_id: str, ask: PendingAsk, answers: Mapping[str, Answer]) -> AskCard:
    props, problem = props_of(rt, run_id, ask)
    answer = ask.answer or answers.get(ask.id)
    answered = ""
    if answer is not None:
        who = f" by {answer.by}" if answer.by else ""
        answered = f"answered {when(answer.answered_ms)}{who}"
    return AskCard(
        id=ask.id,
        question=ask.ask.question,
        shown=rendering(ask, props, problem),
        answer=answer,
        answered=answered,
        pinned=ask.ask.component.props_ref if ask.ask.component is not None else None,
    )


def _where(finding: Finding) -> str:
    anchor = finding.anchor
    if isinstance(anchor, ChangeAnchor):
        return "the change"
    if isinstance(anchor, FileAnchor):
        return f"{anchor.path} (whole file)"
    lines = f"{anchor.start_line}-{anchor.line}" if anchor.start_line else str(anchor.line)
    side = " (old side)" if anchor.side == "old" else ""
    return f"{anchor.path}:{lines}{side}"


def _cost(report: CouncilReport | None) -> str:
    if report is None:
        return ""
    if report.cost_usd is None:
        text = "no priced usage"
    else:
        text = ("" if report.cost_complete else "at least ") + _usd(report.cost_usd)
    return text if report.budget is None else f"{text}; {report.budget.describe()}"


def _usd(amount: float) -> str:
    return f"${amount:.4f}" if amount < 1 else f"${amount:.2f}"


def _seconds(ms: int) -> str:
    return f"{ms / 1000:.1f} s"
