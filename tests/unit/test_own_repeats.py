"""A reviewer's own repeats (the journal fold, an answer's lists) drop a telling only when
a kept one says all it says: the same words at another line, or graver, stay (a
duplicate costs a line; a lost occurrence can cost a bug). docs/harvest.md §3.1, §5."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from council.harvest.answer import harvest
from council.harvest.journal import also_recorded
from council.merging.sameness import covers
from council.model.findings import ChangeAnchor, FileAnchor, LineAnchor


def _entry(line: int | None, severity: str, path: str = "src/app.py") -> dict[str, Any]:
    where: dict[str, Any] = {"kind": "file", "file": path}
    if line is not None:
        where = {"kind": "line", "file": path, "line": line}
    return {
        "subject": "eval on untrusted input",
        "label": "issue",
        "severity": severity,
        "location": where,
    }


def _told(answer: list[dict[str, Any]], recorded: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    folded = also_recorded(harvest(json.dumps({"findings": answer})), recorded)
    return [(getattr(f.anchor, "line", None), f.severity) for f in folded.findings]


def test_the_same_words_at_another_line_and_graver_are_both_filed() -> None:
    """The hostile case: two occurrences recorded, the second critical; nothing answered
    or only the first: both are filed."""
    recorded = [_entry(2, "minor"), _entry(6, "critical")]
    assert _told([], recorded) == [(2, "minor"), (6, "critical")]
    assert _told([_entry(2, "minor")], recorded) == [(2, "minor"), (6, "critical")]


def test_a_restatement_at_the_same_place_folds_unless_the_journal_was_graver() -> None:
    assert _told([_entry(6, "critical")], [_entry(6, "critical")]) == [(6, "critical")]
    assert _told([_entry(6, "critical")], [_entry(6, "minor")]) == [(6, "critical")]
    assert _told([_entry(6, "minor")], [_entry(6, "critical")]) == [(6, "minor"), (6, "critical")]


def test_a_range_folds_only_into_one_holding_all_of_it() -> None:
    """Lines 1-4 kept do not say what 4-6 says (the sink is at 5): both filed; 1-6 kept
    holds 4-6."""
    wide, narrow = _entry(4, "critical"), _entry(6, "critical")
    wide["location"] = {**wide["location"], "start": 1, "end": 4}
    narrow["location"] = {**narrow["location"], "start": 4, "end": 6}
    assert len(_told([wide], [narrow])) == 2
    wide["location"] = {**wide["location"], "end": 6}
    assert len(_told([wide], [narrow])) == 1


def test_a_file_and_a_line_of_it_are_one_claim_and_a_vague_answer_wins() -> None:
    """A file and a line of it fold (either way); an answer naming no file wins over a
    journal's line (the shared case 154), unless the journal's is graver."""
    assert _told([_entry(None, "minor")], [_entry(3, "minor")]) == [(None, "minor")]
    vague = {**_entry(None, "minor"), "location": {"kind": "change"}}
    assert len(_told([vague], [_entry(3, "minor")])) == 1
    assert len(_told([_entry(3, "minor")], [vague])) == 1
    assert len(_told([vague], [_entry(3, "critical")])) == 2


def test_an_answers_draft_list_keeps_an_occurrence_the_final_list_lacks() -> None:
    """Two lists in one answer: the later list's telling at line 2 does not drop the
    draft's line 6 (§3.1)."""
    text = (
        json.dumps({"findings": [_entry(6, "critical")]})
        + "\n\nFinal:\n"
        + json.dumps({"findings": [_entry(2, "minor")]})
    )
    lines = sorted(getattr(f.anchor, "line", 0) for f in harvest(text).findings)
    assert lines == [2, 6]


anchors = st.one_of(
    st.just(ChangeAnchor()),
    st.builds(FileAnchor, path=st.sampled_from(["a.py", "b.py"])),
    st.builds(
        lambda path, side, first, span: LineAnchor(
            path=path,
            side=side,
            line=first + span,
            start_line=first if span else None,
        ),
        st.sampled_from(["a.py", "b.py"]),
        st.sampled_from(["new", "old"]),
        st.integers(1, 30),
        st.integers(0, 5),
    ),
)


@settings(max_examples=300, deadline=None)
@given(anchors, anchors)
def test_a_place_covers_another_only_where_it_names_its_file_and_lines(
    kept: Any, told: Any
) -> None:
    """covers() never lets a telling on another file, another side or lines outside the
    kept range go."""
    if not covers(kept, told) or isinstance(told, ChangeAnchor) or isinstance(kept, ChangeAnchor):
        return
    assert kept.path == told.path
    if isinstance(kept, LineAnchor) and isinstance(told, LineAnchor):
        assert kept.side == told.side
        kept_lines = set(range(kept.start_line or kept.line, kept.line + 1))
        assert set(range(told.start_line or told.line, told.line + 1)) <= kept_lines

