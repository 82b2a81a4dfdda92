"""The Markdown report: verdict, PARTIAL, counts, table, findings, notes, warnings."""

from __future__ import annotations

import json
from typing import Literal

import pytest

from council.model.backend_result import Stop
from council.model.findings import (
    Anchor,
    ChangeAnchor,
    FileAnchor,
    Finding,
    LineAnchor,
    Origin,
    Warning,
)
from council.model.report import ChangeSize, RunStatus, Suppression
from council.rendering import (
    CouncilReport,
    ParticipantSummary,
    read_json,
    render_json,
    render_markdown,
)
from council.rendering.markdown import RUN_WARNINGS, group_warnings
from council.round.gate import FailOn, exit_code

Sev = Literal["critical", "medium", "minor"] | None
HAWK = Origin(kind="reviewer", run_id="r1", participant="hawk")


def _finding(
    ident: int,
    severity: Sev = None,
    *,
    anchor: Anchor | None = None,
    label: Literal["issue", "nitpick", "praise", "question"] = "issue",
    subject: str = "",
    discussion: str = "",
    origin: Origin | None = HAWK,
    raised_by: tuple[str, ...] | None = None,
    confidence: float | None = None,
) -> Finding:
    return Finding(
        id=ident,
        anchor=anchor or ChangeAnchor(),
        label=label,
        subject=subject or f"subject {ident}",
        discussion=discussion,
        origin=origin,
        severity=severity,
        raised_by=raised_by,
        confidence=confidence,
    )


def _people(*extra: ParticipantSummary) -> tuple[ParticipantSummary, ...]:
    hawk = ParticipantSummary(id="hawk", backend="openai", model="gpt", state="answered")
    return (hawk, *extra)


def _report(
    *findings: Finding,
    status: RunStatus = "settled",
    participants: tuple[ParticipantSummary, ...] | None = None,
    warnings: tuple[Warning, ...] = (),
    notes: tuple[str, ...] = (),
) -> CouncilReport:
    return CouncilReport(
        run_id="r1",
        session="s1",
        status=status,
        participants=_people() if participants is None else participants,
        findings=findings,
        warnings=warnings,
        notes=notes,
    )


def _title(text: str) -> str:
    return text.splitlines()[0]


def test_passed_title() -> None:
    """A report with nothing at or above the threshold is titled passed."""
    assert "passed" in _title(render_markdown(_report(_finding(1, "minor"))))


def test_tripped_title_counts_blocking_findings() -> None:
    """A tripped gate says so in the title, with how many findings block."""
    text = render_markdown(
        _report(_finding(1, "critical"), _finding(2, "medium")).gated(fail_on="medium")
    )
    assert "gate tripped" in _title(text)
    assert "2 findings" in _title(text)


def test_never_title_is_not_gated() -> None:
    """fail-on never is titled as not gated, never as passed."""
    title = _title(render_markdown(_report(_finding(1, "critical")).gated(fail_on="never")))
    assert "not gated" in title
    assert "passed" not in title


def test_incomplete_title_and_reason() -> None:
    """A timed-out run is titled incomplete and says why."""
    text = render_markdown(_report(_finding(1, "critical"), status="timeout"))
    assert "incomplete" in _title(text)
    assert "timed out" in text


def test_quorum_reaches_the_verdict() -> None:
    """The quorum given to the renderer decides incompleteness as exit_code does."""
    assert "incomplete" in _title(render_markdown(_report().gated(quorum=2)))


@pytest.mark.parametrize("fail_on", ["critical", "medium", "minor", "never"])
@pytest.mark.parametrize("status", ["settled", "partial", "timeout"])
def test_title_agrees_with_exit_code(fail_on: FailOn, status: RunStatus) -> None:
    """The verdict in the title and the gate's exit code always tell the same story."""
    report = _report(_finding(1, "medium"), _finding(2, None), status=status)
    title = _title(render_markdown(report.gated(fail_on=fail_on)))
    expected = {0: ("passed", "not gated"), 1: ("gate tripped",), 3: ("incomplete",)}
    words = expected[exit_code(report.gated(fail_on=fail_on))]
    assert any(word in title for word in words)


def test_unknown_fail_on_is_refused() -> None:
    """A misspelt threshold raises instead of rendering a wrong verdict."""
    with pytest.raises(ValueError):
        render_markdown(_report().gated(fail_on="blocker"))


def test_no_findings_line() -> None:
    """A report without findings says so plainly and has no findings section."""
    text = render_markdown(_report())
    assert "No findings." in text
    assert "### Findings" not in text


def test_settled_report_is_not_partial() -> None:
    """A settled report where everyone answered never mentions PARTIAL."""
    assert "PARTIAL" not in render_markdown(_report(_finding(1)))


def test_partial_names_who_stopped_and_failed_and_why() -> None:
    """PARTIAL lists each stopped or failed participant with its stop or failure."""
    stop = Stop(limit="idle", budget_ms=60_000)
    people = _people(
        ParticipantSummary(id="owl", backend="replay", state="stopped", stop=stop, findings=2),
        ParticipantSummary(id="crow", backend="command", state="failed", failure="exec: no lint"),
    )
    text = render_markdown(_report(status="partial", participants=people))
    partial = text[text.index("PARTIAL") :].split("\n\n|")[0]
    assert stop.describe() in partial
    assert "exec: no lint" in partial
    assert "owl" in partial
    assert "crow" in partial
    assert "hawk" not in partial


def test_partial_shortens_a_huge_failure_text() -> None:
    """A failure text of megabytes is cut in the PARTIAL line."""
    people = _people(
        ParticipantSummary(id="crow", backend="command", state="failed", failure="x" * 100_000)
    )
    text = render_markdown(_report(status="partial", participants=people))
    assert len(text) < 5_000


def test_counts_by_severity_and_label() -> None:
    """The summary counts findings per severity and per label."""
    text = render_markdown(
        _report(
            _finding(1, "critical"),
            _finding(2, "critical", label="question"),
            _finding(3, None, label="praise"),
        )
    )
    assert "3 findings" in text
    assert "2 critical" in text
    assert "1 without severity" in text
    assert "1 issue" in text
    assert "1 question" in text
    assert "1 praise" in text


def test_the_headline_counts_open_findings_and_names_the_dismissed_apart() -> None:
    """A dismissed critical beside an open minor: the headline counts the minor only
    (it read "2 findings: 1 critical" under a passed gate); the dismissed one is named
    under "Not gated". All dismissed: "No open findings."."""
    held = {1: Suppression(source="dismissed", reason="intended")}
    both = _report(_finding(1, "critical"), _finding(2, "minor"))
    text = render_markdown(both.model_copy(update={"suppressed": held}))
    assert "**1 finding:** 1 minor" in text and "1 critical" not in text
    assert "**Not gated:** 1 dismissed or baselined." in text
    alone = _report(_finding(1, "critical")).model_copy(update={"suppressed": held})
    assert "No open findings." in render_markdown(alone)


def test_participants_table_rows() -> None:
    """Each participant gets a row with backend/model, state, counts and duration."""
    people = _people(
        ParticipantSummary(
            id="owl",
            role="judge",
            backend="anthropic",
            model="a|b",
            state="answered",
            findings=3,
            duration_ms=14_000,
        )
    )
    text = render_markdown(_report(participants=people))
    row = next(line for line in text.splitlines() if line.startswith("| owl"))
    assert "(judge)" in row
    assert "anthropic / a\\|b" in row
    assert "| 3 |" in row
    assert "14.0 s" in row
    assert row.count("|") - row.count("\\|") == 7


@pytest.mark.parametrize(
    ("severity", "head"),
    [
        ("critical", "**issue (blocking):**"),
        ("minor", "**issue (non-blocking):**"),
        ("medium", "**issue:**"),
        (None, "**issue:**"),
    ],
)
def test_conventional_comment_decoration(severity: Sev, head: str) -> None:
    """Under the default gate (critical): critical is blocking, minor non-blocking,
    medium and none undecorated."""
    assert f"{head} subject 1" in render_markdown(_report(_finding(1, severity)))


def test_blocking_is_said_only_of_findings_that_gate() -> None:
    """A critical finding dismissed, baselined or outside the filter is "non-blocking"; a
    medium or minor one the threshold catches is "blocking"; under ``--fail-on never``
    nothing is. (Raised by too few: tests/unit/test_merge_gate.py, decided on tellings.)"""
    criticals = [_finding(i, "critical") for i in range(1, 5)]
    report = _report(*criticals, _finding(6, "medium"), _finding(7, "minor")).model_copy(
        update={
            "suppressed": {
                2: Suppression(source="dismissed", reason="validated upstream"),
                3: Suppression(source="baseline"),
            },
            "filtered": {4: "context"},
        }
    )
    text = render_markdown(report.gated(fail_on="minor"))
    assert "**issue (blocking):** subject 1\n" in text
    for ident in (2, 3, 4):
        assert f"**issue (non-blocking):** subject {ident}" in text, ident
        assert f"**issue (blocking):** subject {ident}" not in text, ident
    assert "**issue (blocking):** subject 6\n" in text
    assert "**issue (blocking):** subject 7\n" in text
    never = render_markdown(report.gated(fail_on="never"))
    assert "(blocking)" not in never
    assert "**issue (non-blocking):** subject 1\n" in never
    assert "**issue:** subject 6\n" in never


@pytest.mark.parametrize(
    ("anchor", "shown"),
    [
        (LineAnchor(path="src/a.py", line=7), "`src/a.py:7`"),
        (LineAnchor(path="src/a.py", line=18, start_line=12), "`src/a.py:12-18`"),
        (LineAnchor(path="old.py", line=3, side="old"), "`old.py:3` (old side)"),
        (FileAnchor(path="README.md"), "`README.md`"),
        (ChangeAnchor(), "whole change"),
    ],
)
def test_locations(anchor: Anchor, shown: str) -> None:
    """Each anchor kind is shown as path:line, path:start-line, file or whole change."""
    assert shown in render_markdown(_report(_finding(1, anchor=anchor)))


def test_backtick_in_path_stays_one_code_span() -> None:
    """A path holding a backtick is fenced with a longer run of backticks."""
    text = render_markdown(_report(_finding(1, anchor=FileAnchor(path="a`b.py"))))
    assert "``a`b.py``" in text


def test_agreement_is_shown() -> None:
    """raised_by with several ids says who raised it and that they agree."""
    text = render_markdown(_report(_finding(1, raised_by=("hawk", "owl"))))
    assert "hawk, owl" in text
    assert "2 reviewers agree" in text


def test_single_origin_is_shown() -> None:
    """Without raised_by, the origin participant is named."""
    origin = Origin(kind="reviewer", run_id="r1", participant="kite")
    assert "raised by kite" in render_markdown(_report(_finding(1, origin=origin)))


def test_id_severity_and_confidence_are_shown() -> None:
    """The facts line shows the id, the severity and the confidence."""
    text = render_markdown(_report(_finding(42, "medium", confidence=0.75)))
    assert "id 42" in text
    assert "severity medium" in text
    assert "confidence 0.75" in text


def test_discussion_is_quoted_with_code_kept() -> None:
    """The discussion is a blockquote; raw HTML is neutralized outside code only."""
    discussion = "Use parameters.\n\n```py\nx = '<details>'\n```\n<details> open"
    text = render_markdown(_report(_finding(1, discussion=discussion)))
    assert "> Use parameters." in text
    assert "> x = '<details>'" in text
    assert "> &lt;details> open" in text
    assert "\n<details> open" not in text


def test_subject_html_is_neutralized() -> None:
    """A subject cannot open an HTML element in the page."""
    text = render_markdown(_report(_finding(1, subject="leaks <script> and `Vec<u8>`")))
    assert "&lt;script>" in text
    assert "`Vec<u8>`" in text


def test_blocking_findings_come_first_in_filing_order() -> None:
    """Findings are ordered by severity, filing order kept within a severity."""
    text = render_markdown(
        _report(
            _finding(1, "minor"),
            _finding(2, "critical"),
            _finding(3, None),
            _finding(4, "critical"),
            _finding(5, "medium"),
        )
    )
    order = [text.index(f"subject {i}") for i in (2, 4, 5, 1, 3)]
    assert order == sorted(order)


def test_notes_are_listed() -> None:
    """Notes appear as a list under their own heading."""
    text = render_markdown(_report(notes=("paths excluded: vendor/",)))
    assert "### Notes" in text
    assert "- paths excluded: vendor/" in text


def test_warnings_grouped_in_collapsed_block() -> None:
    """Warnings sit in one <details> block, grouped per participant, the rest last."""
    people = _people(ParticipantSummary(id="owl", backend="replay", state="answered"))
    warnings = (
        Warning(code="no-json", at="answer", message="unattributed"),
        Warning(code="no-subject", at="owl:findings[0]", message="owl entry"),
        Warning(code="stopped", at="hawk", message="hawk stopped"),
    )
    text = render_markdown(_report(participants=people, warnings=warnings))
    details = text[text.index("<details>") : text.index("</details>")]
    assert "3 warnings" in details
    positions = [details.index(s) for s in ("**hawk**", "**owl**", f"**{RUN_WARNINGS}**")]
    assert positions == sorted(positions)
    assert details.index("owl entry") > details.index("**owl**")


def test_no_warnings_no_details_block() -> None:
    """A report without warnings has no collapsed block."""
    assert "<details>" not in render_markdown(_report())


def test_group_warnings_by_owner() -> None:
    """Exact ids and 'id:' prefixes go to that participant; others to the run."""
    warnings = [
        Warning(code="failed", at="a:b", message="m"),
        Warning(code="no-json", at="a:b:findings[1]", message="m"),
        Warning(code="no-json", at="a", message="m"),
        Warning(code="no-json", at="findings[1]", message="m"),
    ]
    groups = group_warnings(warnings, ["a", "a:b"])
    assert {k: len(v) for k, v in groups.items()} == {"a": 1, "a:b": 2, RUN_WARNINGS: 1}


def test_header_says_how_much_was_reviewed() -> None:
    """The line under the title states the change's size as a pull request does."""
    report = _report(_finding(1)).model_copy(
        update={"reviewed": ChangeSize(files=12, added=340, removed=25)}
    )
    where = render_markdown(report).splitlines()[2]
    assert "12 files, +340/−25 · run `r1`" in where
    one = report.model_copy(update={"reviewed": ChangeSize(files=1, added=3, removed=0)})
    assert "1 file, +3/−0 · run" in render_markdown(one)


def test_a_report_without_a_size_has_none_in_its_header() -> None:
    """A report JSON written before ``reviewed`` existed (no such key) is readable, and
    its header states no size."""
    data = json.loads(render_json(_report(_finding(1))))
    assert "reviewed" not in data  # as a report of an earlier version was written
    old = read_json(json.dumps(data))
    assert old.reviewed is None
    assert " file" not in render_markdown(old).splitlines()[2]


def test_ends_with_one_newline() -> None:
    """The text ends with exactly one newline, ready for a file or a comment."""
    text = render_markdown(_report(_finding(1)))
    assert text.endswith("\n")
    assert not text.endswith("\n\n")


@pytest.mark.timeout(60)
def test_thirty_thousand_findings_render_quickly() -> None:
    """30,000 findings render within the test's timeout (linear time; no wall-clock
    assertion: a busy machine must not turn it red)."""
    findings = tuple(
        _finding(
            i,
            ("critical", "medium", "minor", None)[i % 4],
            anchor=LineAnchor(path=f"src/m{i % 97}.py", line=i % 500 + 1),
            discussion=f"line one `code {i}`\nline two <b>",
        )
        for i in range(1, 30_001)
    )
    warnings = tuple(
        Warning(code="no-subject", at=f"hawk:findings[{i}]", message="x") for i in range(30_000)
    )
    report = _report(*findings, warnings=warnings)
    text = render_markdown(report)
    assert "30000 findings" in text
    assert "id 30000" in text


def test_every_pending_question_is_shown_with_its_answering_command() -> None:
    """A waiting run's Markdown (and so the forges' summary comment) shows a reviewer's
    question and a policy's confirmation alike, each with the exact command that answers
    it and what it takes; the asker is named, a choice's first options listed."""
    from council.asks.ask import Ask
    from council.asks.component import Component
    from council.asks.pending import PendingAsk

    options = {"options": [f"p{n}" for n in range(7)]}
    asked = PendingAsk(
        id="ask_1111",
        run="r1",
        participant="hawk",
        ask=Ask(
            question="Which profile?", component=Component(component_id="choice", props=options)
        ),
    )
    confirm = PendingAsk(
        id="ask_2222",
        run="r1",
        finding=1,
        ask=Ask(question="Is finding 1 real?", component=Component(component_id="confirm-finding")),
    )
    plain = PendingAsk(id="ask_3333", run="r1", participant="owl", ask=Ask(question="Why?"))
    report = _report(status="waiting").model_copy(update={"asks": (asked, confirm, plain)})
    text = render_markdown(report.gated(fail_on="critical"))
    assert "- `ask_1111` (asked by `hawk`): Which profile?" in text
    command = '`council answer ask_1111 OPTION --reason "…"`'
    assert f"{command} (one of `p0`, `p1`, `p2`, `p3`, `p4` and 2 more)" in text
    assert '`council answer ask_2222 yes|no --reason "…"`' in text
    assert '`council answer ask_3333 TEXT --reason "…"`' in text
    assert "`council resume r1`" in text
