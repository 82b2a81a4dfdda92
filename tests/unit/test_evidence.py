"""Script evidence beyond the shared cases: the size boundary, the strict readers, reuse."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from council.evidence import (
    SCRIPT_MAX_BYTES,
    MatchedBlock,
    ScriptRow,
    TurnSubmissions,
    UnmatchedBlock,
    code_regions,
    evidence_json,
    match_evidence,
    read_verdict,
    read_verdicts,
    verdict_json,
)


def row(text: str | None, dispatch: int = 1, **fields: Any) -> ScriptRow:
    """A current-turn row: ok, exit 0, unless told otherwise."""
    values: dict[str, Any] = {
        "tool_call_id": f"call_{dispatch}",
        "tool": "run_script",
        "dispatch": dispatch,
        "outcome": "ok",
        "exit_code": 0,
        **fields,
    }
    if text is not None:
        values["text"] = text
    return ScriptRow.model_validate(values)


def fenced(program: str, info: str = "") -> str:
    """An answer showing ``program`` in one backtick block."""
    return f"Ran:\n```{info}\n{program}\n```\nDone.\n"


def labels(text: str, *rows: ScriptRow) -> list[str]:
    """The label (or unmatched reason) of each block of ``text``."""
    evidence = match_evidence(text, TurnSubmissions.of(rows))
    return [v.label if isinstance(v, MatchedBlock) else v.reason for v in evidence.blocks]


def test_a_block_of_exactly_the_cap_is_compared_one_byte_more_is_over_size() -> None:
    """64 KiB of UTF-8 is still a script; 64 KiB + 1 byte is over-size, never compared."""
    at_cap = "x" * SCRIPT_MAX_BYTES
    assert labels(fenced(at_cap), row(at_cap)) == ["ok"]
    over = at_cap + "x"
    assert labels(fenced(over), row(over)) == ["over-size"]


def test_the_cap_counts_utf8_bytes_not_characters() -> None:
    """20 000 'é' are 40 000 bytes (compared); 40 000 'é' are 80 000 bytes (over-size)."""
    fits, too_long = "é" * 20_000, "é" * 40_000
    assert labels(fenced(fits), row(fits)) == ["ok"]
    assert labels(fenced(too_long), row(too_long)) == ["over-size"]


def test_one_turn_serves_several_texts() -> None:
    """A TurnSubmissions built once answers for each finding's discussion and the prose."""
    turn = TurnSubmissions.of([row("make test", 1), row("make lint", 2)])
    first = match_evidence(fenced("make test"), turn)
    second = match_evidence(fenced("make lint"), turn)
    assert [v.model_dump()["dispatch"] for v in (*first.blocks, *second.blocks)] == [1, 2]
    assert first.prose == second.prose == "Ran:\nDone.\n"


def test_equal_dispatch_goes_to_the_later_row() -> None:
    """Two calls with the same dispatch and program: the later row is the latest."""
    turn = TurnSubmissions.of([row("ls", 3, tool_call_id="a"), row("ls", 3, tool_call_id="b")])
    (verdict,) = match_evidence(fenced("ls"), turn).blocks
    assert isinstance(verdict, MatchedBlock)
    assert (verdict.tool_call_id, verdict.also_matches) == ("b", 1)


def test_a_row_reported_again_keeps_its_last_report() -> None:
    """The last row per call counts, and the call is one call (not two)."""
    turn = TurnSubmissions.of(
        [row("ls", 1, outcome="timeout", exit_code=None), row("pwd", 2), row("ls", 1)]
    )
    assert [r.tool_call_id for r in turn.rows] == ["call_1", "call_2"]
    assert turn.find("ls") is not None
    assert turn.rows[0].outcome == "ok"


def test_constructing_directly_keeps_the_last_row_per_call_too() -> None:
    """TurnSubmissions(rows=...) indexes and keeps the last row per call, like of()."""
    turn = TurnSubmissions(rows=(row("ls", 1, outcome="error", exit_code=None), row("ls", 1)))
    found = turn.find("ls")
    assert found is not None
    assert (found.latest.outcome, found.also_matches, len(turn.rows)) == ("ok", 0, 1)


def test_earlier_rows_are_counted_once_per_call() -> None:
    """Earlier turns' rows are only counted, the last row per call once."""
    earlier = [row("ls", 1), row("ls", 1), row("pwd", 2)]
    turn = TurnSubmissions.of([], earlier)
    assert turn.earlier_turn_rows == 2
    assert turn.find("ls") is None


def test_only_blocks_whose_length_a_row_has_are_looked_up() -> None:
    """A row of another length is never a candidate (no hashing of texts that cannot match)."""
    turn = TurnSubmissions.of([row("a" * 10), row("b" * 11, 2)])
    assert turn.lookup(["c" * 10, "b" * 11]).keys() == {"b" * 11}


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"outcome": "ok", "exit_code": 1}, "exit_code"),
        ({"outcome": "failed", "exit_code": 0}, "exit_code"),
        ({"outcome": "failed", "exit_code": None}, "exit_code"),
        ({"outcome": "error", "exit_code": 2}, "exit_code"),
        ({"outcome": "not-run", "exit_code": 0}, "exit_code"),
        ({"outcome": "crashed"}, "outcome"),
        ({"dispatch": 0}, "dispatch"),
        ({"dispatch": 1.0}, "dispatch"),
        ({"dispatch": True}, "dispatch"),
        ({"tool_call_id": ""}, "tool_call_id"),
        ({"turn": "current"}, "turn"),
    ],
)
def test_a_row_no_runner_reports_is_refused(fields: dict[str, Any], problem: str) -> None:
    """ScriptRow refuses values a runner cannot produce, naming the field."""
    values: dict[str, Any] = {
        "tool_call_id": "call_1",
        "tool": "run_script",
        "dispatch": 1,
        "outcome": "ok",
        "text": "ls",
        **fields,
    }
    with pytest.raises(ValidationError, match=problem):
        ScriptRow.model_validate(values)


def test_timeout_takes_any_exit_code_or_none() -> None:
    """A timeout row may carry any code, or none."""
    for code in (None, 0, 124, -9):
        assert row("ls", outcome="timeout", exit_code=code).exit_code == code


MATCHED = {
    "block": 2,
    "label": "failed",
    "tool_call_id": "call_7",
    "tool": "run_tests",
    "dispatch": 7,
    "also_matches": 1,
    "exit_code": 1,
}
UNMATCHED = {"block": 1, "label": "unmatched", "reason": "over-size"}


def test_the_reader_reads_what_the_matcher_writes() -> None:
    """Stored verdicts in canonical JSON read back equal, nothing refused."""
    reading = read_verdicts([UNMATCHED, MATCHED, {**MATCHED, "label": "ok", "exit_code": 0}])
    assert reading.refused == 0
    assert [verdict_json(v) for v in reading.verdicts][:2] == [UNMATCHED, MATCHED]
    no_code = {k: v for k, v in MATCHED.items() if k != "exit_code"} | {"label": "error"}
    assert isinstance(read_verdict(no_code), MatchedBlock)


@pytest.mark.parametrize(
    "stored",
    [
        "not an object",
        ["block", 1],
        None,
        {**UNMATCHED, "block": 0},
        {**UNMATCHED, "block": -1},
        {**UNMATCHED, "block": 1.0},
        {**UNMATCHED, "block": "1"},
        {**UNMATCHED, "block": True},
        {**UNMATCHED, "label": "skipped"},
        {**UNMATCHED, "reason": "nearest-submission"},
        {**UNMATCHED, "tool_call_id": "call_7"},
        {**UNMATCHED, "exit_code": 1},
        {k: v for k, v in UNMATCHED.items() if k != "reason"},
        {k: v for k, v in UNMATCHED.items() if k != "label"},
        {**MATCHED, "label": "ok"},
        {**MATCHED, "exit_code": 0},
        {k: v for k, v in MATCHED.items() if k != "exit_code"},
        {**MATCHED, "label": "error"},
        {**MATCHED, "label": "not-run", "exit_code": None},
        {**MATCHED, "label": "timeout", "exit_code": None},
        {**MATCHED, "dispatch": 0},
        {**MATCHED, "also_matches": -1},
        {**MATCHED, "also_matches": 1.5},
        {**MATCHED, "tool": ""},
        {**MATCHED, "nearest": "call_6"},
        {k: v for k, v in MATCHED.items() if k != "tool_call_id"},
    ],
)
def test_the_reader_refuses_what_no_writer_produces(stored: object) -> None:
    """A stored verdict no writer could have written is refused and counted."""
    assert read_verdict(stored) is None
    assert read_verdicts([UNMATCHED, stored]).refused == 1


def test_verdict_models_refuse_an_exit_code_the_label_cannot_carry() -> None:
    """The verdict model itself holds the exit-code rule, not only the reader."""
    with pytest.raises(ValidationError):
        MatchedBlock(
            block=1, label="ok", tool_call_id="c", tool="t", dispatch=1, also_matches=0, exit_code=3
        )
    with pytest.raises(ValidationError):
        UnmatchedBlock.model_validate({"block": 1, "reason": "kept-out", "tool": "t"})


FENCY = st.lists(
    st.sampled_from(
        [
            "```",
            "~~~",
            "````",
            "~~~~~",
            "`",
            "~",
            " ",
            "   ",
            "    ",
            "\t",
            "\n",
            "\r\n",
            "\r",
            ">",
            "- ",
            "x",
            "é",
            "\u2028",
            "diff",
            "sh",
            " suggestion",
        ]
    ),
    max_size=60,
).map("".join)
"""Texts made of the pieces fence rules are about."""


def reference_regions(text: str) -> list[tuple[int, int, str, str, bool]]:
    """The fence rules read line by line, as the design states them: ``(start, end, info,
    content, closed)`` of every region. Slow and plain, to check the fast reader against."""
    lines: list[tuple[int, str]] = []
    at = 0
    while at < len(text):
        stop = text.find("\n", at)
        stop = len(text) if stop == -1 else stop
        lines.append((at, text[at:stop]))
        at = stop + 1

    def fence(line: str) -> tuple[int, str, str] | None:
        spaces = len(line) - len(line.lstrip(" "))
        body = line[spaces:]
        if spaces > 3 or body[:3] not in ("```", "~~~"):
            return None
        run = len(body) - len(body.lstrip(body[0]))
        return spaces, body[:run], body[run:]

    found: list[tuple[int, int, str, str, bool]] = []
    index = 0
    while index < len(lines):
        start, line = lines[index]
        opener = fence(line)
        index += 1
        if opener is None or (opener[1][0] == "`" and "`" in opener[2]):
            continue
        indent, run, rest = opener
        body: list[str] = []
        end, closed = len(text), False
        while index < len(lines):
            at, line = lines[index]
            index += 1
            closer = fence(line)
            closes = closer and closer[1][0] == run[0] and len(closer[1]) >= len(run)
            if closes and not closer[2].strip(" \t\r"):
                end, closed = min(at + len(line) + 1, len(text)), True
                break
            cut = min(indent, len(line) - len(line.lstrip(" ")))
            body.append(line[cut:])
        found.append((start, end, rest.strip(" \t\r"), "\n".join(body), closed))
    return found


@settings(max_examples=1000, deadline=None)
@given(FENCY)
def test_the_fast_reader_agrees_with_the_rules_read_line_by_line(text: str) -> None:
    """code_regions finds exactly the regions a plain line-by-line reading of §1 finds."""
    regions = code_regions(text, max_regions=10_000)
    assert regions.dropped == 0
    found = [(r.start, r.end, r.info, r.content, r.closed) for r in regions.read]
    assert found == reference_regions(text)
    assert [r.position for r in regions.read] == list(range(1, len(found) + 1))


@settings(max_examples=200, deadline=None)
@given(FENCY, st.integers(min_value=0, max_value=4))
def test_regions_past_the_cap_are_counted_not_read(text: str, cap: int) -> None:
    """The first ``cap`` regions are read, the rest only counted."""
    every = code_regions(text, max_regions=10_000).read
    capped = code_regions(text, max_regions=cap)
    assert capped.read == every[:cap]
    assert capped.dropped == max(0, len(every) - cap)


@settings(max_examples=300, deadline=None)
@given(FENCY, st.lists(st.text(alphabet="`~ \n\rx", max_size=12), max_size=4))
def test_the_prose_is_the_text_without_exactly_the_matched_blocks(
    text: str, programs: list[str]
) -> None:
    """Never raises; the prose is the text minus the matched regions' spans, in order."""
    turn = TurnSubmissions.of([row(p, i + 1) for i, p in enumerate(programs)])
    evidence = match_evidence(text, turn)
    regions = code_regions(text)
    assert len(evidence.blocks) == len(regions.read)
    matched = {v.block for v in evidence.matched}
    kept = text
    for region in reversed(regions.read):
        if region.position in matched:
            kept = kept[: region.start] + kept[region.end :]
        assert region.content in programs or region.position not in matched
    assert evidence.prose == kept
    assert evidence_json(evidence)["prose"] == kept
