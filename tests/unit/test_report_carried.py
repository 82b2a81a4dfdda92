"""Findings carried from earlier rounds (``--since-last``) in every report format."""

from __future__ import annotations

import json

from council.model.findings import LineAnchor
from council.model.report import CouncilReport, Suppression
from council.rendering import read_json, render_json, render_markdown
from council.rendering.github_review import render_github_review
from council.rendering.gitlab import render_gitlab_codequality
from council.rendering.sarif import render_sarif
from tests.forge_cases import finding, report

NEW = finding(5, LineAnchor(path="app.py", line=3), severity="minor", subject="new today")
OLD = finding(2, LineAnchor(path="app.py", line=9), severity="critical", subject="still leaks")
GONE = finding(1, LineAnchor(path="app.py", line=1), severity="critical", subject="dismissed")


def carrying() -> CouncilReport:
    """A round that raised NEW and carries OLD and GONE (GONE dismissed meanwhile)."""
    return report(
        NEW,
        carried=(OLD, GONE),
        suppressed={1: Suppression(source="dismissed", reason="guarded")},
    )


def test_markdown_lists_carried_findings_and_gates_on_them() -> None:
    """The page says they are still open, shows them in their own section, and trips; the
    count is of those listed (GONE, dismissed meanwhile, is listed as dismissed instead)."""
    text = render_markdown(carrying().gated(fail_on="critical"))
    assert text.startswith("## ❌ Council review: gate tripped (1 finding at or above critical)")
    assert "**Still open from earlier rounds:** 1 finding." in text
    section = text.split("### Still open from earlier rounds", 1)[1].split("###", 1)[0]
    assert "still leaks" in section and "`app.py:9`" in section and "dismissed" not in section
    assert "guarded" in text.split("### Dismissed", 1)[1]


def test_markdown_without_new_findings_does_not_say_no_findings() -> None:
    """A round with nothing new but carried findings says so instead of "No findings."."""
    text = render_markdown(report(carried=(OLD,)).gated(fail_on="critical"))
    assert "No findings." not in text
    assert "No new findings. **Still open from earlier rounds:** 1 finding." in text


def test_json_keeps_carried_findings() -> None:
    """The JSON report carries them and reads back equal."""
    text = render_json(carrying())
    assert [f["id"] for f in json.loads(text)["carried"]] == [2, 1]
    assert read_json(text) == carrying()


def test_sarif_writes_carried_findings_as_results() -> None:
    """SARIF results: this round's, then the carried ones, marked carried."""
    hawk, owl = json.loads(render_sarif(carrying()))["runs"]
    assert owl["results"] == []
    results = {r["properties"]["councilId"]: r for r in hawk["results"]}
    assert list(results) == [5, 2, 1]
    assert results[2]["properties"]["carried"] is True and "carried" not in results[5]["properties"]
    assert results[2]["locations"][0]["physicalLocation"]["region"]["startLine"] == 9
    assert results[1]["suppressions"][0]["justification"] == "guarded"


def test_gitlab_writes_carried_findings_but_not_suppressed_ones() -> None:
    """Code Quality entries: this round's and the carried, less the dismissed."""
    entries = json.loads(render_gitlab_codequality(carrying()))
    assert [e["location"]["lines"]["begin"] for e in entries] == [3, 9]


def test_github_review_does_not_post_carried_findings_again() -> None:
    """Carried findings are not line comments, but request changes and appear in the body."""
    review = json.loads(render_github_review(carrying().gated(fail_on="critical")))
    assert [c["line"] for c in review["comments"]] == [3]
    assert review["event"] == "REQUEST_CHANGES"
    assert "still leaks" in review["body"]
