"""Focused regressions the round-accounting property found (issue 20, "What to build" 3):
situation 4 (a model's minor re-raise of a telling merged with bandit's critical took
the merged finding's id, so the critical was neither carried nor raised and the gate
went green without a fix), and a dismissal that covered, by agreement, another finding
the person had never dismissed."""

from __future__ import annotations

from council.change.diff import Change
from council.merging.agreement import recognize
from council.merging.recognition import keeps_gate
from council.model.findings import Finding, LineAnchor
from council.model.fingerprint import fingerprint
from council.round.gate import gate_tripped
from tests.unit.test_round_accounting_properties import Session, settle

B602 = "B602: subprocess call with shell=True"


def told(who: str, line: int, subject: str, severity: str) -> tuple[str, Finding]:
    return (
        who,
        Finding(
            anchor=LineAnchor(path="a.py", line=line),
            label="issue",
            subject=subject,
            discussion="shell command",
            severity=severity,
        ),
    )


def test_a_minor_re_raise_never_takes_a_merged_criticals_id() -> None:
    """Situation 4: bandit's critical B602 and m1's minor nit on one line merge; the next
    ``--since-last`` round (nothing touched a.py) hears only m1's nit again. The critical
    is carried and still gates; the nit stays apart as a finding of its own."""
    session = Session()
    first = settle(
        session,
        [told("bandit", 1, B602, "critical"), told("m1", 1, "shell command", "minor")],
        Change(),
    )
    (merged,) = first.findings
    assert merged.severity == "critical" and len(merged.members or ()) == 2
    second = settle(session, [told("m1", 1, "shell command", "minor")], Change())
    assert [f.id for f in second.carried] == [merged.id]
    assert merged.id not in {f.id for f in second.findings}
    assert [f.severity for f in gate_tripped(second.gated(fail_on="medium"))] == ["critical"]


def test_recognition_by_agreement_keeps_the_gate() -> None:
    """A pair the relation would recognize stays apart when the new finding is less grave
    or lacks a program's telling of the earlier one; a graver one is recognized."""
    _, nit = told("m1", 1, "shell command", "minor")
    earlier = nit.model_copy(
        update={"id": 7, "severity": "critical", "subject": "shell command call"}
    )
    assert recognize([nit], [earlier]) == {}
    graver = nit.model_copy(update={"severity": "critical"})
    assert recognize([graver], [earlier])[0].earlier.id == 7
    assert not keeps_gate(graver, earlier.model_copy(update={"raised_by": ("bandit",)}), {"bandit"})


def test_a_dismissal_never_covers_another_finding_the_session_reported() -> None:
    """Two model findings on line 2; the person dismisses one. Next round its words come
    back at line 1 beside bandit (the merged finding takes its id, so the dismissal is
    not spent by fingerprint): the other finding, carried, is not taken for the
    dismissed one's rewording and still gates."""
    session = Session()
    first = settle(
        session,
        [
            told("m1", 2, "shell command injection", "medium"),
            told("m1", 2, "shell command", "medium"),
        ],
        Change(),
    )
    dismissed, other = first.findings
    session.dismissals[fingerprint(dismissed)] = "accepted"
    session.dismissed[fingerprint(dismissed)] = dismissed
    again = [told("bandit", 1, B602, "minor"), told("m1", 1, "shell command injection", "medium")]
    second = settle(session, again, Change())
    assert other.id in {f.id for f in second.carried}
    assert other.id not in second.suppressed
    assert other.id in {f.id for f in gate_tripped(second)}
