"""Anchor paths read as the repository-relative path the diff uses.

A user trial anchored findings on ``./app.py:7`` and ``/tmp/trial2/repo/app.py:4``, both
added lines, and saw them classed ``file-absent`` and written to SARIF as ``./app.py``.
The harvest now reads a path in its plain spelling (council.harvest.paths) and landing
matches what only the change's paths can settle (council.change.commentable.resolve_path).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from council.change.commentable import land, resolve_anchor, resolve_path
from council.change.diff import parse_diff
from council.harvest import also_recorded, harvest
from council.harvest.paths import tidy_path
from council.model.backend_result import ReviewResult
from council.model.findings import ChangeAnchor, FileAnchor, LineAnchor
from council.model.participant import Participant
from council.round.filing import RoundFacts, conclude_round
from council.round.outcome import harvest_outcome
from tests.forge_cases import finding, report
from tests.gitrepo import commit, new_repo
from tests.unit.test_cli_review import answer, report_of, review, reviewer, roster

APP_DIFF = (
    "diff --git a/app.py b/app.py\n"
    "--- a/app.py\n"
    "+++ b/app.py\n"
    "@@ -1,1 +1,8 @@\n"
    " x = 1\n" + "".join(f"+y{n} = {n}\n" for n in range(2, 9))
)
"""app.py gains lines 2-8."""


# --- the harvest: text rules only -----------------------------------------------------


@pytest.mark.parametrize(
    ("given", "plain"),
    [
        ("./app.py", "app.py"),
        ("././app.py", "app.py"),
        ("src//app.py", "src/app.py"),
        ("src/./lib/app.py", "src/lib/app.py"),
        ("src/", "src"),
        ("/tmp//trial2/./repo/app.py", "/tmp/trial2/repo/app.py"),
        ("app.py", "app.py"),
        ("dir with space/café.py", "dir with space/café.py"),
    ],
)
def test_tidy_drops_empty_and_dot_segments(given: str, plain: str) -> None:
    """Empty and ``.`` segments go; a leading ``/`` stays; the result is a fixed point."""
    assert tidy_path(given) == plain
    assert tidy_path(plain) == plain


@pytest.mark.parametrize("kept", ["../app.py", "src/../app.py", "src\\app.py", "a/app.py", "."])
def test_tidy_guesses_nothing_else(kept: str) -> None:
    """``..``, backslashes, diff prefixes and a path of dots alone are left as given."""
    assert tidy_path(kept) == kept


@pytest.mark.parametrize("only_dots", ["./", "/", "//"])
def test_tidy_never_empties_a_path(only_dots: str) -> None:
    """A path of separators and dots alone is kept as given: an empty path is no path."""
    assert tidy_path(only_dots) == only_dots


def test_harvest_reads_the_plain_path_without_a_warning() -> None:
    """``./app.py`` is harvested as ``app.py`` (line and file anchors), and nothing warns."""
    text = json.dumps(
        {
            "findings": [
                {
                    "subject": "s1",
                    "label": "issue",
                    "location": {"kind": "line", "file": "./app.py", "start": 7},
                },
                {
                    "subject": "s2",
                    "label": "issue",
                    "location": {"kind": "file", "path": "src//x.py"},
                },
            ]
        }
    )
    read = harvest(text)
    assert [f.anchor for f in read.findings] == [
        LineAnchor(path="app.py", line=7),
        FileAnchor(path="src/x.py"),
    ]
    assert read.warnings == ()


def test_journal_copy_spelled_differently_is_the_same_finding() -> None:
    """A recorded ``./app.py`` finding collapses into the answer's ``app.py`` one."""
    entry = {"subject": "Leak", "label": "issue", "location": {"kind": "file", "file": "app.py"}}
    answered = harvest(json.dumps({"findings": [entry]}))
    recorded = {**entry, "location": {"kind": "line", "file": "./app.py", "line": 3}}
    assert len(also_recorded(answered, [recorded]).findings) == 1


# --- landing: what the change's paths settle -------------------------------------------


def test_a_changed_path_is_itself() -> None:
    """A path the change has is never rewritten, even one starting with ``a/`` or ``b/``."""
    assert resolve_path("a/app.py", {"a/app.py", "app.py"}) == "a/app.py"
    assert resolve_path("b/x.py", {"b/x.py"}) == "b/x.py"


@pytest.mark.parametrize("prefixed", ["a/app.py", "b/app.py", "./b/app.py"])
def test_diff_prefix_is_stripped_when_that_names_a_changed_file(prefixed: str) -> None:
    """``a/app.py`` / ``b/app.py`` (copied from the diff headers) → ``app.py``."""
    assert resolve_path(prefixed, {"app.py", "src/x.py"}) == "app.py"


def test_diff_prefix_is_kept_when_the_rest_is_not_changed() -> None:
    """``b/util.py`` names no changed file once stripped: it may be a real ``b/`` file."""
    assert resolve_path("b/util.py", {"app.py"}) == "b/util.py"


def test_absolute_path_under_the_repository_is_made_relative() -> None:
    """Under a known root the file is certain, changed or not."""
    root = ("/tmp/trial2/repo",)
    assert resolve_path("/tmp/trial2/repo/app.py", {"app.py"}, root) == "app.py"
    assert resolve_path("/tmp/trial2/repo/lib/app.py", {"app.py"}, root) == "lib/app.py"
    assert resolve_path("/tmp/trial2/repo/app.py", {"app.py"}, ("/tmp/trial2/repo/",)) == "app.py"


def test_a_root_is_a_whole_directory() -> None:
    """``/tmp/repo`` is not a prefix of ``/tmp/repository/...``."""
    assert resolve_path("/tmp/repository/x.py", {"y.py"}, ("/tmp/repo",)) == "/tmp/repository/x.py"


def test_absolute_path_ending_with_one_changed_path() -> None:
    """An unknown root (the worker's tree directory): the one changed path it ends with."""
    tree = "/tmp/council-trees/r1/tree"
    assert resolve_path(f"{tree}/src/app.py", {"src/app.py", "b.py"}) == "src/app.py"
    assert resolve_path(f"{tree}/app.py", {"app.py"}) == "app.py"


def test_absolute_suffix_is_on_a_segment_boundary() -> None:
    """``/x/myapp.py`` does not end with the changed ``app.py``."""
    assert resolve_path("/x/myapp.py", {"app.py"}) == "/x/myapp.py"


def test_ambiguous_absolute_path_is_left_unresolved() -> None:
    """Two changed files it could be (nested suffixes), or none of two: left as given."""
    assert resolve_path("/r/src/app.py", {"app.py", "src/app.py"}) == "/r/src/app.py"
    assert resolve_path("/abs/app.py", {"x/app.py", "y/app.py"}) == "/abs/app.py"


def test_relative_path_is_never_read_by_its_ending() -> None:
    """``vendor/app.py`` may be a real unchanged file: not mapped to the changed ``app.py``."""
    assert resolve_path("vendor/app.py", {"app.py"}) == "vendor/app.py"


def test_backslashes_only_when_they_name_a_changed_file() -> None:
    """``src\\app.py`` → ``src/app.py`` when that changed; otherwise kept as given."""
    assert resolve_path("src\\app.py", {"src/app.py"}) == "src/app.py"
    assert resolve_path("src\\other.py", {"src/app.py"}) == "src\\other.py"


def test_landing_tidies_what_did_not_come_through_the_harvest() -> None:
    """A hand-made ``./app.py`` anchor is read as ``app.py`` too."""
    assert resolve_path("./app.py", {"zzz.py"}) == "app.py"


def test_resolve_anchor_keeps_side_lines_and_witness() -> None:
    """Only the path changes; a change anchor and a resolved path come back as they were."""
    change = parse_diff(APP_DIFF)
    given = LineAnchor(path="b/app.py", side="new", line=5, start_line=3, witness="abc")
    assert resolve_anchor(given, change) == LineAnchor(
        path="app.py", side="new", line=5, start_line=3, witness="abc"
    )
    whole = ChangeAnchor(witness="abc")
    assert resolve_anchor(whole, change) is whole
    plain = FileAnchor(path="app.py")
    assert resolve_anchor(plain, change) is plain


def test_renamed_file_old_path_resolves_through_prefix() -> None:
    """``a/old.py`` on the old side of a rename reads as ``old.py`` and lands."""
    diff = (
        "diff --git a/old.py b/new.py\n"
        "similarity index 80%\n"
        "rename from old.py\n"
        "rename to new.py\n"
        "--- a/old.py\n"
        "+++ b/new.py\n"
        "@@ -1,2 +1,2 @@\n"
        " a\n"
        "-b\n"
        "+B\n"
    )
    landed = land(
        report(finding(1, LineAnchor(path="a/old.py", side="old", line=2))), parse_diff(diff)
    )
    assert landed.findings[0].anchor == LineAnchor(path="old.py", side="old", line=2)
    assert landed.off_diff == {}


def test_land_resolves_the_trial_paths() -> None:
    """The trial: ``./app.py:7``, the repository's absolute path, the worker's tree path."""
    change = parse_diff(APP_DIFF)
    findings = (
        finding(1, LineAnchor(path="./app.py", line=7)),
        finding(2, LineAnchor(path="/tmp/trial2/repo/app.py", line=4)),
        finding(3, FileAnchor(path="/var/tmp/council-trees/r1/tree/app.py")),
        finding(4, LineAnchor(path="/tmp/trial2/repo/lib/other.py", line=4)),
    )
    landed = land(report(*findings, repository="/tmp/trial2/repo"), change)
    assert [anchor_path(f.anchor) for f in landed.findings] == [
        "app.py",
        "app.py",
        "app.py",
        "lib/other.py",
    ]
    assert landed.off_diff == {4: "file-absent"}
    assert [f.id for f in landed.findings] == [1, 2, 3, 4]
    assert land(landed, change) == landed


def test_land_extra_roots() -> None:
    """``roots`` adds known tree directories: under one, the rest is the path, changed or not."""
    change = parse_diff(APP_DIFF)
    landed = land(report(finding(1, FileAnchor(path="/w/tree/lib/x.py"))), change, ("/w/tree",))
    assert landed.findings[0].anchor == FileAnchor(path="lib/x.py")


def anchor_path(anchor: ChangeAnchor | FileAnchor | LineAnchor) -> str | None:
    """The anchor's path (None for the change)."""
    return None if isinstance(anchor, ChangeAnchor) else anchor.path


# --- end to end: council review, embedded -----------------------------------------------


def test_cli_review_reports_the_relative_path(tmp_path: Path) -> None:
    """A replayed ``./app.py:7`` and ``<repo>/app.py:4``: landed, and ``app.py`` in the
    JSON report, the SARIF and the GitLab report."""
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(repo, {"app.py": "x = 1\n" + "".join(f"y{n} = {n}\n" for n in range(2, 9))}, "grow")
    dotted = {
        "subject": "dotted path",
        "label": "issue",
        "severity": "minor",
        "location": {"kind": "line", "file": "./app.py", "start": 7},
    }
    absolute = {
        "subject": "absolute path",
        "label": "issue",
        "severity": "minor",
        "location": {"kind": "line", "file": f"{repo}/app.py", "start": 4},
    }
    rp = roster(
        tmp_path, reviewer("rep", "replay", answer=answer(tmp_path, "a.json", dotted, absolute))
    )
    out, outputs = tmp_path / "report.json", tmp_path / "out"
    done = review(
        repo,
        tmp_path / "state.json",
        "--json",
        str(out),
        "--format",
        "sarif",
        "--format",
        "gitlab-codequality",
        "--output",
        str(outputs),
        roster_path=rp,
    )
    assert done.exit_code == 0, done.output
    data = report_of(out)
    assert [(f["anchor"]["path"], f["anchor"]["line"]) for f in data["findings"]] == [
        ("app.py", 7),
        ("app.py", 4),
    ]
    assert data["off_diff"] == {}
    sarif = json.loads((outputs / "council.sarif").read_text(encoding="utf-8"))
    uris = [
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for result in sarif["runs"][0]["results"]
        for loc in result["locations"]
    ]
    assert uris == ["app.py", "app.py"]
    gitlab = json.loads((outputs / "gl-code-quality-report.json").read_text(encoding="utf-8"))
    assert [entry["location"]["path"] for entry in gitlab] == ["app.py", "app.py"]


# --- consolidation: spellings of one place merge ----------------------------------------


def test_two_spellings_of_one_line_merge_into_one_finding() -> None:
    """``/repo/app.py:3`` from one reviewer and ``app.py:3`` from another are one place:
    with the change at hand the round reads the paths first, so they merge (agreement)
    and the filed finding carries ``app.py``."""

    def said(path: str) -> str:
        location = {"kind": "line", "path": path, "line": 3}
        entry = {"label": "issue", "subject": "y3 is unused", "location": location}
        return json.dumps({"findings": [entry]})

    people = [Participant(id="a", backend="replay"), Participant(id="b", backend="replay")]
    outcomes = {
        "a": harvest_outcome("a", "reviewer", ReviewResult(answer=said("/repo/app.py")), []),
        "b": harvest_outcome("b", "reviewer", ReviewResult(answer=said("app.py")), []),
    }
    facts = RoundFacts(run_id="r1", session="s1", repository="/repo")
    change = parse_diff(APP_DIFF)
    filed, _ = conclude_round(
        facts, people, outcomes, 1, status="settled", settled_ms=0, change=change
    )
    (only,) = filed
    assert isinstance(only.anchor, LineAnchor) and only.anchor.path == "app.py"
    assert only.raised_by == ("a", "b")
    unread, _ = conclude_round(facts, people, outcomes, 1, status="settled", settled_ms=0)
    assert len(unread) == 2  # without the change, the two spellings stay apart


def test_cli_two_reviewers_spelling_one_place_two_ways_agree(tmp_path: Path) -> None:
    """End to end: ``<repo>/app.py:4`` from one reviewer and ``app.py:4`` from another
    are one finding raised by both, filed as ``app.py``."""
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(repo, {"app.py": "x = 1\n" + "".join(f"y{n} = {n}\n" for n in range(2, 9))}, "grow")

    def unused(path: str) -> dict[str, object]:
        location = {"kind": "line", "file": path, "start": 4}
        return {"subject": "y4 is unused", "label": "issue", "location": location}

    rp = roster(
        tmp_path,
        reviewer("one", "replay", answer=answer(tmp_path, "1.json", unused(f"{repo}/app.py"))),
        reviewer("two", "replay", answer=answer(tmp_path, "2.json", unused("app.py"))),
    )
    out = tmp_path / "report.json"
    done = review(repo, tmp_path / "state.json", "--json", str(out), roster_path=rp)
    assert done.exit_code == 0, done.output
    (only,) = report_of(out)["findings"]
    assert only["anchor"]["path"] == "app.py"
    assert only["raised_by"] == ["one", "two"]
