"""The committed baseline: reading, writing and suppressing (council.session.baseline)."""

from __future__ import annotations

import json

import pytest

from council.model.findings import ChangeAnchor, FileAnchor, LineAnchor
from council.model.fingerprint import fingerprint
from council.model.report import Suppression
from council.round.gate import gate_tripped
from council.session.baseline import (
    Baseline,
    BaselineEntry,
    UnreadableBaseline,
    read_baseline,
    write_baseline,
)
from council.session.decisions import suppress
from tests.forge_cases import CAFE, finding, messy_findings, report

PRINT = "a" * 64
CODE = "c0de" * 8 + ":1"
"""A code hash (council.model.occurrence): the same code, wherever it sits."""


def test_round_trip() -> None:
    """A written baseline reads back with one entry per finding."""
    findings = messy_findings()
    baseline = read_baseline(write_baseline(findings, "legacy"))
    assert {e.fingerprint for e in baseline.entries} == {fingerprint(f) for f in findings}
    assert {e.reason for e in baseline.entries} == {"legacy"}


def test_written_text_is_sorted_and_deterministic() -> None:
    """Entries are sorted by path then fingerprint, whatever order the findings came in."""
    findings = messy_findings()
    text = write_baseline(findings, "legacy")
    assert text == write_baseline(tuple(reversed(findings)), "legacy")
    entries = json.loads(text)["entries"]
    keys = [(e["path"], e["fingerprint"]) for e in entries]
    assert keys == sorted(keys)
    assert json.loads(text)["version"] == 1
    assert text.endswith("}\n")


def test_written_entry_fields() -> None:
    """An entry keeps the subject and path (empty for the whole change) for people."""
    entries = read_baseline(
        write_baseline(
            [
                finding(1, LineAnchor(path=CAFE, line=3), subject="leak"),
                finding(2, ChangeAnchor(), subject="café ☕"),
            ],
            "r",
        )
    ).entries
    assert {(e.path, e.subject) for e in entries} == {(CAFE, "leak"), ("", "café ☕")}


def test_duplicates_are_written_once() -> None:
    """Two findings with one fingerprint make one entry."""
    twins = [finding(i, FileAnchor(path="a.py"), subject="same") for i in (1, 2)]
    assert len(read_baseline(write_baseline(twins, "r")).entries) == 1


def test_existing_entries_keep_their_reason() -> None:
    """Accepting a finding again does not rewrite why it was first accepted."""
    leak = finding(1, FileAnchor(path="a.py"), subject="leak")
    first = read_baseline(write_baseline([leak], "first reason"))
    again = read_baseline(write_baseline([leak, finding(2)], "second", existing=first))
    reasons = again.reasons()
    assert reasons[fingerprint(leak)] == "first reason"
    assert reasons[fingerprint(finding(2))] == "second"


def test_empty_text_is_an_empty_baseline() -> None:
    """A blank file reads as no entries."""
    assert read_baseline("  \n") == Baseline()


def test_minimal_file_reads() -> None:
    """Only fingerprint is required in an entry; the other keys default to empty."""
    text = json.dumps({"version": 1, "entries": [{"fingerprint": PRINT}]})
    assert read_baseline(text).entries == (BaselineEntry(fingerprint=PRINT),)


def test_repeated_fingerprint_first_reason_wins() -> None:
    """A fingerprint listed twice (merged branches) is accepted; the first reason wins."""
    text = json.dumps(
        {
            "version": 1,
            "entries": [
                {"fingerprint": PRINT, "reason": "one"},
                {"fingerprint": PRINT, "reason": "two"},
            ],
        }
    )
    assert read_baseline(text).reasons() == {PRINT: "one"}


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("{not json", "not JSON"),
        ("[]", "JSON object"),
        ('{"entries": []}', "version"),
        ('{"version": 2, "entries": []}', "version is 2"),
        ('{"version": true, "entries": []}', "version is True"),
        ('{"version": 1, "entries": {}}', "entries must be a list"),
        ('{"version": 1, "entries": [], "extra": 1}', "'extra'"),
        ('{"version": 1, "entries": [3]}', "entries[0] must be an object"),
        ('{"version": 1, "entries": [{}]}', "entries[0] has no fingerprint"),
        ('{"version": 1, "entries": [{"fingerprint": 5}]}', "entries[0].fingerprint must"),
        ('{"version": 1, "entries": [{"fingerprint": "abc"}]}', "entries[0].fingerprint 'abc'"),
        (
            json.dumps({"version": 1, "entries": [{"fingerprint": PRINT, "reason": None}]}),
            "entries[0].reason must be a string, not null",
        ),
        (
            json.dumps({"version": 1, "entries": [{"fingerprint": PRINT, "line": 3}]}),
            "entries[0] has unknown key 'line'",
        ),
    ],
)
def test_bad_files_are_refused_naming_the_fault(text: str, named: str) -> None:
    """Each malformed file raises a ValueError that names what is wrong."""
    with pytest.raises(UnreadableBaseline) as caught:
        read_baseline(text)
    assert isinstance(caught.value, ValueError)
    assert named in str(caught.value)


def test_suppress_from_baseline() -> None:
    """A finding whose fingerprint is in the baseline is suppressed with its reason."""
    leak = finding(1, FileAnchor(path="a.py"), subject="leak", severity="critical")
    baseline = read_baseline(write_baseline([leak], "legacy"))
    done = suppress(report(leak), baseline, {})
    assert done.suppressed == {1: Suppression(source="baseline", reason="legacy")}
    assert done.findings == (leak,)
    assert gate_tripped(done.gated(fail_on="critical")) == []


def test_dismissals_win_over_the_baseline() -> None:
    """A session dismissal replaces the baseline's suppression of the same finding."""
    leak = finding(1, FileAnchor(path="a.py"), subject="leak")
    baseline = read_baseline(write_baseline([leak], "legacy"))
    done = suppress(report(leak), baseline, {fingerprint(leak): "false alarm"})
    assert done.suppressed == {1: Suppression(source="dismissed", reason="false alarm")}


def test_suppress_matches_moved_findings() -> None:
    """A baselined finding whose code moved lines is still suppressed."""
    before = finding(1, LineAnchor(path="a.py", line=3, code=CODE), subject="leak")
    after = finding(8, LineAnchor(path="a.py", line=70, code=CODE), subject="Leak.")
    baseline = read_baseline(write_baseline([before], "legacy"))
    assert 8 in suppress(report(after), baseline, {}).suppressed


def test_suppress_keeps_others_and_skips_unkeyed() -> None:
    """Earlier suppressions stay; findings without an id are never suppressed."""
    keep = {5: Suppression(source="dismissed", reason="earlier")}
    stray = finding(None, FileAnchor(path="a.py"), subject="leak")
    baseline = read_baseline(write_baseline([stray], "legacy"))
    done = suppress(report(stray, suppressed=keep), baseline, {})
    assert done.suppressed == keep
