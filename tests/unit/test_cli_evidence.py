"""``council evidence``: verdicts as JSON, exit 0 whatever they say, 2 on bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from workers.cli import main

ROW: dict[str, Any] = {
    "tool_call_id": "call_1",
    "tool": "run_script",
    "dispatch": 1,
    "outcome": "failed",
    "exit_code": 1,
    "text": "make test\r",
    "turn": "current",
}


def evidence(tmp_path: Path, answer: bytes, rows: object) -> Result:
    """Run ``council evidence`` on an answer's bytes and a rows value (JSON-encoded)."""
    (tmp_path / "answer.md").write_bytes(answer)
    (tmp_path / "rows.json").write_text(json.dumps(rows), encoding="utf-8")
    args = ["evidence", str(tmp_path / "answer.md"), "--rows", str(tmp_path / "rows.json")]
    return CliRunner().invoke(main, args)


def test_a_crlf_answer_is_compared_as_its_bytes(tmp_path: Path) -> None:
    """The file's CR LF reaches the matcher untranslated: 'make test\\r' matches, exit 0."""
    done = evidence(tmp_path, b"Ran:\r\n```sh\r\nmake test\r\n```\r\nDone.\r\n", [ROW])
    assert done.exit_code == 0, done.output
    printed = json.loads(done.stdout)
    assert printed["blocks"] == [
        {
            "block": 1,
            "label": "failed",
            "tool_call_id": "call_1",
            "tool": "run_script",
            "dispatch": 1,
            "also_matches": 0,
            "exit_code": 1,
        }
    ]
    assert printed["prose"] == "Ran:\r\nDone.\r\n"


def test_nothing_matched_still_exits_0(tmp_path: Path) -> None:
    """Verdicts never set the exit code: an unmatched block and an earlier row, exit 0."""
    done = evidence(tmp_path, b"```\nls\n```\n", [{**ROW, "turn": "earlier"}])
    assert done.exit_code == 0, done.output
    printed = json.loads(done.stdout)
    assert printed["blocks"] == [
        {"block": 1, "label": "unmatched", "reason": "no-submission-this-turn"}
    ]
    assert printed["earlier_turn_rows"] == 1


@pytest.mark.parametrize(
    ("rows", "mentions"),
    [
        ({"rows": []}, ["not a list", "[]"]),
        ([["call_1"]], ["rows[0]", "object"]),
        ([{k: v for k, v in ROW.items() if k != "tool"}], ["rows[0]", "has no tool"]),
        ([ROW, {k: v for k, v in ROW.items() if k != "turn"}], ["rows[1]", "turn", "earlier"]),
        ([{**ROW, "turn": "now"}], ["rows[0]", '"now"', "current"]),
        ([{**ROW, "dispatch": "1"}], ["rows[0].dispatch", "whole number"]),
        ([{**ROW, "outcome": "passed"}], ["rows[0].outcome", "not-run"]),
        ([{**ROW, "exit_code": 0}], ["rows[0]", "non-zero"]),
        ([{**ROW, "stdout": "x"}], ["rows[0]", "'stdout'", "tool_call_id"]),
    ],
)
def test_bad_rows_exit_2_saying_what_and_how(
    tmp_path: Path, rows: object, mentions: list[str]
) -> None:
    """A rows file that is not a list of well-formed rows: exit 2, the row and fix named."""
    done = evidence(tmp_path, b"```\nls\n```\n", rows)
    assert done.exit_code == 2, done.output
    for piece in mentions:
        assert piece in done.output


def test_unreadable_files_exit_2(tmp_path: Path) -> None:
    """A missing answer, a rows file that is not JSON, an answer not UTF-8: exit 2, named."""
    missing = CliRunner().invoke(
        main, ["evidence", str(tmp_path / "nowhere.md"), "--rows", str(tmp_path / "r.json")]
    )
    assert missing.exit_code == 2
    assert "nowhere.md" in missing.output
    (tmp_path / "rows.json").write_text("[", encoding="utf-8")
    (tmp_path / "answer.md").write_bytes(b"ok\n")
    broken = CliRunner().invoke(
        main, ["evidence", str(tmp_path / "answer.md"), "--rows", str(tmp_path / "rows.json")]
    )
    assert broken.exit_code == 2
    assert "not JSON" in broken.output
    latin1 = evidence(tmp_path, "café\n".encode("latin-1"), [])
    assert latin1.exit_code == 2
    assert "UTF-8" in latin1.output


def test_help_teaches_the_verdicts_and_the_rows() -> None:
    """--help names every label and reason, the rows' fields and an example."""
    done = CliRunner().invoke(main, ["evidence", "--help"])
    assert done.exit_code == 0
    for word in ("no-submission-this-turn", "over-size", "kept-out", "not-run", "turn", "Example"):
        assert word in done.output
