"""Unit tests for the diff model (council.change.diff): reading git diff text, filtering,
landing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from council.change.diff import (
    Change,
    ChangedFile,
    Hunk,
    added_lines,
    anchor_map,
    decode_diff,
    filter_paths,
    landing,
    parse_diff,
    render_for_prompt,
)
from council.model.findings import ChangeAnchor, FileAnchor, LineAnchor

MODIFIED = """\
diff --git a/src/app.py b/src/app.py
index 1111111..2222222 100644
--- a/src/app.py
+++ b/src/app.py
@@ -10,6 +10,7 @@ def main():
 a
 b
-c
+C
+D
 e
 f
 g
@@ -40,2 +41,2 @@ def other():
-x
+X
 y
"""

ADDED = """\
diff --git a/docs/new.md b/docs/new.md
new file mode 100644
index 0000000..3e75765
--- /dev/null
+++ b/docs/new.md
@@ -0,0 +1,2 @@
+hello
+world
"""

DELETED = """\
diff --git a/old.txt b/old.txt
deleted file mode 100644
index abaddc0..0000000
--- a/old.txt
+++ /dev/null
@@ -1,3 +0,0 @@
-one
-two
-three
"""

RENAMED = """\
diff --git a/mv_me.txt b/moved.txt
similarity index 92%
rename from mv_me.txt
rename to moved.txt
index 4f7cbe7..d7bd2bc 100644
--- a/mv_me.txt
+++ b/moved.txt
@@ -11,4 +11,4 @@ j
 k
 l
 m
-n
+N
"""

PURE_RENAME = """\
diff --git a/a b/c.txt b/d e.txt
similarity index 100%
rename from a b/c.txt
rename to d e.txt
"""

BINARY = """\
diff --git a/logo.png b/logo.png
index f584f40..6bf43ff 100644
Binary files a/logo.png and b/logo.png differ
"""

BINARY_ADDED = """\
diff --git a/img/new icon.png b/img/new icon.png
new file mode 100644
index 0000000..6bf43ff
Binary files /dev/null and b/img/new icon.png differ
"""

MODE = """\
diff --git a/script.sh b/script.sh
old mode 100644
new mode 100755
"""

SPACES = """\
diff --git a/my file.py b/my file.py
index 4cb29ea..ddc897f 100644
--- a/my file.py\t
+++ b/my file.py\t
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
"""

QUOTED = """\
diff --git "a/\\303\\244.py" "b/\\303\\244.py"
index 587be6b..975fbec 100644
--- "a/\\303\\244.py"
+++ "b/\\303\\244.py"
@@ -1 +1 @@
-x
+y
"""

NO_NEWLINE = """\
diff --git a/nn.txt b/nn.txt
index 20cbb4d..6fe2aa3 100644
--- a/nn.txt
+++ b/nn.txt
@@ -1 +1 @@
-no newline
\\ No newline at end of file
+no newline!
\\ No newline at end of file"""


def _one(text: str) -> ChangedFile:
    """The single file of a one-file diff."""
    change = parse_diff(text)
    assert len(change.files) == 1
    return change.files[0]


def test_empty_diff_is_an_empty_change() -> None:
    """An empty text reads as a change with no files, no notes and zero bytes."""
    change = parse_diff("")
    assert change == Change()
    assert change.total_bytes == 0


def test_modified_file_hunks_and_counts() -> None:
    """A modified file keeps its hunks, the lines each covers, and its counts."""
    changed = _one(MODIFIED)
    assert (changed.path, changed.old_path, changed.status) == (
        "src/app.py",
        "src/app.py",
        "modified",
    )
    assert changed.hunks[0] == Hunk(
        old_start=10, old_length=6, new_start=10, new_length=7, added=(12, 13), removed=(12,)
    )
    assert changed.hunks[1].added == (41,) and changed.hunks[1].removed == (40,)
    assert (changed.added, changed.removed) == (3, 2)
    assert changed.ranges("new") == ((10, 16), (41, 42))
    assert changed.ranges("old") == ((10, 15), (40, 41))


def test_added_file_has_no_old_path() -> None:
    """A new file is `added`, has no old path, and its mode is kept."""
    changed = _one(ADDED)
    assert (changed.path, changed.old_path, changed.status) == ("docs/new.md", None, "added")
    assert changed.new_mode == "100644"
    assert changed.ranges("new") == ((1, 2),) and changed.ranges("old") == ()


def test_deleted_file_path_is_the_old_path() -> None:
    """A deleted file is named by its old path and covers old lines only."""
    changed = _one(DELETED)
    assert (changed.path, changed.old_path, changed.status) == ("old.txt", "old.txt", "deleted")
    assert changed.removed == 3 and changed.ranges("new") == ()


def test_rename_with_edits() -> None:
    """A rename keeps both paths and its hunks."""
    changed = _one(RENAMED)
    assert (changed.path, changed.old_path, changed.status) == ("moved.txt", "mv_me.txt", "renamed")
    assert changed.hunks[0].added == (14,)


def test_pure_rename_with_spaces_reads_the_rename_lines() -> None:
    """A rename without hunks whose names hold spaces takes its paths from rename lines."""
    changed = _one(PURE_RENAME)
    assert (changed.path, changed.old_path, changed.status) == ("d e.txt", "a b/c.txt", "renamed")
    assert changed.hunks == () and changed.note is None


def test_binary_file_has_no_hunks() -> None:
    """`Binary files a/x and b/x differ` makes a binary file with no hunks."""
    changed = _one(BINARY)
    assert changed.binary and changed.hunks == () and changed.status == "modified"
    assert changed.path == "logo.png"


def test_added_binary_with_spaces() -> None:
    """An added binary file whose path holds spaces is read from the git header."""
    changed = _one(BINARY_ADDED)
    assert (changed.path, changed.status, changed.binary) == ("img/new icon.png", "added", True)


def test_git_binary_patch_stops_reading() -> None:
    """A `GIT binary patch` body is not read as hunks and does not raise."""
    text = BINARY.replace("Binary files a/logo.png and b/logo.png differ\n", "")
    text += "GIT binary patch\nliteral 6\nNcmeZA&}V1?0{{S\n\nliteral 6\nNcmeZA&}V2?0{{S\n\n"
    changed = _one(text)
    assert changed.binary and changed.hunks == () and changed.note is None


def test_mode_only_change() -> None:
    """A mode change with no content change is a modified file with both modes."""
    changed = _one(MODE)
    assert (changed.old_mode, changed.new_mode, changed.hunks) == ("100644", "100755", ())


def test_path_with_spaces() -> None:
    """Git's trailing tab after a path with spaces is not part of the path."""
    assert _one(SPACES).path == "my file.py"


def test_quoted_unicode_path() -> None:
    """A C-quoted path with octal UTF-8 escapes reads back as the real name."""
    changed = _one(QUOTED)
    assert (changed.path, changed.old_path) == ("ä.py", "ä.py")


def test_no_newline_at_end_of_file() -> None:
    """The `No newline at end of file` markers do not count as lines."""
    changed = _one(NO_NEWLINE)
    assert (changed.added, changed.removed, changed.note) == (1, 1, None)


def test_many_files_in_order_and_bytes() -> None:
    """Files keep diff order; total_bytes counts the UTF-8 bytes of their sections."""
    text = MODIFIED + ADDED + DELETED + QUOTED
    change = parse_diff(text)
    assert change.paths == ("src/app.py", "docs/new.md", "old.txt", "ä.py")
    assert change.total_bytes == len(text.encode())
    assert change.text == text


def test_cut_off_hunk_becomes_a_note() -> None:
    """A hunk cut short is left out with a note; the file's other hunks are kept."""
    text = MODIFIED.rsplit("\n", 3)[0] + "\n"
    changed = _one(text)
    assert len(changed.hunks) == 1 and changed.note is not None
    assert "could not be read" in changed.note


def test_bad_hunk_header_becomes_a_note() -> None:
    """A line starting `@@` that is not a hunk header is reported, not raised."""
    changed = _one(MODE + "@@ nonsense @@\n+x\n")
    assert changed.hunks == () and changed.note is not None


def test_text_before_the_first_header_is_noted() -> None:
    """Stray text before the first `diff --git` becomes a change note."""
    change = parse_diff("From abc Mon Sep 17\nSubject: x\n\n" + MODIFIED)
    assert change.paths == ("src/app.py",) and len(change.notes) == 1


@pytest.mark.parametrize(
    "text",
    [
        "diff --git \n",
        "diff --git a/x\n@@ -1 +1 @@\n",
        "diff --git a/x b/y b/z\n",
        'diff --git "a/unterminated\n',
        "diff --git a/x b/x\n--- \n+++ \n@@ -a +b @@\n",
        "diff --git a/x b/x\n@@ -1,2 +1,2 @@\n+only\n+too many\n+lines\n",
        "\x00\x01\x02",
        "@@ -1 +1 @@\n-a\n+b\n",
    ],
)
def test_odd_input_never_raises(text: str) -> None:
    """Malformed diffs read without an exception."""
    change = parse_diff(text)
    assert isinstance(change, Change)


def test_unreadable_header_name_is_flagged() -> None:
    """A header whose names cannot be split and no other path line is noted."""
    changed = _one("diff --git a/x b/y b/z\n")
    assert changed.note is not None and "file name" in changed.note


def test_decode_diff_names_non_utf8_files() -> None:
    """Undecodable bytes become replacement characters and the file is named."""
    latin = b"diff --git a/l.txt b/l.txt\n--- a/l.txt\n+++ b/l.txt\n@@ -1 +1 @@\n-caf\xe9\n+cafe\n"
    text, bad = decode_diff(MODIFIED.encode() + latin)
    assert bad == ("l.txt",)
    assert "caf\ufffd" in text and text.startswith(MODIFIED)


def test_decode_diff_first_file_and_preamble() -> None:
    """The first file is checked too; an undecodable preamble names no file."""
    latin = b"diff --git a/l.txt b/l.txt\n--- a/l.txt\n+++ b/l.txt\n@@ -1 +1 @@\n-\xe9\n+e\n"
    assert decode_diff(latin + QUOTED.encode())[1] == ("l.txt",)
    text, bad = decode_diff(b"junk \xff\n" + QUOTED.encode())
    assert bad == () and text == "junk \ufffd\n" + QUOTED
    assert decode_diff(b"") == ("", ())


def test_decode_diff_clean_utf8() -> None:
    """A UTF-8 diff decodes unchanged and names no file."""
    assert decode_diff(QUOTED.encode()) == (QUOTED, ())


def test_filter_paths_include_and_exclude() -> None:
    """Include selects, exclude wins, excluded paths are named, bytes shrink."""
    change = parse_diff(MODIFIED + ADDED + DELETED)
    kept, excluded = filter_paths(change, include=["src/**", "docs/**"], exclude=["*.md"])
    assert kept.paths == ("src/app.py",)
    assert excluded == ["docs/new.md", "old.txt"]
    assert kept.total_bytes == len(MODIFIED.encode())


def test_filter_paths_empty_include_keeps_everything() -> None:
    """With no include patterns every file not excluded is kept."""
    change = parse_diff(MODIFIED + ADDED)
    kept, excluded = filter_paths(change, include=[], exclude=[])
    assert kept == change and excluded == []


def test_filter_paths_keeps_a_file_renamed_out_of_an_excluded_path() -> None:
    """A renamed file whose OLD path is excluded is kept (it is new code where it is now:
    the old path must not hide it); one whose new path is excluded is left out."""
    kept, excluded = filter_paths(parse_diff(RENAMED), include=[], exclude=["mv_*"])
    assert [f.path for f in kept.files] == ["moved.txt"] and excluded == []
    kept, excluded = filter_paths(parse_diff(RENAMED), include=[], exclude=["moved.*"])
    assert kept.files == () and excluded == ["moved.txt"]


@pytest.fixture
def change() -> Change:
    """A change with a modified, an added, a deleted, a renamed and a binary file."""
    return parse_diff(MODIFIED + ADDED + DELETED + RENAMED + BINARY)


def test_change_and_file_anchors(change: Change) -> None:
    """A change anchor always lands; a file anchor lands when the file is in the change."""
    assert landing(change, ChangeAnchor()) is None
    assert landing(Change(), ChangeAnchor()) is None
    assert landing(change, FileAnchor(path="logo.png")) is None
    assert landing(change, FileAnchor(path="mv_me.txt")) is None
    assert landing(change, FileAnchor(path="nope.py")) == "file-absent"


@pytest.mark.parametrize(
    ("anchor", "expected"),
    [
        (LineAnchor(path="src/app.py", line=12), None),
        (LineAnchor(path="src/app.py", line=10), None),
        (LineAnchor(path="src/app.py", start_line=10, line=16), None),
        (LineAnchor(path="src/app.py", line=17), "line-absent"),
        (LineAnchor(path="src/app.py", line=30), "line-absent"),
        (LineAnchor(path="src/app.py", start_line=12, line=41), "range-crosses-hunks"),
        (LineAnchor(path="src/app.py", start_line=16, line=17), "range-crosses-hunks"),
        (LineAnchor(path="src/app.py", start_line=14, line=12), "range-inverted"),
        (LineAnchor(path="src/app.py", side="old", line=40), None),
        (LineAnchor(path="src/app.py", side="old", line=42), "line-absent"),
        (LineAnchor(path="docs/new.md", line=2), None),
        (LineAnchor(path="docs/new.md", side="old", line=1), "file-absent"),
        (LineAnchor(path="old.txt", line=1), "file-absent"),
        (LineAnchor(path="old.txt", side="old", start_line=1, line=3), None),
        (LineAnchor(path="moved.txt", line=14), None),
        (LineAnchor(path="mv_me.txt", line=14), "file-absent"),
        (LineAnchor(path="mv_me.txt", side="old", line=14), None),
        (LineAnchor(path="moved.txt", side="old", line=14), "file-absent"),
        (LineAnchor(path="logo.png", line=1), "line-absent"),
        (LineAnchor(path="nope.py", line=1), "file-absent"),
    ],
)
def test_line_anchor_landing(change: Change, anchor: LineAnchor, expected: str | None) -> None:
    """Line anchors land inside one hunk on their side, else say why not."""
    assert landing(change, anchor) == expected


def test_anchor_map_describes_each_file(change: Change) -> None:
    """The anchor map gives each file's anchorable ranges in diff order."""
    assert anchor_map(change) == [
        '"src/app.py": new lines 10-16, 41-42; old lines 10-15, 40-41',
        '"docs/new.md" (added): new lines 1-2',
        '"old.txt" (deleted): old lines 1-3',
        '"moved.txt" (renamed from "mv_me.txt"): new lines 11-14; old lines 11-14 of "mv_me.txt"',
        '"logo.png" (binary): the file as a whole',
    ]


def test_anchor_map_mode_change_and_single_line() -> None:
    """A mode change is named; a one-line range says `line`."""
    assert anchor_map(parse_diff(MODE + QUOTED)) == [
        '"script.sh" (mode 100644 -> 100755): the file as a whole',
        '"ä.py": new line 1; old line 1',
    ]


def test_render_for_prompt_is_map_then_diff(change: Change) -> None:
    """The rendered diff lists the anchor map, then the files' diff text."""
    rendered = render_for_prompt(change)
    assert rendered.startswith('Where findings may anchor:\n- "src/app.py": new lines 10-16')
    assert rendered.endswith(change.text)
    assert render_for_prompt(change) == rendered


def test_change_round_trips_through_json(change: Change) -> None:
    """A change survives JSON (it is stored once per run)."""
    assert Change.model_validate_json(change.model_dump_json()) == change


_PIECES = [line + "\n" for line in (MODIFIED + ADDED + RENAMED + BINARY + QUOTED).split("\n")]


@given(
    st.lists(
        st.one_of(
            st.sampled_from(_PIECES), st.text(alphabet='@-+ \\"ab/\t\r\n\x00diff', max_size=20)
        ),
        max_size=40,
    )
)
def test_parse_diff_never_raises(parts: list[str]) -> None:
    """Any mix of diff lines and noise reads without an exception, and anchors still check."""
    change = parse_diff("".join(parts))
    anchor_map(change)
    for changed in change.files:
        landing(change, LineAnchor(path=changed.path, start_line=1, line=3))


def test_added_lines_by_new_path() -> None:
    """Added line numbers per new-side path; deleted files left out, no-edit files empty."""
    change = parse_diff(MODIFIED + ADDED + DELETED + RENAMED + PURE_RENAME + BINARY)
    assert added_lines(change) == {
        "src/app.py": frozenset({12, 13, 41}),
        "docs/new.md": frozenset({1, 2}),
        "moved.txt": frozenset({14}),
        "d e.txt": frozenset(),
        "logo.png": frozenset(),
    }


def test_a_file_renamed_out_of_an_excluded_path_is_reviewed() -> None:
    """A hostile change renames poetry.lock to src/deps.py and fills it with code: the
    new file is kept (exclusion reads the new path); one renamed into an excluded path,
    or an excluded file deleted, is left out."""
    from council.change.diff import ChangedFile, selects

    out_of = ChangedFile(path="src/deps.py", old_path="poetry.lock", status="renamed")
    into = ChangedFile(path="vendor/x.lock", old_path="src/x.py", status="renamed")
    gone = ChangedFile(path="poetry.lock", old_path="poetry.lock", status="deleted")
    assert selects(out_of, (), ("*.lock",))
    assert not selects(into, (), ("*.lock",))
    assert not selects(gone, (), ("*.lock",))
