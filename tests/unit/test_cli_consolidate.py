"""council consolidate [NAME=]FILE…: several sources, one report, no model, no Redis."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from workers.cli import consolidate
from workers.cli.group import main

HAWK = {
    "findings": [
        {
            "subject": "`parse_limit` divides by zero when `page_size` is 0",
            "discussion": "The division in parse_limit has no guard.",
            "label": "issue",
            "severity": "critical",
            "location": {"kind": "line", "file": "app.py", "start": 11, "end": 12},
        }
    ]
}
OWL_TEXT = "My review:\n" + json.dumps(
    {
        "findings": [
            {
                "subject": "ZeroDivisionError in parse_limit for an empty page_size",
                "discussion": "page_size 0 makes parse_limit divide by zero and crash.",
                "label": "issue",
                "location": {"kind": "line", "file": "app.py", "start": 12, "end": 14},
            },
            {
                "subject": "Token compared with ==",
                "label": "issue",
                "location": {"kind": "line", "file": "auth.py", "start": 3},
            },
        ]
    }
)
SARIF = {
    "version": "2.1.0",
    "runs": [
        {
            "tool": {"driver": {"name": "ruff"}},
            "results": [
                {
                    "ruleId": "S105",
                    "message": {"text": "check_token compares the token with == (timing)"},
                    "locations": [
                        {
                            "physicalLocation": {
                                "artifactLocation": {"uri": "auth.py"},
                                "region": {"startLine": 3},
                            }
                        }
                    ],
                }
            ],
        }
    ],
}


def _files(tmp_path: Path) -> list[str]:
    (tmp_path / "hawk.json").write_text(json.dumps(HAWK), encoding="utf-8")
    (tmp_path / "owl.txt").write_text(OWL_TEXT, encoding="utf-8")
    (tmp_path / "tool.sarif").write_text(json.dumps(SARIF), encoding="utf-8")
    return [str(tmp_path / n) for n in ("hawk.json", "owl.txt", "tool.sarif")]


def _run(*args: str) -> Any:
    return CliRunner().invoke(main, ["consolidate", *args])


def test_three_kinds_of_source_one_report(tmp_path: Path) -> None:
    """An answer, an answer in prose, a SARIF log: one finding per problem, k of n; the
    critical one gates, as council review's default --fail-on has it."""
    out = tmp_path / "merged.json"
    done = _run(*_files(tmp_path), "--json", str(out))
    assert done.exit_code == 1, done.output
    assert "raised by hawk, owl (2 of 3)" in done.stdout
    assert "raised by owl, ruff (2 of 3)" in done.stdout
    report = json.loads(out.read_text(encoding="utf-8"))
    assert [p["id"] for p in report["participants"]] == ["hawk", "owl", "ruff"]
    first, second = report["findings"]
    assert [m["participant"] for m in first["members"]] == ["hawk", "owl"]
    assert second["agreement"] == {"k": 2, "n": 3}


def test_an_analyzers_line_finding_never_merges_with_a_file_level_telling(
    tmp_path: Path,
) -> None:
    """ruff's result on auth.py line 3 and a model's telling about auth.py as a whole say
    the same words, but a program's finding merges only on its own lines: two findings."""
    owl = json.loads(OWL_TEXT.split("\n", 1)[1])
    owl["findings"][1]["location"] = {"kind": "file", "file": "auth.py"}
    files = _files(tmp_path)
    (tmp_path / "owl.txt").write_text(json.dumps(owl), encoding="utf-8")
    out = tmp_path / "merged.json"
    assert _run(*files, "--fail-on", "never", "--json", str(out)).exit_code == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    tokens = [f for f in report["findings"] if "token" in f["subject"].casefold()]
    assert len(tokens) == 2 and not any(f.get("members") for f in tokens)


def test_an_answers_findings_are_model_tellings_beside_a_sarif_log(tmp_path: Path) -> None:
    """hawk is given an answer and a SARIF log (last, so its participant reads as sarif):
    only the log's results are a program's; the answer's division finding (lines 11-12)
    still merges with owl's telling two lines lower, as two models' tellings do (a
    program's would need overlapping lines)."""
    files = _files(tmp_path)
    owl = json.loads(OWL_TEXT.split("\n", 1)[1])
    owl["findings"][0]["location"] = {"kind": "line", "file": "app.py", "start": 14}
    (tmp_path / "owl.txt").write_text(json.dumps(owl), encoding="utf-8")
    out = tmp_path / "merged.json"
    args = [f"hawk={files[0]}", f"hawk={files[2]}", f"owl={files[1]}", "--json", str(out)]
    assert _run(*args, "--fail-on", "never").exit_code == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert [p["backend"] for p in report["participants"]] == ["sarif", "answer"]
    division = next(f for f in report["findings"] if "divides" in f["subject"])
    assert division["raised_by"] == ["hawk", "owl"]
    token = next(f for f in report["findings"] if "token" in f["subject"].casefold())
    assert token["raised_by"] == ["hawk", "owl"]  # ruff's S105 and owl's, on one line


def test_names_a_report_and_a_harvest_read_back(tmp_path: Path) -> None:
    """A consolidated report read back gives each member's telling again; NAME= names a
    source; a Harvest JSON is one reviewer named by its stem."""
    out = tmp_path / "merged.json"
    assert _run(*_files(tmp_path), "--json", str(out)).exit_code == 1
    harvest = tmp_path / "lynx.json"
    harvest.write_text(
        json.dumps({"findings": [], "warnings": [], "truncated": False}), encoding="utf-8"
    )
    again = tmp_path / "again.json"
    done = _run(str(out), f"bat={tmp_path / 'hawk.json'}", str(harvest), "--json", str(again))
    assert done.exit_code == 1, done.output
    report = json.loads(again.read_text(encoding="utf-8"))
    assert [p["id"] for p in report["participants"]] == ["hawk", "owl", "ruff", "bat", "lynx"]
    assert report["findings"][0]["raised_by"] == ["hawk", "owl", "bat"]
    assert report["findings"][0]["agreement"] == {"k": 3, "n": 5}


def test_the_same_every_run_and_other_formats(tmp_path: Path) -> None:
    """Deterministic; --format sarif into --output; --fail-on gates; a bad file exits 2."""
    files = _files(tmp_path)
    a = _run(*files)
    b = _run(*files)
    assert a.stdout == b.stdout
    outdir = tmp_path / "out"
    done = _run(
        *files, "--format", "sarif", "--format", "gitlab-codequality", "--output", str(outdir)
    )
    assert done.exit_code == 1, done.output
    sarif = json.loads((outdir / "council.sarif").read_text(encoding="utf-8"))
    results = [r for run in sarif["runs"] for r in run["results"]]
    assert len(results) == 2 and results[0]["properties"]["agreement"] == {"k": 2, "n": 3}
    assert _run(*files, "--fail-on", "critical").exit_code == 1
    assert _run(*files, "--fail-on", "critical", "--min-agreement", "3").exit_code == 0
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 99, "participants": []}', encoding="utf-8")
    refused = _run(str(bad))
    assert refused.exit_code == 2 and "bad.json" in refused.output
    assert _run(str(tmp_path / "missing.json")).exit_code == 2


def _suppressed_report(tmp_path: Path) -> Path:
    """hawk's council report: its division finding baselined there, its token finding open."""
    from council.model.findings import Finding, LineAnchor, Origin
    from council.model.report import CouncilReport, ParticipantSummary, Suppression
    from council.rendering.jsonreport import render_json

    origin = Origin(kind="reviewer", run_id="r1", participant="hawk")
    findings = (
        Finding(
            id=1,
            anchor=LineAnchor(path="app.py", line=12, start_line=11),
            label="issue",
            subject="`parse_limit` divides by zero when `page_size` is 0",
            severity="critical",
            origin=origin,
        ),
        Finding(
            id=2,
            anchor=LineAnchor(path="auth.py", line=3),
            label="issue",
            subject="check_token compares the token with == (timing)",
            severity="medium",
            origin=origin,
        ),
    )
    report = CouncilReport(
        run_id="r1",
        session="s",
        status="settled",
        participants=(ParticipantSummary(id="hawk", backend="replay", state="answered"),),
        findings=findings,
        suppressed={1: Suppression(source="baseline", reason="known since 2025")},
    )
    path = tmp_path / "hawk-report.json"
    path.write_text(render_json(report), encoding="utf-8")
    return path


def test_a_reports_suppressed_finding_stays_suppressed(tmp_path: Path) -> None:
    """A finding a source report baselined is listed, suppressed, and does not gate; the
    same problem raised by another source without a suppression is open again and gates."""
    source = _suppressed_report(tmp_path)
    out = tmp_path / "merged.json"
    alone = _run(str(source), "--fail-on", "critical", "--json", str(out))
    assert alone.exit_code == 0, alone.output
    report = json.loads(out.read_text(encoding="utf-8"))
    division = next(f for f in report["findings"] if "divides" in f["subject"])
    token = next(f for f in report["findings"] if "token" in f["subject"])
    assert report["suppressed"][str(division["id"])]["source"] == "baseline"
    assert str(token["id"]) not in report["suppressed"]
    assert _run(str(source), "--fail-on", "medium").exit_code == 1

    (tmp_path / "owl.json").write_text(json.dumps(json.loads(OWL_TEXT.split("\n", 1)[1])))
    both = _run(
        str(source), str(tmp_path / "owl.json"), "--fail-on", "critical", "--json", str(out)
    )
    assert both.exit_code == 1, both.output
    merged = json.loads(out.read_text(encoding="utf-8"))
    division = next(f for f in merged["findings"] if "divides" in f["subject"])
    assert division["raised_by"] == ["hawk", "owl"]
    assert str(division["id"]) not in merged["suppressed"]


def _write(path: Path, data: object) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


def test_a_source_not_read_whole_makes_the_merge_incomplete(tmp_path: Path) -> None:
    """Prose with no findings list, an answer cut off mid-entry and a truncated Harvest
    JSON each leave their reviewer not heard in full: exit 3, never a green gate."""
    hawk = _write(tmp_path / "hawk.json", HAWK)
    prose = _write(tmp_path / "junk.txt", "I could not finish the review")
    cut = _write(tmp_path / "cut.json", '{"findings": [{"label": "issue", "subject": "RCE", "sev')
    truncated = _write(tmp_path / "lynx.json", {"findings": [], "warnings": [], "truncated": True})
    for source, code in ((prose, "no-json"), (cut, "cut-off"), (truncated, "cut-off")):
        out = tmp_path / "merged.json"
        done = _run(hawk, source, "--fail-on", "never", "--json", str(out))
        assert done.exit_code == 3, (source, done.output)
        assert "**Incomplete:**" in done.output
        report = json.loads(out.read_text(encoding="utf-8"))
        assert report["status"] == "partial"
        last = report["participants"][-1]
        assert code in (last.get("unread"), last.get("read_in_part")), last
    assert _run(hawk, "--fail-on", "never").exit_code == 0


def test_sarif_results_are_never_dropped_unsaid(tmp_path: Path) -> None:
    """A result with no location is a finding about the whole change (and gates); a
    result that is not an object is a warning; a run that says it failed is not heard
    in full (exit 3)."""
    run = {
        "tool": {"driver": {"name": "lint"}},
        "results": [
            {"ruleId": "X1", "level": "error", "message": {"text": "secret key committed"}},
            {"ruleId": "X2", "level": "error", "message": {"text": "bad"}, "locations": {}},
            5,
        ],
    }
    log = _write(tmp_path / "lint.sarif", {"version": "2.1.0", "runs": [run]})
    out = tmp_path / "merged.json"
    done = _run(log, "--json", str(out))
    assert done.exit_code == 1, done.output
    report = json.loads(out.read_text(encoding="utf-8"))
    assert sorted(f["subject"] for f in report["findings"]) == [
        "X1: secret key committed",
        "X2: bad",
    ]
    assert all(f["anchor"]["kind"] == "change" for f in report["findings"])
    assert [w["code"] for w in report["warnings"]] == ["not-an-object"]
    failed = {**run, "invocations": [{"executionSuccessful": False}]}
    broken = _write(tmp_path / "broken.sarif", {"version": "2.1.0", "runs": [failed]})
    assert _run(broken, "--fail-on", "never").exit_code == 3


def test_files_that_cannot_be_sources_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A FIFO (it would block), a file over the size cap, JSON nested past any reader's
    depth: a clear exit, never a hang or a traceback."""
    fifo = tmp_path / "f.fifo"
    os.mkfifo(fifo)
    refused = _run(str(fifo))
    assert refused.exit_code == 2 and "not a regular file" in refused.output
    big = _write(tmp_path / "big.json", HAWK)
    monkeypatch.setattr(consolidate, "SOURCE_MAX_BYTES", 64)
    over = _run(big)
    assert over.exit_code == 2 and "the most read of one source" in over.output
    monkeypatch.undo()
    deep = _write(tmp_path / "deep.json", "[" * 5000 + "]" * 5000)
    nested = _run(deep)
    assert nested.exit_code == 3, nested.output
    assert "no-json" in nested.output and "Traceback" not in nested.output


def test_two_reviewers_are_never_fused_by_accident(tmp_path: Path) -> None:
    """Two files of one stem are refused until named; the same file twice is refused;
    a --min-agreement no finding could reach is refused."""
    one = _write(tmp_path / "m1" / "answer.json", HAWK)
    two = _write(tmp_path / "m2" / "answer.json", HAWK)
    clash = _run(one, two)
    assert clash.exit_code == 2 and "NAME1=" in clash.output and "m2" in clash.output
    out = tmp_path / "merged.json"
    named = _run(f"hawk={one}", f"owl={two}", "--json", str(out), "--min-agreement", "2")
    assert named.exit_code == 1, named.output
    assert json.loads(out.read_text())["findings"][0]["agreement"] == {"k": 2, "n": 2}
    twice = _run(one, one)
    assert twice.exit_code == 2 and "given twice" in twice.output
    too_many = _run(f"hawk={one}", f"owl={two}", "--min-agreement", "3")
    assert too_many.exit_code == 2 and "--min-agreement 3" in too_many.output


def test_a_report_that_contradicts_itself_is_refused(tmp_path: Path) -> None:
    """Members naming reviewers the report does not list (false agreement), two findings
    under one id (which one a dismissal means is unknown): refused; a participant the
    report says failed is not heard in full in the merge."""
    out = tmp_path / "merged.json"
    assert _run(*_files(tmp_path), "--json", str(out)).exit_code == 1
    report = json.loads(out.read_text(encoding="utf-8"))
    strangers = json.loads(json.dumps(report))
    strangers["participants"] = strangers["participants"][:1]
    refused = _run(_write(tmp_path / "s.json", strangers))
    assert refused.exit_code == 2 and "not participants of the report" in refused.output
    shared = json.loads(json.dumps(report))
    shared["findings"][1]["id"] = shared["findings"][0]["id"]
    refused = _run(_write(tmp_path / "d.json", shared))
    assert refused.exit_code == 2 and "share an id" in refused.output
    failed = json.loads(json.dumps(report))
    failed["participants"][2]["state"] = "failed"
    assert _run(_write(tmp_path / "f.json", failed), "--fail-on", "never").exit_code == 3


def test_a_reports_judge_is_not_counted_as_a_reviewer(tmp_path: Path) -> None:
    """A judge consolidates, it raises nothing: reading back a report that lists one
    leaves it out of the reviewers, so "k of n" counts reviewers only."""
    out = tmp_path / "merged.json"
    assert _run(*_files(tmp_path), "--json", str(out)).exit_code == 1
    report = json.loads(out.read_text(encoding="utf-8"))
    judge = {"id": "arbiter", "role": "judge", "backend": "openai", "state": "answered"}
    report["participants"].append(judge)
    again = tmp_path / "again.json"
    assert _run(_write(tmp_path / "judged.json", report), "--json", str(again)).exit_code == 1
    merged = json.loads(again.read_text(encoding="utf-8"))
    assert [p["id"] for p in merged["participants"]] == ["hawk", "owl", "ruff"]
    assert merged["findings"][0]["agreement"] == {"k": 2, "n": 3}


def _bandit_log(status: str | None) -> dict[str, Any]:
    """A SARIF log of bandit: B602 (error) at app.py:5, suppressed with ``status`` (None:
    no suppression), and B404 (note) at app.py:1, open."""

    def result(rule: str, level: str, line: int) -> dict[str, Any]:
        where = {"artifactLocation": {"uri": "app.py"}, "region": {"startLine": line}}
        return {
            "ruleId": rule,
            "level": level,
            "message": {"text": f"{rule} message"},
            "locations": [{"physicalLocation": where}],
        }

    shell = result("B602", "error", 5)
    council = {"source": "dismissed"}  # what council's SARIF writes with a dismissal
    if status == "inSource":  # a comment in the code: the change's own say
        shell["suppressions"] = [{"kind": "inSource", "status": "accepted"}]
    elif status == "another tool's":  # no person's decision council recorded
        shell["suppressions"] = [{"kind": "external", "status": "accepted"}]
    elif status is not None:
        shell["suppressions"] = [
            {
                "kind": "external",
                "status": status,
                "justification": "constant argv",
                "properties": council,
            }
        ]
    return {
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "bandit"}},
                "results": [shell, result("B404", "note", 1)],
            }
        ],
    }


@pytest.mark.parametrize(
    ("status", "gates"),
    [
        ("accepted", False),
        ("underReview", True),
        (None, True),
        ("inSource", True),
        ("another tool's", True),
    ],
)
def test_a_sarif_results_accepted_suppression_is_kept(
    tmp_path: Path, status: str | None, gates: bool
) -> None:
    """council's own SARIF of a review that dismissed B602 consolidates as it was: listed,
    suppressed with its justification, not gating; a suppression under review (or none)
    is no decision, nor one in the code's own comments, nor another tool's (its
    configuration may be the pull request's), and the result gates."""
    log = _write(tmp_path / "bandit.sarif", _bandit_log(status))
    out = tmp_path / "merged.json"
    done = _run(log, "--fail-on", "medium", "--json", str(out))
    assert done.exit_code == (1 if gates else 0), done.output
    report = json.loads(out.read_text(encoding="utf-8"))
    shell = next(f for f in report["findings"] if f["subject"].startswith("B602"))
    assert (str(shell["id"]) in report["suppressed"]) is not gates
    if not gates:
        reason = report["suppressed"][str(shell["id"])]["reason"]
        assert reason.startswith("constant argv (as the SARIF log bandit says")
    assert len(report["findings"]) == 2


def test_a_reports_program_findings_of_two_rules_are_never_merged(tmp_path: Path) -> None:
    """A council report's findings that programs told (origin.program) are an analyzer's:
    ruff's F841 and bandit's B105 on one line stay two findings, as in the review."""
    from council.model.findings import Finding, LineAnchor, Origin
    from council.model.report import CouncilReport, ParticipantSummary
    from council.rendering.jsonreport import render_json

    def told(fid: int, who: str, subject: str) -> Finding:
        origin = Origin(kind="reviewer", run_id="r1", participant=who, program=True)
        anchor = LineAnchor(path="app.py", line=3)
        return Finding(id=fid, anchor=anchor, label="issue", subject=subject, origin=origin)

    report = CouncilReport(
        run_id="r1",
        session="s",
        status="settled",
        participants=(
            ParticipantSummary(id="ruff", backend="sarif", state="answered"),
            ParticipantSummary(id="bandit", backend="sarif", state="answered"),
        ),
        findings=(
            told(1, "ruff", "F841: Local variable `password` is assigned to but never used"),
            told(2, "bandit", "B105: Possible hardcoded password assigned to: 'password'"),
        ),
    )
    source = _write(tmp_path / "review.json", render_json(report))
    out = tmp_path / "merged.json"
    done = _run(source, "--fail-on", "never", "--json", str(out))
    assert done.exit_code == 0, done.output
    merged = json.loads(out.read_text(encoding="utf-8"))
    assert len(merged["findings"]) == 2
    assert not any(f.get("members") for f in merged["findings"])


def test_reports_of_different_changes_are_merged_with_a_note(tmp_path: Path) -> None:
    """Two council reports about different repositories: merged, and the report says
    they are about different changes; two of one change: no such note."""
    from council.model.report import CouncilReport, ParticipantSummary
    from council.rendering.jsonreport import render_json

    def review(who: str, repository: str) -> str:
        report = CouncilReport(
            run_id=f"r-{who}",
            session="s",
            status="settled",
            repository=repository,
            head="a" * 40,
            participants=(ParticipantSummary(id=who, backend="replay", state="answered"),),
        )
        return _write(tmp_path / f"{who}-{repository.strip('/')}.json", render_json(report))

    out = tmp_path / "merged.json"
    apart = _run(review("hawk", "/srv/one"), review("owl", "/srv/two"), "--json", str(out))
    assert apart.exit_code == 0, apart.output
    notes = json.loads(out.read_text(encoding="utf-8"))["notes"]
    assert any("about different changes (/srv/one@aaaaaaaaaaaa" in n for n in notes), notes
    same = _run(review("lynx", "/srv/one"), review("wren", "/srv/one"), "--json", str(out))
    assert same.exit_code == 0, same.output
    notes = json.loads(out.read_text(encoding="utf-8"))["notes"]
    assert not any("different changes" in n for n in notes)


def test_councils_own_sarif_of_a_dismissal_consolidates_dismissed(tmp_path: Path) -> None:
    """The SARIF council writes for a report whose critical was dismissed reads back
    suppressed, with the person's reason: consolidating it passes as the review did."""
    from council.model.findings import Finding, LineAnchor, Origin
    from council.model.report import CouncilReport, ParticipantSummary, Suppression
    from council.rendering.sarif import render_sarif

    origin = Origin(kind="reviewer", run_id="r1", participant="bandit", program=True)
    shell = Finding(
        id=1,
        anchor=LineAnchor(path="app.py", line=5),
        label="issue",
        subject="B602: subprocess call with shell=True identified",
        severity="critical",
        origin=origin,
    )
    report = CouncilReport(
        run_id="r1",
        session="s",
        status="settled",
        participants=(ParticipantSummary(id="bandit", backend="sarif", state="answered"),),
        findings=(shell,),
        suppressed={1: Suppression(source="dismissed", reason="constant argv")},
    )
    source = _write(tmp_path / "council.sarif", render_sarif(report.gated(fail_on="critical")))
    out = tmp_path / "merged.json"
    done = _run(source, "--fail-on", "critical", "--json", str(out))
    assert done.exit_code == 0, done.output
    merged = json.loads(out.read_text(encoding="utf-8"))
    (only,) = merged["findings"]
    assert merged["suppressed"][str(only["id"])]["reason"].startswith("constant argv (as")
