"""The sarif backend: an analyzer's SARIF log becomes findings on the changed files."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from council.change.diff import added_lines, parse_diff
from council.errors import RosterError
from council.harvest import harvest
from council.model.backend_result import ReviewResult
from council.model.participant import Clocks, Participant
from council.readers.sarif import (
    SarifError,
    SarifReading,
    read_sarif,
    read_sarif_output,
    unplaced_note,
    unreadable_note,
)
from reviewers.base import ReviewRequest
from reviewers.programs.sarif import SarifReviewer, check_options
from tests.gitrepo import commit, git, new_repo
from workers.cli import main

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


def convert(sarif: dict[str, Any], changed: tuple[str, ...] = ("src/app.py",)) -> SarifReading:
    """Convert a log with the fixture root as the analyzer's directory."""
    return read_sarif(sarif, changed, [ROOT])


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
    severities = [f.get("severity") for f in out.findings]
    assert severities == ["critical", "medium", "minor", "medium", None]
    assert [f["label"] for f in out.findings] == ["issue"] * 4 + ["note"]


def test_rule_default_level_and_help_uri() -> None:
    """A result without level takes its rule's default; the help URI joins the discussion."""
    rules = [{"id": "R9", "defaultConfiguration": {"level": "error"}, "helpUri": "https://x/r9"}]
    sarif = log(result(ruleId="R9", ruleIndex=0), tool={"driver": {"name": "t", "rules": rules}})
    (entry,) = convert(sarif).findings
    assert entry["severity"] == "critical"
    assert entry["discussion"] == "something is off\n\nhttps://x/r9"


def test_subject_is_rule_and_first_line_discussion_is_whole_message() -> None:
    """subject = 'ruleId: first line'; discussion = the full message."""
    text = "\nFirst line here.\nMore detail.\n"
    (entry,) = convert(log(result(ruleId="E722", message={"text": text}))).findings
    assert entry["subject"] == "E722: First line here."
    assert entry["discussion"] == "First line here.\nMore detail."


def test_message_from_rule_message_strings() -> None:
    """A message given by id is read from the rule's messageStrings, arguments filled."""
    rules = [{"id": "R2", "messageStrings": {"m": {"text": "{0} is unused in {1}"}}}]
    message = {"id": "m", "arguments": ["x", "f"]}
    sarif = log(result(ruleId="R2", message=message), tool={"driver": {"rules": rules}})
    (entry,) = convert(sarif).findings
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
    locations = [f["location"] for f in out.findings]
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
    assert [f["location"]["file"] for f in out.findings] == ["src/app.py"]


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
    assert len(out.findings) == 1
    assert out.ignored_results == 3
    assert out.unreadable_results == 1
    assert out.unplaced_errors == 0


def test_error_results_naming_no_place_are_counted_and_said() -> None:
    """An error-level result with no location cannot be tied to the change: it is left
    out, counted in unplaced_errors, and the reviewer's note says so (never silent); in
    consolidate's reading (unplaced) it is a finding about the whole change."""
    bare = {"ruleId": "DEP1", "level": "error", "message": {"text": "vulnerable dependency"}}
    out = convert(log(bare, {**bare, "level": "note"}, result("src/app.py")))
    assert out.unplaced_errors == 1 and out.ignored_results == 2
    assert "1 result(s) at SARIF level error name no file" in unplaced_note(1)
    kept = read_sarif(log(bare), ("src/app.py",), [ROOT], unplaced=True)
    assert kept.findings[0]["location"] == {"kind": "global"}
    assert kept.findings[0]["severity"] == "critical"


def test_first_location_on_a_changed_file_is_used() -> None:
    """A result with several locations is anchored at the one on a changed file."""
    entry = result("lib/old.py")
    entry["locations"].append({"physicalLocation": {"artifactLocation": {"uri": "src/app.py"}}})
    (finding,) = convert(log(entry)).findings
    assert finding["location"] == {"kind": "file", "file": "src/app.py"}


def test_changed_paths_are_normalized_too() -> None:
    """A changed path spelled with ./ still matches."""
    out = convert(log(result("src/app.py")), changed=("./src/app.py",))
    assert len(out.findings) == 1


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
        read_sarif_output(stdout, ("a.py",))


def test_json_nested_past_the_recursion_limit_is_a_sarif_error() -> None:
    """A hostile log of 200,000 nested arrays: a failure naming why, not a crash."""
    with pytest.raises(SarifError, match="nested too deeply"):
        read_sarif_output("[" * 200_000 + "]" * 200_000, ["src/app.py"])


def test_answer_is_json_in_the_answer_contract() -> None:
    """The answer text is a JSON object with a findings list and the ignored count."""
    read = read_sarif_output(json.dumps(log(result(level="error"))), ("src/app.py",))
    answer = json.loads(read.answer())
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
        "outside_change_results": 0,
        "outside_change_errors": 0,
        "unplaced_errors": 0,
        "unreadable_results": 0,
        "unanalyzed_files": [],
        "execution_failed": False,
    }


def analyzer(
    tmp_path: Path,
    program: str,
    args: list[str],
    changed: tuple[str, ...],
    lines: dict[str, frozenset[int]] | None = None,
    **options: Any,
) -> ReviewResult:
    """Run the sarif backend with ``program args`` in ``tmp_path``."""
    participant = Participant(
        id="lint",
        backend="sarif",
        clocks=SHORT,
        options={"program": program, "args": args, **options},
    )
    request = ReviewRequest(
        participant=participant,
        prompt="",
        journal=MemorySink(),
        workdir=tmp_path,
        changed_paths=changed,
        changed_lines=lines or {},
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


def test_the_reviewer_says_when_an_error_result_names_no_place(tmp_path: Path) -> None:
    """The backend's notes name the error-level results it could not tie to the change,
    and the results it could not read at all (not objects)."""
    bare = {"ruleId": "DEP1", "level": "error", "message": {"text": "vulnerable dependency"}}
    fixture = tmp_path / "log.sarif"
    fixture.write_text(json.dumps(log(bare, result("src/app.py"))))
    outcome = analyzer(tmp_path, "cat", [str(fixture)], ("src/app.py",))
    assert unplaced_note(1) in outcome.notes
    odd = tmp_path / "odd.sarif"
    odd.write_text(json.dumps(log(5, "x", result("src/app.py"))))
    assert unreadable_note(2) in analyzer(tmp_path, "cat", [str(odd)], ("src/app.py",)).notes
    quiet = tmp_path / "quiet.sarif"
    quiet.write_text(json.dumps(log(result("src/app.py"))))
    assert not analyzer(tmp_path, "cat", [str(quiet)], ("src/app.py",)).notes


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
    read = harvest(read_sarif_output(json.dumps(sarif), ("src/app.py",)).answer())
    assert read.warnings == () and not read.truncated
    assert [f.anchor.kind for f in read.findings] == ["line", "file"]
    assert [f.severity for f in read.findings] == ["critical", "medium"]


ADDED = {"src/app.py": frozenset({13, 14})}
"""The added lines of the fixture change: lines 13 and 14 of src/app.py (its hunk, with
three lines of context, covers lines 10 to 17)."""


def test_scope_lines_keeps_results_meeting_added_lines() -> None:
    """By default only results whose region meets an added line, or lies in its hunk, or
    has no line, are kept; those reaching out of the hunk or far from it are not."""
    out = read_sarif(
        log(
            result(region={"startLine": 13}),
            result(region={"startLine": 1, "endLine": 13}),
            result(region={"startLine": 14, "endLine": 900_000}),
            result(region={"startLine": 10, "endLine": 11}),
            result(region={"startLine": 17}),
            result(region={"startLine": 1}),
            result(region={"startLine": 9, "endLine": 12}),
            result(region={"startLine": 15, "endLine": 20}),
            result(region={"startLine": 18}),
            result(region={"startLine": 19, "endLine": 2}),
            result(region=None),
            result(region={"charOffset": 10}),
            result("src/other.py"),
        ),
        ("src/app.py", "src/lib.py"),
        [ROOT],
        changed_lines=ADDED,
    )
    starts = [f["location"].get("start") for f in out.findings]
    assert starts == [13, 1, 14, 10, 14, None, None]
    # the two kept for lying in the hunk reach the nearest added line, and say so
    assert [f["location"].get("end") for f in out.findings[3:5]] == [13, 17]
    assert all("The analyzer marked lines" in f["discussion"] for f in out.findings[3:5])
    assert "The analyzer marked" not in out.findings[0]["discussion"]
    assert out.outside_change_results == 5
    assert out.ignored_results == 1


def test_a_since_last_round_keeps_a_result_on_lines_the_pull_request_wrote() -> None:
    """A --since-last round adds lines 8-9; a result at line 5 lies in their hunk. Line
    5 is one the pull request wrote (an earlier round filed the result there): it keeps
    line 5, so its occurrence is the one filed before. A result on a line the pull
    request did not write still reaches the edit, as before."""
    interdiff = {"src/app.py": frozenset({8, 9})}
    pull = {"src/app.py": frozenset({1, 2, 3, 4, 5, 6, 8, 9})}
    sarif = log(result(region={"startLine": 5}), result(region={"startLine": 7}))
    kept = read_sarif(sarif, ("src/app.py",), [ROOT], changed_lines=interdiff, pull_lines=pull)
    spans = [(f["location"]["start"], f["location"].get("end")) for f in kept.findings]
    assert spans == [(5, 5), (7, 8)]
    assert "The analyzer marked" not in kept.findings[0]["discussion"]
    stretched = read_sarif(sarif, ("src/app.py",), [ROOT], changed_lines=interdiff)
    assert [f["location"]["start"] for f in stretched.findings] == [5, 7]
    assert stretched.findings[0]["location"].get("end") == 8


def test_scope_files_keeps_every_result_on_a_changed_file() -> None:
    """scope files keeps old-line results; so does an empty changed_lines (no diff known)."""
    sarif = log(result(region={"startLine": 1}), result(region={"startLine": 13}))
    for lines, scope in ((ADDED, "files"), ({}, "lines")):
        out = read_sarif(sarif, ("src/app.py",), [ROOT], changed_lines=lines, scope=scope)
        assert len(out.findings) == 2
        assert out.outside_change_results == 0


def test_a_changed_file_without_line_information_is_judged_whole() -> None:
    """A changed file changed_lines does not list keeps its results (nothing to compare)."""
    out = read_sarif(
        log(result("src/lib.py", region={"startLine": 50})),
        ("src/app.py", "src/lib.py"),
        [ROOT],
        changed_lines=ADDED,
    )
    assert len(out.findings) == 1


def test_changed_lines_paths_are_normalized() -> None:
    """A changed_lines path spelled with ./ matches the result's path."""
    out = read_sarif(
        log(result(region={"startLine": 1})),
        ("src/app.py",),
        [ROOT],
        changed_lines={"./src/app.py": frozenset({13})},
    )
    assert out.findings == [] and out.outside_change_results == 1


def test_the_location_on_an_added_line_is_chosen() -> None:
    """With several locations on the changed file, the one meeting the added lines is used."""
    entry = result(region={"startLine": 12})
    second = {"artifactLocation": {"uri": "src/app.py"}, "region": {"startLine": 14}}
    entry["locations"].append({"physicalLocation": second})
    out = read_sarif(log(entry), ("src/app.py",), [ROOT], changed_lines=ADDED)
    (finding,) = out.findings
    assert finding["location"]["start"] == 14


def test_levels_option_overrides_the_severities() -> None:
    """levels maps SARIF levels over the defaults; 'none' makes a result a note."""
    out = read_sarif(
        log(result(level="error"), result(level="warning"), result(level="note"), result()),
        ("src/app.py",),
        [ROOT],
        levels={"error": "medium", "note": "none", "warning": "critical"},
    )
    assert [f.get("severity") for f in out.findings] == ["medium", "critical", None, "critical"]
    assert [f["label"] for f in out.findings] == ["issue", "issue", "note", "issue"]


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"scope": "hunks"}, "scope"),
        ({"scope": 1}, "scope"),
        ({"levels": "medium"}, "levels"),
        ({"levels": {"fatal": "critical"}}, "levels.fatal"),
        ({"levels": {"error": "high"}}, "levels.error"),
        ({"levels": {"error": 2}}, "levels.error"),
        ({"levels": {"a b": "minor"}}, 'levels."a b"'),
    ],
)
def test_bad_scope_and_levels_are_refused(options: dict[str, Any], field: str) -> None:
    """A bad scope or levels is refused at its field path."""
    with pytest.raises(RosterError) as caught:
        check_options({"program": "ruff", **options}, "reviewers[0]")
    assert caught.value.path == f"reviewers[0].{field}"


def test_good_scope_and_levels_pass() -> None:
    """Every scope, and levels over every SARIF level, are accepted."""
    for scope in ("lines", "files"):
        levels = {"error": "medium", "warning": "minor", "note": "none", "none": "critical"}
        check_options({"program": "ruff", "scope": scope, "levels": levels}, "reviewers[0]")


def test_bad_option_at_review_time_is_a_failure(tmp_path: Path) -> None:
    """A bad scope reaching the backend is a failure naming the field, not an exception."""
    outcome = analyzer(tmp_path, "cat", [], ("a.py",), scope="hunks")
    assert outcome.failure is not None and "reviewers[lint].scope" in outcome.failure


def test_real_ruff_run_keeps_only_added_lines_with_scope_lines(tmp_path: Path) -> None:
    """On a real git change, an old smell on an untouched line is dropped, a new one kept."""
    if shutil.which("ruff") is None:
        pytest.skip("ruff is not installed on PATH")
    repo = new_repo(tmp_path / "repo", {"app.py": "import os\n\n\ndef main():\n    return 1\n"})
    base = git(repo, "rev-parse", "HEAD")
    edited = "import os\n\n\ndef main():\n    import sys\n    return 1\n"
    commit(repo, {"app.py": edited}, "a new unused import")
    change = parse_diff(git(repo, "diff", base, "HEAD") + "\n")
    lines = added_lines(change)
    assert lines == {"app.py": frozenset({5})}
    args = ["check", "--isolated", "--no-cache", "--select", "F401"]
    args += ["--output-format", "sarif", "--exit-zero", "."]
    kept: dict[str, list[tuple[int, str]]] = {}
    for scope in ("lines", "files"):
        outcome = analyzer(repo, "ruff", args, change.paths, lines, scope=scope)
        assert outcome.failure is None and outcome.stop is None
        answer = json.loads(outcome.answer)
        kept[scope] = [(f["location"]["start"], f["subject"]) for f in answer["findings"]]
        assert answer["outside_change_results"] == (1 if scope == "lines" else 0)
    assert [start for start, _ in kept["lines"]] == [5]
    assert kept["lines"][0][1].startswith("F401: ") and "sys" in kept["lines"][0][1]
    assert sorted(start for start, _ in kept["files"]) == [1, 5]


def test_real_ruff_run_with_levels_is_medium(tmp_path: Path) -> None:
    """ruff reports everything as error; levels = {error = "medium"} files it as medium."""
    if shutil.which("ruff") is None:
        pytest.skip("ruff is not installed on PATH")
    (tmp_path / "app.py").write_text("import os\n")
    args = ["check", "--isolated", "--no-cache", "--select", "F401"]
    args += ["--output-format", "sarif", "--exit-zero", "."]
    outcome = analyzer(tmp_path, "ruff", args, ("app.py",), levels={"error": "medium"})
    (finding,) = json.loads(outcome.answer)["findings"]
    assert finding["severity"] == "medium"


@pytest.mark.parametrize(("scope", "lines"), [("lines", [5]), ("files", [1, 5])])
def test_council_review_files_ruff_results_on_the_change(
    tmp_path: Path, scope: str, lines: list[int]
) -> None:
    """End to end: the worker hands the diff's added lines to ruff's sarif reviewer."""
    if shutil.which("ruff") is None:
        pytest.skip("ruff is not installed on PATH")
    repo = new_repo(tmp_path / "repo", {"app.py": "import os\n\n\ndef main():\n    return 1\n"})
    commit(repo, {"app.py": "import os\n\n\ndef main():\n    import sys\n    return 1\n"}, "sys")
    roster = tmp_path / "roster.toml"
    args = ["check", "--isolated", "--no-cache", "--select", "F401", "--output-format", "sarif"]
    roster.write_text(
        "[council]\nbackstop_ms = 60000\nidle_ms = 60000\n\n[[reviewers]]\n"
        f'id = "ruff"\nbackend = "sarif"\nprogram = "ruff"\nargs = {json.dumps(args)}\n'
        f'scope = "{scope}"\n',
        encoding="utf-8",
    )
    out = tmp_path / "out"
    argv = ["review", "--repo", str(repo), "--base", "HEAD~1", "--no-progress"]
    argv += ["--state", str(tmp_path / "state.json"), "--roster", str(roster)]
    argv += ["--format", "json", "--format", "sarif", "--output", str(out)]
    done = CliRunner().invoke(main, argv)
    assert done.exit_code == 1 and (out / "council.json").is_file(), done.output
    report = json.loads((out / "council.json").read_text(encoding="utf-8"))
    assert sorted(f["anchor"]["line"] for f in report["findings"]) == lines
    sarif = json.loads((out / "council.sarif").read_text(encoding="utf-8"))
    (run,) = sarif["runs"]
    assert {r["ruleId"] for r in run["results"]} == {"F401"}
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == ["F401"]


def test_a_message_already_named_by_its_rule_is_not_named_twice() -> None:
    """Council's own SARIF writes "B602: …" as the message of rule B602: read back (by
    `council consolidate`), the subject is "B602: …", not "B602: B602: …"."""
    out = convert(log(result(ruleId="B602", message={"text": "B602: shell=True"})))
    assert [f["subject"] for f in out.findings] == ["B602: shell=True"]
