"""The model tools over file names that are not UTF-8: shown as the diff shows them (U+FFFD
for each bad byte), taken back in that spelling, refused when several names show alike,
and never a lone surrogate in a reply (which no UTF-8 request body can carry)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from council.roster.tool_catalog import TOOL_NAMES
from reviewers.models.tools import ToolBox
from reviewers.models.tree_spelling import shown
from tests.fakes.review import MemorySink
from workers.git.diff_reading import shown_text


def raw(name: bytes) -> str:
    """The name as :func:`os.listdir` reads it (each bad byte a lone surrogate)."""
    return os.fsdecode(name)


def box(root: Path) -> ToolBox:
    return ToolBox(TOOL_NAMES, root, MemorySink())


def test_a_raw_byte_name_is_listed_grepped_and_read_as_the_diff_shows_it(
    tmp_path: Path,
) -> None:
    """``k\\xe8.txt`` shows as ``k\\ufffd.txt`` in list_files and grep, and read_file
    reads it by that spelling, also inside a directory whose name is not UTF-8."""
    (tmp_path / raw(b"k\xe8.txt")).write_text("needle\n")
    (tmp_path / raw(b"d\xff")).mkdir()
    (tmp_path / raw(b"d\xff") / "in.txt").write_text("needle too\n")
    tools = box(tmp_path)
    listed = tools.call("list_files", {})
    assert listed.splitlines() == ["d\ufffd/in.txt", "k\ufffd.txt"]
    assert tools.call("grep", {"pattern": "needle"}).splitlines() == [
        "d\ufffd/in.txt:1: needle too",
        "k\ufffd.txt:1: needle",
    ]
    assert tools.call("read_file", {"path": "k\ufffd.txt"}) == "     1\tneedle"
    assert tools.call("read_file", {"path": "d\ufffd/in.txt"}) == "     1\tneedle too"
    assert tools.call("list_files", {"dir": "d\ufffd"}) == "d\ufffd/in.txt"
    assert tools.call("grep", {"pattern": "too", "path": "d\ufffd"}) == (
        "d\ufffd/in.txt:1: needle too"
    )
    assert tools.call("read_file", {"path": "k\ufffd.md"}) == (
        "There is no file 'k\ufffd.md' in the repository."
    )


def test_names_that_show_alike_are_refused(tmp_path: Path) -> None:
    """A literal ``k\\ufffd.txt`` beside a raw ``k\\xe8.txt`` (or two raw bytes that show
    alike): read_file refuses, naming the count, and reads neither."""
    (tmp_path / "k\ufffd.txt").write_text("literal\n")
    (tmp_path / raw(b"k\xe8.txt")).write_text("raw\n")
    (tmp_path / raw(b"j\xe8.txt")).write_text("j8\n")
    (tmp_path / raw(b"j\xe9.txt")).write_text("j9\n")
    tools = box(tmp_path)
    assert tools.call("list_files", {}).splitlines() == [
        "j\ufffd.txt",
        "j\ufffd.txt",
        "k\ufffd.txt",
        "k\ufffd.txt",
    ]
    for name in ("k\ufffd.txt", "j\ufffd.txt"):
        reply = tools.call("read_file", {"path": name})
        assert reply.startswith(f"{name!r} stands for 2 entries of the tree")
        assert "which one is meant is unknown" in reply
        assert not any(text in reply for text in ("literal", "raw", "j8", "j9"))
        assert "stands for 2 entries" in tools.call("grep", {"pattern": ".", "path": name})


def test_a_literal_replacement_character_alone_is_read(tmp_path: Path) -> None:
    """A file whose name holds U+FFFD itself, with no raw name beside it, is read."""
    (tmp_path / "k\ufffd.txt").write_text("literal\n")
    assert box(tmp_path).call("read_file", {"path": "k\ufffd.txt"}) == "     1\tliteral"


def test_a_name_starting_or_ending_with_spaces_is_read(tmp_path: Path) -> None:
    """Spaces a model adds around a name are taken off; a name that holds them is read
    as it is (the diff shows it so), and listed so."""
    (tmp_path / " lead.txt").write_text("lead\n")
    (tmp_path / "trail.txt ").write_text("trail\n")
    (tmp_path / "plain.txt").write_text("plain\n")
    tools = box(tmp_path)
    assert tools.call("read_file", {"path": " lead.txt"}) == "     1\tlead"
    assert tools.call("read_file", {"path": "trail.txt "}) == "     1\ttrail"
    assert tools.call("read_file", {"path": "  plain.txt \n"}) == "     1\tplain"
    assert "There is no file" in tools.call("read_file", {"path": " trail.txt"})


def test_a_surrogate_the_model_sends_is_not_echoed(tmp_path: Path) -> None:
    """A ``\\ud800`` JSON escape in an argument does not come back as a lone surrogate."""
    tools = box(tmp_path)
    for name, arguments in (
        ("read_file", '{"path": "a\\ud800"}'),
        ("grep", '{"pattern": "\\ud800("}'),
        ("grep", '{"pattern": "x", "path": "\\udce8/../.."}'),
    ):
        tools.call(name, arguments).encode("utf-8")


names = st.binary(min_size=1, max_size=12).filter(
    lambda b: (
        b"/" not in b
        and b"\0" not in b
        and b not in (b".", b"..")
        and os.fsdecode(b).strip().lstrip("\\") == os.fsdecode(b)
    )
)
"""File names (a path argument loses its outer whitespace and leading slashes)."""


@settings(max_examples=60, deadline=None)
@given(names)
def test_any_name_is_shown_as_the_diff_shows_it_and_read_back(name: bytes) -> None:
    """For any file name: every reply encodes as UTF-8, list_files shows the name as
    :func:`workers.git.diff_reading.shown_text` does, and read_file reads it by that."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / os.fsdecode(name)).write_bytes(b"body\n")
        tools = box(root)
        listed = tools.call("list_files", {})
        listed.encode("utf-8")
        assert listed == shown_text(os.fsdecode(name)) == shown(os.fsdecode(name))
        assert tools.call("grep", {"pattern": "body"}).encode("utf-8")
        assert tools.call("read_file", {"path": listed}) == "     1\tbody"


def test_a_shown_name_never_lists_a_folder_outside_the_tree(tmp_path: Path) -> None:
    """``../\\ufffd`` and ``out/\\ufffd`` (``out`` a link leading out of the tree) find
    nothing: the folders above the tree are never listed, so two names showing alike out
    there cannot be counted through the tools."""
    from reviewers.models.tree_spelling import spelled_in

    outside = tmp_path / "outside"
    outside.mkdir()
    for name in (b"a\xe8", b"a\xe9"):
        (outside / raw(name)).write_text("host\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "out").symlink_to(outside)
    assert spelled_in(tree / "out", "a\ufffd") != []  # the folder itself would match
    assert spelled_in(tree, "../outside/a\ufffd") == []
    assert spelled_in(tree, "out/a\ufffd") == []
    reply = box(tree).call("read_file", {"path": "out/a\ufffd"})
    assert "stands for" not in reply and "host" not in reply
