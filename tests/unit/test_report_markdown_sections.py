"""The Markdown report's landing sections: not on a changed line, seen, dismissed, outdated."""

from __future__ import annotations

import re

from council.model.findings import LineAnchor, Member
from council.model.report import Suppression
from council.rendering import render_markdown
from tests.forge_cases import CAFE, finding, messy_findings, messy_report, report


def _section(text: str, heading: str) -> str:
    """The text of one ``### heading`` section, up to the next heading."""
    start = text.index(f"### {heading}\n")
    following = text.find("\n### ", start + 1)
    return text[start : following if following != -1 else len(text)]


def _shown(text: str, ident: int) -> int:
    """How many times finding ``ident`` is named by id."""
    return len(re.findall(rf"\bid {ident}\b", text))


def test_off_diff_findings_have_their_own_section() -> None:
    """Off-diff findings are listed under 'Not on a changed line' with the reason."""
    text = render_markdown(messy_report())
    section = _section(text, "Not on a changed line")
    assert "not on a changed line: the file is not in the diff on that side · id 5" in section
    assert "not on a changed line: the line is not in the diff · id 7" in section
    assert "id 9" in section
    assert "id 1 " not in section


def test_every_finding_is_shown_exactly_once() -> None:
    """Each finding appears once, whichever section it belongs to."""
    suppressed = {2: Suppression(source="baseline", reason="legacy")}
    text = render_markdown(messy_report(suppressed=suppressed, seen=(3,)))
    assert all(_shown(text, f.id or 0) == 1 for f in messy_findings())


def test_seen_findings_are_marked() -> None:
    """A finding an earlier round reported is marked after its subject."""
    text = render_markdown(messy_report(seen=(1, 5)))
    assert "subject 1 (seen in an earlier round)" in text
    assert "subject 5 (seen in an earlier round)" in _section(text, "Not on a changed line")
    assert "subject 2 (seen" not in text


def test_suppressed_findings_are_listed_with_reasons() -> None:
    """Dismissed and baselined findings are listed apart, with why, and not gated."""
    suppressed = {
        1: Suppression(source="dismissed", reason="false alarm <b>"),
        5: Suppression(source="baseline"),
    }
    text = render_markdown(messy_report(suppressed=suppressed))
    section = _section(text, "Dismissed and baselined")
    assert "subject 1" in section and "dismissed: false alarm &lt;b>" in section
    assert "subject 5" in section and "baselined: no reason given" in section
    assert "subject 1\n" not in _section(text, "Findings")
    assert "subject 5\n" not in _section(text, "Not on a changed line")
    assert "**Not gated:** 2 dismissed or baselined." in text


def test_suppressed_critical_does_not_trip_the_title() -> None:
    """The verdict ignores a suppressed critical finding, as the gate does."""
    leak = finding(1, LineAnchor(path=CAFE, line=2), severity="critical")
    quiet = report(leak, suppressed={1: Suppression(source="dismissed", reason="ok")})
    assert render_markdown(quiet).startswith("## ✅ Council review: passed")


def test_outdated_findings_are_listed() -> None:
    """Findings of earlier rounds whose code changed are listed under 'Outdated'."""
    old = finding(40, LineAnchor(path=CAFE, line=9), subject="stale claim")
    text = render_markdown(report(outdated=(old,)))
    section = _section(text, "Outdated")
    assert "**issue:** stale claim" in section and "id 40" in section


def test_posted_findings_are_counted_not_repeated() -> None:
    """Findings posted as line comments are counted in one sentence, not shown."""
    text = render_markdown(messy_report(), posted={1, 2})
    section = _section(text, "Findings")
    assert "2 findings are posted as line comments on the diff" in section
    assert "subject 1\n" not in section and "subject 2\n" not in section
    assert "subject 3" in section


def test_sections_are_absent_when_empty() -> None:
    """A report with none of these states shows none of their headings."""
    text = render_markdown(report(finding(1)))
    for heading in ("Not on a changed line", "Dismissed and baselined", "Outdated"):
        assert f"### {heading}" not in text


def test_a_suppressed_consolidated_finding_lists_every_telling() -> None:
    """A dismissed finding that several reviewers told shows each other telling under it,
    so what the suppression covers is on the page."""
    lead = finding(1, LineAnchor(path="app.py", line=2), subject="name count is unclear")
    other = Member(
        participant="m2",
        anchor=LineAnchor(path="app.py", line=4),
        label="issue",
        subject="run passes count into os.system",
        severity="critical",
    )
    first = Member(participant="m1", anchor=lead.anchor, label="issue", subject=lead.subject)
    merged = lead.model_copy(update={"members": (first, other), "raised_by": ("m1", "m2")})
    text = render_markdown(
        report(merged).model_copy(update={"suppressed": {1: Suppression(source="dismissed")}})
    )
    section = _section(text, "Dismissed and baselined")
    assert "also told by m2 (critical): run passes count into os.system" in section
    assert "also told by m1" not in section
