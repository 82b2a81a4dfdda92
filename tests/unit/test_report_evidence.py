"""Every output says whether a finding's shown scripts ran: Markdown beside each block,
SARIF result properties and JSON as data, the GitHub comment in one line.

Source: docs/evidence-and-asks.md §1.
"""

from __future__ import annotations

import json

from council.evidence import MatchedBlock, UnmatchedBlock
from council.model.findings import Finding, LineAnchor, Origin
from council.rendering import CouncilReport, ParticipantSummary, render_markdown
from council.rendering.escape import block
from council.rendering.evidence_text import evidence_line, verdict_notes, verdict_phrase
from council.rendering.github_review import comment_body
from council.rendering.jsonreport import read_json, render_json
from council.rendering.sarif import render_sarif

RAN = MatchedBlock(
    block=1,
    label="failed",
    tool_call_id="call_2",
    tool="run_script",
    dispatch=3,
    also_matches=0,
    exit_code=1,
)
NOT_RUN = UnmatchedBlock(block=2, reason="no-submission-this-turn")
DISCUSSION = "Ran:\n```python\nraise SystemExit(1)\n```\nAnd:\n```sh\nmake test\n```\nDone."
NOTE = (
    "held at medium, not critical: the script its discussion shows (block 2) did not run "
    'this turn ([policy] unverified_scripts = "demote")'
)


def _finding() -> Finding:
    return Finding(
        id=7,
        anchor=LineAnchor(path="app.py", line=2),
        label="issue",
        subject="exits 1 on empty input",
        discussion=DISCUSSION,
        origin=Origin(kind="reviewer", run_id="r1", participant="hawk"),
        severity="medium",
        evidence=(RAN, NOT_RUN),
        severity_note=NOTE,
    )


def _report() -> CouncilReport:
    hawk = ParticipantSummary(id="hawk", backend="openai", model="gpt", state="answered")
    return CouncilReport(
        run_id="r1", session="s1", status="settled", participants=(hawk,), findings=(_finding(),)
    )


def test_phrases() -> None:
    assert verdict_phrase(RAN) == "✔ ran this turn, exit 1 (call 3)"
    assert verdict_phrase(NOT_RUN) == "✗ not run this turn"
    assert (
        verdict_phrase(UnmatchedBlock(block=1, reason="kept-out")) == "proposed change, not a run"
    )
    ok = RAN.model_copy(update={"label": "ok", "exit_code": 0, "also_matches": 1})
    assert (
        verdict_phrase(ok) == "✔ ran this turn, exit 0 (call 3; also submitted by 1 other call(s))"
    )


def test_markdown_puts_each_verdict_beside_its_block() -> None:
    assert block(DISCUSSION, verdict_notes((RAN, NOT_RUN))) == [
        "Ran:",
        "```python",
        "raise SystemExit(1)",
        "```",
        "*✔ ran this turn, exit 1 (call 3)*",
        "And:",
        "```sh",
        "make test",
        "```",
        "*✗ not run this turn*",
        "Done.",
    ]
    text = render_markdown(_report())
    assert "> ```\n> *✔ ran this turn, exit 1 (call 3)*\n> And:" in text
    assert "> *✗ not run this turn*" in text
    assert "*held at medium, not critical" in text


def test_sarif_and_json_carry_the_verdicts() -> None:
    (result,) = json.loads(render_sarif(_report()))["runs"][0]["results"]
    assert result["level"] == "warning"
    assert result["properties"]["evidence"] == [
        {
            "block": 1,
            "label": "failed",
            "tool_call_id": "call_2",
            "tool": "run_script",
            "dispatch": 3,
            "also_matches": 0,
            "exit_code": 1,
        },
        {"block": 2, "label": "unmatched", "reason": "no-submission-this-turn"},
    ]
    assert result["properties"]["severityNote"] == NOTE
    data = json.loads(render_json(_report()))
    assert data["findings"][0]["evidence"][1] == {
        "block": 2,
        "label": "unmatched",
        "reason": "no-submission-this-turn",
    }
    assert read_json(render_json(_report())).findings[0] == _finding()


def test_the_github_comment_says_it_in_one_line() -> None:
    body = comment_body(_finding())
    line = evidence_line((RAN, NOT_RUN))
    assert (
        line
        == "shown scripts: block 1 ✔ ran this turn, exit 1 (call 3); block 2 ✗ not run this turn"
    )
    assert line in body.splitlines()[-1]
