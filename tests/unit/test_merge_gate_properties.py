"""Merges cannot lie about the gate, as properties (issue 20, "What to build" 4 and 5):
for random tellings of analyzers and models on a few lines of one file, consolidation
and the gate never gate less than the tellings alone would, never make a lone telling
look agreed, lose no telling, and put no analyzer's telling beside one its place
forbids; and a judge that may not overrule analyzers never takes one of their tellings
out of the gate."""

from __future__ import annotations

import json
from collections import Counter
from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from council.change.diff import parse_diff
from council.change.diff_filter import anchor_reason, apply_filter
from council.merging.agreement.relation import place_of, program_clash
from council.merging.consolidation import consolidate, file_findings, with_origin
from council.model.backend_result import ReviewResult
from council.model.findings import Anchor, ChangeAnchor, FileAnchor, Finding, LineAnchor, Origin
from council.model.gate_choices import FailOn
from council.model.participant import Participant
from council.model.report import CouncilReport, ParticipantSummary
from council.round.filing import conclude_judge
from council.round.gate import apply_min_agreement, gate_tripped
from council.round.outcome import harvest_outcome

ROSTER = ("bandit", "ruff", "m1", "m2", "m3")
PROGRAMS = frozenset({"bandit", "ruff"})
LEVELS: tuple[FailOn, ...] = ("minor", "medium", "critical")
SEVERITIES = (None, "minor", "medium", "critical")

CODE = [f"value_{k} = run(shell, command, {k})" for k in range(1, 13)]
"""The twelve lines ``a.py`` has at the head; the change adds lines 3 to 9."""

CHANGE = parse_diff(
    "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,5 +1,12 @@\n"
    + "".join(f" {CODE[k]}\n" for k in range(2))
    + "".join(f"+{CODE[k]}\n" for k in range(2, 9))
    + "".join(f" {CODE[k]}\n" for k in range(9, 12))
)

WORDS = ("shell", "command", "injection", "caller", "input", "timing", "token", "secret")
RULES = ("B602: subprocess call with shell=True", "B105: hardcoded password", "S105: token")

anchors = st.one_of(
    st.builds(
        lambda first, span: LineAnchor(
            path="a.py", line=first + span, start_line=first if span else None
        ),
        st.integers(1, 12),
        st.integers(0, 2),
    ),
    st.just(FileAnchor(path="a.py")),
    st.just(ChangeAnchor()),
)


@st.composite
def tellings(draw: st.DrawFn) -> list[tuple[str, Finding]]:
    """Up to twelve tellings: an analyzer's reports a rule, a model's a few of
    :data:`WORDS`, with discussions drawn from them too, so that many pairs agree."""
    told: list[tuple[str, Finding]] = []
    for _ in range(draw(st.integers(0, 12))):
        who = draw(st.sampled_from(ROSTER))
        words = draw(st.lists(st.sampled_from(WORDS), min_size=2, max_size=5))
        subject = draw(st.sampled_from(RULES)) if who in PROGRAMS else " ".join(words)
        anchor: Anchor = draw(anchors)
        finding = Finding(
            anchor=anchor,
            label="issue",
            subject=subject,
            discussion=" ".join(draw(st.permutations(words))),
            severity=draw(st.sampled_from(SEVERITIES)),
        )
        told.append((who, finding))
    return told


def _round(told: list[tuple[str, Finding]]) -> tuple[list[Finding], CouncilReport]:
    """Consolidate the tellings in roster order with the change; file; report."""
    per = {name: [f for w, f in told if w == name] for name in ROSTER}
    per_participant = [
        (name, with_origin(found, Origin(kind="reviewer", run_id="r", participant=name)))
        for name, found in per.items()
    ]
    programs = [[name in PROGRAMS] * len(found) for name, found in per_participant]
    filed = file_findings(consolidate(per_participant, change=CHANGE, programs=programs), 1)
    people = tuple(
        ParticipantSummary(
            id=name, backend="sarif" if name in PROGRAMS else "replay", state="answered"
        )
        for name in ROSTER
    )
    report = CouncilReport(
        run_id="r", session="s", status="settled", participants=people, findings=tuple(filed)
    )
    return filed, apply_filter(report, CHANGE, "added")


def _own(finding: Finding) -> list[tuple[str, Finding]]:
    """A filed finding's tellings, each as its reviewer told it."""
    if finding.members:
        return [(m.participant, m.as_finding()) for m in finding.members]
    who = finding.origin.participant if finding.origin else ""
    return [(who or "", finding.model_copy(update={"id": None, "agreement": None}))]


def _key(who: str, f: Finding) -> tuple[str, str, str, str | None]:
    return (who, f.subject, f.anchor.model_dump_json(), f.severity)


def _rank(severity: str | None) -> int:
    return SEVERITIES.index(severity) - 1


def _gating(report: CouncilReport, level: FailOn, least: int) -> list[Finding]:
    return gate_tripped(apply_min_agreement(report.gated(fail_on=level, min_agreement=least)))


@settings(max_examples=150, deadline=None)
@given(tellings())
def test_consolidation_and_the_gate_never_gate_less_than_the_tellings(
    told: list[tuple[str, Finding]],
) -> None:
    """Every telling is kept exactly once; a finding holds one telling per reviewer, no
    analyzer's telling beside one its place forbids, and a severity at least each of its
    tellings'; a telling that gates by itself (on the change, at or above the level)
    lies in a gating finding; and a gating finding under --min-agreement N holds N
    reviewers' tellings at or above the level (a merge lends no severity)."""
    filed, report = _round(told)
    kept = [t for f in filed for t in _own(f)]
    assert Counter(_key(w, f) for w, f in kept) == Counter(_key(w, f) for w, f in told)
    for f in filed:
        own = _own(f)
        assert len({w for w, _ in own}) == len(own)
        places = [place_of(t, w in PROGRAMS) for w, t in own]
        assert not any(program_clash(a, b) for a, b in combinations(places, 2))
        assert all(_rank(f.severity) >= _rank(t.severity) for _, t in own)
    for level in LEVELS:
        for least in (1, 2, 3):
            gating = _gating(report, level, least)
            held = {_key(w, t) for f in gating for w, t in _own(f)}
            threshold = LEVELS.index(level)
            if least == 1:
                for who, t in told:
                    alone = anchor_reason(t.anchor, CHANGE, "added", None) is None
                    if alone and _rank(t.severity) >= threshold:
                        assert _key(who, t) in held
            for f in gating:
                agreeing = {w for w, t in _own(f) if _rank(t.severity) >= threshold}
                assert len(agreeing) >= least


@st.composite
def verdicts(draw: st.DrawFn, filed: list[Finding]) -> list[dict[str, object]]:
    """A judge's answer: some filed findings restated (in their words or others), each
    naming a random set of raisers and a random severity; sometimes a new finding."""
    answer: list[dict[str, object]] = []
    for f in filed:
        if not draw(st.booleans()):
            continue
        location: dict[str, object] = {"kind": "change"}
        if isinstance(f.anchor, LineAnchor):
            location = {"kind": "line", "file": f.anchor.path, "start": f.anchor.line}
        elif isinstance(f.anchor, FileAnchor):
            location = {"kind": "file", "file": f.anchor.path}
        entry: dict[str, object] = {
            "subject": f.subject if draw(st.booleans()) else " ".join(draw(st.permutations(WORDS))),
            "label": draw(st.sampled_from(["issue", "praise", "nitpick"])),
            "location": location,
            "raisedBy": draw(st.lists(st.sampled_from(ROSTER), min_size=1, max_size=3)),
        }
        severity = draw(st.sampled_from(SEVERITIES))
        if severity is not None:
            entry["severity"] = severity
        answer.append(entry)
    return answer


@settings(max_examples=120, deadline=None)
@given(tellings(), st.data())
def test_a_judge_that_may_not_overrule_analyzers_never_ungates_their_tellings(
    told: list[tuple[str, Finding]], data: st.DataObject
) -> None:
    """Whatever a judge (overrule = "models", heard in full) restates, splits, credits or
    leaves out, an analyzer's telling that gated before it, at any level and
    --min-agreement, is still in a gating finding after it."""
    filed, interim = _round(told)
    interim = interim.model_copy(update={"status": "judging"})
    answer = data.draw(verdicts(filed))
    judge = Participant(id="arbiter", role="judge", backend="replay")
    outcome = harvest_outcome(
        "arbiter", "judge", ReviewResult(answer=json.dumps({"findings": answer})), []
    )
    _, judged = conclude_judge(
        interim, judge, outcome, 100, status="settled", settled_ms=1, change=CHANGE
    )
    judged = apply_filter(judged, CHANGE, "added")
    for level in LEVELS:
        for least in (1, 2, 3):
            before = {
                (f.id, w) for f in _gating(interim, level, least) for w in _raisers(f) & PROGRAMS
            }
            after = {(f.id, w) for f in _gating(judged, level, least) for w in _raisers(f)}
            assert before <= after


def _raisers(finding: Finding) -> set[str]:
    """Whose tellings a filed finding holds (a restated one keeps its id)."""
    if finding.members:
        return {m.participant for m in finding.members}
    if finding.raised_by:
        return set(finding.raised_by)
    return {finding.origin.participant} if finding.origin and finding.origin.participant else set()
