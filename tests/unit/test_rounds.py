"""council.rounds: seen findings and outdated ones across the rounds of a session."""

from __future__ import annotations

from council.diff import Change, parse_diff
from council.findings import ChangeAnchor, FileAnchor, LineAnchor
from council.fingerprint import fingerprint
from council.rounds import mark_round, touched
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


def on(line: int, start: int | None = None) -> LineAnchor:
    """A new-side anchor on app.py."""
    return LineAnchor(path="app.py", line=line, start_line=start)


def test_repeat_fingerprint_is_seen() -> None:
    """A finding whose fingerprint an earlier round reported is seen; a new one is not."""
    old = finding(1, on(3), subject="leaks a handle")
    again = finding(7, on(9), subject="Leaks a handle.")
    new = finding(8, on(9), subject="divides by zero")
    marked = mark_round(report(again, new), [], {fingerprint(old)}, Change())
    assert marked.seen == (7,)


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


def test_deleted_or_renamed_file_outdates_line_and_file_anchors() -> None:
    """The file is deleted, or renamed away: line and file findings on it are outdated."""
    line = finding(1, on(1), subject="line")
    whole = finding(2, FileAnchor(path="app.py"), subject="whole file")
    for text in (DELETE_APP, RENAME_APP):
        marked = mark_round(report(), [line, whole], set(), parse_diff(text))
        assert [f.id for f in marked.outdated] == [1, 2]


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
