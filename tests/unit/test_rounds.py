"""council.session.earlier_rounds: seen, outdated and carried findings across the rounds of
a session."""

from __future__ import annotations

from council.change.diff import Change, parse_diff
from council.model.findings import ChangeAnchor, FileAnchor, LineAnchor
from council.model.fingerprint import claim, fingerprint
from council.model.report import Suppression
from council.session.earlier_rounds import (
    carry,
    follow,
    mark_round,
    seen_by_fingerprint,
    still_open,
    touched,
)
from tests.forge_cases import finding, report

EDIT_LINE_5 = (
    "diff --git a/app.py b/app.py\n"
    "index 1111111..2222222 100644\n"
    "--- a/app.py\n"
    "+++ b/app.py\n"
    "@@ -5 +5 @@\n"
    "-five\n"
    "+FIVE\n"
)

INSERT_ABOVE = (
    "diff --git a/app.py b/app.py\n"
    "index 1111111..2222222 100644\n"
    "--- a/app.py\n"
    "+++ b/app.py\n"
    "@@ -1,0 +2,3 @@\n"
    "+a\n"
    "+b\n"
    "+c\n"
)

DELETE_APP = (
    "diff --git a/app.py b/app.py\n"
    "deleted file mode 100644\n"
    "index 1111111..0000000\n"
    "--- a/app.py\n"
    "+++ /dev/null\n"
    "@@ -1,2 +0,0 @@\n"
    "-x\n"
    "-y\n"
)

EDIT_LINE_5_IN_CONTEXT = (
    "diff --git a/app.py b/app.py\n"
    "index 1111111..2222222 100644\n"
    "--- a/app.py\n"
    "+++ b/app.py\n"
    "@@ -2,7 +2,7 @@\n"
    " two\n"
    " three\n"
    " four\n"
    "-five\n"
    "+FIVE\n"
    " six\n"
    " seven\n"
    " eight\n"
)

INSERT_AND_REPLACE = (
    "diff --git a/app.py b/app.py\n"
    "index 1111111..2222222 100644\n"
    "--- a/app.py\n"
    "+++ b/app.py\n"
    "@@ -1,3 +1,5 @@\n"
    " one\n"
    "+new a\n"
    "+new b\n"
    " two\n"
    " three\n"
    "@@ -6,4 +8,3 @@\n"
    " six\n"
    "-seven\n"
    "-eight\n"
    "+EIGHT\n"
    " nine\n"
)

RENAME_APP = (
    "diff --git a/app.py b/main.py\nsimilarity index 100%\nrename from app.py\nrename to main.py\n"
)

ADD_GONE = (
    "diff --git a/gone.py b/gone.py\n"
    "new file mode 100644\n"
    "index 0000000..1111111\n"
    "--- /dev/null\n"
    "+++ b/gone.py\n"
    "@@ -0,0 +1 @@\n"
    "+back\n"
)


def on(line: int, start: int | None = None, code: str | None = None) -> LineAnchor:
    """A new-side anchor on app.py (``code``: its code hash, council.model.occurrence)."""
    return LineAnchor(path="app.py", line=line, start_line=start, code=code)


CODE = "1eac" * 8 + ":1"
"""One piece of code's hash: findings anchored on it name one occurrence, wherever."""


def test_repeat_fingerprint_is_seen() -> None:
    """A finding whose fingerprint an earlier round reported (its code, moved) is seen; a
    new one is not; nor the claim at other code. A round of an earlier council reported
    claims: a finding of that claim that kept its id is seen (not posted again; seen
    still gates), a new occurrence of it is not."""
    old = finding(1, on(3, code=CODE), subject="leaks a handle")
    again = finding(7, on(9, code=CODE), subject="Leaks a handle.")
    new = finding(8, on(9), subject="divides by zero")
    elsewhere = finding(9, on(20, code="e15e" * 8 + ":1"), subject="leaks a handle")
    marked = mark_round(report(again, new, elsewhere), [], {fingerprint(old)}, Change())
    assert marked.seen == (7,)
    before = mark_round(report(again, new, elsewhere), [], {claim(old): 7}, Change())
    assert before.seen == (7,)


def test_a_fingerprint_reported_under_several_ids_is_seen_under_each() -> None:
    """One fingerprint reported under ids 3 and 5 (one occurrence told twice): both are
    seen again, one that took a new id while 5 is not held stands for 5, and a finding
    beyond the two is new."""
    print_ = fingerprint(finding(1, on(3, code=CODE), subject="leaks a handle"))
    kept = [
        finding(3, on(3, code=CODE), subject="leaks a handle"),
        finding(5, on(40, code=CODE), subject="leaks a handle"),
    ]
    assert seen_by_fingerprint(kept, {print_: (3, 5)}) == [3, 5]
    moved = [
        finding(3, on(3, code=CODE), subject="leaks a handle"),
        finding(9, on(41, code=CODE), subject="leaks a handle"),
    ]
    extra = finding(10, on(80, code=CODE), subject="leaks a handle")
    assert seen_by_fingerprint([*moved, extra], {print_: (3, 5)}) == [3, 9]
    assert seen_by_fingerprint([*kept, extra], {print_: 5}) == [5]
    assert seen_by_fingerprint([extra, *moved], {print_}) == [10]


def test_edited_line_makes_an_earlier_finding_outdated() -> None:
    """The interdiff edits line 5: the earlier finding on 4-6 is outdated, the one on 9 not."""
    hit = finding(1, on(6, start=4), subject="hit")
    miss = finding(2, on(9), subject="miss")
    marked = mark_round(report(), [hit, miss], set(), parse_diff(EDIT_LINE_5))
    assert [f.id for f in marked.outdated] == [1]


def test_lines_are_read_on_the_old_side() -> None:
    """Three lines inserted above line 2 shift it, but do not edit it: not outdated."""
    below = finding(1, on(2), subject="below the insertion")
    assert mark_round(report(), [below], set(), parse_diff(INSERT_ABOVE)).outdated == ()


def test_a_deleted_file_outdates_line_and_file_anchors() -> None:
    """The file is deleted: line and file findings on it are outdated."""
    line = finding(1, on(1), subject="line")
    whole = finding(2, FileAnchor(path="app.py"), subject="whole file")
    marked = mark_round(report(), [line, whole], set(), parse_diff(DELETE_APP))
    assert [f.id for f in marked.outdated] == [1, 2]


def test_a_renamed_file_still_holds_its_findings_at_the_new_path() -> None:
    """A pure rename edits no line: the findings on the file are not outdated, and are
    carried at the new path (under --since-last a rename must not turn a failed gate
    green while the code is still in the pull request)."""
    line = finding(1, on(1), subject="line")
    whole = finding(2, FileAnchor(path="app.py"), subject="whole file")
    change = parse_diff(RENAME_APP)
    marked = mark_round(report(), [line, whole], set(), change)
    assert marked.outdated == ()
    carried = carry(marked, [line, whole], change).carried
    assert [(f.id, f.anchor.path) for f in carried] == [(1, "main.py"), (2, "main.py")]


def test_file_anchor_on_an_edited_file_stays() -> None:
    """A file-level finding is not outdated by an edit somewhere in its file."""
    whole = finding(1, FileAnchor(path="app.py"), subject="whole file")
    assert not touched(parse_diff(EDIT_LINE_5), whole)


def test_change_anchor_is_never_outdated() -> None:
    """A finding about the change as a whole stays, whatever the interdiff."""
    assert not touched(parse_diff(DELETE_APP), finding(1, ChangeAnchor()))


def test_old_side_anchor_outdated_only_when_the_file_comes_back() -> None:
    """An old-side finding on a deleted file is outdated when the interdiff adds it back."""
    gone = finding(1, LineAnchor(path="gone.py", side="old", line=1), subject="why delete")
    assert touched(parse_diff(ADD_GONE), gone)
    assert not touched(parse_diff(EDIT_LINE_5), gone)


def test_raised_again_is_not_outdated() -> None:
    """An earlier finding raised again this round is current: seen, not outdated."""
    old = finding(1, on(5), subject="five is wrong")
    again = finding(4, on(5), subject="five is wrong")
    marked = mark_round(report(again), [old], {fingerprint(old)}, parse_diff(EDIT_LINE_5))
    assert marked.seen == (4,)
    assert marked.outdated == ()


def test_latest_of_a_fingerprint_is_kept() -> None:
    """Two earlier findings with one fingerprint: only the later one is listed."""
    first = finding(1, on(5), subject="same")
    later = finding(3, on(5), subject="same")
    marked = mark_round(report(), [later, first], set(), parse_diff(EDIT_LINE_5))
    assert [f.id for f in marked.outdated] == [3]


def test_marking_twice_gives_the_same_report() -> None:
    """mark_round replaces earlier marks: idempotent on the same inputs."""
    old = finding(1, on(5), subject="x")
    now = finding(2, on(5), subject="y")
    once = mark_round(report(now), [old], {fingerprint(now)}, parse_diff(EDIT_LINE_5))
    twice = mark_round(once, [old], {fingerprint(now)}, parse_diff(EDIT_LINE_5))
    assert once == twice


def test_context_lines_are_not_edits() -> None:
    """Lines the interdiff shows only as context around an edit of line 5 stay current."""
    context = [finding(i, on(line), subject=f"on {line}") for i, line in enumerate((2, 4, 6, 8))]
    edited = finding(9, on(5), subject="on five")
    spanning = finding(10, on(6, start=4), subject="across five")
    change = parse_diff(EDIT_LINE_5_IN_CONTEXT)
    marked = mark_round(report(), [*context, edited, spanning], set(), change)
    assert [f.id for f in marked.outdated] == [9, 10]


def test_carry_keeps_what_the_interdiff_left_alone() -> None:
    """Untouched earlier findings are carried, accepted ones too (suppress decides
    whether the decision still covers them); edited and raised-again ones not."""
    kept = finding(1, on(2), subject="kept", severity="critical")
    whole = finding(2, FileAnchor(path="app.py"), subject="whole file")
    edited = finding(3, on(5), subject="edited away")
    again = finding(4, on(3), subject="raised again")
    accepted = finding(5, on(3), subject="dismissed")
    other = finding(6, ChangeAnchor(), subject="the change")
    earlier = [kept, whole, edited, again, accepted, other]
    now = report(finding(7, on(3), subject="Raised again."))
    change = parse_diff(EDIT_LINE_5)
    carried = carry(now, earlier, change).carried
    assert [f.id for f in carried] == [1, 2, 5, 6]
    assert [f.id for f in mark_round(now, earlier, set(), change).outdated] == [3]


def test_carry_with_no_interdiff_carries_every_open_finding() -> None:
    """Nothing new since the last round: every open finding is carried."""
    open_ = [finding(1, on(2), subject="a"), finding(2, on(9), subject="b")]
    carried = carry(report(), open_, Change()).carried
    assert carried == tuple(open_)


def test_carry_replaces_and_is_idempotent() -> None:
    """Carrying twice with the same inputs gives the same report."""
    open_ = [finding(1, on(2), subject="a")]
    once = carry(report(), open_, parse_diff(INSERT_ABOVE))
    assert carry(once, open_, parse_diff(INSERT_ABOVE)) == once


def test_carried_anchor_follows_the_new_head() -> None:
    """Lines inserted above, and lines replaced by fewer, move the carried anchor."""
    change = parse_diff(INSERT_AND_REPLACE)
    pair = finding(1, LineAnchor(path="app.py", start_line=2, line=3, witness="a" * 40))
    below = finding(2, on(9))
    assert not touched(change, pair) and not touched(change, below)
    moved = follow(change, pair, "b" * 40).anchor
    assert isinstance(moved, LineAnchor)
    assert (moved.start_line, moved.line, moved.witness) == (4, 5, "b" * 40)
    assert follow(change, below).anchor == on(10)
    assert follow(change, finding(3, on(1))).anchor == on(1)


def test_still_open_leaves_out_what_the_judge_withdrew() -> None:
    """A round's open findings: its own and carried, less those the judge did not uphold."""
    upheld, withdrawn, dismissed = (finding(i, on(i), subject=f"f{i}") for i in (1, 2, 3))
    carried = finding(0, on(7), subject="older")
    settled = report(
        upheld,
        withdrawn,
        dismissed,
        carried=(carried,),
        suppressed={
            2: Suppression(source="judge", reason="not upheld"),
            3: Suppression(source="dismissed", reason="fine"),
        },
    )
    assert [f.id for f in still_open(settled)] == [1, 3, 0]


def test_one_claim_at_two_places_is_carried_at_both() -> None:
    """Two earlier findings with one fingerprint on lines 2 and 9: both are carried when
    the interdiff leaves them alone; one raised again (it kept its id, or a new finding
    took a new id for it) leaves the other carried. The claim at other code raises
    neither again."""
    two = finding(1, on(2, code=CODE), subject="shell=True", severity="critical")
    nine = finding(2, on(9, code=CODE), subject="shell=True", severity="critical")
    assert [f.id for f in carry(report(), [two, nine], Change()).carried] == [1, 2]
    again = report(finding(2, on(9, code=CODE), subject="shell=True", severity="critical"))
    assert [f.id for f in carry(again, [two, nine], Change()).carried] == [1]
    moved = report(finding(7, on(10, code=CODE), subject="shell=True", severity="critical"))
    assert [f.id for f in carry(moved, [two, nine], Change()).carried] == [1]
    other = report(finding(7, on(10, code="0e4e" * 8 + ":1"), subject="shell=True"))
    assert [f.id for f in carry(other, [two, nine], Change()).carried] == [1, 2]


def test_carry_reads_earlier_findings_given_as_a_generator() -> None:
    """The earlier findings may come as any iterable: a generator carries the same (#2
    raised again under its own id is not taken for a new occurrence that uses up #1)."""
    two = finding(1, on(2), subject="shell=True", severity="critical")
    nine = finding(2, on(9), subject="shell=True", severity="critical")
    again = report(finding(2, on(9), subject="shell=True", severity="critical"))
    given = (f for f in (two, nine))
    assert [f.id for f in carry(again, given, Change()).carried] == [1]


def test_an_earlier_councils_finding_is_raised_again_only_at_the_lines_it_moved_to() -> None:
    """An open finding filed by an earlier council holds no code. The interdiff inserts
    three lines above it (line 4 is now 7): a new finding of its claim at 7, with its
    code and a new id, is that finding told again (not carried besides); the claim at
    another line is another occurrence, and the earlier one is carried."""
    earlier = finding(1, on(4), subject="shell=True", severity="critical")
    interdiff = parse_diff(INSERT_ABOVE)
    there = report(finding(5, on(7, code=CODE), subject="shell=True", severity="critical"))
    assert carry(there, [earlier], interdiff).carried == ()
    elsewhere = report(finding(5, on(20, code=CODE), subject="shell=True", severity="critical"))
    assert [f.id for f in carry(elsewhere, [earlier], interdiff).carried] == [1]
