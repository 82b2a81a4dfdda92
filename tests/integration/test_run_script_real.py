"""Script evidence end to end: real redis-server, a real ``celery worker``, the real
bubblewrap, an ``openai`` reviewer played by the fake OpenAI server and a ``command``
reviewer using ``council run-script``.

The model calls ``run_script`` twice in one turn (one program exits 1, one exits 0),
then answers with three findings: one showing the first program byte for byte, one
showing it with a trailing space changed, one showing a program it never submitted.
The report shows exactly: ran (exit 1), not run this turn, not run this turn; the third
finding, critical, is held at medium. Source: docs/evidence-and-asks.md §1.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeOpenAI, Scenario
from tests.fakes.review import KEY
from tests.fakes.scenario import ToolCall
from tests.gitrepo import ROOT, commit, git, new_repo
from tests.sandboxing import bwrap_or_skip
from tests.services import provider_env, review_argv

pytestmark = pytest.mark.integration

FIRST = "import sys\nprint('checked', len(sys.argv))\nsys.exit(1)"
SECOND = "print('all good')"
CHANGED = "import sys\nprint('checked', len(sys.argv)) \nsys.exit(1)"
NEVER = "import os\nprint(os.listdir('/'))"


def _finding(subject: str, severity: str, program: str) -> dict[str, Any]:
    return {
        "subject": subject,
        "label": "issue",
        "severity": severity,
        "location": {"kind": "line", "file": "app.py", "start": 2},
        "discussion": f"I ran this:\n```python\n{program}\n```\nIt exits 1.",
    }


ANSWER = json.dumps(
    {
        "findings": [
            _finding("byte for byte", "critical", FIRST),
            _finding("a space changed", "medium", CHANGED),
            _finding("never submitted", "critical", NEVER),
        ]
    }
)

COMMAND = """#!/bin/sh
council run-script --language sh --program 'grep -c eval app.py; exit 2' >/dev/null
cat <<'JSON'
{"findings": [{"subject": "eval counted", "label": "issue", "severity": "critical",
  "location": {"kind": "file", "file": "app.py"},
  "discussion": "```sh\\ngrep -c eval app.py; exit 2\\n```"}]}
JSON
"""


def test_verdicts_in_every_output_and_the_invented_proof_held(
    redis_url: str, start_worker: Any, server: FakeOpenAI, tmp_path: Path
) -> None:
    bwrap_or_skip()
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    base = git(repo, "rev-parse", "HEAD")
    commit(repo, {"app.py": "x = 1\ny = eval(input())\n"}, "change")
    program = tmp_path / "smells.sh"
    program.write_text(COMMAND)
    program.chmod(0o755)
    held = provider_env(tmp_path, server.base_url, "OPENAI_API_KEY")
    start_worker("w1", env={"OPENAI_API_KEY": KEY, **held})
    calls = (
        ToolCall("run_script", {"language": "python", "program": FIRST}),
        ToolCall("run_script", {"language": "python", "program": SECOND}),
    )
    server.script(Scenario(tool_calls=calls), Scenario(text=ANSWER), model="gpt-hawk")
    roster = tmp_path / "council.toml"
    roster.write_text(
        "[council]\nbackstop_ms = 120000\nidle_ms = 60000\nanswer_ms = 0\n"
        "script_limits = {wall_s = 20}\n\n"
        f'[[reviewers]]\nid = "hawk"\nbackend = "openai"\nmodel = "gpt-hawk"\n'
        f'base_url = "{server.base_url}"\ntools = ["run_script"]\n\n'
        f'[[reviewers]]\nid = "smells"\nbackend = "command"\nprogram = "{program}"\n'
    )
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    done = subprocess.run(
        [
            *review_argv(repo, base, roster, tmp_path / "report.json", "--fail-on", "critical"),
            "--output",
            str(out),
            "--format",
            "markdown",
            "--format",
            "sarif",
            "--format",
            "github-review",
            "--post",  # both findings as line comments: each shows its scripts' verdicts
            "all",
        ],
        cwd=ROOT,
        env={**env, "COUNCIL_REDIS_URL": redis_url},
        capture_output=True,
        text=True,
        timeout=240,
    )
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["status"] == "settled", (done.stderr, report)
    by_subject = {f["subject"]: f for f in report["findings"]}
    exact = by_subject["byte for byte"]
    assert [(v["label"], v.get("exit_code"), v["dispatch"]) for v in exact["evidence"]] == [
        ("failed", 1, 1)
    ]
    unmatched = [{"block": 1, "label": "unmatched", "reason": "no-submission-this-turn"}]
    assert by_subject["a space changed"]["evidence"] == unmatched
    invented = by_subject["never submitted"]
    assert invented["evidence"] == unmatched
    assert invented["severity"] == "medium" and "did not run this turn" in invented["severity_note"]
    assert exact["severity"] == "critical"
    # The command reviewer's run-script is a row of its attempt too.
    counted = by_subject["eval counted"]
    assert [(v["label"], v.get("exit_code"), v["tool"]) for v in counted["evidence"]] == [
        ("failed", 2, "run-script")
    ]
    assert done.returncode == 1, done.stderr  # the real, verified critical findings gate

    markdown = (out / "council.md").read_text()
    assert markdown.count("*✔ ran this turn, exit 1 (call 1)*") == 1
    assert markdown.count("*✗ not run this turn*") == 2
    assert "*✔ ran this turn, exit 2 (call 1)*" in markdown
    sarif = json.loads((out / "council.sarif").read_text())
    shown = {
        r["message"]["text"].split("\n")[0]: r["properties"].get("evidence")
        for run in sarif["runs"]
        for r in run["results"]
    }
    assert shown["never submitted"] == unmatched
    github = (out / "github-review.json").read_text()
    assert "shown scripts: block 1 ✔ ran this turn, exit 1 (call 1)" in github
    assert "shown scripts: block 1 ✗ not run this turn" in github
    # The model was told the outcomes.
    second_request = server.requests[1].body["messages"]
    replies = [m["content"] for m in second_request if m.get("role") == "tool"]
    assert replies[0].startswith("The script exited with status 1.") and "checked 1" in replies[0]
    assert replies[1].startswith("The script exited with status 0.")
