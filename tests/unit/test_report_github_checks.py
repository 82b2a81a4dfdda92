"""The GitHub check run: annotations where a line of the head can hold them, the rest in
the text; the conclusion follows the gate."""

from __future__ import annotations

import json
from typing import Any

from council.model.findings import FileAnchor, LineAnchor
from council.model.report import Suppression
from council.rendering.github_checks import MAX_ANNOTATIONS, render_github_checks_with_cuts
from tests.forge_cases import (
    BINARY,
    CAFE,
    RENAMED_NEW,
    finding,
    many_findings,
    messy_change,
    messy_report,
    report,
)

REQUIRED = {"path", "start_line", "end_line", "annotation_level", "message"}


def _run(rep: Any, **options: Any) -> tuple[dict[str, Any], list[str]]:
    text, cuts = render_github_checks_with_cuts(rep.gated(fail_on="critical"), **options)
    run: dict[str, Any] = json.loads(text)
    assert run["name"] == "council" and run["status"] == "completed"
    output = run["output"]
    assert isinstance(output["title"], str) and isinstance(output["summary"], str)
    for note in output["annotations"]:
        assert set(note) >= REQUIRED
        assert 1 <= note["start_line"] <= note["end_line"]
        assert note["annotation_level"] in ("notice", "warning", "failure")
        assert len(note["title"]) <= 255
    return run, cuts


def _ids(run: dict[str, Any]) -> list[int]:
    return [
        int(n["message"].rsplit("council finding ", 1)[1]) for n in run["output"]["annotations"]
    ]


def test_messy_report_annotates_lines_of_the_head() -> None:
    """New-side lines and ranges, whole files (on line 1), lines not in the diff: yes.
    Old-side lines, the deleted file's absent new side, the change as a whole: no."""
    run, cuts = _run(messy_report(), change=messy_change())
    assert cuts == []
    assert _ids(run) == [1, 2, 6, 7, 9, 10, 11]
    by_id = dict(zip(_ids(run), run["output"]["annotations"], strict=True))
    assert (by_id[2]["path"], by_id[2]["start_line"], by_id[2]["end_line"]) == (CAFE, 1, 3)
    assert (by_id[6]["path"], by_id[6]["start_line"]) == (BINARY, 1)
    assert "whole file" in by_id[6]["message"]
    assert by_id[10]["path"] == RENAMED_NEW
    assert by_id[1]["annotation_level"] == "failure"
    assert run["head_sha"] == "0123abcd" * 5 and run["external_id"] == "r1"
    assert "subject 3" in run["output"]["text"]  # not annotated, never away


def test_conclusion_follows_the_gate() -> None:
    """Passed: success; tripped or incomplete: failure; cancelled and timed-out runs say so."""
    critical = finding(1, LineAnchor(path="a.py", line=1), severity="critical")
    assert _run(report())[0]["conclusion"] == "success"
    assert _run(report(critical))[0]["conclusion"] == "failure"
    assert _run(report(status="cancelled"))[0]["conclusion"] == "cancelled"
    assert _run(report(status="timeout"))[0]["conclusion"] == "timed_out"
    assert _run(report(participants=()))[0]["conclusion"] == "failure"


def test_suppressed_findings_are_not_annotated() -> None:
    """A dismissed finding is listed in the text, never annotated."""
    rep = report(
        finding(1, LineAnchor(path="a.py", line=1), severity="critical"),
        finding(2, FileAnchor(path="b.py")),
        suppressed={1: Suppression(source="dismissed", reason="ok")},
    )
    run, _ = _run(rep)
    assert _ids(run) == [2] and run["conclusion"] == "success"


def test_at_most_max_annotations_most_severe_first() -> None:
    """Thousands of findings: MAX_ANNOTATIONS annotations, the critical ones kept, the
    cut said; the text fits GitHub's limit."""
    run, cuts = _run(report(*many_findings(3_000)))
    annotations = run["output"]["annotations"]
    assert len(annotations) == MAX_ANNOTATIONS
    assert {n["annotation_level"] for n in annotations} == {"failure"}
    assert cuts and "annotations" in cuts[0]
    assert len(run["output"]["text"]) <= 65_535


def test_mentions_in_the_summary_and_text_are_neutralized() -> None:
    """A subject naming @org/team: the text does not mention it."""
    run, _ = _run(report(finding(1, subject="ping @octo-org/security")))
    assert "@octo-org" not in run["output"]["text"]
    assert "@\u200docto-org" in run["output"]["text"]
