"""The model reviewers' tools: reading, listing and searching the pinned tree, recording."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from council.roster.tool_catalog import READ_MAX_LINES, SPECS, TOOL_NAMES, specs_for
from reviewers.models.tools import GREP_MAX_MATCHES, NO_TREE, ToolBox
from tests.fakes.review import MemorySink

ALL = TOOL_NAMES


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A tree with source files, a binary, a .git directory and symlinks in and out."""
    root = tmp_path / "tree"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("open(\n")
    (root / "src" / "app.py").write_text("import os\nfh = open('x')\nprint(fh.read())\n")
    (root / "src" / "pkg" / "util.py").write_text("def f():\n    return open('y')\n")
    (root / "src" / "blob.bin").write_bytes(b"open(\0\0\0")
    (root / "empty.txt").write_text("")
    (tmp_path / "outside.txt").write_text("open( secret\n")
    (root / "out").symlink_to(tmp_path / "outside.txt")
    (root / "in").symlink_to(root / "src" / "app.py")
    return root


def box(root: Path | None, sink: MemorySink | None = None, names: tuple[str, ...] = ALL) -> ToolBox:
    """A tool box over ``root`` with all tools and an in-memory journal."""
    return ToolBox(names, root, sink if sink is not None else MemorySink())


def test_specs_are_offered_in_a_fixed_order() -> None:
    """specs_for keeps SPECS order and drops unknown names."""
    assert [s.name for s in specs_for(["record_finding", "nope", "grep"])] == [
        "grep",
        "record_finding",
    ]
    assert all(spec.parameters["type"] == "object" for spec in SPECS)


def test_read_file_numbers_lines_and_reads_ranges(tree: Path) -> None:
    """read_file numbers every line and says where a partial read stopped."""
    tools = box(tree)
    whole = tools.call("read_file", {"path": "src/app.py"})
    assert whole.splitlines() == [
        "     1\timport os",
        "     2\tfh = open('x')",
        "     3\tprint(fh.read())",
    ]
    part = tools.call("read_file", '{"path": "/src/app.py", "start_line": "2", "end_line": 2.0}')
    assert part == "     2\tfh = open('x')\n[shown lines 2-2 of 3; read on with start_line=3]"
    assert tools.call("read_file", {"path": "src/app.py", "start_line": 9}) == (
        "src/app.py has only 3 lines."
    )
    assert "whole numbers" in tools.call("read_file", {"path": "src/app.py", "start_line": 0})
    assert tools.call("read_file", {"path": "empty.txt"}) == "empty.txt is empty."
    assert tools.call("read_file", {"path": "nope.py"}) == (
        "There is no file 'nope.py' in the repository."
    )


def test_read_file_is_bounded(tree: Path) -> None:
    """A long file is shown READ_MAX_LINES lines at a time."""
    (tree / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 2501)))
    text = box(tree).call("read_file", {"path": "long.txt"})
    assert text.count("\n") == READ_MAX_LINES
    assert text.endswith(f"[shown lines 1-{READ_MAX_LINES} of 2500; read on with start_line=2001]")


@pytest.mark.parametrize(
    "path", ["../outside.txt", "../../etc/passwd", "src/../../outside.txt", "out"]
)
def test_paths_cannot_leave_the_tree(tree: Path, path: str) -> None:
    """.. and symlinks out of the tree are refused, and nothing outside is read."""
    reply = box(tree).call("read_file", {"path": path})
    assert "outside the repository" in reply and "secret" not in reply


def test_absolute_paths_are_read_from_the_root(tree: Path) -> None:
    """A leading slash means the tree's root, so /etc/passwd is simply not there."""
    assert box(tree).call("read_file", {"path": "/etc/passwd"}) == (
        "There is no file 'etc/passwd' in the repository."
    )


def test_symlink_inside_the_tree_is_followed(tree: Path) -> None:
    """A symlink to a file of the tree reads that file."""
    assert "fh = open('x')" in box(tree).call("read_file", {"path": "in"})


def test_list_files_is_recursive_sorted_and_stays_inside(tree: Path) -> None:
    """list_files lists files under a directory, without .git or symlinks out."""
    tools = box(tree)
    assert tools.call("list_files", {}).splitlines() == [
        "empty.txt",
        "in",
        "src/app.py",
        "src/blob.bin",
        "src/pkg/util.py",
    ]
    assert tools.call("list_files", {"dir": "src/pkg"}) == "src/pkg/util.py"
    assert "no directory" in tools.call("list_files", {"dir": "docs"})
    assert "outside the repository" in tools.call("list_files", {"dir": ".."})


def test_grep_finds_lines_in_text_files_only(tree: Path) -> None:
    """grep quotes path:line: text, skipping binaries, .git and files outside."""
    tools = box(tree)
    assert tools.call("grep", {"pattern": r"open\("}).splitlines() == [
        "in:2: fh = open('x')",
        "src/app.py:2: fh = open('x')",
        "src/pkg/util.py:2:     return open('y')",
    ]
    assert tools.call("grep", {"pattern": "open", "path": "src/pkg/util.py"}) == (
        "src/pkg/util.py:2:     return open('y')"
    )
    assert tools.call("grep", {"pattern": "zzz"}) == "No line matches 'zzz'."
    assert "not a valid regular expression" in tools.call("grep", {"pattern": "("})
    assert "non-empty" in tools.call("grep", {})


def test_grep_is_bounded(tree: Path) -> None:
    """grep stops at GREP_MAX_MATCHES matches and says so."""
    (tree / "many.txt").write_text("hit\n" * (GREP_MAX_MATCHES + 50))
    reply = box(tree).call("grep", {"pattern": "hit", "path": "many.txt"})
    lines = reply.splitlines()
    assert len(lines) == GREP_MAX_MATCHES + 1
    assert lines[-1] == f"[stopped at {GREP_MAX_MATCHES} matches; narrow the search]"


def test_file_tools_without_a_tree_say_so() -> None:
    """With no pinned tree every file tool replies NO_TREE."""
    tools = box(None)
    for name in ("read_file", "list_files", "grep"):
        assert tools.call(name, {"path": "a", "pattern": "a"}) == NO_TREE


def test_bad_calls_become_replies(tree: Path) -> None:
    """Unknown tools, broken JSON and non-object arguments are replies, never exceptions."""
    tools = box(tree, names=("read_file",))
    assert tools.call("grep", {"pattern": "x"}) == (
        "There is no tool named 'grep' in this review; the tools are: read_file."
    )
    assert "not valid JSON" in tools.call("read_file", '{"path": ')
    assert "must be a JSON object" in tools.call("read_file", "[1, 2]")
    assert "path must be a path" in tools.call("read_file", {"path": 7})


def test_record_finding_appends_and_replies() -> None:
    """record_finding stores objects as given and replies with docs/harvest.md §1's sentence."""
    sink = MemorySink()
    touched: list[int] = []
    tools = ToolBox(ALL, None, sink, lambda: touched.append(1))
    finding = {"subject": "leak", "label": "issue"}
    assert tools.call("record_finding", {"finding": finding}) == "Recorded."
    assert tools.call("record_finding", {"finding": json.dumps([finding, finding])}) == (
        "Recorded 2 of them."
    )
    assert tools.call("record_finding", {"finding": [finding, 3]}) == (
        "Recorded 1 of them; the other 1 were not objects."
    )
    assert tools.call("record_finding", {"finding": "not json"}) == (
        "Nothing was recorded: a finding has to be a JSON object."
    )
    assert tools.call("record_finding", finding) == "Recorded."
    assert [json.loads(e) for e in sink.entries] == [finding] * 5
    assert tools.entries == 5 and len(touched) == 5


def test_record_finding_reports_a_refusing_journal() -> None:
    """A journal that refuses makes the reply 'Not recorded (REASON); keep it ...'."""
    tools = box(None, MemorySink(refuse="journal over cap"))
    assert tools.call("record_finding", {"finding": {"subject": "x"}}) == (
        "Not recorded (journal over cap); keep it for your final answer."
    )
    assert tools.entries == 0


class RaisingSink:
    """A journal sink that breaks its promise and raises."""

    def append(self, raw: str) -> str:
        raise OSError("disk full")


def test_record_finding_survives_a_raising_journal() -> None:
    """Even a sink that raises gives a 'Not recorded' reply, not an exception."""
    tools = ToolBox(ALL, None, RaisingSink())
    assert tools.call("record_finding", {"finding": {"subject": "x"}}) == (
        "Not recorded (OSError); keep it for your final answer."
    )
