"""Settling follows the run lifecycle (council/round/lifecycle.py) on a runtime over fakeredis:
the reviewers' filing leads a run with a judge to ``judging``; a chord that fires again
while the judge works files nothing (the judge is still to be heard); the judge's outcome
settles the run; the watchdog settles a judge that never answered from its journal. The
``run_settled`` line's level says how it ended."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest
from structlog.testing import capture_logs

from council.model.backend_result import ReviewResult
from council.model.participant import Participant
from council.round.outcome import harvest_outcome
from workers.app.clock import now_ms
from workers.app.services import Runtime, build_runtime
from workers.app.settings import Settings
from workers.settling.settle import settle_run
from workers.stores.run_record import RunRecord

REVIEWER = Participant(id="rep", backend="replay", options={"answer": "a.json"})
JUDGE = Participant(id="arbiter", role="judge", backend="replay", options={"answer": "j.json"})
DIFF = "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1,2 @@\n x = 1\n+y = 2\n"
FINDING = (
    '{"subject": "y is never read", "label": "issue", "severity": "minor", '
    '"location": {"kind": "line", "file": "app.py", "line": 2}}'
)


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    yield build_runtime(
        Settings(work_dir=tmp_path / "work"), fakeredis.FakeRedis(server=fakeredis.FakeServer())
    )


def _open_with_judge(rt: Runtime) -> RunRecord:
    record = RunRecord(
        run_id="r1",
        session="s1",
        participants=(REVIEWER.id,),
        judge=JUDGE.id,
        created_ms=now_ms(),
        deadline_ms=now_ms() + 600_000,
    )
    both = [REVIEWER, JUDGE]
    rt.sessions.open_run(record, [(p.role, p) for p in both], record.created_ms)
    rt.runs.put_inputs("r1", both, {p.id: "review" for p in both}, None, {}, change=DIFF)
    answer = '{"findings": [' + FINDING + "]}"
    outcome = harvest_outcome(REVIEWER.id, "reviewer", ReviewResult(answer=answer), [])
    assert rt.runs.put_outcome("r1", outcome, answer)
    return record


def _settled_level(logged: list[dict[str, Any]]) -> str:
    """The level of the one ``run_settled`` line among ``logged``."""
    (line,) = [e for e in logged if e["event"] == "run_settled"]
    return str(line["log_level"])


def test_a_chord_firing_again_while_the_judge_works_files_nothing(rt: Runtime) -> None:
    """reviewers_settled (and worker_lost) on a judging run are refused: the interim report
    stands and the judge is not settled as lost before it answered."""
    _open_with_judge(rt)
    sent: list[str] = []
    interim = settle_run(rt, "r1", dispatch_judge=sent.append)
    assert (interim.status, sent) == ("judging", ["r1"])
    assert [f.subject for f in interim.findings] == ["y is never read"]
    again = settle_run(rt, "r1", dispatch_judge=sent.append)
    late = settle_run(rt, "r1", dispatch_judge=sent.append, event="worker_lost")
    assert again == interim and late == interim
    assert sent == ["r1"], "the judge is sent once"
    assert rt.runs.status("r1") == "judging"
    assert rt.sessions.next_finding_id("s1") == 2, "nothing filed twice"


def test_the_judge_outcome_settles_the_run_once(rt: Runtime) -> None:
    _open_with_judge(rt)
    settle_run(rt, "r1", dispatch_judge=lambda _r: None)
    verdict = '{"findings": [' + FINDING + "]}"
    judged = harvest_outcome(JUDGE.id, "judge", ReviewResult(answer=verdict), [])
    assert rt.runs.put_outcome("r1", judged, verdict)
    with capture_logs() as logged:
        report = settle_run(rt, "r1")
    assert report.status == "settled"
    assert _settled_level(logged) == "info"
    assert [p.id for p in report.participants] == ["rep", "arbiter"]
    assert len(report.findings) == 1 and not report.suppressed
    assert settle_run(rt, "r1") == report


def test_the_watchdog_settles_a_judge_that_never_answered(rt: Runtime) -> None:
    """watchdog_fired on judging: the judge's journal is filed as a stop; the run is partial."""
    _open_with_judge(rt)
    settle_run(rt, "r1", dispatch_judge=lambda _r: None)
    attempt = rt.runs.start_attempts("r1", [JUDGE.id], now_ms())[JUDGE.id]
    assert rt.journals.append("r1", JUDGE.id, attempt, FINDING) == "Recorded."
    with capture_logs() as logged:
        report = settle_run(rt, "r1", deadline_passed=True)
    judge = next(p for p in report.participants if p.id == JUDGE.id)
    assert report.status == "partial"
    assert _settled_level(logged) == "warning"  # completed, but someone was not heard
    assert judge.stop is not None and judge.stop.limit == "worker-lost"


def test_a_cancelled_judging_run_settles_cancelled(rt: Runtime) -> None:
    """A run that could not complete says so at ``error`` (the gate exits 3)."""
    _open_with_judge(rt)
    settle_run(rt, "r1", dispatch_judge=lambda _r: None)
    with capture_logs() as logged:
        report = settle_run(rt, "r1", forced="cancelled")
    assert report.status == "cancelled"
    assert _settled_level(logged) == "error"
    assert rt.runs.status("r1") == "cancelled"
