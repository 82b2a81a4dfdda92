"""The merge gate: which findings trip it, and the exit code CI reads (council.round.gate)."""

from __future__ import annotations

from typing import Literal, get_args

import pytest

from council.model.findings import ChangeAnchor, Finding, Origin
from council.model.report import (
    CouncilReport,
    ParticipantState,
    ParticipantSummary,
    RunStatus,
    Suppression,
)
from council.round.gate import (
    EXIT_INCOMPLETE,
    EXIT_PASSED,
    EXIT_TRIPPED,
    FAIL_ON,
    FailOn,
    exit_code,
    gate_summary,
    gate_tripped,
    incomplete_reasons,
    parse_fail_on,
)

Sev = Literal["critical", "medium", "minor"] | None


def _finding(ident: int, severity: Sev) -> Finding:
    return Finding(
        id=ident,
        anchor=ChangeAnchor(),
        label="issue",
        subject=f"finding {ident}",
        origin=Origin(kind="reviewer", run_id="r1", participant="hawk"),
        severity=severity,
    )


def _report(
    severities: tuple[Sev, ...] = (),
    *,
    status: RunStatus = "settled",
    states: tuple[ParticipantState, ...] = ("answered",),
    judge: ParticipantState | None = None,
) -> CouncilReport:
    people = [
        ParticipantSummary(id=f"p{i}", backend="replay", state=state)
        for i, state in enumerate(states)
    ]
    if judge is not None:
        people.append(ParticipantSummary(id="j", role="judge", backend="replay", state=judge))
    return CouncilReport(
        run_id="r1",
        session="s1",
        status=status,
        participants=tuple(people),
        findings=tuple(_finding(i + 1, s) for i, s in enumerate(severities)),
    )


MIXED: tuple[Sev, ...] = ("minor", None, "critical", "medium", "critical")


def test_fail_on_constant_lists_every_level() -> None:
    """FAIL_ON holds exactly the values of the FailOn type."""
    assert set(FAIL_ON) == set(get_args(FailOn))


@pytest.mark.parametrize(
    ("level", "ids"),
    [("critical", [3, 5]), ("medium", [3, 4, 5]), ("minor", [1, 3, 4, 5]), ("never", [])],
)
def test_tripped_findings_at_or_above_threshold(level: FailOn, ids: list[int]) -> None:
    """Each level trips on its own severity and everything above it, in filing order."""
    assert [f.id for f in gate_tripped(_report(MIXED).gated(fail_on=level))] == ids


def test_finding_without_severity_never_trips() -> None:
    """A finding with no severity does not trip even the lowest threshold."""
    assert gate_tripped(_report((None, None)).gated(fail_on="minor")) == []


def test_suppressed_findings_never_trip() -> None:
    """Dismissed or baselined findings never trip the gate, nor change the exit code."""
    suppressed = {
        3: Suppression(source="dismissed", reason="false alarm"),
        5: Suppression(source="baseline", reason="legacy"),
    }
    report = _report(MIXED).model_copy(update={"suppressed": suppressed})
    assert [f.id for f in gate_tripped(report.gated(fail_on="medium"))] == [4]
    assert exit_code(report.gated(fail_on="critical")) == EXIT_PASSED


def test_carried_findings_trip_unless_suppressed() -> None:
    """Findings carried from earlier rounds gate after this round's; suppressed ones never."""
    carried = (_finding(7, "critical"), _finding(8, "medium"), _finding(9, "critical"))
    report = _report(("minor",)).model_copy(
        update={"carried": carried, "suppressed": {9: Suppression(source="dismissed")}}
    )
    assert [f.id for f in gate_tripped(report.gated(fail_on="medium"))] == [7, 8]
    assert exit_code(report.gated(fail_on="critical")) == EXIT_TRIPPED
    assert "2 finding(s) at or above medium" in gate_summary(report.gated(fail_on="medium"))
    assert "3 finding(s) not gated (1 more suppressed: dismissed" in gate_summary(
        report.gated(fail_on="never")
    )


def test_unknown_level_is_refused() -> None:
    """A misspelt level raises instead of silently gating nothing."""
    with pytest.raises(ValueError, match="critical"):
        gate_tripped(_report(MIXED).gated(fail_on="Critical"))  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        parse_fail_on("high")


def test_parse_fail_on_accepts_every_level() -> None:
    """Every documented level parses to itself."""
    assert [parse_fail_on(v) for v in FAIL_ON] == list(FAIL_ON)


def test_exit_zero_when_nothing_blocks() -> None:
    """A settled report with findings below the threshold passes."""
    assert exit_code(_report(("minor", "medium")).gated(fail_on="critical")) == EXIT_PASSED


def test_exit_one_when_gate_trips() -> None:
    """A settled report with a finding at the threshold exits 1."""
    assert exit_code(_report(("medium",)).gated(fail_on="medium")) == EXIT_TRIPPED


def test_never_passes_whatever_was_found() -> None:
    """fail-on never exits 0 even with critical findings."""
    assert exit_code(_report(("critical",)).gated(fail_on="never")) == EXIT_PASSED


@pytest.mark.parametrize("status", ["cancelled", "timeout", "open"])
def test_incomplete_status_exits_three(status: RunStatus) -> None:
    """A cancelled, timed-out or never-settled run exits 3."""
    assert exit_code(_report(status=status).gated(fail_on="critical")) == EXIT_INCOMPLETE


def test_partial_run_with_quorum_is_complete() -> None:
    """A partial run where enough reviewers answered for the quorum is gated normally;
    with no quorum given, the stopped reviewer fails the gate closed."""
    report = _report(("critical",), status="partial", states=("answered", "stopped"))
    assert exit_code(report.gated(fail_on="critical", quorum=1)) == EXIT_TRIPPED
    assert exit_code(report.gated(fail_on="critical")) == EXIT_INCOMPLETE


def test_below_quorum_exits_three() -> None:
    """Fewer answered reviewers than the quorum is incomplete."""
    report = _report(status="partial", states=("answered", "failed", "stopped"))
    assert exit_code(report.gated(fail_on="critical", quorum=1)) == EXIT_PASSED
    assert exit_code(report.gated(fail_on="critical", quorum=2)) == EXIT_INCOMPLETE


def test_stopped_reviewer_does_not_count_towards_quorum() -> None:
    """A stopped reviewer, even one with findings, is not an answer."""
    report = _report(("minor",), status="partial", states=("stopped",))
    assert exit_code(report.gated(fail_on="critical")) == EXIT_INCOMPLETE


def test_judge_does_not_count_towards_quorum() -> None:
    """An answering judge cannot make up for reviewers that did not answer."""
    report = _report(status="partial", states=("failed",), judge="answered")
    assert exit_code(report.gated(fail_on="critical")) == EXIT_INCOMPLETE


def test_quorum_zero_disables_the_count() -> None:
    """quorum 0 lets a run where nobody answered pass on its findings alone."""
    report = _report(status="partial", states=("failed",))
    assert exit_code(report.gated(fail_on="critical", quorum=0)) == EXIT_PASSED


def test_negative_quorum_is_refused() -> None:
    """A negative quorum is misuse and raises."""
    with pytest.raises(ValueError):
        exit_code(_report().gated(fail_on="critical", quorum=-1))


def test_incomplete_wins_over_tripped() -> None:
    """3 beats 1: a timed-out run with critical findings exits 3."""
    assert (
        exit_code(_report(("critical",), status="timeout").gated(fail_on="critical"))
        == EXIT_INCOMPLETE
    )


def test_incomplete_reasons_name_status_and_quorum() -> None:
    """Both causes are listed when both apply; none for a complete run."""
    assert incomplete_reasons(_report()) == []
    reasons = incomplete_reasons(_report(status="timeout", states=("failed",)).gated(quorum=1))
    assert len(reasons) == 2


def test_summary_tripped() -> None:
    """The summary counts tripped findings and ends with the exit code."""
    line = gate_summary(_report(MIXED).gated(fail_on="critical"))
    assert line.startswith("gate: 2 finding(s) at or above critical")
    assert line.endswith("exit 1")


def test_summary_passed() -> None:
    """A passing gate says nothing reached the threshold and exit 0."""
    line = gate_summary(_report(("minor",)).gated(fail_on="medium"))
    assert "medium" in line
    assert line.endswith("exit 0")


def test_summary_never() -> None:
    """fail-on never reports how many findings went ungated."""
    line = gate_summary(_report(MIXED).gated(fail_on="never"))
    assert "5 finding(s)" in line
    assert line.endswith("exit 0")


def test_summary_incomplete() -> None:
    """An incomplete run says so, with the reason, and exit 3."""
    line = gate_summary(
        _report(("critical",), status="cancelled").gated(fail_on="critical", quorum=1)
    )
    assert "incomplete" in line
    assert "cancelled" in line
    assert line.endswith("exit 3")
    assert "\n" not in line
