"""The judge's turn: after the reviewers are filed, one more participant reads them.

The body of the ``council.judge`` task: build the judge's prompt from the change and the
findings the reviewers filed, run it like any participant (same backends, clocks and
journal), then settle the run. Idempotent: a stored judge outcome is not asked again, and
settling files once. Source: docs/architecture.md (chord → judge → settle), docs/harvest.md §8.
"""

from __future__ import annotations

import structlog

from council.change.diff import parse_diff
from council.model.report import CouncilReport
from council.slicing.judged import judge_prompt
from workers.app.services import Runtime
from workers.execution.participant_attempt import review
from workers.settling.settle import RunNotFound, settle_run

log = structlog.get_logger("council.judge")


def judge_run(rt: Runtime, run_id: str, protocol: int) -> CouncilReport:
    """Ask the run's judge about the filed findings, then settle the run.

    The judge's prompt is built here, from the stored change, the run's notes, the filed
    findings and its persona's charter as the run's inputs hold it
    (:meth:`~workers.stores.runs.RunStore.persona`). Raises :class:`RunNotFound` when the
    run, its judge or its interim report is not (or no longer) in Redis.
    """
    record = rt.runs.record(run_id)
    interim = rt.runs.report(run_id)
    if record is None or record.judge is None or interim is None:
        raise RunNotFound(run_id)
    if interim.status == "judging" and rt.runs.outcome(run_id, record.judge) is None:
        judge = rt.runs.participant(run_id, record.judge)
        if judge is None:
            raise RunNotFound(run_id)
        persona = rt.runs.persona(run_id, judge.id)
        change = parse_diff(rt.runs.change(run_id))
        prompt, cut = judge_prompt(
            judge, change, interim.findings, persona_text=persona, notes=record.notes
        )
        rt.runs.put_prompt(run_id, judge.id, prompt)
        if cut is not None:
            log.warning("judge_shown_in_part", run_id=run_id, participant=judge.id, note=cut)
        log.info("judge_started", run_id=run_id, filed=len(interim.findings))
        review(rt, run_id, judge.id, protocol)
    return settle_run(rt, run_id)
