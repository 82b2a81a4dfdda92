"""The JSON report: canonical text, round trip, and refusing unknown versions."""

from __future__ import annotations

import json

import pytest

from council.errors import CouncilError
from council.model.backend_result import Stop
from council.model.findings import (
    ChangeAnchor,
    FileAnchor,
    Finding,
    LineAnchor,
    Origin,
    Warning,
    canonical,
)
from council.model.report import SCHEMA_VERSION
from council.rendering import CouncilReport, ParticipantSummary, read_json, render_json
from council.rendering.jsonreport import UnknownSchemaVersion, UnreadableReport


def _report() -> CouncilReport:
    origin = Origin(kind="reviewer", run_id="r1", participant="hawk")
    return CouncilReport(
        run_id="r1",
        session="s1",
        repository="git@example.org:team/app.git",
        base="a" * 40,
        head="b" * 40,
        status="partial",
        participants=(
            ParticipantSummary(id="hawk", backend="openai", model="gpt", state="answered"),
            ParticipantSummary(
                id="owl", backend="command", state="stopped", stop=Stop(limit="idle")
            ),
        ),
        findings=(
            Finding(
                id=1,
                anchor=LineAnchor(path="src/é.py", line=18, start_line=12, witness="b" * 40),
                label="issue",
                subject="SQL built from input",
                discussion="Use parameters.",
                origin=origin,
                severity="critical",
                confidence=0.9,
                raised_by=("hawk", "owl"),
            ),
            Finding(id=2, anchor=FileAnchor(path="README.md"), label="nitpick", subject="typo"),
            Finding(id=3, anchor=ChangeAnchor(), label="praise", subject="clean", origin=origin),
        ),
        warnings=(Warning(code="stopped", at="owl", message="owl was stopped."),),
        notes=("paths excluded: vendor/",),
        created_ms=1000,
    )


def test_round_trip_gives_an_equal_report() -> None:
    """render_json then read_json returns the same report."""
    report = _report()
    assert read_json(render_json(report)) == report


def test_optional_keys_are_absent_not_null() -> None:
    """No null appears anywhere: unset optional fields are left out."""
    text = render_json(_report())
    assert "null" not in text
    data = json.loads(text)
    assert "settled_ms" not in data
    assert "severity" not in data["findings"][1]
    assert "model" not in data["participants"][1]


def test_findings_are_in_canonical_form() -> None:
    """Each finding in the JSON equals its canonical() form, in filing order."""
    report = _report()
    data = json.loads(render_json(report))
    assert data["findings"] == [canonical(f) for f in report.findings]
    assert data["findings"][0]["anchor"] == {
        "kind": "line",
        "path": "src/é.py",
        "side": "new",
        "line": 18,
        "start_line": 12,
        "witness": "b" * 40,
    }


def test_text_is_indented_utf8_in_model_order() -> None:
    """Two-space indent, non-ASCII kept, keys in model order, trailing newline."""
    text = render_json(_report())
    assert text.startswith('{\n  "schema_version": 1,\n  "run_id": "r1"')
    assert "src/é.py" in text
    assert text.endswith("}\n")


def test_reads_bytes() -> None:
    """read_json accepts the UTF-8 bytes of a report file."""
    report = _report()
    assert read_json(render_json(report).encode()) == report


@pytest.mark.parametrize("version", [SCHEMA_VERSION + 1, 0, "1", True, None])
def test_unknown_schema_version_is_refused(version: object) -> None:
    """A version other than the supported int is refused, naming both versions."""
    data = json.loads(render_json(_report()))
    data["schema_version"] = version
    with pytest.raises(UnknownSchemaVersion) as caught:
        read_json(json.dumps(data))
    assert caught.value.found == version
    assert caught.value.supported == SCHEMA_VERSION
    assert str(SCHEMA_VERSION) in str(caught.value)


def test_missing_schema_version_is_refused() -> None:
    """A report without schema_version is refused as an unknown version."""
    data = json.loads(render_json(_report()))
    del data["schema_version"]
    with pytest.raises(UnknownSchemaVersion):
        read_json(json.dumps(data))


def test_newer_version_is_named_before_shape_errors() -> None:
    """A newer report with an unknown field is reported as a version problem."""
    data = json.loads(render_json(_report()))
    data["schema_version"] = SCHEMA_VERSION + 1
    data["new_field"] = []
    with pytest.raises(UnknownSchemaVersion):
        read_json(json.dumps(data))


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"schema_version": 1}'])
def test_unreadable_text_is_refused(text: str) -> None:
    """Non-JSON, a non-object, or a bad shape raise UnreadableReport (a CouncilError)."""
    with pytest.raises(UnreadableReport) as caught:
        read_json(text)
    assert isinstance(caught.value, CouncilError)
    assert isinstance(caught.value, ValueError)
    assert caught.value.exit_code == 2
