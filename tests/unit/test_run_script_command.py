"""A command reviewer's ``council run-script`` gets rows too: the worker runs the script
in a script sandbox (none can be made inside the reviewer's own) and records the row.

Real bubblewrap for both sandboxes. Source: docs/evidence-and-asks.md §1.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

from council.evidence import ScriptRow
from council.model.findings import canonical
from council.model.participant import Clocks, Participant
from council.round.outcome import harvest_outcome
from reviewers.base import ReviewRequest
from reviewers.programs.command import CommandReviewer
from reviewers.sandbox.bubblewrap import SandboxPolicy
from tests.sandboxing import bwrap_or_skip


class Rows:
    def __init__(self) -> None:
        self.rows: list[ScriptRow] = []

    def append(self, row: ScriptRow) -> str:
        self.rows.append(row)
        return "Recorded."


class Journal:
    def append(self, raw: str) -> str:
        return "Recorded."


FINDINGS = {
    "findings": [
        {
            "subject": "exits 3",
            "label": "issue",
            "severity": "critical",
            "location": {"kind": "file", "file": "app.py"},
            "discussion": "Ran it:\n```sh\ncat app.py; exit 3\n```",
        },
        {
            "subject": "made up",
            "label": "issue",
            "severity": "critical",
            "location": {"kind": "file", "file": "app.py"},
            "discussion": "```sh\nrm -rf /\n```",
        },
    ]
}

REVIEWER = f"""#!/bin/sh
out=$(council run-script --language sh --program 'cat app.py; exit 3')
echo "first: $? $out" >&2
council run-script --json --language python --program 'print(2 + 2)' > "$HOME/second.json"
echo "second: $(cat "$HOME/second.json")" >&2
cat <<'JSON'
{json.dumps(FINDINGS)}
JSON
"""


def test_a_command_reviewer_gets_rows_and_verdicts(tmp_path: Path) -> None:
    bwrap_or_skip()
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "app.py").write_text("x = 1\n")
    program = tmp_path / "reviewer.sh"
    program.write_text(REVIEWER)
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    rows = Rows()
    who = Participant(
        id="smells",
        backend="command",
        clocks=Clocks(backstop_ms=120_000, idle_ms=60_000),
        options={"program": str(program)},
    )
    request = ReviewRequest(
        participant=who,
        prompt="review",
        journal=Journal(),
        workdir=tree,
        sandbox=SandboxPolicy(),
        scripts=rows,
    )
    result = CommandReviewer().review(request)
    assert result.failure is None, result
    assert [(r.tool, r.dispatch, r.outcome, r.exit_code, r.text) for r in rows.rows] == [
        ("run-script", 1, "failed", 3, "cat app.py; exit 3"),
        ("run-script", 2, "ok", 0, "print(2 + 2)"),
    ]
    outcome = harvest_outcome(
        "smells", "reviewer", result, [], scripts=[tuple(rows.rows)], attempts=1
    )
    first, second = (canonical(f) for f in outcome.harvest.findings)
    assert first["evidence"][0]["label"] == "failed" and first["severity"] == "critical"
    assert first["evidence"][0]["tool_call_id"] == "run-script-1"
    assert second["evidence"] == [
        {"block": 1, "label": "unmatched", "reason": "no-submission-this-turn"}
    ]
    assert second["severity"] == "medium"


class _Store:
    def __init__(self) -> None:
        self.rows: list[ScriptRow] = []

    def append(self, run_id: str, participant: str, attempt: int, row: ScriptRow) -> str:
        self.rows.append(row)
        return "Recorded."


def test_a_row_is_stored_with_the_changes_secrets_masked() -> None:
    """A command reviewer runs scripts on the real tree, so its program may quote a
    secret the change adds: the row is stored with the value masked, as its answer and
    journal are (so a finding showing the same program still matches it)."""
    from types import SimpleNamespace
    from typing import cast

    from council.change.secret_masks import MASK, Masker
    from workers.app.services import Runtime
    from workers.execution.journal_sink import RedisScripts

    store = _Store()
    rt = cast(Runtime, SimpleNamespace(scripts=store))
    secret = "AKIAIOSFODNN7EXAMPLE"
    sink = RedisScripts(rt, "r1", "smells", 1, Masker((secret,)))
    row = ScriptRow(
        tool_call_id="c1",
        tool="run_script",
        dispatch=1,
        outcome="ok",
        exit_code=0,
        text=f"grep {secret} config.py",
    )
    assert sink.append(row) == "Recorded."
    assert store.rows[0].text == f"grep {MASK} config.py"
    assert RedisScripts(rt, "r1", "smells", 1).append(row) == "Recorded."
    assert store.rows[1].text == row.text
