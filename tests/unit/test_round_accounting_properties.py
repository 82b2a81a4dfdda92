"""Every open finding is accounted for, every round, as a property (issue 20, "What to
build" 3): random sequences of ``--since-last`` rounds over one small file, settled by
the same pure steps the runtime chains (:func:`council.round.filing.file_round` with the
session's recall and the head's code, :class:`workers.settling.session_marks.SessionMarks`
— seen, outdated, carried, dismissals —, the gate, :func:`remembered`), with reviewers
raising, rewording, moving and dropping findings, commits editing, inserting and removing
lines, and a person dismissing findings. Each finding open after round N is in round N+1
raised again, carried, outdated or decided on; and no finding that gated leaves the gate
unless its code changed or a person dismissed that occurrence."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from council.change.commentable import land
from council.change.diff import Change, parse_diff
from council.change.diff_filter import apply_filter
from council.model.findings import Finding, LineAnchor, severity_rank
from council.model.fingerprint import fingerprint, with_fingerprints
from council.model.report import CouncilReport, ParticipantSummary
from council.round.filing import Heard, RoundFacts, file_round
from council.round.gate import apply_min_agreement, gate_tripped
from council.session.earlier_rounds import remembered, touched
from workers.settling.session_marks import SessionMarks

ROSTER = ("bandit", "m1", "m2")
PROGRAMS = frozenset({"bandit"})
SEVERITIES = ("minor", "medium", "critical")
RULES = ("B602: subprocess call with shell=True", "B105: hardcoded password")
WORDS = ("shell", "command", "injection", "naming", "unclear", "variable", "caller", "input")
START = tuple(f"run_{k}(command, shell=True)" for k in range(6))
"""The file ``a.py`` before the first round (six distinct lines)."""


@dataclass
class Session:
    """What the session's stores hold between rounds, as the runtime keeps it."""

    lines: list[str] = field(default_factory=lambda: list(START))
    still_open: tuple[Finding, ...] = ()
    recall: tuple[Finding, ...] = ()
    reported: dict[str, tuple[int, ...]] = field(default_factory=dict)
    dismissals: dict[str, str] = field(default_factory=dict)
    dismissed: dict[str, Finding] = field(default_factory=dict)
    next_id: int = 1
    fresh: int = 0


def _whole(lines: list[str]) -> Change:
    """The pull request: ``a.py`` added whole, so every line is on the change."""
    body = "".join(f"+{line}\n" for line in lines)
    head = "diff --git a/a.py b/a.py\nnew file mode 100644\n--- /dev/null\n+++ b/a.py\n"
    return parse_diff(f"{head}@@ -0,0 +1,{len(lines)} @@\n{body}")


def _interdiff(old: list[str], new: list[str]) -> Change:
    text = "".join(
        f"{line}\n" for line in difflib.unified_diff(old, new, "a/a.py", "b/a.py", lineterm="")
    )
    return parse_diff(f"diff --git a/a.py b/a.py\n{text}") if text else Change()


edits = st.lists(
    st.tuples(st.sampled_from(("fix", "insert", "delete")), st.integers(0, 20)), max_size=2
)
"""A commit: lines replaced (a fix), inserted above others (they move) or removed."""


@st.composite
def tellings(draw: st.DrawFn, size: int) -> list[tuple[str, Finding]]:
    """What the reviewers say of the head: an analyzer a rule, a model a few words, each
    at a line of the file, at some severity."""
    told: list[tuple[str, Finding]] = []
    for _ in range(draw(st.integers(0, 5))):
        who = draw(st.sampled_from(ROSTER))
        words = draw(st.lists(st.sampled_from(WORDS), min_size=2, max_size=4, unique=True))
        subject = draw(st.sampled_from(RULES)) if who in PROGRAMS else " ".join(words)
        line = draw(st.integers(1, size))
        told.append(
            (
                who,
                Finding(
                    anchor=LineAnchor(path="a.py", line=line),
                    label="issue",
                    subject=subject,
                    discussion=" ".join(words),
                    severity=draw(st.sampled_from(SEVERITIES)),
                ),
            )
        )
    return told


def _commit(session: Session, ops: list[tuple[str, int]]) -> Change:
    old = list(session.lines)
    for op, at in ops:
        lines = session.lines
        session.fresh += 1
        if op == "insert":
            lines.insert(at % (len(lines) + 1), f"pad_{session.fresh} = None")
        elif lines and op == "fix":
            lines[at % len(lines)] = f"run_{session.fresh}(command)"
        elif len(lines) > 1 and op == "delete":
            del lines[at % len(lines)]
    return _interdiff(old, session.lines)


def settle(session: Session, told: list[tuple[str, Finding]], since: Change) -> CouncilReport:
    """One ``--since-last`` round, settled as :mod:`workers.settling.settle` does."""
    lines, pull = list(session.lines), _whole(session.lines)
    heard = [
        Heard(
            ParticipantSummary(
                id=name, backend="sarif" if name in PROGRAMS else "replay", state="answered"
            ),
            [f for who, f in told if who == name],
        )
        for name in ROSTER
    ]
    _, report = file_round(
        RoundFacts(run_id=f"r{session.next_id}", session="s"),
        heard,
        session.next_id,
        status="settled",
        settled_ms=None,
        change=pull,
        remembered=session.recall,
        code=lambda path: lines if path == "a.py" else None,
    )
    marks = SessionMarks(
        earlier=session.still_open,
        fingerprints=session.reported,
        since=since,
        dismissals=session.dismissals,
        dismissed=session.dismissed,
        recall=session.recall,
        carry=True,
    )
    marked = marks.apply(land(report, pull), pull).gated(fail_on="minor")
    report = with_fingerprints(apply_min_agreement(apply_filter(marked, pull, "added", None)))
    memory = remembered(report, session.recall)
    assert memory is not None and memory.still_open is not None
    session.still_open, session.recall = memory.still_open, memory.recall
    for print_, ids in memory.reported.items():
        session.reported[print_] = tuple(int(i) for i in ids.split(","))
    session.next_id = 1 + max(
        [session.next_id - 1, *(f.id for f in report.open_findings if f.id is not None)]
    )
    return report


def _decided(session: Session, finding: Finding) -> bool:
    """Whether a person dismissed this very finding (its occurrence, or its id)."""
    return fingerprint(finding) in session.dismissals or any(
        d.id == finding.id for d in session.dismissed.values()
    )


def _account(before: CouncilReport, after: CouncilReport, since: Change, session: Session) -> None:
    raised = {f.id for f in after.findings}
    carried = {f.id for f in after.carried}
    outdated = {f.id for f in after.outdated}
    assert not raised & carried and not carried & outdated
    # One occurrence told twice at one place is one finding: raised or carried once.
    prints = {fingerprint(f) for f in (*after.open_findings, *after.outdated)}
    for f in before.open_findings:
        if f.id in before.suppressed and before.suppressed[f.id].source == "judge":
            continue
        again = f.id in raised or fingerprint(f) in prints
        assert again or f.id in carried or f.id in outdated or _decided(session, f), (
            f"#{f.id} {f.subject!r} silently absent"
        )
    gating = gate_tripped(after)
    for f in gate_tripped(before):
        if touched(since, f) or _decided(session, f):
            continue
        # Kept apart from what would make it less grave: whatever holds its id or its
        # occurrence now is at least as grave, or it is still there itself.
        rank = severity_rank(f.severity)
        still = [
            g
            for g in gating
            if (g.id == f.id or fingerprint(g) == fingerprint(f))
            and severity_rank(g.severity) >= rank
        ]
        assert still, f"#{f.id} {f.severity} {f.subject!r} left the gate with no fix or decision"


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_no_gating_finding_leaves_the_gate_without_a_fix_or_a_decision(
    data: st.DataObject,
) -> None:
    """Over up to four rounds: everything open after a round is accounted for in the next,
    and whatever gated still gates (as gravely) unless its code changed or a person
    dismissed that occurrence."""
    session = Session()
    report = settle(session, data.draw(tellings(len(session.lines))), Change())
    for _ in range(data.draw(st.integers(1, 3))):
        for f in report.open_findings:
            if f.id is not None and data.draw(st.integers(0, 5)) == 0:
                session.dismissals[fingerprint(f)] = "accepted"
                session.dismissed[fingerprint(f)] = f
        since = _commit(session, data.draw(edits))
        after = settle(session, data.draw(tellings(len(session.lines))), since)
        _account(report, after, since, session)
        report = after
