"""Findings carry the verdicts on the scripts they show; the policy holds an unproven
critical finding at medium, per finding, before consolidation.

Source: docs/evidence-and-asks.md §1.
"""

from __future__ import annotations

import json
from typing import Any

from council.evidence import ScriptRow
from council.evidence.policy import runs_scripts
from council.merging.consolidation import merge_across, with_origin
from council.model.backend_result import ReviewResult
from council.model.findings import Origin, canonical
from council.model.participant import Participant
from council.roster import parse_roster
from council.round.outcome import ReadingPolicy, harvest_outcome

FIRST = "import sys\nprint(len(sys.argv))\nsys.exit(1)"
SECOND = "print('fine')"


def _row(
    call: str, dispatch: int, text: str, outcome: str = "failed", code: int | None = 1
) -> ScriptRow:
    return ScriptRow.model_validate(
        {"tool_call_id": call, "tool": "run_script", "dispatch": dispatch, "outcome": outcome}
        | ({"exit_code": code} if code is not None else {})
        | {"text": text}
    )


ATTEMPT_ROWS = (_row("call_0", 1, FIRST), _row("call_1", 2, SECOND, "ok", 0))


def _finding(subject: str, severity: str, program: str) -> dict[str, Any]:
    return {
        "subject": subject,
        "label": "issue",
        "severity": severity,
        "location": {"kind": "line", "file": "app.py", "start": 2},
        "discussion": f"I ran this:\n```python\n{program}\n```\nIt exits 1.",
    }


ANSWER = json.dumps(
    {
        "findings": [
            _finding("exact copy", "critical", FIRST),
            _finding("a space changed", "medium", FIRST.replace("sys.exit(1)", "sys.exit(1) ")),
            _finding("never submitted", "critical", "import os\nos.system('rm -rf /')"),
        ]
    }
)


def _outcome(rows: list[tuple[ScriptRow, ...]], attempts: int, policy: str = "demote") -> Any:
    return harvest_outcome(
        "hawk",
        "reviewer",
        ReviewResult(answer=ANSWER),
        [],
        attempts=attempts,
        scripts=rows,
        policy=ReadingPolicy(unverified_scripts=policy),  # type: ignore[arg-type]
    )


def test_ran_not_run_not_run_and_the_invented_proof_is_held_at_medium() -> None:
    outcome = _outcome([ATTEMPT_ROWS], 1)
    first, second, third = (canonical(f) for f in outcome.harvest.findings)
    assert first["evidence"] == [
        {
            "block": 1,
            "label": "failed",
            "tool_call_id": "call_0",
            "tool": "run_script",
            "dispatch": 1,
            "also_matches": 0,
            "exit_code": 1,
        }
    ]
    assert first["severity"] == "critical" and "severity_note" not in first
    unmatched = [{"block": 1, "label": "unmatched", "reason": "no-submission-this-turn"}]
    assert second["evidence"] == unmatched and second["severity"] == "medium"
    assert third["evidence"] == unmatched
    assert third["severity"] == "medium"
    assert "did not run this turn" in third["severity_note"]


def test_keep_attaches_verdicts_and_leaves_severities() -> None:
    outcome = _outcome([ATTEMPT_ROWS], 1, "keep")
    third = outcome.harvest.findings[2]
    assert third.severity == "critical" and third.severity_note is None
    assert third.evidence is not None


def test_a_redelivered_attempt_does_not_match_the_dead_attempts_rows() -> None:
    """Unit level: attempt 1 ran FIRST and died; attempt 2 ran only SECOND. Attempt 2's
    answer showing FIRST is not run this turn (the dead attempt's rows are counted)."""
    dead = (_row("call_0", 1, FIRST),)
    this = (_row("call_0", 1, SECOND, "ok", 0),)
    outcome = _outcome([dead, this], 2)
    first = outcome.harvest.findings[0]
    assert first.evidence is not None
    assert [v.model_dump(exclude_none=True) for v in first.evidence] == [
        {"block": 1, "label": "unmatched", "reason": "no-submission-this-turn"}
    ]
    assert first.severity == "medium"


def test_a_demoted_member_does_not_raise_its_consolidated_finding() -> None:
    """Demotion is per finding: two reviewers report the same line; the one whose
    script did not run is held at medium before they merge, so the merge is medium when
    the other said medium, and critical only from a member that is critical after it."""
    invented = harvest_outcome(
        "hawk",
        "reviewer",
        ReviewResult(answer=json.dumps({"findings": [_finding("same", "critical", "x()")]})),
        [],
        scripts=[()],
    )
    plain = harvest_outcome(
        "owl",
        "reviewer",
        ReviewResult(
            answer=json.dumps(
                {"findings": [dict(_finding("same", "medium", "x()"), discussion="")]}
            )
        ),
        [],
    )
    per = [
        (
            o.participant,
            with_origin(o.harvest.findings, Origin(kind="reviewer", participant=o.participant)),
        )
        for o in (invented, plain)
    ]
    assert [f.severity for _, fs in per for f in fs] == ["medium", "medium"]
    merged = merge_across(per)
    assert [(f.severity, f.raised_by) for f in merged] == [("medium", ("hawk", "owl"))]


def test_no_script_tool_no_verdicts() -> None:
    outcome = harvest_outcome("hawk", "reviewer", ReviewResult(answer=ANSWER), [])
    assert all(f.evidence is None for f in outcome.harvest.findings)
    assert [f.severity for f in outcome.harvest.findings] == ["critical", "medium", "critical"]
    model = Participant(id="m", backend="openai", model="x", tools=("run_script",))
    assert runs_scripts(model) and runs_scripts(Participant(id="c", backend="command"))
    assert not runs_scripts(Participant(id="r", backend="openai", model="x", tools=("grep",)))


def test_the_policy_is_read_from_the_roster() -> None:
    base = '[[reviewers]]\nid = "hawk"\nbackend = "openai"\nmodel = "m"\n'
    assert parse_roster(base, "r").unverified_scripts == "demote"
    kept = parse_roster(base + '[policy]\nunverified_scripts = "keep"\n', "r")
    assert kept.unverified_scripts == "keep"
    try:
        parse_roster(base + '[policy]\nunverified_scripts = "drop"\n', "r")
    except Exception as error:  # RosterError
        assert getattr(error, "path", "") == "policy.unverified_scripts"
    else:
        raise AssertionError("an unknown policy was accepted")
