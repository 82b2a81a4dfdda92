"""merge_across finds merge targets through an index (linear time); it must merge exactly
as the plain definition does: each finding into the EARLIEST kept finding that says the
same and that its participant has not merged into yet. The plain definition, a scan of
every kept finding, is written out here as the reference and compared on random rounds
dense in collisions (few subjects, few paths, change/file/line anchors, severities, a
judge carrying ``raised_by``)."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from council.merging.consolidation import _finished, _Kept, merge_across
from council.merging.sameness import says_the_same
from council.model.findings import ChangeAnchor, FileAnchor, Finding, LineAnchor, Origin


def reference_merge(per_participant: Sequence[tuple[str, Sequence[Finding]]]) -> list[Finding]:
    """The plain definition: scan every kept finding for each finding (quadratic). Only
    the search differs from merge_across; the absorbing and the raisers' order are
    shared (``_Kept``, ``_finished``)."""
    order: dict[str, int] = {}
    for participant, _ in per_participant:
        order.setdefault(participant, len(order))
    kept: list[_Kept] = []
    for participant, findings in per_participant:
        for finding in findings:
            target = next(
                (
                    k
                    for k in kept
                    if participant not in k.participants and says_the_same(k.finding, finding)
                ),
                None,
            )
            if target is None:
                fresh = _Kept(finding)
                fresh.credit(participant, finding)
                kept.append(fresh)
            else:
                target.absorb(participant, finding)
    return _finished(kept, order)


SUBJECTS = ["Leaks the handle", "leaks  the handle.", "Off by one", "off-by-one"]
PATHS = ["a.py", "b.py", "c.py"]


@st.composite
def findings_of(draw: st.DrawFn, participant: str) -> list[Finding]:
    kind = "judge" if participant == "judge" else "reviewer"
    origin = Origin.model_validate({"kind": kind, "run_id": "r", "participant": participant})
    made: list[Finding] = []
    for _ in range(draw(st.integers(0, 8))):
        where = draw(st.sampled_from(["change", "file", "line"]))
        path = draw(st.sampled_from(PATHS))
        anchor = (
            ChangeAnchor()
            if where == "change"
            else FileAnchor(path=path)
            if where == "file"
            else LineAnchor(path=path, line=draw(st.integers(1, 3)))
        )
        fields: dict[str, object] = {
            "anchor": anchor,
            "label": "issue",
            "subject": draw(st.sampled_from(SUBJECTS)),
            "severity": draw(st.sampled_from([None, "minor", "medium", "critical"])),
            "origin": origin,
        }
        if participant == "judge" and draw(st.booleans()):
            fields["raised_by"] = tuple(draw(st.sets(st.sampled_from(["p", "q"]), min_size=1)))
        made.append(Finding.model_validate(fields))
    return made


@st.composite
def rounds(draw: st.DrawFn) -> list[tuple[str, list[Finding]]]:
    people = draw(st.lists(st.sampled_from(["p", "q", "r", "s"]), max_size=4, unique=True))
    if draw(st.booleans()):
        people.append("judge")
    return [(who, draw(findings_of(who))) for who in people]


@settings(max_examples=400, deadline=None)
@given(rounds())
def test_the_index_merges_as_the_plain_scan_does(
    per_participant: list[tuple[str, list[Finding]]],
) -> None:
    assert merge_across(per_participant) == reference_merge(per_participant)


def test_many_findings_of_one_subject_merge_pairwise() -> None:
    """20,000 findings with one subject on 2,000 files from two reviewers: every one of
    the second's merges into the first's at the same place (the cursors of the index
    skip what each reviewer already merged into)."""
    origin = {
        p: Origin.model_validate({"kind": "reviewer", "run_id": "r", "participant": p})
        for p in "pq"
    }

    def of(who: str) -> list[Finding]:
        return [
            Finding(
                anchor=LineAnchor(path=f"f{i % 2000}.py", line=1 + i // 2000),
                label="issue",
                subject="Missing docstring",
                origin=origin[who],
            )
            for i in range(10_000)
        ]

    merged = merge_across([("p", of("p")), ("q", of("q"))])
    assert len(merged) == 10_000 and all(f.raised_by == ("p", "q") for f in merged)
