"""Runs ``council evidence`` on every shared evidence case: the CLI prints the case's expect.

The case's answer is written to a file byte for byte (UTF-8, no newline translation) and
its rows, ``turn`` included, to a JSON file; the command must exit 0 and print exactly
the case's ``expect`` (shared/cases/README.md, evidence/). A case the harness cannot
interpret fails, it is never skipped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.cases.loader import CaseError, case_params, load_case
from workers.cli import main


@pytest.mark.parametrize("path", case_params("evidence"))
def test_council_evidence_prints_the_case_expect(path: Path | str, tmp_path: Path) -> None:
    """``council evidence ANSWER --rows ROWS.json`` exits 0 and prints the case's expect."""
    case = load_case(path)
    name = Path(path).name
    if not isinstance(case.get("answer"), str) or not isinstance(case.get("rows"), list):
        raise CaseError(f"{name}: an evidence case needs answer (text) and rows (a list)")
    answer, rows = tmp_path / "answer.md", tmp_path / "rows.json"
    answer.write_bytes(case["answer"].encode("utf-8"))
    rows.write_text(json.dumps(case["rows"]), encoding="utf-8")
    done = CliRunner().invoke(main, ["evidence", str(answer), "--rows", str(rows)])
    assert done.exit_code == 0, f"{name}: exit {done.exit_code}: {done.output[:2000]}"
    assert json.loads(done.stdout) == case["expect"], f"{name}: output differs"
