"""The GitLab Code Quality artifact: required fields, unique fingerprints, no suppressed."""

from __future__ import annotations

import json
import re
from typing import Any

from council.model.findings import FileAnchor, LineAnchor
from council.model.fingerprint import fingerprint
from council.model.report import Suppression
from council.rendering.gitlab import CHANGE_PATH, render_gitlab_codequality
from tests.forge_cases import (
    BINARY,
    CAFE,
    RENAMED_OLD,
    finding,
    many_findings,
    messy_findings,
    messy_report,
    report,
)

SEVERITIES = {"info", "minor", "major", "critical", "blocker"}


def _entries(text: str) -> list[dict[str, Any]]:
    """The artifact, checked against GitLab's documented required fields and types."""
    entries: list[dict[str, Any]] = json.loads(text)
    assert isinstance(entries, list)
    for entry in entries:
        assert isinstance(entry["description"], str) and entry["description"]
        assert isinstance(entry["check_name"], str) and entry["check_name"]
        assert isinstance(entry["fingerprint"], str) and entry["fingerprint"]
        assert entry["severity"] in SEVERITIES
        location = entry["location"]
        assert isinstance(location["path"], str) and location["path"]
        assert isinstance(location["lines"]["begin"], int) and location["lines"]["begin"] >= 1
    assert len({e["fingerprint"] for e in entries}) == len(entries)
    return entries


def _by_subject(entries: list[dict[str, Any]], ident: int) -> dict[str, Any]:
    pattern = re.compile(rf": subject {ident}( \[|$)")
    [entry] = [e for e in entries if pattern.search(e["description"])]
    return entry


def test_zero_findings_is_an_empty_array() -> None:
    """No findings: ``[]``."""
    assert render_gitlab_codequality(report()) == "[]\n"


def test_messy_report_is_complete_and_valid() -> None:
    """Every finding of the messy report is an entry with every required field."""
    entries = _entries(render_gitlab_codequality(messy_report()))
    assert len(entries) == len(messy_findings())


def test_fields_of_a_line_finding() -> None:
    """Description, check name, content fingerprint, severity, raw path and first line."""
    entries = _entries(render_gitlab_codequality(messy_report()))
    entry = _by_subject(entries, 2)
    assert entry["description"] == "issue: subject 2"
    assert entry["check_name"] == "council/issue"
    assert entry["fingerprint"] == fingerprint(messy_findings()[1])
    assert entry["severity"] == "major"
    assert entry["location"] == {"path": CAFE, "lines": {"begin": 1}}


def test_severity_mapping() -> None:
    """critical→critical, medium→major, minor→minor, none→info."""
    entries = _entries(render_gitlab_codequality(messy_report()))
    got = [_by_subject(entries, i)["severity"] for i in (1, 2, 3, 4)]
    assert got == ["critical", "major", "minor", "info"]


def test_change_anchor_is_placed_at_the_root_and_says_so() -> None:
    """A finding about the whole change is at path '.' line 1, described as such."""
    entry = _by_subject(_entries(render_gitlab_codequality(messy_report())), 8)
    assert entry["location"] == {"path": CHANGE_PATH, "lines": {"begin": 1}}
    assert "the change as a whole" in entry["description"]
    assert entry["content"]["body"] == "```python\nunclosed fence"


def test_file_and_old_side_anchors() -> None:
    """A file anchor is at line 1; an old-side anchor keeps its old path and says so."""
    entries = _entries(render_gitlab_codequality(messy_report()))
    binary = _by_subject(entries, 6)
    assert binary["location"] == {"path": BINARY, "lines": {"begin": 1}}
    assert "the whole file" in binary["description"]
    renamed = _by_subject(entries, 3)
    assert renamed["location"]["path"] == RENAMED_OLD
    assert "old side, line 4" in renamed["description"]


def test_off_diff_findings_stay_with_their_reason() -> None:
    """A finding not on a changed line is still an entry, and says why."""
    entry = _by_subject(_entries(render_gitlab_codequality(messy_report())), 5)
    assert "not on a changed line: the file is not in the diff" in entry["description"]


def test_suppressed_findings_are_left_out() -> None:
    """Dismissed and baselined findings are not in the artifact."""
    suppressed = {
        1: Suppression(source="dismissed", reason="no"),
        2: Suppression(source="baseline"),
    }
    entries = _entries(render_gitlab_codequality(messy_report(suppressed=suppressed)))
    assert len(entries) == len(messy_findings()) - 2
    assert not [e for e in entries if e["description"].endswith((": subject 1", ": subject 2"))]


def test_repeated_claims_get_distinct_fingerprints() -> None:
    """Two findings of one fingerprint (one occurrence told twice) get two values, stable
    across runs; the claim at two places has two fingerprints of its own."""
    code = "c0de" * 8 + ":1"
    twins = [
        finding(i, LineAnchor(path="a.py", line=i, code=code), subject="same claim")
        for i in (1, 2)
    ]
    entries = _entries(render_gitlab_codequality(report(*twins)))
    base = fingerprint(twins[0])
    assert [e["fingerprint"] for e in entries] == [base, f"{base}:2"]
    places = [finding(i, LineAnchor(path="a.py", line=i), subject="same claim") for i in (1, 2)]
    entries = _entries(render_gitlab_codequality(report(*places)))
    assert [e["fingerprint"] for e in entries] == [fingerprint(f) for f in places]
    assert len({e["fingerprint"] for e in entries}) == 2


def test_moved_finding_keeps_its_fingerprint() -> None:
    """The same claim on the same code, moved to another line, keeps its fingerprint."""
    code = "c0de" * 8 + ":1"
    before = finding(1, LineAnchor(path="a.py", line=3, code=code), subject="leak")
    after = finding(7, LineAnchor(path="a.py", line=90, code=code), subject="leak")
    prints = [
        _entries(render_gitlab_codequality(report(f)))[0]["fingerprint"] for f in (before, after)
    ]
    assert prints[0] == prints[1]


def test_long_subject_is_cut_to_one_line() -> None:
    """A multi-line, very long subject becomes one bounded line."""
    long = finding(1, FileAnchor(path="ü ß.py"), subject="line one\nline two " + "x" * 5_000)
    [entry] = _entries(render_gitlab_codequality(report(long)))
    assert "\n" not in entry["description"]
    assert len(entry["description"]) <= 1_000
    assert entry["location"]["path"] == "ü ß.py"


def test_thirty_thousand_findings() -> None:
    """30,000 findings give 30,000 valid entries with unique fingerprints."""
    text = render_gitlab_codequality(report(*many_findings(30_000)))
    assert len(_entries(text)) == 30_000
