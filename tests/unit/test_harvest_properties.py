"""Properties of the harvest (docs/harvest.md §3-§5) and targeted tests of says_the_same.

The shared cases pin the rules one example at a time; these tests check what must hold
for EVERY input: the harvest never raises and always returns canonical, storable models,
the lenient decoder reads any real JSON exactly, a cut answer keeps a prefix of the
findings, and the subject folding of §5.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from council.harvest import (
    JournalCaps,
    also_recorded,
    fold_journal,
    harvest,
    read_journal,
)
from council.harvest.scan import NOT_JSON, decode
from council.merging.sameness import fold_subject, fold_subjects, says_the_same
from council.model.findings import (
    HARVEST,
    ChangeAnchor,
    FileAnchor,
    Finding,
    Harvest,
    LineAnchor,
    Read,
    canonical,
)

ANY_TEXT = st.text(
    alphabet=st.characters(exclude_categories=()) | st.characters(categories=["Cs"]),
    max_size=400,
)
"""Any text, lone surrogates and control characters included."""

FRAGMENTS = st.sampled_from(
    [
        "{",
        "}",
        "[",
        "]",
        '"',
        "\\",
        ":",
        ",",
        " ",
        "\n",
        "\r",
        "\t",
        "x",
        "1",
        "-",
        "0.5",
        "1e",
        "true",
        "nul",
        '"findings"',
        '"findings": [',
        '"subject": "s"',
        '{"subject": "Leak", "label": "issue"}',
        '"location": {"kind": "line", ',
        '"file": "a.py", "start": 3}',
        "```json\n",
        "```\n",
        "~~~\n",
        "if (x) { y() }",
        "{ strict: true }",
        "'",
        "//",
        "\x00",
        "\u2028",
        "\ud800",
        "NaN",
        "[]",
        "{}",
    ]
)
"""Pieces that stress the scanner: braces, quotes, escapes, fences, half tokens."""

HEAVY_TEXT = st.lists(FRAGMENTS, max_size=80).map("".join)
"""Brace-, quote- and fence-heavy text built from :data:`FRAGMENTS`."""

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
"""Any JSON value Python's json module can write."""

ENTRIES = st.lists(
    st.fixed_dictionaries(
        {"subject": st.text(min_size=1, max_size=30).filter(str.strip)},
        optional={
            "label": st.sampled_from(["issue", "Nitpick", "blocker", "", None]) | JSON_VALUES,
            "location": JSON_VALUES
            | st.fixed_dictionaries(
                {"kind": st.sampled_from(["line", "file", "global", "hunk"])},
                optional={
                    "file": st.sampled_from(["a.py", " b/c.go ", ""]) | JSON_VALUES,
                    "start": st.integers(-2, 50) | st.sampled_from(["7", "x", 2.5]),
                    "end": st.integers(-2, 50),
                    "side": st.sampled_from(["old", "NEW", "left"]) | JSON_VALUES,
                },
            ),
            "discussion": st.text(max_size=40) | JSON_VALUES,
            "severity": st.sampled_from(["High", "low", "p0"]) | JSON_VALUES,
            "confidence": st.floats(-1, 2) | st.sampled_from(["0.5", "70%", ".5"]),
            "raisedBy": st.lists(st.text(max_size=6) | JSON_VALUES, max_size=4) | JSON_VALUES,
        },
    ),
    max_size=6,
)
"""Answer entries with every field present or not, well-formed or not."""


def assert_canonical(result: Harvest) -> None:
    """The result is a canonical Harvest that survives a JSON round trip unchanged."""
    assert HARVEST.validate_python(canonical(result)) == result
    assert HARVEST.validate_json(result.model_dump_json()) == result


@settings(max_examples=400, deadline=None)
@given(ANY_TEXT)
def test_harvest_never_raises_on_any_text(answer: str) -> None:
    """Any text at all, surrogates and control characters included, harvests canonically."""
    assert_canonical(harvest(answer))


@settings(max_examples=600, deadline=None)
@given(HEAVY_TEXT)
def test_harvest_never_raises_on_brace_quote_and_fence_heavy_text(answer: str) -> None:
    """Text dense in braces, quotes, escapes and fences harvests canonically."""
    assert_canonical(harvest(answer, Read(witness="abc123")))


@settings(max_examples=150, deadline=None)
@given(ENTRIES, HEAVY_TEXT, st.booleans())
def test_messy_entries_in_prose_harvest_canonically(
    entries: list[dict[str, object]], prose: str, fenced: bool
) -> None:
    """Entries of any shape, wrapped in any prose and maybe fenced, harvest canonically."""
    body = json.dumps({"findings": entries})
    answer = f"{prose}\n```json\n{body}\n```\n" if fenced else f"{prose}{body}"
    assert_canonical(harvest(answer))


@settings(max_examples=150, deadline=None)
@given(ENTRIES, st.sampled_from(["", "Here is my review:\n", "Done.\n\n```json\n"]))
def test_a_valid_answer_keeps_every_entry_that_has_a_subject(
    entries: list[dict[str, object]], before: str
) -> None:
    """A complete answer yields one finding per entry (they all have subjects), in order."""
    result = harvest(before + json.dumps({"findings": entries}, indent=1))
    assert not result.truncated
    assert [f.subject for f in result.findings] == [str(e["subject"]).strip() for e in entries]
    assert all(w.at.startswith("findings[") for w in result.warnings)


@settings(max_examples=150, deadline=None)
@given(ENTRIES, st.data())
def test_a_cut_answer_keeps_a_prefix_of_the_findings(
    entries: list[dict[str, object]], data: st.DataObject
) -> None:
    """Cutting an answer anywhere keeps some leading findings, never a mangled one."""
    whole = json.dumps({"findings": entries})
    cut = data.draw(st.integers(0, len(whole)))
    full = harvest(whole).findings
    kept = harvest(whole[:cut]).findings
    assert kept == full[: len(kept)]


@settings(max_examples=500, deadline=None)
@given(JSON_VALUES, st.sampled_from([None, 1, 2]))
def test_decode_reads_real_json_exactly(value: object, indent: int | None) -> None:
    """The lenient decoder reads what json.dumps writes as exactly that value."""
    spelled = json.dumps(value, indent=indent)
    assert decode(spelled) == value
    assert decode(json.dumps(value, ensure_ascii=False)) == value


def test_decode_is_lenient_only_where_models_slip() -> None:
    """Raw LF/CR/tab in strings and repeated keys are read; other slips are not JSON."""
    assert decode('{"a": "x\ny\r\tz", "a": 2}') == {"a": 2}
    assert decode('"line\nbreak"') == "line\nbreak"
    for broken in ('{"a": 1,}', "[1, 2,]", "{'a': 1}", '{"a": NaN}', '"a\x01"', "{a: 1}"):
        assert decode(broken) is NOT_JSON, broken
    assert decode("// c\n{}") is NOT_JSON


@settings(max_examples=200, deadline=None)
@given(st.lists(ANY_TEXT | st.binary(max_size=60), max_size=8), st.integers(0, 5))
def test_journal_reading_never_raises(raw: list[str | bytes], max_entries: int) -> None:
    """Any stored journal, under any count cap, reads and folds canonically."""
    reading = read_journal(raw, JournalCaps(max_entries=max_entries, max_entry_bytes=40))
    indices = [e.index for e in reading.entries] + [p.index for p in reading.problems]
    assert sorted(indices) == list(range(min(len(raw), max_entries + 1)))
    assert_canonical(fold_journal(harvest(""), reading))


@settings(max_examples=120, deadline=None)
@given(st.lists(JSON_VALUES | ENTRIES.map(lambda e: e[0] if e else {}), max_size=6))
def test_also_recorded_never_raises(recorded: list[object]) -> None:
    """Decoded journal entries of any shape fold into a harvest canonically."""
    assert_canonical(also_recorded(harvest('{"findings": []}'), recorded))


def test_brace_heavy_megabyte_answers_read_quickly() -> None:
    """Hostile 1 MB answers (brace runs, nesting, quotes) are read in linear time."""
    size = 1_000_000
    hostile = [
        "{" * size,
        "[" * size,
        '{"a":' * (size // 5),
        "{}" * (size // 2),
        "if (x) { y() } " * (size // 15),
        '{"' + 'a"b"' * (size // 4),
        '{"findings": [' * (size // 14),
    ]
    for answer in hostile:
        harvest(answer)


def _finding(subject: str, anchor: ChangeAnchor | FileAnchor | LineAnchor) -> Finding:
    """A finding with only what sameness looks at."""
    return Finding(anchor=anchor, label="issue", subject=subject)


def test_fold_subject_folds_case_spaces_and_separators() -> None:
    """Casefolding, runs of whitespace and . , ; : become one space, ends trimmed."""
    assert fold_subject("  Pool\u00a0LEAKS;; on\ttimeout. ") == "pool leaks on timeout"
    assert fold_subject("Gießen") == fold_subject("GIESSEN")
    assert fold_subject("a\u001eb\u0085c") == "a b c"
    assert fold_subject("a\u200bb") != fold_subject("a b")


@given(st.lists(ANY_TEXT, max_size=8))
def test_fold_subjects_folds_each_as_fold_subject(subjects: list[str]) -> None:
    """The bulk fold gives, in order, what fold_subject gives for each subject."""
    assert fold_subjects(subjects) == [fold_subject(s) for s in subjects]


def test_says_the_same_needs_equal_folded_subjects() -> None:
    """Other punctuation counts: 'leaks!' and 'leaks' are different claims."""
    here = FileAnchor(path="db/pool.py")
    assert says_the_same(_finding("Pool leaks.", here), _finding("pool leaks", here))
    assert not says_the_same(_finding("Pool leaks!", here), _finding("Pool leaks", here))


def test_says_the_same_compares_files_only_when_both_name_one() -> None:
    """Same file or no file on either side: same; two different files: different."""
    line = LineAnchor(path="a.py", line=4, start_line=2)
    file_a, file_b, change = FileAnchor(path="a.py"), FileAnchor(path="b.py"), ChangeAnchor()
    assert says_the_same(_finding("X", line), _finding("X", file_a))
    assert says_the_same(_finding("X", change), _finding("X", file_b))
    assert says_the_same(_finding("X", file_b), _finding("X", change))
    assert not says_the_same(_finding("X", file_a), _finding("X", file_b))


def test_says_the_same_ignores_label_severity_and_witness() -> None:
    """Only the folded subject and the file decide; the rest of a finding does not."""
    a = Finding(anchor=FileAnchor(path="a.py", witness="1"), label="issue", subject="S")
    b = Finding(anchor=FileAnchor(path="a.py"), label="question", subject="s", severity="minor")
    assert says_the_same(a, b) and says_the_same(b, a)
