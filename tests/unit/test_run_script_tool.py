"""The ``run_script`` tool: one row per call, its dispatch, its store in Redis.

Source: docs/evidence-and-asks.md §1 ("Rows").
"""

from __future__ import annotations

from pathlib import Path

import fakeredis
import pytest

from council.evidence import ScriptRow
from council.roster.script_limits import ScriptLimits
from council.roster.tool_catalog import TOOL_NAMES, specs_for
from reviewers.models.tools import ToolBox
from reviewers.sandbox.scripts import ScriptRun
from tests.sandboxing import bwrap_or_skip
from workers.stores.keys import Keys
from workers.stores.scripts import ScriptStore


class Rows:
    """A ScriptSink keeping rows in memory."""

    def __init__(self) -> None:
        self.rows: list[ScriptRow] = []

    def append(self, row: ScriptRow) -> str:
        self.rows.append(row)
        return "Recorded."


class Journal:
    def append(self, raw: str) -> str:
        return "Recorded."


class FakeRunner:
    """Runs nothing: each program's outcome is scripted."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, str]] = []

    def run(self, language: str, program: str) -> ScriptRun:
        self.ran.append((language, program))
        if "exit 1" in program:
            return ScriptRun(outcome="failed", exit_code=1, output="boom\n")
        return ScriptRun(outcome="ok", exit_code=0, output="fine\n")


def _box(rows: Rows, runner: FakeRunner | None = None, tmp: Path | None = None) -> ToolBox:
    return ToolBox(
        ("read_file", "run_script"),
        tmp,
        Journal(),
        scripts=rows,
        runner=runner or FakeRunner(),  # type: ignore[arg-type]
        limits=ScriptLimits(output_bytes=4096),
    )


def test_run_script_is_a_tool_a_roster_may_name() -> None:
    assert "run_script" in TOOL_NAMES
    (spec,) = specs_for(["run_script"])
    assert spec.parameters["required"] == ["language", "program"]
    assert spec.parameters["properties"]["language"]["enum"] == ["python", "bash", "sh", "node"]


def test_each_call_records_one_row_with_its_dispatch(tmp_path: Path) -> None:
    rows = Rows()
    box = _box(rows, tmp=tmp_path)
    box.call("read_file", {"path": "nope"}, "call_a")
    first = box.call("run_script", {"language": "sh", "program": "exit 1 "}, "call_b")
    second = box.call("run_script", '{"language": "python", "program": "print(1)"}', "call_c")
    assert first.startswith("The script exited with status 1.\nOutput (stdout and stderr")
    assert "boom" in first and second.startswith("The script exited with status 0.")
    assert [r.model_dump(exclude_none=True) for r in rows.rows] == [
        {
            "tool_call_id": "call_b",
            "tool": "run_script",
            "dispatch": 2,
            "outcome": "failed",
            "exit_code": 1,
            "text": "exit 1 ",
        },
        {
            "tool_call_id": "call_c",
            "tool": "run_script",
            "dispatch": 3,
            "outcome": "ok",
            "exit_code": 0,
            "text": "print(1)",
        },
    ]


def test_a_refused_call_is_a_not_run_row() -> None:
    rows = Rows()
    runner = FakeRunner()
    box = _box(rows, runner)
    reply = box.call("run_script", {"language": "ruby", "program": "puts 1"}, "c1")
    assert reply.startswith("The script was not run: language must be one of")
    box.call("run_script", "{not json", "c2")
    box.call("run_script", {"language": "sh"}, "c3")
    assert runner.ran == []
    assert [(r.tool_call_id, r.outcome, r.exit_code, r.text) for r in rows.rows] == [
        ("c1", "not-run", None, "puts 1"),
        ("c2", "not-run", None, None),
        ("c3", "not-run", None, None),
    ]


def test_a_tool_not_given_runs_nothing() -> None:
    rows = Rows()
    box = ToolBox(("read_file",), None, Journal(), scripts=rows)
    assert "no tool named 'run_script'" in box.call("run_script", {"language": "sh"}, "c")
    assert rows.rows == []


def test_the_store_keeps_rows_per_attempt_and_they_expire_with_the_run() -> None:
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    keys = Keys()
    store = ScriptStore(client, keys, max_rows=2)
    row = ScriptRun(outcome="ok", exit_code=0).row("c1", "run_script", 1, "true")
    assert store.append("r1", "hawk", 1, row) == "Recorded."
    assert store.append("r1", "hawk", 2, row) == "Recorded."
    assert store.append("r1", "hawk", 2, row) == "Recorded."
    assert "already holds 2" in store.append("r1", "hawk", 2, row)
    client.rpush(keys.scripts("r1", "hawk", 2), b'{"tool_call_id": "x"}')
    first, second = store.read_all("r1", "hawk", 2)
    assert first.rows == (row,) and second.rows == (row, row) and second.unreadable == 1
    everything = keys.run_keys("r1", ["hawk"], {"hawk": 2})
    assert keys.scripts("r1", "hawk", 1) in everything
    assert keys.scripts("r1", "hawk", 2) in everything


def test_a_real_run_through_the_tool(tmp_path: Path) -> None:
    bwrap_or_skip()
    (tmp_path / "app.py").write_text("x = 1\n")
    rows = Rows()
    box = ToolBox(("run_script",), tmp_path, Journal(), scripts=rows)
    reply = box.call("run_script", {"language": "sh", "program": "cat app.py; exit 1"}, "c9")
    assert reply.startswith("The script exited with status 1.") and "x = 1" in reply
    assert [(r.outcome, r.exit_code) for r in rows.rows] == [("failed", 1)]


@pytest.mark.parametrize("limits", [{"cpu_s": 3}, {}])
def test_limits_from_the_roster(limits: dict[str, int]) -> None:
    from council.roster import parse_roster

    own = ", ".join(f"{k} = {v}" for k, v in limits.items())
    roster = parse_roster(
        "[council]\nscript_limits = {wall_s = 12}\n"
        '[[reviewers]]\nid = "hawk"\nbackend = "openai"\nmodel = "m"\n'
        f'tools = ["run_script"]\nscript_limits = {{{own}}}\n',
        "council.toml",
    )
    (hawk,) = roster.reviewers
    expected = ScriptLimits(wall_s=12, **limits)
    assert hawk.options["script_limits"] == expected.as_json()
