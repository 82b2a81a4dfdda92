"""The sarif backend: an analyzer's SARIF log becomes findings on the changed files."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from council.harvest import harvest
from council.participant import Clocks, Participant
from council.reviewers.base import ReviewRequest, ReviewResult
from council.reviewers.sarif import (
    SarifError,
    SarifReviewer,
    answer_from_output,
    findings_from_sarif,
)

SHORT = Clocks(backstop_ms=2000, idle_ms=1000, answer_ms=0)
ROOT = "/work/tree"


class MemorySink:
    """An in-memory journal sink."""

    def __init__(self) -> None:
        self.entries: list[str] = []

    def append(self, raw: str) -> str:
        self.entries.append(raw)
        return "Recorded."


def result(uri: Any = "src/app.py", **fields: Any) -> dict[str, Any]:
    """A SARIF result with one location at ``uri`` (a string, or a whole artifactLocation)."""
    artifact = uri if isinstance(uri, dict) else {"uri": uri}
    region = fields.pop("region", {"startLine": 3})
    physical: dict[str, Any] = {"artifactLocation": artifact}
    if region is not None:
        physical["region"] = region
    return {
        "ruleId": fields.pop("ruleId", "R1"),
        "message": fields.pop("message", {"text": "something is off"}),
        "locations": [{"physicalLocation": physical}],
        **fields,
    }


def log(*results: Any, **run: Any) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run holding ``results``."""
    tool = run.pop("tool", {"driver": {"name": "fixture"}})
    return {"version": "2.1.0", "runs": [{"tool": tool, "results": list(results), **run}]}


def convert(sarif: dict[str, Any], changed: tuple[str, ...] = ("src/app.py",)) -> dict[str, Any]:
    """Convert a log with the fixture root as the analyzer's directory."""
    return findings_from_sarif(sarif, changed, [ROOT])


def test_levels_map_to_severities() -> None:
    """error→critical, warning→medium, note→minor, missing→medium, none→a note."""
    out = convert(
        log(
            result(level="error"),
            result(level="warning"),
            result(level="note"),
            result(),
            result(level="none"),
        )
    )
    severities = [f.get("severity") for f in out["findings"]]
    assert severities == ["critical", "medium", "minor", "medium", None]
    assert [f["label"] for f in out["findings"]] == ["issue"] * 4 + ["note"]


def test_rule_default_level_and_help_uri() -> None:
    """A result without level takes its rule's default; the help URI joins the discussion."""
    rules = [{"id": "R9", "defaultConfiguration": {"level": "error"}, "helpUri": "https://x/r9"}]
    sarif = log(result(ruleId="R9", ruleIndex=0), tool={"driver": {"name": "t", "rules": rules}})
    (entry,) = convert(sarif)["findings"]
    assert entry["severity"] == "critical"
    assert entry["discussion"] == "something is off\n\nhttps://x/r9"


def test_subject_is_rule_and_first_line_discussion_is_whole_message() -> None:
    """subject = 'ruleId: first line'; discussion = the full message."""
    text = "\nFirst line here.\nMore detail.\n"
    (entry,) = convert(log(result(ruleId="E722", message={"text": text})))["findings"]
    assert entry["subject"] == "E722: First line here."
    assert entry["discussion"] == "First line here.\nMore detail."


def test_message_from_rule_message_strings() -> None:
    """A message given by id is read from the rule's messageStrings, arguments filled."""
    rules = [{"id": "R2", "messageStrings": {"m": {"text": "{0} is unused in {1}"}}}]
    message = {"id": "m", "arguments": ["x", "f"]}
    sarif = log(result(ruleId="R2", message=message), tool={"driver": {"rules": rules}})
    (entry,) = convert(sarif)["findings"]
    assert entry["subject"] == "R2: x is unused in f"


def test_line_and_file_anchors() -> None:
    """A region gives a line anchor (end defaults to start); no region gives a file anchor."""
    out = convert(
        log(
            result(region={"startLine": 3, "endLine": 5}),
            result(region={"startLine": 7}),
            result(region={"startLine": 9, "endLine": 2}),
            result(region=None),
            result(region={"charOffset": 10}),
        )
    )
    locations = [f["location"] for f in out["findings"]]
    assert locations == [
        {"kind": "line", "file": "src/app.py", "start": 3, "end": 5},
        {"kind": "line", "file": "src/app.py", "start": 7, "end": 7},
        {"kind": "line", "file": "src/app.py", "start": 9, "end": 9},
        {"kind": "file", "file": "src/app.py"},
        {"kind": "file", "file": "src/app.py"},
    ]


@pytest.mark.parametrize(
    "uri",
    [
        "src/app.py",
        "./src/app.py",
        "src/./lib/../app.py",
        "file:///work/tree/src/app.py",
        "/work/tree/src/app.py",
        {"uri": "src/app.py", "uriBaseId": "SRCROOT"},
        {"uri": "app.py", "uriBaseId": "SRC"},
        {"uri": "src/app.py", "uriBaseId": "%SRCROOT%"},
        {"index": 0},
        "src%2Fapp.py",
    ],
    ids=str,
)
def test_uri_forms_reach_the_changed_file(uri: Any) -> None:
    """Relative, ./, file://, absolute, uriBaseId (nested, undefined) and indexed URIs match."""
    bases = {
        "SRCROOT": {"uri": "file:///work/tree/"},
        "SRC": {"uri": "src", "uriBaseId": "SRCROOT"},
    }
    artifacts = [{"location": {"uri": "src/app.py"}}]
    out = convert(log(result(uri), originalUriBaseIds=bases, artifacts=artifacts))
    assert [f["location"]["file"] for f in out["findings"]] == ["src/app.py"]


def test_results_elsewhere_are_counted_not_converted() -> None:
    """Results on unchanged files, outside the tree or without location are ignored_results."""
    no_location = {"ruleId": "R", "message": {"text": "global"}}
    out = convert(
        log(
            result("src/other.py"),
            result("file:///elsewhere/src/app.py"),
            no_location,
            result("src/app.py"),
            42,
        )
    )
    assert len(out["findings"]) == 1
    assert out["ignored_results"] == 3
    assert out["unreadable_results"] == 1


def test_first_location_on_a_changed_file_is_used() -> None:
    """A result with several locations is anchored at the one on a changed file."""
    entry = result("lib/old.py")
    entry["locations"].append({"physicalLocation": {"artifactLocation": {"uri": "src/app.py"}}})
    (finding,) = convert(log(entry))["findings"]
    assert finding["location"] == {"kind": "file", "file": "src/app.py"}


def test_changed_paths_are_normalized_too() -> None:
    """A changed path spelled with ./ still matches."""
    out = convert(log(result("src/app.py")), changed=("./src/app.py",))
    assert len(out["findings"]) == 1


@pytest.mark.parametrize(
    ("stdout", "words"),
    [
        ("", "printed nothing"),
        ("   \n", "printed nothing"),
        ("All checks passed!\n", "not JSON"),
        ('{"runs": [', "not JSON"),
        ("[1, 2]", "not a SARIF log"),
        ('{"version": "2.1.0"}', "not a SARIF log"),
        ('{"runs": [3]}', "runs[0]"),
        ('{"runs": [{"results": {}}]}', "results"),
    ],
)
def test_malformed_output_raises_sarif_error(stdout: str, words: str) -> None:
    """Output that is not a SARIF log is refused with a reason that says what it was."""
    with pytest.raises(SarifError, match=re.escape(words)):
        answer_from_output(stdout, ("a.py",))


def test_answer_is_json_in_the_answer_contract() -> None:
    """The answer text is a JSON object with a findings list and the ignored count."""
    answer = json.loads(answer_from_output(json.dumps(log(result(level="error"))), ("src/app.py",)))
    assert answer == {
        "findings": [
            {
                "location": {"kind": "line", "file": "src/app.py", "start": 3, "end": 3},
                "label": "issue",
                "subject": "R1: something is off",
                "discussion": "something is off",
                "severity": "critical",
            }
        ],
        "ignored_results": 0,
        "unreadable_results": 0,
    }


def analyzer(
    tmp_path: Path, program: str, args: list[str], changed: tuple[str, ...]
) -> ReviewResult:
    """Run the sarif backend with ``program args`` in ``tmp_path``."""
    participant = Participant(
        id="lint", backend="sarif", clocks=SHORT, options={"program": program, "args": args}
    )
    request = ReviewRequest(
        participant=participant,
        prompt="",
        journal=MemorySink(),
        workdir=tmp_path,
        changed_paths=changed,
    )
    return SarifReviewer().review(request)


def test_real_ruff_run_reports_only_the_changed_file(tmp_path: Path) -> None:
    """ruff's real SARIF output becomes findings on the changed file only."""
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed on PATH")
    (tmp_path / "pkg").mkdir()
    bad = "import os\n\ntry:\n    x = 1\nexcept:\n    pass\n"
    (tmp_path / "pkg" / "changed.py").write_text(bad)
    (tmp_path / "pkg" / "unchanged.py").write_text(bad)
    args = ["check", "--isolated", "--no-cache", "--select", "E722,F401"]
    args += ["--output-format", "sarif", "--exit-zero", "."]
    outcome = analyzer(tmp_path, "ruff", args, ("pkg/changed.py",))
    assert outcome.failure is None and outcome.stop is None
    answer = json.loads(outcome.answer)
    by_rule = {f["subject"].split(":")[0]: f for f in answer["findings"]}
    assert set(by_rule) == {"F401", "E722"}
    assert by_rule["E722"]["location"] == {
        "kind": "line",
        "file": "pkg/changed.py",
        "start": 5,
        "end": 5,
    }
    assert by_rule["E722"]["severity"] == "critical"
    assert "https://docs.astral.sh/ruff/rules/bare-except" in by_rule["E722"]["discussion"]
    assert answer["ignored_results"] == 2


def test_fixture_printed_by_a_program_is_converted(tmp_path: Path) -> None:
    """A SARIF log printed by any program (here cat) goes through the backend whole."""
    fixture = tmp_path / "log.sarif"
    fixture.write_text(json.dumps(log(result("src/app.py", level="note"), result("x.py"))))
    outcome = analyzer(tmp_path, "cat", [str(fixture)], ("src/app.py",))
    answer = json.loads(outcome.answer)
    assert [f["severity"] for f in answer["findings"]] == ["minor"]
    assert answer["ignored_results"] == 1


def test_non_json_output_is_a_failure(tmp_path: Path) -> None:
    """An analyzer printing text instead of SARIF fails with a reason, not an exception."""
    outcome = analyzer(tmp_path, sys.executable, ["-c", "print('All checks passed!')"], ())
    assert outcome.failure is not None
    assert "not JSON" in outcome.failure and outcome.answer == ""


def test_failed_analyzer_reports_its_exit_and_stderr(tmp_path: Path) -> None:
    """No SARIF and a non-zero exit: the failure carries the status and stderr tail."""
    code = "import sys; sys.stderr.write('unknown flag --sarif\\n'); sys.exit(2)"
    outcome = analyzer(tmp_path, sys.executable, ["-c", code], ())
    assert outcome.failure is not None
    assert "printed nothing" in outcome.failure
    assert "exited with status 2: unknown flag --sarif" in outcome.failure


def test_nonzero_exit_with_sarif_is_an_answer(tmp_path: Path) -> None:
    """An analyzer that exits 1 because it found something still answered."""
    text = json.dumps(log(result("a.py")))
    code = f"import sys; print({text!r}); sys.exit(1)"
    outcome = analyzer(tmp_path, sys.executable, ["-c", code], ("a.py",))
    assert outcome.failure is None
    assert len(json.loads(outcome.answer)["findings"]) == 1


def test_missing_analyzer_is_a_failure(tmp_path: Path) -> None:
    """An analyzer not on PATH is a failure naming it."""
    outcome = analyzer(tmp_path, "no-such-analyzer-xyz", [], ())
    assert outcome.failure is not None and "no-such-analyzer-xyz" in outcome.failure


def test_stopped_analyzer_without_a_log_is_a_stop(tmp_path: Path) -> None:
    """An analyzer stopped by the idle clock is a stop with an empty answer."""
    outcome = analyzer(tmp_path, sys.executable, ["-c", "import time; time.sleep(30)"], ())
    assert outcome.stop is not None and outcome.stop.limit == "idle"
    assert outcome.failure is None and outcome.answer == ""


def test_the_harvest_reads_the_answer_without_warnings() -> None:
    """The backend's answer is read by the ordinary harvest with no warning."""
    sarif = log(result(level="error", region={"startLine": 2, "endLine": 4}), result(region=None))
    read = harvest(answer_from_output(json.dumps(sarif), ("src/app.py",)))
    assert read.warnings == () and not read.truncated
    assert [f.anchor.kind for f in read.findings] == ["line", "file"]
    assert [f.severity for f in read.findings] == ["critical", "medium"]
