"""Every findings list of an answer is read (docs/harvest.md §3.1) and at most so many entries
are (the reading cap, §6 ``over-cap``).

The shared cases pin §3.1 one example at a time; these tests pin what the cases do not:
which repeats "already kept" means across three lists, the cap's count across lists,
its place among the warnings, that entries past the cap are counted but never built
(and that the cap changes nothing else the scan finds), and what ``over-cap`` means for
the participant (heard in part, never silent).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from council.harvest import ANSWER_MAX_ENTRIES, harvest, harvest_entries
from council.harvest.machine import MAX_NESTING
from council.harvest.scan import NOT_JSON, Scan, decode, held, scan
from council.model.backend_result import ReviewResult, Stop
from council.model.findings import FileAnchor
from council.model.participant import Participant
from council.rendering.markdown import render_markdown
from council.round.filing import RoundFacts, conclude_round, round_status
from council.round.outcome import (
    ReadingPolicy,
    harvest_outcome,
    heard_in_full,
    read_in_part_code,
)
from workers.app.settings import Settings

TWO = ReadingPolicy(answer_max_entries=2)
"""A reading cap of two entries an answer."""


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


def _codes(answer: str, **kwargs: int) -> list[tuple[str, str]]:
    return [(w.code, w.at) for w in harvest(answer, **kwargs).warnings]


def test_an_answer_over_the_cap_reads_the_first_thousand_and_says_how_many_were_not() -> None:
    """1,500 entries: findings[0..999] are read, one over-cap at answer says 500 were not."""
    result = harvest(json.dumps({"findings": _entries(1500)}))
    assert ANSWER_MAX_ENTRIES == 1000
    assert [f.subject for f in result.findings] == [f"Finding {i}" for i in range(1000)]
    assert [(w.code, w.at) for w in result.warnings] == [("over-cap", "answer")]
    message = result.warnings[0].message
    assert "1500" in message and "500" in message and "1000" in message
    assert not result.truncated


def test_entries_past_the_cap_are_counted_not_built() -> None:
    """The scan keeps the values of the first ``cap`` entries and only the count of the
    rest (the C decoder checks them), so a huge answer costs no huge list of values."""
    answer = "Here:\n```json\n" + json.dumps({"findings": _entries(1500)}) + "\n```"
    (candidate,) = scan(answer, 1000).candidates
    assert candidate.count == 1500
    assert len(candidate.entries) == 1000
    (walk,) = scan(answer, 10).arrays
    assert walk.count == 1500 and len(walk.entries) == 10 and walk.ending == "closed"
    bare = decode(json.dumps(_entries(30)), 7)
    assert isinstance(bare, list) and len(bare) == 7 and held(bare) == 30


def test_exactly_the_cap_is_not_over_it() -> None:
    """An answer with exactly ``max_entries`` entries is read whole, without over-cap."""
    assert _codes(json.dumps({"findings": _entries(3)}), max_entries=3) == []
    assert _codes(json.dumps({"findings": _entries(4)}), max_entries=3) == [("over-cap", "answer")]


def test_the_cap_counts_across_lists_and_follows_several_lists() -> None:
    """Entries are numbered across the lists, so the cap cuts into the second list; the
    second list's entries past the cap are not read, so they cannot repeat anything."""
    first = json.dumps({"findings": _entries(3)})
    second = json.dumps({"findings": [*_entries(2, start=3), *_entries(1)]})
    result = harvest(f"Draft: {first}\nFinal: {second}", max_entries=4)
    assert [f.subject for f in result.findings] == [f"Finding {i}" for i in range(4)]
    assert [(w.code, w.at) for w in result.warnings] == [
        ("several-lists", "answer"),
        ("over-cap", "answer"),
    ]
    assert "5 after them" not in result.warnings[1].message
    assert "held 6" in result.warnings[1].message


def test_over_cap_comes_after_the_other_answer_level_warnings_and_before_the_entries() -> None:
    """A cut-off list over the cap: cut-off, then over-cap, then the entries' warnings."""
    entries = [
        {"subject": f"s{i}", "label": "issue", "location": {"kind": "global"}} for i in range(5)
    ]
    cut = json.dumps({"findings": entries})[:-3]
    result = harvest(cut.replace('"label": "issue"', '"label": "bug"', 1), max_entries=2)
    assert result.truncated
    assert [(w.code, w.at) for w in result.warnings] == [
        ("cut-off", "answer"),
        ("over-cap", "answer"),
        ("unknown-label", "findings[0]"),
    ]
    assert [f.subject for f in result.findings] == ["s0", "s1"]


def test_a_list_already_decoded_is_read_as_the_same_list_in_an_answer() -> None:
    """harvest_entries (a SARIF log's entries, never written as text) reads entries as the
    harvest reads that list in an answer: the same findings, warnings and over-cap."""
    listed: list[object] = [*_entries(3), 7, {"label": "issue"}, *_entries(2, start=3)]
    for cap in (3, 7, 100):
        as_text = harvest(json.dumps({"findings": listed, "ignored_results": 0}), max_entries=cap)
        assert harvest_entries(listed, max_entries=cap) == as_text
    assert harvest_entries([]) == harvest('{"findings": []}')


def test_a_bare_array_over_the_cap() -> None:
    """A bare array is read under the same cap: bare-array, then over-cap."""
    result = harvest(json.dumps(_entries(5)), max_entries=2)
    assert [(w.code, w.at) for w in result.warnings] == [
        ("bare-array", "answer"),
        ("over-cap", "answer"),
    ]
    assert len(result.findings) == 2


def test_salvage_is_chosen_on_full_counts_not_capped_ones() -> None:
    """§3.3 compares the counts of what the answer held, not of what the cap lets read:
    a cut list of 5 whole entries beats a complete one of 3, even with a cap of 2."""
    complete = json.dumps({"findings": _entries(3)})
    cut = json.dumps({"findings": _entries(6, start=10)})[:-20]
    result = harvest(f"{complete}\n{cut}", max_entries=2)
    assert result.truncated
    assert [f.subject for f in result.findings] == ["Finding 10", "Finding 11"]
    assert [w.code for w in result.warnings] == ["cut-off", "over-cap"]


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


def test_over_cap_is_heard_in_part_and_survives_a_stop() -> None:
    """A cut the harvest made is never silent: the reviewer is read in part (not heard
    in full, not counted for the quorum), and a stop does not hide the over-cap."""
    answer = json.dumps({"findings": _entries(3)})
    capped = harvest_outcome("hawk", "reviewer", ReviewResult(answer=answer), [], policy=TWO)
    assert len(capped.harvest.findings) == 2
    assert read_in_part_code(capped) == "over-cap"
    assert not heard_in_full(capped)
    whole = harvest_outcome("hawk", "reviewer", ReviewResult(answer=answer), [])
    assert heard_in_full(whole)
    stopped = harvest_outcome(
        "hawk",
        "reviewer",
        ReviewResult(answer=answer, stop=Stop(limit="idle")),
        [],
        policy=TWO,
    )
    assert [w.code for w in stopped.harvest.warnings] == ["over-cap", "stopped"]


def test_the_report_says_the_answer_was_over_the_cap() -> None:
    """The partial run names the reviewer and the code; the run is partial."""
    people = [Participant(id="hawk", backend="replay")]
    answer = json.dumps({"findings": _entries(3)})
    outcomes = {
        "hawk": harvest_outcome("hawk", "reviewer", ReviewResult(answer=answer), [], policy=TWO)
    }
    status = round_status(people, outcomes)
    _, report = conclude_round(
        RoundFacts(run_id="r1", session="s1"), people, outcomes, 1, status=status, settled_ms=0
    )
    assert report.status == "partial"
    assert report.participants[0].read_in_part == "over-cap"
    markdown = render_markdown(report)
    assert "`hawk` answered, but its answer held more entries than the council reads" in markdown
    assert "(`over-cap`)" in markdown


def test_settings_carry_the_answer_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """COUNCIL_ANSWER_MAX_ENTRIES sets the cap; 1,000 by default, at least 1."""
    monkeypatch.delenv("COUNCIL_ANSWER_MAX_ENTRIES", raising=False)
    assert Settings().answer_max_entries == ANSWER_MAX_ENTRIES
    monkeypatch.setenv("COUNCIL_ANSWER_MAX_ENTRIES", "7")
    assert Settings().answer_max_entries == 7
    monkeypatch.setenv("COUNCIL_ANSWER_MAX_ENTRIES", "0")
    with pytest.raises(ValueError):
        Settings()


# --- the cap changes what is built, never what is found -------------------------------

ITEMS = st.sampled_from(
    [
        '{"subject": "s"}',
        '{"subject": "t", "location": {"kind": "file", "file": "a.py"}}',
        '{"findings": []}',
        '{"findings": [{"subject": "inner"}, 2]}',
        '{"review": {"findings": [1, 2, 3]}}',
        '{"\\u0066indings": [1]}',
        '{"findin\\u0067s": null}',
        '{"a": "\\u00e9"}',
        '{"a": "\\q"}',
        '{"a": NaN}',
        '{"a": Infinity}',
        '{"a": "x\x01y"}',
        '{"a": "x\ny\tz"}',
        '{"a": 1,}',
        "{{}",
        "[1, [2, {}], []]",
        "[[[[]]]]",
        '"text"',
        "12",
        "-0.5e3",
        "true",
        "null",
        "01",
        "{}",
        "[]",
        '{"a": 1 "b": 2}',
        '{"a": ' + "9" * 4400 + "}",
        '{"subj',
        "{",
        "[",
    ]
)
"""Entries that exercise every path of the skim: whole, findings inside (a candidate or
a walk of its own), escaped keys, control characters, constants, huge numbers, broken
JSON, scalars and cut ones."""

SEPARATORS = st.sampled_from([", ", ",", " , ", "\n,", ",,", " ", ""])

FINDINGS_LISTS = st.builds(
    lambda items, seps, close: (
        '{"findings": ['
        + "".join(item + sep for item, sep in zip(items, seps, strict=False))
        + close
    ),
    st.lists(ITEMS, max_size=10),
    st.lists(SEPARATORS, min_size=10, max_size=10),
    st.sampled_from(["]}", "{}]}", "]", "", "]}, ", "] }", "]} trailing {"]),
)

ANSWERS = st.lists(
    FINDINGS_LISTS
    | st.sampled_from(["prose ", "{ ", "} ", "[", "]", '"', "```json\n", "\n```\n", "x: {"]),
    max_size=5,
).map("".join)


def _found(result: Scan, cap: int | None) -> object:
    """What a scan found, with every list cut to its first ``cap`` values."""
    return (
        [(c.start, c.end, c.count, c.entries[:cap]) for c in result.candidates],
        [(a.at, a.ending, a.count, a.entries[:cap]) for a in result.arrays],
        result.findings_not_a_list,
    )


@settings(max_examples=400, deadline=None)
@given(ANSWERS, st.integers(0, 3))
def test_the_cap_changes_what_is_built_never_what_is_found(answer: str, cap: int) -> None:
    """Under any cap the scan finds the same candidates and walks, with the same spans,
    endings and counts, and the same first ``cap`` values of each list."""
    assert _found(scan(answer, cap), cap) == _found(scan(answer), cap)


@settings(max_examples=300, deadline=None)
@given(st.lists(ITEMS, max_size=8), st.lists(SEPARATORS, min_size=8, max_size=8), st.integers(0, 3))
def test_the_capped_decoder_reads_the_same_arrays(
    items: list[str], seps: list[str], cap: int
) -> None:
    """A capped bare array decodes exactly when the uncapped one does, to the same prefix
    and count."""
    text = "[" + "".join(item + sep for item, sep in zip(items, seps, strict=False)) + "]"
    whole, capped = decode(text), decode(text, cap)
    if whole is NOT_JSON:
        assert capped is NOT_JSON
        return
    assert isinstance(whole, list) and isinstance(capped, list)
    assert capped == whole[:cap] and held(capped) == len(whole)


@pytest.mark.parametrize(
    "entry",
    [
        "[" * 1500 + "]" * 1500,  # deeper than the C decoder goes, within MAX_NESTING
        "[" * (MAX_NESTING + 5) + "]" * (MAX_NESTING + 5),  # deeper than the machine reads
        '{"a": ' + "[" * 1500 + "1" + "]" * 1500 + ', "findings": [1, 2]}',
    ],
    ids=["deeper-than-c", "deeper-than-machine", "deep-with-findings"],
)
def test_deep_entries_past_the_cap_are_read_as_the_machine_reads_them(entry: str) -> None:
    """The C decoder's own depth limit never decides: past it, or past MAX_NESTING, the
    entry is read as without a cap, and the entries after it are skimmed again."""
    answer = '{"findings": [{"subject": "a"}, ' + entry + ', {"subject": "b"}, {}]} tail {}'
    assert _found(scan(answer, 1), 1) == _found(scan(answer), 1)
