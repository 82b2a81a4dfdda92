"""Unit tests for consolidation across reviewers and filing (council.merging.consolidation)."""

from __future__ import annotations

import pytest

from council.evidence.verdict import UnmatchedBlock
from council.merging.consolidation import file_findings, member_of, merge_across, with_origin
from council.model.findings import Anchor, ChangeAnchor, FileAnchor, Finding, LineAnchor, Origin

RUN = "run-1"


def _origin(participant: str, kind: str = "reviewer") -> Origin:
    """The origin of a participant in RUN."""
    return Origin.model_validate({"kind": kind, "run_id": RUN, "participant": participant})


def _f(
    participant: str,
    subject: str = "Leaks the file handle",
    anchor: Anchor | None = None,
    **extra: object,
) -> Finding:
    """A finding by ``participant`` (reviewer origin), on a.py line 3 unless told."""
    fields: dict[str, object] = {
        "anchor": anchor if anchor is not None else LineAnchor(path="a.py", line=3),
        "label": "issue",
        "subject": subject,
        "origin": _origin(participant),
        **extra,
    }
    return Finding.model_validate(fields)


def test_one_participant_passes_through_without_raised_by() -> None:
    """A finding raised by one participant alone is kept as is, with no raised_by."""
    hawk = [_f("hawk"), _f("hawk", "Another claim")]
    assert merge_across([("hawk", hawk), ("owl", [])]) == hawk


def test_same_claim_from_two_reviewers_becomes_one() -> None:
    """Two reviewers saying the same thing give one finding raised by both, in roster order."""
    first = _f("hawk", discussion="hawk's argument", label="issue")
    second = _f("owl", "leaks  the file handle.", discussion="owl's", label="nitpick")
    merged = merge_across([("hawk", [first]), ("owl", [second])])
    assert len(merged) == 1
    got = merged[0]
    assert (got.label, got.subject, got.discussion) == ("issue", first.subject, "hawk's argument")
    assert got.origin == _origin("hawk")
    assert got.raised_by == ("hawk", "owl")


def test_different_files_do_not_merge() -> None:
    """The same subject on two different files stays two findings."""
    other = _f("owl", anchor=FileAnchor(path="b.py"))
    assert len(merge_across([("hawk", [_f("hawk")]), ("owl", [other])])) == 2


def test_most_precise_anchor_wins() -> None:
    """A change anchor gives way to a file anchor, a file anchor to a line anchor."""
    merged = merge_across(
        [
            ("hawk", [_f("hawk", anchor=ChangeAnchor())]),
            ("owl", [_f("owl", anchor=FileAnchor(path="a.py"))]),
            ("wren", [_f("wren", anchor=LineAnchor(path="a.py", line=9))]),
        ]
    )
    assert merged[0].anchor == LineAnchor(path="a.py", line=9)
    assert merged[0].raised_by == ("hawk", "owl", "wren")


def test_first_among_equally_precise_anchors_is_kept() -> None:
    """Two line anchors: the kept finding's own (the first) stays."""
    later = _f("owl", anchor=LineAnchor(path="a.py", line=40, start_line=30))
    merged = merge_across([("hawk", [_f("hawk")]), ("owl", [later])])
    assert merged[0].anchor == LineAnchor(path="a.py", line=3)


def test_highest_severity_and_confidence_given() -> None:
    """Severity and confidence are the highest any raiser gave; absent ones do not count."""
    merged = merge_across(
        [
            ("hawk", [_f("hawk", severity="minor")]),
            ("owl", [_f("owl", severity="critical", confidence=0.4)]),
            ("wren", [_f("wren", severity="medium", confidence=0.9)]),
            ("crow", [_f("crow", confidence=0.5)]),
        ]
    )
    assert (merged[0].severity, merged[0].confidence) == ("critical", 0.9)


def test_absent_severity_and_confidence_stay_absent() -> None:
    """When nobody gave a severity or confidence, the merged finding has none."""
    merged = merge_across([("hawk", [_f("hawk")]), ("owl", [_f("owl")])])
    assert (merged[0].severity, merged[0].confidence) == (None, None)


def test_merges_into_the_earliest_kept_finding() -> None:
    """A finding that says the same as two kept findings merges into the earlier one."""
    hawk = [_f("hawk", anchor=FileAnchor(path="a.py")), _f("hawk", anchor=ChangeAnchor())]
    merged = merge_across([("hawk", hawk), ("owl", [_f("owl")])])
    assert [f.raised_by for f in merged] == [("hawk", "owl"), None]
    assert merged[0].anchor == LineAnchor(path="a.py", line=3)
    assert merged[1] == hawk[1]


def test_one_reviewers_repeats_are_not_merged() -> None:
    """Merging is across reviewers: a reviewer's own two tellings both stay."""
    hawk = [_f("hawk"), _f("hawk", discussion="again")]
    assert merge_across([("hawk", hawk)]) == hawk


def test_a_reviewer_merges_once_per_kept_finding() -> None:
    """A second repeat of the same reviewer goes to the next match, not the same one twice."""
    hawk = [_f("hawk"), _f("hawk", discussion="again")]
    owl = [_f("owl"), _f("owl", discussion="again")]
    merged = merge_across([("hawk", hawk), ("owl", owl)])
    assert [f.raised_by for f in merged] == [("hawk", "owl"), ("hawk", "owl")]
    assert [f.discussion for f in merged] == ["", "again"]


def test_not_transitive_and_never_remerged() -> None:
    """A kept finding that took a file is compared by it: another file is not merged in."""
    merged = merge_across(
        [
            ("hawk", [_f("hawk", anchor=ChangeAnchor())]),
            ("owl", [_f("owl", anchor=FileAnchor(path="a.py"))]),
            ("wren", [_f("wren", anchor=FileAnchor(path="b.py"))]),
        ]
    )
    assert [f.raised_by for f in merged] == [("hawk", "owl"), None]
    assert merged[1].anchor == FileAnchor(path="b.py")


def test_roster_order_not_arrival_order() -> None:
    """raised_by follows the sequence given (the roster), and so does the filing order."""
    merged = merge_across(
        [("owl", [_f("owl", "Owl first")]), ("hawk", [_f("hawk"), _f("hawk", "Owl first")])]
    )
    assert [f.subject for f in merged] == ["Owl first", "Leaks the file handle"]
    assert merged[0].raised_by == ("owl", "hawk")


def test_judge_raised_by_is_kept_even_alone() -> None:
    """A judge's finding keeps its raised_by (even one id) and the judge is not a raiser."""
    judged = _f("heron", raised_by=("kestrel",)).model_copy(
        update={"origin": _origin("heron", "judge")}
    )
    merged = merge_across([("kestrel", []), ("heron", [judged])])
    assert merged[0].raised_by == ("kestrel",)


def test_carried_raised_by_merges_in_roster_order() -> None:
    """Carried ids join the raisers, deduplicated, in roster order; unknown ids go last."""
    judged = _f("heron", raised_by=("zed", "wren", "hawk")).model_copy(
        update={"origin": _origin("heron", "judge")}
    )
    merged = merge_across([("hawk", [_f("hawk")]), ("owl", []), ("wren", []), ("heron", [judged])])
    assert merged[0].raised_by == ("hawk", "wren", "zed")


def test_reviewer_with_carried_raised_by_is_credited_too() -> None:
    """A reviewer's own finding that carries raised_by still credits the reviewer."""
    owl = _f("owl", raised_by=("crow",))
    merged = merge_across([("hawk", [_f("hawk")]), ("owl", [owl])])
    assert merged[0].raised_by == ("hawk", "owl", "crow")


def test_with_origin_stamps_every_finding() -> None:
    """with_origin sets the same origin on each finding and changes nothing else."""
    bare = Finding(anchor=ChangeAnchor(), label="note", subject="x")
    got = with_origin([bare, bare], _origin("hawk"))
    assert [f.origin for f in got] == [_origin("hawk")] * 2
    assert got[0].model_copy(update={"origin": None}) == bare


def test_file_findings_numbers_in_order() -> None:
    """Ids run from first_id in the merged order."""
    filed = file_findings([_f("hawk", "a"), _f("owl", "b"), _f("hawk", "c")], 41)
    assert [(f.id, f.subject) for f in filed] == [(41, "a"), (42, "b"), (43, "c")]


def test_file_findings_of_nothing_is_nothing() -> None:
    """Filing no findings takes no ids."""
    assert file_findings([], 1) == []


@pytest.mark.parametrize(
    ("finding", "first_id"),
    [
        (Finding(anchor=ChangeAnchor(), label="note", subject="x"), 1),
        (
            Finding(
                id=3, anchor=ChangeAnchor(), label="note", subject="x", origin=Origin(kind="hand")
            ),
            1,
        ),
        (Finding(anchor=ChangeAnchor(), label="note", subject="x", origin=Origin(kind="hand")), 0),
    ],
)
def test_file_findings_refuses_misuse(finding: Finding, first_id: int) -> None:
    """No origin, an id already given, or a first id below 1 is a ValueError."""
    with pytest.raises(ValueError):
        file_findings([finding], first_id)


def test_a_telling_read_back_is_the_finding_it_was_told_as_but_its_evidence() -> None:
    """Member.as_finding gives back what member_of kept (text, place, severity,
    confidence, origin), with no id, raisers or agreement, and never the evidence."""
    told = _f("hawk", discussion="no with block", severity="critical", confidence=0.8)
    verdict = UnmatchedBlock(block=1, reason="no-submission-this-turn")
    back = member_of("hawk", told.model_copy(update={"evidence": (verdict,)})).as_finding()
    assert back == told
