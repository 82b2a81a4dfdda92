"""Every findings list of an answer is read (harvest.md §3.1).

The shared cases pin §3.1 one example at a time; these tests pin what the cases do not:
which repeats "already kept" means across three lists, and that an entry that is no
finding repeats nothing.
"""

from __future__ import annotations

import json

from council.findings import FileAnchor
from council.harvest import harvest


def _entries(count: int, start: int = 0) -> list[dict[str, object]]:
    """``count`` distinct, valid entries, numbered from ``start``."""
    return [
        {
            "location": {"kind": "file", "file": f"pkg/m{i}.py"},
            "label": "issue",
            "subject": f"Finding {i}",
            "discussion": "x",
        }
        for i in range(start, start + count)
    ]


def _codes(answer: str) -> list[tuple[str, str]]:
    return [(w.code, w.at) for w in harvest(answer).warnings]


def test_a_repeat_is_of_a_finding_kept_from_a_later_list() -> None:
    """Three lists: the middle list's file-less "A" repeats the last list's "A" on b.py
    and is dropped; the first list's "A" on a.py is checked against what was KEPT from
    later lists (only b.py's), so it stays. Kept findings come from two lists."""

    def one(subject: str, file: str | None) -> str:
        location = {"kind": "file", "file": file} if file else {"kind": "global"}
        return json.dumps({"findings": [{"subject": subject, "location": location}]})

    answer = f"{one('A', 'a.py')}\n{one('A', None)}\n{one('a.', 'b.py')}"
    result = harvest(answer)
    assert [(f.subject, f.anchor) for f in result.findings] == [
        ("A", FileAnchor(path="a.py")),
        ("a.", FileAnchor(path="b.py")),
    ]
    # every entry misses its label: the dropped repeat's warning went with it
    assert [(w.code, w.at) for w in result.warnings] == [
        ("several-lists", "answer"),
        ("missing-label", "findings[0]"),
        ("missing-label", "findings[2]"),
    ]


def test_a_dropped_entry_of_an_earlier_list_keeps_its_warning() -> None:
    """An entry without a subject is no finding, so it repeats nothing: its warning stays,
    and it makes no list a contributor (no several-lists)."""
    first = json.dumps({"findings": [{"title": " "}]})
    second = json.dumps({"findings": _entries(1)})
    assert _codes(f"{first} then {second}") == [("no-subject", "findings[0]")]
