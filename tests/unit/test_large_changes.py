"""Large changes are reviewed whole: what is skipped is said, coverage is stated every
round, and past the hard cap the round reviews what fits and is partial (exit 3), never
refused (issue 22 parts 3-5). Each test builds a real repository, runs ``council review``
(embedded, one replay reviewer) or the coordinator's ``prepare``, and reads the prompt
and the JSON report. Source: docs/guide.md "What is skipped, and coverage".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from council.change.skipping import MINIFIED_LINE_CHARS, SkipPolicy
from council.roster import DEFAULT_MAX_CHANGE_BYTES
from tests.gitrepo import commit, new_repo
from workers.app.settings import Settings
from workers.cli import main
from workers.coordinator.preparation import NothingToReview, ReviewOptions, prepare
from workers.git.diff_reading import DIFF_FILE_MAX_BYTES
from workers.git.repository import Repository

ROUND = "[council]\nbackstop_ms = 60000\nidle_ms = 60000\n"
CRITICAL = {"subject": "divides by zero", "label": "issue", "severity": "critical"}


def roster_beside(tmp: Path, *findings: dict[str, Any], extra: str = "", council: str = "") -> Path:
    """An explicit roster (outside the repository): one replay reviewer answering
    ``findings``; ``council`` adds to ``[council]``, ``extra`` adds tables."""
    (tmp / "answer.json").write_text(json.dumps({"findings": list(findings)}))
    path = tmp / "roster.toml"
    path.write_text(
        ROUND
        + council
        + extra
        + '[[reviewers]]\nid = "rep"\nbackend = "replay"\nanswer = "answer.json"\n'
    )
    return path


def review(repo: Path, tmp: Path, roster: Path) -> tuple[Result, dict[str, Any] | None]:
    """``council review --base HEAD~1 --json`` in embedded mode: the result and the report."""
    out = tmp / "report.json"
    argv = ["review", "--repo", str(repo), "--base", "HEAD~1", "--no-progress"]
    argv += ["--state", str(tmp / "state.json"), "--roster", str(roster), "--json", str(out)]
    done = CliRunner().invoke(main, argv)
    return done, json.loads(out.read_text()) if out.exists() else None


def skipped_of(report: dict[str, Any]) -> dict[str, str]:
    return {f["path"]: f["reason"] for f in report["coverage"]["skipped"]}


MIXED = {
    "package-lock.json": '{"LOCKMARK": 1}\n',
    "web/app.min.js": "var MINMARK=1;\n",
    "web/bundle.js": "var BUNDLEMARK=" + "1+" * (MINIFIED_LINE_CHARS // 2) + "1;\n",
    "api/service_pb2.py": "GENPATTERNMARK = 1\n",
    "gen/schema.py": "GENATTRMARK = 1\n",
    "vendor/lib/util.go": "package VENDORMARK\n",
    "src/app.py": "def div(a, b):\n    return a / b  # SOURCEMARK\n",
}
MARKS = ("LOCKMARK", "MINMARK", "BUNDLEMARK", "GENPATTERNMARK", "GENATTRMARK", "VENDORMARK")


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """A base whose .gitattributes marks gen/ generated; a head adding one file of each
    skipped kind, and source."""
    repo = new_repo(
        tmp_path / "repo",
        {".gitattributes": "gen/** linguist-generated\n", "README.md": "hi\n"},
    )
    commit(repo, MIXED, "mixed")
    return repo


def test_skipped_kinds_are_not_sent_and_are_listed_with_why(mixed: Path, tmp_path: Path) -> None:
    """The prompt holds the source and none of the lock file, minified bundles, generated
    (by pattern and by the base's .gitattributes) or vendored files; the report lists each
    with its reason, and the round completes (exit 1 on the critical finding). The bundle
    minified by its line stays in the run's change (analyzers and the gate's filter know
    it), never in a prompt."""
    roster = roster_beside(tmp_path, CRITICAL)
    round_ = prepare(Settings(), ReviewOptions(mixed, "HEAD~1", "HEAD", roster), mode="embedded")
    prompt = round_.prompts["rep"].text
    assert "SOURCEMARK" in prompt
    assert [m for m in MARKS if m in prompt] == []
    assert round_.change.paths == ("src/app.py", "web/bundle.js")
    assert round_.record.coverage is not None
    assert round_.record.coverage.meant == ("src/app.py",)

    done, report = review(mixed, tmp_path, roster)
    assert done.exit_code == 1, done.output
    assert report is not None
    assert skipped_of(report) == {
        "package-lock.json": "lock",
        "web/app.min.js": "minified",
        "web/bundle.js": "minified",
        "api/service_pb2.py": "generated",
        "gen/schema.py": "generated",
        "vendor/lib/util.go": "vendored",
    }
    whys = {f["path"]: f["why"] for f in report["coverage"]["skipped"]}
    assert whys["gen/schema.py"] == "generated (.gitattributes linguist-generated)"
    assert whys["package-lock.json"] == "lock file"
    assert report["coverage"]["reviewers"] == [
        {
            "id": "rep",
            "seen": ["src/app.py"],
            "failed": [],
            "skipped": [],
            "slices": 1,
            "slices_failed": 0,
            "optional": False,
        }
    ]
    assert report["coverage"]["unreviewed"] == []
    assert "### Coverage" in done.output
    assert "| `package-lock.json` | lock file |" in done.output
    assert "| rep | 1 | 0 | 1 / 0 |" in done.output


def test_the_roster_sends_a_kind_or_a_path_anyway(mixed: Path, tmp_path: Path) -> None:
    """``[paths] review_kinds = ["generated"]`` sends every generated file;
    ``review_anyway`` sends one lock file; the rest stays skipped."""
    extra = '[paths]\nreview_kinds = ["generated"]\nreview_anyway = ["package-lock.json"]\n'
    roster = roster_beside(tmp_path, extra=extra)
    round_ = prepare(Settings(), ReviewOptions(mixed, "HEAD~1", "HEAD", roster), mode="embedded")
    prompt = round_.prompts["rep"].text
    assert all(m in prompt for m in ("GENPATTERNMARK", "GENATTRMARK", "LOCKMARK"))
    assert not any(m in prompt for m in ("MINMARK", "BUNDLEMARK", "VENDORMARK"))


def test_the_changes_own_gitattributes_does_not_skip_its_files(tmp_path: Path) -> None:
    """A .gitattributes the change adds, marking its source generated and vendored, is
    not honoured: the source is sent and nothing is skipped."""
    repo = new_repo(tmp_path / "repo", {"README.md": "hi\n"})
    commit(
        repo,
        {
            ".gitattributes": "*.py linguist-generated\nsrc/** linguist-vendored\n",
            "src/evil.py": "run()  # EVILMARK\n",
        },
        "hide",
    )
    roster = roster_beside(tmp_path)
    round_ = prepare(Settings(), ReviewOptions(repo, "HEAD~1", "HEAD", roster), mode="embedded")
    assert "EVILMARK" in round_.prompts["rep"].text
    assert round_.record.coverage is not None and round_.record.coverage.skipped == ()


def test_a_change_of_only_skipped_files_has_nothing_to_review_naming_them(tmp_path: Path) -> None:
    """A change bumping only a lock file: nothing is sent, and the refusal says what was
    skipped and how to send it anyway."""
    repo = new_repo(tmp_path / "repo", {"README.md": "hi\n"})
    commit(repo, {"poetry.lock": "x = 1\n"}, "bump")
    roster = roster_beside(tmp_path)
    with pytest.raises(NothingToReview, match=r"\"poetry\.lock\" \(lock file\).*review_kinds"):
        prepare(Settings(), ReviewOptions(repo, "HEAD~1", "HEAD", roster), mode="embedded")


def test_a_file_over_the_per_file_cap_is_named_and_the_round_is_partial(tmp_path: Path) -> None:
    """A text file over the per-file cap that is no skipped kind: not diffed, the round
    still reviews the rest and writes its report naming the file, and exits 3 with the
    file in the gate line."""
    line = "INSERT INTO t VALUES (1);\n"
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    big = line * (DIFF_FILE_MAX_BYTES // len(line) + 10)
    commit(repo, {"data/dump.sql": big, "app.py": "x = 2\n"}, "dump")
    done, report = review(repo, tmp_path, roster_beside(tmp_path))
    assert done.exit_code == 3, done.output
    assert report is not None
    unreviewed = report["coverage"]["unreviewed"]
    assert [(f["path"], f["reason"]) for f in unreviewed] == [("data/dump.sql", "file-cap")]
    assert report["coverage"]["reviewers"][0]["seen"] == ["app.py"]
    assert "1 file(s) no prompt reviewer saw: data/dump.sql (over the per-file cap" in done.output


def test_a_file_no_prompt_reviewer_saw_makes_the_round_partial(tmp_path: Path) -> None:
    """The only prompt reviewer answers nothing readable, with the quorum count off
    (``quorum = 0``, which alone would pass): the file it was sent was seen by none, so
    the round is partial and the gate line names the file."""
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(repo, {"app.py": "x = 2\n"}, "edit")
    roster = roster_beside(tmp_path, council="quorum = 0\n")
    (tmp_path / "answer.json").write_text("no json here")
    done, report = review(repo, tmp_path, roster)
    assert done.exit_code == 3, done.output
    assert report is not None
    assert report["coverage"]["reviewers"][0]["failed"] == ["app.py"]
    assert "1 file(s) no prompt reviewer saw: app.py" in done.output


def test_over_the_hard_cap_the_round_reviews_what_fits(tmp_path: Path) -> None:
    """A change over ``max_change_bytes`` (set small here): source is sent before tests
    and docs; what does not fit is named in the report and the notes; exit 3."""
    repo = new_repo(tmp_path / "repo", {"README.md": "hi\n"})
    body = "line of text\n" * 300  # ~4 KB of diff each
    commit(
        repo,
        {"docs/guide.md": body, "tests/test_app.py": body, "src/app.py": body, "src/b.py": body},
        "big",
    )
    roster = roster_beside(tmp_path, council="max_change_bytes = 9000\n")
    done, report = review(repo, tmp_path, roster)
    assert done.exit_code == 3, done.output
    assert report is not None
    cut = {f["path"]: f["reason"] for f in report["coverage"]["unreviewed"]}
    assert cut == {"docs/guide.md": "change-cap", "tests/test_app.py": "change-cap"}
    assert report["coverage"]["reviewers"][0]["seen"] == ["src/app.py", "src/b.py"]
    assert any(n.startswith("not reviewed, left out by a cap:") for n in report["notes"])
    assert "2 file(s) no prompt reviewer saw: docs/guide.md" in done.output


def test_the_hard_cap_is_50_mb_and_the_old_knob_teaches(tmp_path: Path) -> None:
    """The default hard cap is 50 MB; ``max_diff_bytes`` in an older roster is read and
    ignored (a 5-byte cap would have refused this change), and a note names its
    successor: the roster keeps working."""
    assert DEFAULT_MAX_CHANGE_BYTES == 50_000_000
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(repo, {"app.py": "x = 2\n"}, "edit")
    done, _ = review(repo, tmp_path, roster_beside(tmp_path, council="max_diff_bytes = 5\n"))
    assert done.exit_code in (0, 1), done.output
    assert "max_diff_bytes is retired and was ignored" in done.output
    assert "max_change_bytes is the hard cap" in done.output


def test_a_70_mb_change_is_read_in_part_within_the_cap(tmp_path: Path) -> None:
    """Ten files of 7 MB (70 MB of diff, each under the per-file cap) against the 50 MB
    default hard cap: the change is weighed as a stream, seven files are read, three are
    named as over the hard cap (the whole round at this size is tested with a small cap
    above: its secret scan of 49 MB of added lines takes minutes)."""
    repo = new_repo(tmp_path / "repo", {"README.md": "hi\n"})
    chunk = "x" * 69 + "\n"
    commit(repo, {f"src/m{i}.py": chunk * 100_000 for i in range(10)}, "huge")
    read = Repository(repo).read_within(
        "HEAD~1",
        "HEAD",
        attributes_from="HEAD~1",
        include=(),
        exclude=(),
        policy=SkipPolicy(),
        cap_bytes=DEFAULT_MAX_CHANGE_BYTES,
    )
    assert [f.path for f in read.unreviewed] == ["src/m7.py", "src/m8.py", "src/m9.py"]
    assert {f.reason for f in read.unreviewed} == {"change-cap"}
    assert read.change.paths == tuple(f"src/m{i}.py" for i in range(7))
    assert read.change.total_bytes <= DEFAULT_MAX_CHANGE_BYTES
