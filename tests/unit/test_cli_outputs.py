"""``council review --format … --output DIR``: every format written, valid, for bad input too."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner, Result

from council.rendering import read_json
from tests.forge_cases import (
    CONTROLS_PATH,
    ESCAPED,
    EXTRA,
    HOSTILE,
    RAW,
    forge_strings,
    many_findings,
    report,
)
from tests.gitrepo import commit, git, new_repo
from tests.sandboxing import bwrap_or_skip
from workers.cli import main
from workers.cli.options import FILE_NAMES, FORMATS
from workers.cli.outputs import OutputPlan, write_outputs
from workers.forge.manifest import MANIFEST_NAME, read_outputs, sha256

SARIF_SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "sarif-schema-2.1.0.json"
"""The SARIF 2.1.0 schema, vendored with its notice (tests/schemas/NOTICE.md)."""
SCHEMA = json.loads(SARIF_SCHEMA.read_text())
SARIF = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)

ROSTER = (
    "[council]\nbackstop_ms = 60000\nidle_ms = 60000\n"
    '[[reviewers]]\nid = "rep"\nbackend = "replay"\nanswer = "answer.json"\n'
)

CAFE = "src/dir with space/café.py"
OLD = "old name.py"
NEW = "new näme.py"


def line(path: str, n: int, *, side: str = "new", end: int | None = None) -> dict[str, Any]:
    """A line location of a replayed finding."""
    loc: dict[str, Any] = {"kind": "line", "path": path, "line": n, "side": side}
    if end is not None:
        loc["end"] = end
    return loc


def found(subject: str, location: dict[str, Any], severity: str = "medium") -> dict[str, Any]:
    """A replayed finding."""
    return {"subject": subject, "label": "issue", "severity": severity, "location": location}


def review(tmp_path: Path, repo: Path, *args: str, findings: list[dict[str, Any]]) -> Result:
    """Run ``council review`` (embedded, roster beside the replay answer) on HEAD~1..HEAD."""
    (tmp_path / "answer.json").write_text(json.dumps({"findings": findings}), encoding="utf-8")
    (tmp_path / "roster.toml").write_text(ROSTER, encoding="utf-8")
    argv = ["review", "--repo", str(repo), "--base", "HEAD~1", "--no-progress"]
    argv += ["--roster", str(tmp_path / "roster.toml"), "--state", str(tmp_path / "state.json")]
    return CliRunner().invoke(main, [*argv, *args])


def every_format(out: Path) -> list[str]:
    """``--format X`` for every format, and ``--output out``."""
    args = [arg for name in FORMATS for arg in ("--format", name)]
    return [*args, "--output", str(out)]


def read_all(out: Path, *, schema: bool = True) -> dict[str, Any]:
    """Every output file read back and checked: SARIF against its schema (unless told
    not to: the 30,000-finding file takes seconds), JSON by council."""
    files = {name: (out / file).read_text(encoding="utf-8") for name, file in FILE_NAMES.items()}
    sarif = json.loads(files["sarif"])
    if schema:
        SARIF.validate(sarif)
    assert sarif["version"] == "2.1.0"
    gitlab = json.loads(files["gitlab-codequality"])
    assert isinstance(gitlab, list)
    for entry in gitlab:
        assert entry["location"]["path"] and entry["location"]["lines"]["begin"] >= 1
    checks = json.loads(files["github-checks"])
    assert checks["name"] == "council" and set(checks["output"]) >= {"title", "summary"}
    threads = json.loads(files["gitlab-discussions"])
    for thread in threads["discussions"]:
        position = thread["position"]
        assert position["new_path"] and position["old_path"]
        assert "new_line" in position or "old_line" in position
    return {
        "markdown": files["markdown"],
        "json": read_json(files["json"]),
        "sarif": sarif,
        "github": json.loads(files["github-review"]),
        "gitlab": gitlab,
        "checks": checks,
        "threads": threads,
    }


@pytest.fixture
def messy(tmp_path: Path) -> Path:
    """HEAD~1..HEAD renames a file with an edit, deletes one, edits a path with spaces and
    accents."""
    repo = new_repo(
        tmp_path / "repo",
        {OLD: "1\n2\n3\n4\n5\n6\n", "gone.py": "x\ny\nz\n", CAFE: "a\nb\nc\nd\ne\n"},
    )
    commit(
        repo,
        {OLD: None, NEW: "1\n2\n3\nfour\n5\n6\n", "gone.py": None, CAFE: "a\nB\nc\nd\ne\nf\n"},
        "messy",
    )
    return repo


def test_non_markdown_format_needs_output(tmp_path: Path, messy: Path) -> None:
    """--format sarif without --output: exit 2 saying so, before any run."""
    done = review(tmp_path, messy, "--format", "sarif", findings=[])
    assert done.exit_code == 2
    assert "--output DIR" in done.output and "council: run" not in done.output
    assert not (tmp_path / "state.json").exists()


def test_output_directory_is_created_and_names_the_files(tmp_path: Path, messy: Path) -> None:
    """--output DIR (missing) gets one file per format; stdout stays quiet; stderr lists them."""
    out = tmp_path / "deep" / "out"
    done = review(tmp_path, messy, *every_format(out), findings=[])
    assert done.exit_code == 0, done.output
    assert sorted(p.name for p in out.iterdir()) == sorted([*FILE_NAMES.values(), MANIFEST_NAME])
    assert done.stdout == ""
    assert "council.sarif" in done.stderr


def test_json_and_markdown_files_still_work(tmp_path: Path, messy: Path) -> None:
    """--json FILE and --markdown FILE alongside --output: all written."""
    out = tmp_path / "out"
    done = review(
        tmp_path,
        messy,
        "--json",
        str(tmp_path / "r.json"),
        "--markdown",
        str(tmp_path / "r.md"),
        "--format",
        "sarif",
        "--output",
        str(out),
        findings=[],
    )
    assert done.exit_code == 0, done.output
    assert read_json((tmp_path / "r.json").read_text()).findings == ()
    assert (tmp_path / "r.md").read_text().startswith("## ")
    assert (out / "council.sarif").exists() and not (out / "council.md").exists()


def test_spaces_unicode_renames_and_deletions(tmp_path: Path, messy: Path) -> None:
    """Findings on a path with spaces and accents, the old side of a renamed file, the
    old side of a deleted file, the deleted file as a whole and its absent new side:
    every format is valid and each finding is where the forge can take it (``--post
    all``: every finding a line comment can hold is one, not only the leading ones)."""
    findings = [
        found("naïve café 😀 check", line(CAFE, 2), "critical"),
        found("old four", line(OLD, 4, side="old")),
        found("removed block", line("gone.py", 1, side="old", end=3)),
        found("deleted new side", line("gone.py", 1)),
        found("whole deleted file", {"kind": "file", "path": "gone.py"}),
    ]
    out = tmp_path / "out"
    done = review(tmp_path, messy, *every_format(out), "--post", "all", findings=findings)
    assert done.exit_code == 1, done.output
    got = read_all(out)
    comments = {c["body"].split("**issue")[1][:40]: c for c in got["github"]["comments"]}
    by_subject = {k.split(":** ")[1].split("\n")[0]: v for k, v in comments.items()}
    assert by_subject["naïve café 😀 check"]["path"] == CAFE
    assert by_subject["old four"] == {**by_subject["old four"], "path": NEW, "side": "LEFT"}
    removed = by_subject["removed block"]
    assert (removed["path"], removed["side"], removed["start_line"]) == ("gone.py", "LEFT", 1)
    assert "deleted new side" in got["github"]["body"]
    assert "whole deleted file" in got["github"]["body"]
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for run in got["sarif"]["runs"]
        for r in run["results"]
    }
    assert "src/dir%20with%20space/caf%C3%A9.py" in uris
    assert {e["location"]["path"] for e in got["gitlab"]} == {CAFE, OLD, "gone.py"}
    assert got["json"].off_diff == {4: "file-absent"}
    assert "café" in got["markdown"]


def test_lone_surrogate_in_a_subject_still_writes_utf8(tmp_path: Path, messy: Path) -> None:
    """A reviewer's JSON escaping a lone surrogate: the files are still UTF-8 and parse."""
    (tmp_path / "answer.json").write_text(
        '{"findings": [{"subject": "bad \\ud800 text", "label": "note"}]}', encoding="utf-8"
    )
    out = tmp_path / "out"
    argv = ["review", "--repo", str(messy), "--base", "HEAD~1", "--no-progress"]
    (tmp_path / "roster.toml").write_text(ROSTER, encoding="utf-8")
    argv += ["--roster", str(tmp_path / "roster.toml"), "--state", str(tmp_path / "s.json")]
    done = CliRunner().invoke(main, [*argv, *every_format(out)])
    assert done.exit_code == 0, done.output
    assert read_all(out)["json"].findings[0].subject.startswith("bad ")


def test_zero_findings_every_format(tmp_path: Path, messy: Path) -> None:
    """No findings: an empty Code Quality array, no SARIF results, a COMMENT review."""
    out = tmp_path / "out"
    done = review(tmp_path, messy, *every_format(out), findings=[])
    assert done.exit_code == 0, done.output
    got = read_all(out)
    assert got["gitlab"] == []
    assert all(run["results"] == [] for run in got["sarif"]["runs"])
    assert got["github"]["event"] == "COMMENT" and got["github"]["comments"] == []
    assert "No findings." in got["markdown"]


def test_nothing_to_review_still_writes_the_files(tmp_path: Path, messy: Path) -> None:
    """An empty change with --output: exit 0, every file written from an empty report,
    whose header names the base and head commits and says no run was made."""
    out = tmp_path / "out"
    (tmp_path / "roster.toml").write_text(ROSTER, encoding="utf-8")
    argv = ["review", "--repo", str(messy), "--base", "HEAD", "--no-progress"]
    argv += ["--roster", str(tmp_path / "roster.toml"), "--state", str(tmp_path / "s.json")]
    done = CliRunner().invoke(main, [*argv, *every_format(out)])
    assert done.exit_code == 0, done.output
    got = read_all(out)
    assert got["json"].findings == () and "passed" in got["markdown"].splitlines()[0]
    assert any("nothing to review" in n for n in got["json"].notes)
    sha = git(messy, "rev-parse", "HEAD")[:12]
    assert got["json"].base.startswith(sha) and got["json"].head.startswith(sha)
    assert f"`{sha}`..`{sha}` · no run · session" in got["markdown"]


def test_thirty_thousand_findings_write_valid_files(tmp_path: Path) -> None:
    """30,000 findings: every file written in seconds, each valid; SARIF's cut is said."""
    rep = report(*many_findings(30_000))
    written = write_outputs(
        rep.gated(fail_on="critical", quorum=1), OutputPlan(FORMATS, tmp_path), change=None
    )
    got = read_all(tmp_path, schema=False)
    assert len(got["json"].findings) == 30_000
    assert len(got["gitlab"]) == 30_000
    kept = sum(len(run["results"]) for run in got["sarif"]["runs"])
    assert 0 < kept < 30_000
    assert written.messages and "cut" in written.messages[0]
    assert len(got["github"]["comments"]) <= 50


def test_the_manifest_names_the_run_the_head_and_every_file(tmp_path: Path, messy: Path) -> None:
    """council-run.json: the run id and head of the report, each file's SHA-256; it
    reads back for that head."""
    out = tmp_path / "out"
    done = review(tmp_path, messy, *every_format(out), findings=[])
    assert done.exit_code == 0, done.output
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    parsed = read_json((out / "council.json").read_text())
    assert manifest["run_id"] == parsed.run_id and manifest["head"] == parsed.head
    assert sorted(manifest["files"]) == sorted(FILE_NAMES.values())
    for name, digest in manifest["files"].items():
        assert sha256((out / name).read_bytes()) == digest
    assert read_outputs(out, parsed.head).run_id == parsed.run_id


def test_a_directory_it_did_not_write_is_refused(tmp_path: Path, messy: Path) -> None:
    """--output naming a directory that holds someone's files (a pull request's own
    council-out/): exit 2 naming it, before any run; the files are left alone."""
    out = tmp_path / "council-out"
    out.mkdir()
    (out / "github-review.json").write_text('{"body": "✅ passed", "event": "COMMENT"}')
    done = review(tmp_path, messy, *every_format(out), findings=[])
    assert done.exit_code == 2, done.output
    assert str(out) in done.output and "github-review.json" in done.output
    assert "council: run" not in done.output
    assert sorted(p.name for p in out.iterdir()) == ["github-review.json"]


def test_a_forged_manifest_beside_a_stranger_is_refused(tmp_path: Path, messy: Path) -> None:
    """A manifest listing some files does not vouch for one it does not list."""
    out = tmp_path / "out"
    assert (
        review(tmp_path, messy, "--format", "json", "--output", str(out), findings=[]).exit_code
        == 0
    )
    (out / "exit-code").write_text("0\n")
    done = review(tmp_path, messy, "--format", "json", "--output", str(out), findings=[])
    assert done.exit_code == 2 and "exit-code" in done.output


def test_an_earlier_runs_outputs_are_replaced(tmp_path: Path, messy: Path) -> None:
    """Reviewing again into the same directory: the earlier run's files are removed
    first, so a format not asked for again does not linger beside the new manifest."""
    out = tmp_path / "out"
    first = review(
        tmp_path, messy, "--format", "sarif", "--format", "json", "--output", str(out), findings=[]
    )
    assert first.exit_code == 0, first.output
    again = review(tmp_path, messy, "--format", "json", "--output", str(out), findings=[])
    assert again.exit_code == 0, again.output
    assert sorted(p.name for p in out.iterdir()) == ["council-run.json", "council.json"]
    assert "removed the earlier outputs" in again.stderr


def test_a_symlinked_output_directory_is_refused(tmp_path: Path, messy: Path) -> None:
    """--output a symbolic link (a pull request can commit one): exit 2."""
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out").symlink_to(tmp_path / "elsewhere")
    done = review(
        tmp_path, messy, "--format", "json", "--output", str(tmp_path / "out"), findings=[]
    )
    assert done.exit_code == 2 and "symbolic link" in done.output


def test_nothing_to_review_names_the_head(tmp_path: Path, messy: Path) -> None:
    """An empty change: the empty report's outputs still name the head, so CI can
    publish them for it."""
    out = tmp_path / "out"
    (tmp_path / "roster.toml").write_text(ROSTER, encoding="utf-8")
    argv = ["review", "--repo", str(messy), "--base", "HEAD", "--no-progress"]
    argv += ["--roster", str(tmp_path / "roster.toml"), "--state", str(tmp_path / "s.json")]
    done = CliRunner().invoke(main, [*argv, "--format", "json", "--output", str(out)])
    assert done.exit_code == 0, done.output
    head = subprocess.run(
        ["git", "-C", str(messy), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert json.loads((out / MANIFEST_NAME).read_text())["head"] == head
    assert read_json((out / "council.json").read_text()).head == head


def test_an_unreadable_manifest_vouches_for_nothing(tmp_path: Path, messy: Path) -> None:
    """A council-run.json that is not JSON: the directory is refused, naming it."""
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST_NAME).write_text("{not json")
    done = review(tmp_path, messy, "--format", "json", "--output", str(out), findings=[])
    assert done.exit_code == 2 and MANIFEST_NAME in done.output


def test_control_characters_reach_no_written_file(tmp_path: Path) -> None:
    """A finding whose subject and discussion hold escape, right-to-left override, isolate,
    NUL and CSI (as a bandit B105 message echoes a literal), on a file whose name holds
    them: no file written (manifest too) nor stdout/stderr holds one raw, what a forge
    shows holds their escapes, and the comment and thread still name the file."""
    repo = new_repo(tmp_path / "repo", {CONTROLS_PATH: "x = 1\n"})
    commit(repo, {CONTROLS_PATH: "x = 2\npassword = 'hunter2'\n"}, "hostile")
    hostile = found(f"B105: Possible hardcoded password: '{HOSTILE}'", line(CONTROLS_PATH, 2))
    hostile["discussion"] = f"It echoes\n\t'{HOSTILE}'{EXTRA}\nfrom the change."
    out = tmp_path / "out"
    done = review(
        tmp_path,
        repo,
        *every_format(out),
        "--fail-on",
        "critical",
        "--post",
        "all",
        findings=[hostile],
    )
    assert done.exit_code == 0, done.output
    files = {p.name: p.read_text(encoding="utf-8") for p in out.iterdir()}
    assert set(files) == {*FILE_NAMES.values(), MANIFEST_NAME}
    for name, text in [*files.items(), ("stdout", done.stdout), ("stderr", done.stderr)]:
        assert [c for c in RAW if c in text] == [], name
    for name in (FILE_NAMES[f] for f in FORMATS if f not in ("markdown", "json")):
        shown, kept = forge_strings(files[name])
        assert [t for t in shown if any(c in t for c in RAW)] == [], name
        assert all(e in "\n".join(shown) for e in ESCAPED), name
        assert kept <= {CONTROLS_PATH}, name
    got = read_all(out)
    assert [c["path"] for c in got["github"]["comments"]] == [CONTROLS_PATH]
    assert [t["position"]["new_path"] for t in got["threads"]["discussions"]] == [CONTROLS_PATH]
    assert got["json"].findings[0].subject.endswith(f"'{HOSTILE}'")
    assert all(e in got["markdown"] for e in ESCAPED)


def test_bandit_echoing_a_hostile_literal_writes_it_escaped(tmp_path: Path) -> None:
    """The real bandit (B105) on a change whose password literal holds escape, override,
    isolate and CSI: its message echoes the literal, and no file written holds one of
    them raw; the line comment and the annotation show the escapes (the comment, being
    Markdown, also escapes the ``[``)."""
    bwrap_or_skip()
    roster = ROSTER.split("[[reviewers]]")[0] + (
        '[[reviewers]]\nid = "bandit"\nbackend = "sarif"\nprogram = "bandit"\n'
        'args = ["-r", ".", "-f", "sarif", "--exit-zero", "-q"]\n'
    )
    repo = new_repo(tmp_path / "repo", {"council.toml": roster, "app.py": "x = 1\n"})
    literal = "\x1b[31m\u202e\u2066\x9bnimda"
    commit(repo, {"app.py": f"x = 2\npassword = '{literal}'\n"}, "hostile")
    out = tmp_path / "out"
    argv = ["review", "--repo", str(repo), "--base", "HEAD~1", "--no-progress"]
    argv += ["--state", str(tmp_path / "state.json"), *every_format(out), "--post", "all"]
    done = CliRunner().invoke(main, argv)
    assert done.exit_code == 1, done.output
    for file in out.iterdir():
        text = file.read_text(encoding="utf-8")
        assert [c for c in RAW if c in text] == [], file.name
    shown = "\\x1b[31m\\u202e\\u2066\\x9bnimda"
    got = read_all(out)
    (comment,) = [c for c in got["github"]["comments"] if "B105" in c["body"]]
    assert shown.replace("[", "\\[") in comment["body"]  # Markdown: `\[` renders as `[`
    (note,) = [a for a in got["checks"]["output"]["annotations"] if "B105" in a["title"]]
    assert shown in note["title"] and shown in note["message"]
