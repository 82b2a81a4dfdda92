"""Every tool call of a model reviewer is reported for the logs, with its duration."""

from __future__ import annotations

from pathlib import Path

from reviewers.models.tools import ToolBox


class Sink:
    """A journal that keeps what it is given."""

    def __init__(self) -> None:
        self.entries: list[str] = []

    def append(self, raw: str) -> str:
        self.entries.append(raw)
        return "Recorded."


def test_tool_calls_are_reported_with_duration(tmp_path: Path) -> None:
    """read_file, a refused escape and record_finding each yield one tool_call event."""
    (tmp_path / "a.py").write_text("print(1)\n", encoding="utf-8")
    seen: list[tuple[str, dict[str, object]]] = []
    box = ToolBox(
        ("read_file", "record_finding"),
        tmp_path,
        Sink(),
        events=lambda event, **fields: seen.append((event, fields)),
    )
    box.call("read_file", {"path": "a.py"})
    box.call("read_file", {"path": "../../etc/passwd"})
    box.call("record_finding", {"finding": {"subject": "x", "label": "issue"}})
    assert [(e, f["tool"]) for e, f in seen] == [
        ("tool_call", "read_file"),
        ("tool_call", "read_file"),
        ("tool_call", "record_finding"),
    ]
    assert all(isinstance(f["duration_ms"], int) and f["duration_ms"] >= 0 for _, f in seen)
