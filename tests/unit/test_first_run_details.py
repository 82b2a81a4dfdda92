"""The small things a first run trips over: an empty repository, a SARIF file given as a
council report, an answer with invalid UTF-8, the duration of a failed reviewer, and a
note starting with an option name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from council.errors import RepositoryError
from council.model.backend_result import decode_answer
from council.model.report import CouncilReport, ParticipantSummary
from council.rendering import read_json
from council.rendering.jsonreport import UnreadableReport
from council.rendering.markdown import render_markdown
from tests.gitrepo import git
from tests.unit.test_cli_review import report_of, review, reviewer, roster
from tests.unit.test_fail_closed import repo  # noqa: F401  (the fixture)
from workers.git.repository import Repository


def test_an_empty_repository_says_it_has_no_commits(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    with pytest.raises(RepositoryError, match="has no commits yet") as raised:
        Repository(empty).resolve("HEAD")
    assert "git fetch" not in str(raised.value)


def test_a_sarif_file_is_named_as_sarif() -> None:
    sarif = json.dumps({"version": "2.1.0", "runs": []})
    with pytest.raises(UnreadableReport, match="this is a SARIF log, not a council JSON report"):
        read_json(sarif)
    harvest = json.dumps({"findings": [], "warnings": [], "truncated": False})
    with pytest.raises(UnreadableReport, match="Harvest JSON"):
        read_json(harvest)


def test_invalid_utf8_is_read_and_said() -> None:
    assert decode_answer("héllo".encode()) == ("héllo", ())
    text, notes = decode_answer(b'{"findings": []}\xff')
    assert text == '{"findings": []}\ufffd'
    assert notes and "1 byte(s) were replaced" in notes[0]


def test_review_notes_an_answer_that_was_not_utf8(tmp_path: Path, repo: Path) -> None:  # noqa: F811
    (tmp_path / "a.json").write_bytes(b'{"findings": []}\n\xfe\xff')
    out = tmp_path / "r.json"
    done = review(
        repo,
        tmp_path / "s.json",
        "--json",
        str(out),
        roster_path=roster(tmp_path, reviewer("rep", "replay", answer="a.json")),
    )
    assert done.exit_code == 0, done.output
    assert any("not valid UTF-8: 2 byte(s)" in n for n in report_of(out)["notes"])


def test_a_failed_reviewer_has_no_made_up_duration() -> None:
    failed = ParticipantSummary(id="ruff", backend="sarif", state="failed", failure="x")
    heard = ParticipantSummary(id="rep", backend="replay", state="answered", duration_ms=1500)
    report = CouncilReport(
        run_id="r",
        session="s",
        status="partial",
        participants=(failed, heard),
        notes=("--since-last: only the commits after abc",),
    )
    text = render_markdown(report)
    assert "| ruff | sarif | failed | 0 | 0 | — |" in text
    assert "| 1.5 s |" in text
    assert "\\--since-last" not in text and "--since-last: only the commits" in text
