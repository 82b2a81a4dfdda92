"""Unit tests for git's quoted path names (council.change.quoted_paths)."""

from __future__ import annotations

import pytest

from council.change.quoted_paths import header_names, take_quoted, unquote


@pytest.mark.parametrize(
    ("quoted", "plain"),
    [
        ('"a/\\303\\244.py"', "a/ä.py"),
        ('"tab\\there"', "tab\there"),
        ('"q\\"uote"', 'q"uote'),
        ('"back\\\\slash"', "back\\slash"),
        ('"nl\\n"', "nl\n"),
        ('"latin\\351"', "latin\ufffd"),
        ('"odd\\q"', "oddq"),
        ('"trailing\\"', "trailing\\"),
        ("plain.py", "plain.py"),
        ('"', '"'),
    ],
)
def test_unquote(quoted: str, plain: str) -> None:
    """C-style quoted names decode to the path; unquoted text is unchanged."""
    assert unquote(quoted) == plain


def test_take_quoted() -> None:
    """A leading quoted string is split off; an unclosed one is not."""
    assert take_quoted('"a b" rest') == ('"a b"', " rest")
    assert take_quoted('"a\\"b" x') == ('"a\\"b"', " x")
    assert take_quoted('"open') is None
    assert take_quoted("plain") is None


@pytest.mark.parametrize(
    ("rest", "names"),
    [
        ("a/x.py b/x.py", ("a/x.py", "b/x.py")),
        ("a/my file.py b/my file.py", ("a/my file.py", "b/my file.py")),
        ("a/x b/y b/x b/y", ("a/x b/y", "b/x b/y")),
        ('"a/\\303\\244.py" "b/\\303\\244.py"', ("a/ä.py", "b/ä.py")),
        ('a/plain "b/\\303\\244"', ("a/plain", "b/ä")),
        ("a/old b/new", ("a/old", "b/new")),
        ("a/x b/y b/z", None),
        ("", None),
    ],
)
def test_header_names(rest: str, names: tuple[str, str] | None) -> None:
    """The two names of a `diff --git` line are split as git splits them."""
    assert header_names(rest) == names
