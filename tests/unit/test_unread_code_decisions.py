"""A dismissal of a finding whose code settling did not read (its file is over the read
cap) cannot be shown to cover the same code: at a gating severity, in a file the change
edits, the finding gates again with a note, whatever code now stands at its line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from council.rendering import read_json
from tests.gitrepo import commit
from tests.unit.test_cli_round_ids import hawk_rounds, told
from workers.cli import main
from workers.settling import head_code

BIG = "import subprocess\n\n\n{call}\n" + "# padding\n" * 400


def test_a_dismissal_on_a_file_over_the_read_cap_does_not_cover_new_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(head_code, "CODE_MAX_BYTES", 1024)  # big.py is ~4 KB
    repo, answer, argv = hawk_rounds(tmp_path)
    commit(repo, {"big.py": BIG.format(call="subprocess.call(['ls'], shell=True)")}, "add")
    answer.write_text(json.dumps({"findings": [told("shell=True call", "x", "big.py", 4)]}))
    first = CliRunner().invoke(main, [*argv, "--json", str(tmp_path / "one.json")])
    assert first.exit_code == 1, first.output
    state = ["--state", str(tmp_path / "state.json"), "--session", "s"]
    dismissed = CliRunner().invoke(main, ["dismiss", "1", "--reason", "constant argv", *state])
    assert dismissed.exit_code == 0, dismissed.output
    assert "no decision covers it while the pull request edits its file" in dismissed.output
    commit(repo, {"big.py": BIG.format(call="subprocess.call(cmd, shell=True)")}, "edit")
    second = CliRunner().invoke(main, [*argv, "--json", str(tmp_path / "two.json")])
    assert second.exit_code == 1, second.output
    report = read_json((tmp_path / "two.json").read_text())
    assert not report.suppressed
    assert any("no decision can cover it" in n for n in report.notes), report.notes
