"""Runs waiting on a person, built with the stores directly, for the console's tests.

:func:`waiting_run` opens a run, files its findings and moves it to ``waiting`` with the
given asks in one commit, as settling does when ``[policy] confirm`` asks someone; it
works on fakeredis and on a real redis-server alike.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from council.asks.ask import Ask
from council.asks.component import Component
from council.asks.confirm import waiting_report
from council.asks.pending import PendingAsk
from council.model.findings import Finding, LineAnchor, Origin
from council.model.gate_policy import GatePolicy
from council.model.report import CouncilReport, ParticipantSummary
from council.ranking.likelihood import Rank
from council.round.lifecycle import step
from workers.app.clock import now_ms
from workers.app.services import Runtime
from workers.stores.run_record import Progress, RunRecord
from workers.stores.sessions import Filing

CHOICE = {"component_id": "choice", "props": {"options": ["keep", "drop"]}}
"""The ``choice`` component of the brief: keep or drop."""


def finding(
    subject: str, *, severity: str = "critical", raised_by: Sequence[str] = ("hawk",)
) -> Finding:
    """A line finding on ``app.py:2`` (no id: :func:`waiting_run` files it)."""
    return Finding.model_validate(
        {
            "anchor": LineAnchor(path="app.py", line=2).model_dump(),
            "label": "issue",
            "subject": subject,
            "discussion": "y may be 0 <b>here</b>",
            "severity": severity,
            "raised_by": list(raised_by),
        }
    )


def ask_id(run_id: str, n: int) -> str:
    """A stable ask id for the ``n``-th ask of ``run_id``."""
    return "ask_" + hashlib.sha256(f"{run_id}:{n}".encode()).hexdigest()[:16]


def waiting_run(
    rt: Runtime,
    *,
    run_id: str = "run_console1",
    session: str = "github:o/n#pr-7",
    asks: Sequence[tuple[str, Mapping[str, Any] | None] | tuple[str, Mapping[str, Any], int]] = (
        ("Keep or drop it?", CHOICE),
    ),
    findings: Sequence[Finding] = (),
    participants: Sequence[str] = ("hawk", "owl"),
    gate: GatePolicy | None = None,
    likelihoods: Sequence[float] = (),
) -> tuple[RunRecord, tuple[PendingAsk, ...]]:
    """Open ``run_id`` in ``session``, file ``findings`` (ids from the session's next),
    and leave it waiting on ``asks``: (question, component JSON or None), or (question,
    component, the id of the finding it confirms). ``gate``: the run's gate policy, which
    its report carries as settling gives it one (default: a new run's); ``likelihoods``:
    the ranks of the first findings, in order (none: unranked). Returns its record and
    its asks."""
    now = now_ms()
    record = RunRecord(
        run_id=run_id,
        session=session,
        repository="o/n",
        base="a" * 40,
        head="b" * 40,
        mode="distributed",
        participants=tuple(participants),
        created_ms=now,
        deadline_ms=now + 600_000,
    )
    if gate is not None:
        record = record.model_copy(update={"gate": gate})
    rt.sessions.open_run(record, [], now)
    for n, pid in enumerate(participants):
        rt.runs.set_progress(
            run_id,
            pid,
            Progress(
                state="answered", started_ms=now - 1500, updated_ms=now, findings=n, attempt=1
            ),
        )
    first = rt.sessions.next_finding_id(session)
    filed = tuple(
        f.model_copy(
            update={
                "id": first + i,
                "origin": Origin(kind="reviewer", run_id=run_id, participant="hawk"),
            }
        )
        for i, f in enumerate(findings)
    )
    pending = tuple(
        PendingAsk(
            id=ask_id(run_id, n),
            run=run_id,
            finding=entry[2] if len(entry) == 3 else None,
            ask=Ask(
                question=entry[0],
                component=Component.model_validate(entry[1]) if entry[1] is not None else None,
            ),
        )
        for n, entry in enumerate(asks)
    )
    report = CouncilReport(
        run_id=run_id,
        session=session,
        repository="o/n",
        base=record.base,
        head=record.head,
        status="settled",
        mode="distributed",
        participants=tuple(
            ParticipantSummary(
                id=p, backend="replay", state="answered", findings=n, duration_ms=1500
            )
            for n, p in enumerate(participants)
        ),
        findings=filed,
        created_ms=now,
        cost_usd=0.0123,
        gate=record.gate,
        ranks={
            f.id: Rank(likelihood=p, why=f"raised by hawk ({p:.2f})")
            for f, p in zip(filed, likelihoods, strict=False)
            if f.id is not None
        },
    )
    transition = step("open", "reviewers_settled", ask=True)
    filing = Filing(first_id=first, findings=filed, report=waiting_report(report, pending))
    committed = rt.sessions.commit(record, transition, filing, now)
    assert committed is not None and committed.status == "waiting"
    return record, pending
