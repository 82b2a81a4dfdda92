"""The SARIF 2.1.0 report: schema-valid, one run per participant, cut to GitHub's limits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from council.model.backend_result import Stop
from council.model.findings import ChangeAnchor, FileAnchor, LineAnchor, severity_rank
from council.model.fingerprint import fingerprint
from council.model.report import ParticipantSummary, Suppression
from council.rendering.sarif import (
    FINGERPRINT_KEY,
    GITHUB_LIMITS,
    UNATTRIBUTED_RUN,
    SarifLimits,
    render_sarif,
    render_sarif_with_cuts,
)
from tests.forge_cases import (
    BINARY,
    CAFE,
    DELETED,
    HAND,
    HAWK,
    OWL,
    RENAMED_OLD,
    finding,
    many_findings,
    messy_findings,
    messy_report,
    people,
    report,
)

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "sarif-schema-2.1.0.json"
SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
VALIDATOR = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)


def _valid(text: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(text)
    VALIDATOR.validate(document)
    return document


def _results(document: dict[str, Any]) -> dict[int, tuple[str, dict[str, Any]]]:
    """Result by council id → (the run's tool name, the result)."""
    out: dict[int, tuple[str, dict[str, Any]]] = {}
    for run in document["runs"]:
        for result in run["results"]:
            out[result["properties"]["councilId"]] = (run["tool"]["driver"]["name"], result)
    return out


def test_validator_follows_the_schema_draft() -> None:
    """The schema declares draft-04, and the test validates with that draft."""
    assert SCHEMA["$schema"] == "http://json-schema.org/draft-04/schema#"
    assert isinstance(VALIDATOR, jsonschema.Draft4Validator)


def test_empty_report_is_valid() -> None:
    """A report with no participants and no findings is a valid document with no runs."""
    document = _valid(render_sarif(report(participants=())))
    assert document["version"] == "2.1.0"
    assert document["runs"] == []


def test_zero_findings_still_lists_every_participant() -> None:
    """Each participant gets a run even with nothing to report."""
    document = _valid(render_sarif(report()))
    assert [r["tool"]["driver"]["name"] for r in document["runs"]] == ["hawk", "owl"]
    assert all(r["results"] == [] for r in document["runs"])


def test_messy_report_is_valid() -> None:
    """Spaces, unicode, renames, deletions, binaries and off-diff anchors render valid."""
    _valid(render_sarif(messy_report()))


def test_each_finding_sits_in_its_origin_run() -> None:
    """hawk's findings in hawk's run, owl's in owl's, hand-filed ones in a last run."""
    document = _valid(render_sarif(messy_report()))
    names = [r["tool"]["driver"]["name"] for r in document["runs"]]
    assert names == ["hawk", "owl", UNATTRIBUTED_RUN]
    placed = {i: run for i, (run, _) in _results(document).items()}
    assert placed[10] == "owl"
    assert placed[11] == UNATTRIBUTED_RUN
    assert {i for i, run in placed.items() if run == "hawk"} == {1, 2, 3, 4, 5, 6, 7, 8, 9}


def test_raisers_are_listed() -> None:
    """properties.raisedBy lists every raiser, or the origin participant alone."""
    results = _results(_valid(render_sarif(messy_report())))
    assert results[10][1]["properties"]["raisedBy"] == ["owl", "hawk"]
    assert results[1][1]["properties"]["raisedBy"] == ["hawk"]
    assert results[11][1]["properties"]["raisedBy"] == []


def test_levels_follow_severity() -> None:
    """critical→error, medium→warning, minor→note, none→note."""
    results = _results(_valid(render_sarif(messy_report())))
    assert [results[i][1]["level"] for i in (1, 2, 3, 4)] == ["error", "warning", "note", "note"]


def test_message_is_subject_then_discussion() -> None:
    """message.text is the subject, a blank line, then the discussion."""
    results = _results(_valid(render_sarif(messy_report())))
    assert results[1][1]["message"]["text"] == "subject 1\n\nWhy.\n\nMore."
    assert results[2][1]["message"]["text"] == "subject 2"


def test_uri_is_escaped_and_region_follows_the_anchor() -> None:
    """Spaces and accents are percent-encoded; the region spans the anchor's lines."""
    results = _results(_valid(render_sarif(messy_report())))
    physical = results[2][1]["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "src/dir%20with%20space/caf%C3%A9.py"
    assert physical["region"] == {"startLine": 1, "endLine": 3}
    assert results[2][1]["properties"]["path"] == CAFE


def test_old_side_keeps_region_and_says_old() -> None:
    """An old-side anchor keeps its region, under its old path, marked side old."""
    results = _results(_valid(render_sarif(messy_report())))
    renamed = results[3][1]
    assert renamed["properties"]["side"] == "old"
    physical = renamed["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == RENAMED_OLD.replace(" ", "%20")
    deleted = results[4][1]["locations"][0]["physicalLocation"]
    assert deleted["artifactLocation"]["uri"] == DELETED
    assert deleted["region"] == {"startLine": 1, "endLine": 3}
    assert "side" not in results[1][1]["properties"]


def test_change_and_file_anchors() -> None:
    """A change anchor has no location; a file anchor names the file with no region."""
    results = _results(_valid(render_sarif(messy_report())))
    assert "locations" not in results[8][1]
    assert results[8][1]["properties"]["anchor"] == "change"
    physical = results[6][1]["locations"][0]["physicalLocation"]
    assert physical == {"artifactLocation": {"uri": BINARY}}


def test_partial_fingerprints_are_content_fingerprints() -> None:
    """partialFingerprints carries the content fingerprint under its versioned key."""
    results = _results(_valid(render_sarif(messy_report())))
    expected = fingerprint(messy_findings()[0])
    assert results[1][1]["partialFingerprints"] == {FINGERPRINT_KEY: expected}


def test_off_diff_and_seen_findings_still_appear() -> None:
    """Off-diff findings are results with their reason; seen ones are marked."""
    results = _results(_valid(render_sarif(messy_report(seen=(1,)))))
    assert len(results) == len(messy_findings())
    assert results[5][1]["properties"]["offDiff"] == "file-absent"
    assert results[1][1]["properties"]["seen"] is True
    assert results[1][1]["baselineState"] == "unchanged"
    assert results[5][1]["baselineState"] == "new"


def test_suppressed_findings_carry_suppressions() -> None:
    """A suppressed finding is a result with an external, accepted suppression."""
    suppressed = {
        1: Suppression(source="baseline", reason="legacy, see #12"),
        2: Suppression(source="dismissed"),
    }
    results = _results(_valid(render_sarif(messy_report(suppressed=suppressed))))
    [first] = results[1][1]["suppressions"]
    assert first["kind"] == "external"
    assert first["justification"] == "legacy, see #12"
    assert results[2][1]["suppressions"][0]["justification"] == "dismissed"
    assert "suppressions" not in results[3][1]


def test_rules_are_the_labels_used() -> None:
    """Each run's rules are its distinct labels, and ruleIndex points at the right one."""
    document = _valid(render_sarif(messy_report()))
    hawk = document["runs"][0]
    rules = [rule["id"] for rule in hawk["tool"]["driver"]["rules"]]
    assert rules == ["nitpick", "issue", "question", "thought"]
    for result in hawk["results"]:
        assert rules[result["ruleIndex"]] == result["ruleId"]


def test_participant_state_is_reported() -> None:
    """A failed or stopped participant's run says so in its invocation."""
    who = (
        ParticipantSummary(id="hawk", backend="replay", state="failed", failure="HTTP 500"),
        ParticipantSummary(
            id="owl", backend="replay", state="stopped", stop=Stop(limit="idle", budget_ms=5)
        ),
    )
    document = _valid(render_sarif(report(participants=who, status="partial")))
    hawk, owl = (run["invocations"][0] for run in document["runs"])
    assert hawk["executionSuccessful"] is False
    assert "HTTP 500" in hawk["toolExecutionNotifications"][0]["message"]["text"]
    assert owl["toolExecutionNotifications"][0]["level"] == "warning"


def test_output_is_deterministic() -> None:
    """The same report renders to the same text."""
    assert render_sarif(messy_report()) == render_sarif(messy_report())


def test_no_cut_no_message() -> None:
    """Within the limits, nothing is cut and nothing is said."""
    _, messages = render_sarif_with_cuts(messy_report())
    assert messages == []


def test_too_many_results_keeps_the_most_severe() -> None:
    """Over the per-run cap, the most severe findings stay, then the earliest filed."""
    findings = [
        finding(1, severity="minor"),
        finding(2),
        finding(3, severity="critical"),
        finding(4, severity="medium"),
        finding(5, severity="critical"),
    ]
    limits = SarifLimits(results_per_run=3)
    text, messages = render_sarif_with_cuts(report(*findings), limits=limits)
    document = _valid(text)
    hawk = document["runs"][0]
    assert [r["properties"]["councilId"] for r in hawk["results"]] == [3, 4, 5]
    assert hawk["properties"]["cut"]["results"] == 2
    notes = hawk["invocations"][0]["toolExecutionNotifications"]
    assert any("2 of 5 results cut" in n["message"]["text"] for n in notes)
    assert len(messages) == 1
    assert "hawk" in messages[0]


def test_too_many_runs_keeps_the_most_severe_runs() -> None:
    """Over 20 runs, empty runs go first, then those with the least severe findings."""
    ids = [f"p{i:02d}" for i in range(25)]
    severities = ["critical", "medium", "minor", None]
    findings = [
        finding(
            i + 1,
            severity=severities[i % 4],  # type: ignore[arg-type]
            origin=OWL.model_copy(update={"participant": pid}),
        )
        for i, pid in enumerate(ids[:22])
    ]
    text, messages = render_sarif_with_cuts(report(*findings, participants=people(*ids)))
    document = _valid(text)
    kept = [run["tool"]["driver"]["name"] for run in document["runs"]]
    assert len(kept) == GITHUB_LIMITS.runs
    assert kept == sorted(kept)
    assert not {"p22", "p23", "p24", "p15", "p19"} & set(kept)
    assert {"p03", "p07", "p11"} <= set(kept)
    first = document["runs"][0]
    notes = first["invocations"][0]["toolExecutionNotifications"]
    assert any("5 of 25 runs cut" in n["message"]["text"] for n in notes)
    assert len(messages) == 1


def test_too_many_bytes_cuts_to_fit() -> None:
    """Over the size limit, results are cut until the UTF-8 text fits, and it says so."""
    findings = [
        finding(i, severity="critical" if i % 10 == 0 else "minor", discussion="ü" * 300)
        for i in range(1, 201)
    ]
    limits = SarifLimits(file_bytes=40_000)
    text, messages = render_sarif_with_cuts(report(*findings), limits=limits)
    assert len(text.encode("utf-8")) <= limits.file_bytes
    document = _valid(text)
    hawk = document["runs"][0]
    kept = [r["properties"]["councilId"] for r in hawk["results"]]
    assert kept == sorted(kept)
    assert {i for i in range(1, 201) if i % 10 == 0} <= set(kept)
    assert hawk["properties"]["cut"]["results"] == 200 - len(kept)
    assert any("bytes" in m for m in messages)


def test_unattributed_run_name_never_collides() -> None:
    """A participant named like the spare run does not receive hand-filed findings."""
    named = people("hawk", UNATTRIBUTED_RUN)
    document = _valid(render_sarif(report(finding(1, origin=HAND), participants=named)))
    names = [run["tool"]["driver"]["name"] for run in document["runs"]]
    assert len(set(names)) == 3
    assert document["runs"][1]["results"] == []


@pytest.mark.parametrize(
    "anchor",
    [
        LineAnchor(path="a b/ü ß/#x?.py", line=1),
        LineAnchor(path="deleted dir/ünï.py", side="old", start_line=2, line=9),
        FileAnchor(path="bin/日本語 data.bin"),
        FileAnchor(path=""),
        ChangeAnchor(),
        LineAnchor(path="c:odd.py", line=3),
    ],
)
def test_awkward_anchors_stay_valid(anchor: LineAnchor | FileAnchor | ChangeAnchor) -> None:
    """Odd paths and anchors still give a valid document whose URIs need no decoding."""
    document = _valid(render_sarif(report(finding(1, anchor))))
    for result in document["runs"][0]["results"]:
        for location in result.get("locations", []):
            uri = location["physicalLocation"]["artifactLocation"]["uri"]
            assert uri
            assert not set(uri) & set(" #?:") and uri.isascii()


def test_thirty_thousand_findings() -> None:
    """30,000 findings render a valid document within every limit, the most severe kept."""
    findings = [f.model_copy(update={"origin": HAWK}) for f in many_findings(30_000)]
    text, messages = render_sarif_with_cuts(report(*findings, participants=people("hawk")))
    document = _valid(text)
    assert len(text.encode("utf-8")) <= GITHUB_LIMITS.file_bytes
    runs = document["runs"]
    kept = {r["properties"]["councilId"] for run in runs for r in run["results"]}
    assert all(len(run["results"]) <= GITHUB_LIMITS.results_per_run for run in runs)
    assert sum(run["properties"].get("cut", {}).get("results", 0) for run in runs) == 30_000 - len(
        kept
    )
    rank = {f.id: (-severity_rank(f.severity), f.id) for f in findings}
    cut = set(rank) - kept
    assert max(rank[i] for i in kept) < min(rank[i] for i in cut)
    assert len(messages) == 2


def test_analyzer_rule_ids_become_rule_ids() -> None:
    """A subject opening with an analyzer rule id gives the result that ruleId; others the label."""
    findings = [
        finding(1, subject="F401: `os` imported but unused", severity="critical"),
        finding(2, subject="B602: subprocess call with shell=True"),
        finding(3, subject="E722: Do not use bare `except`", label="nitpick"),
        finding(4, subject="F401: `sys` imported but unused"),
        finding(5, subject="Note: no digit, not a rule id"),
        finding(6, subject="X1:no space after the colon"),
        finding(7, subject="ruff.S101: assert used", label="note"),
        finding(8, subject="plain subject", label="question"),
    ]
    document = _valid(render_sarif(report(*findings)))
    hawk = document["runs"][0]
    results = {r["properties"]["councilId"]: r for r in hawk["results"]}
    assert [results[i]["ruleId"] for i in range(1, 9)] == [
        "F401",
        "B602",
        "E722",
        "F401",
        "issue",
        "issue",
        "ruff.S101",
        "question",
    ]
    assert results[3]["properties"]["label"] == "nitpick"
    rules = hawk["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == [
        "issue",
        "question",
        "B602",
        "E722",
        "F401",
        "ruff.S101",
    ]
    assert all(rule["shortDescription"]["text"] for rule in rules)
    for result in hawk["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]


def test_analyzer_rules_are_per_run() -> None:
    """Each run lists only the analyzer rules its own results use."""
    findings = [
        finding(1, subject="F401: unused"),
        finding(2, subject="B602: shell", origin=OWL),
    ]
    document = _valid(render_sarif(report(*findings)))
    ids = [[rule["id"] for rule in run["tool"]["driver"]["rules"]] for run in document["runs"]]
    assert ids == [["F401"], ["B602"]]
