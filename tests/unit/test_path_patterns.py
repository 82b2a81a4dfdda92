"""Unit tests for roster path patterns (council.change.path_patterns)."""

from __future__ import annotations

import pytest

from council.change.path_patterns import PathPattern, matches_any


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/x/y/a.py", True),
        ("src/**/*.py", "lib/src/a.py", False),
        ("src/**/*.py", "src/a.pyc", False),
        ("docs/**", "docs/a/b.md", True),
        ("docs/**", "docsx/a.md", False),
        ("*.lock", "poetry.lock", True),
        ("*.lock", "web/yarn.lock", True),
        ("*.lock", "lock", False),
        ("vendor", "vendor/x.go", True),
        ("vendor", "third/vendor/x.go", True),
        ("/vendor", "third/vendor/x.go", False),
        ("docs/", "docs/index.md", True),
        ("src/*.py", "src/a/b.py", False),
        ("a?c.txt", "abc.txt", True),
        ("a?c.txt", "a/c.txt", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "b.txt", False),
        ("[!ab].txt", "c.txt", True),
        ("[]].txt", "].txt", True),
        ("[z-a].txt", "[z-a].txt", True),
        ("[unclosed", "[unclosed", True),
        ("**/test_*.py", "test_a.py", True),
        ("**/test_*.py", "tests/unit/test_a.py", True),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("Src/*.py", "src/a.py", False),
        ("", "a.py", False),
        ("   ", "a.py", False),
    ],
)
def test_pattern_matches(pattern: str, path: str, expected: bool) -> None:
    """Each pattern selects exactly the paths gitignore-style reading says it does."""
    assert PathPattern.of(pattern).matches(path) is expected


def test_matches_any() -> None:
    """Any one matching pattern selects; no patterns select nothing."""
    assert matches_any("src/a.py", ["*.md", "src/**"])
    assert not matches_any("src/a.py", [])


def test_pattern_keeps_its_text() -> None:
    """A compiled pattern remembers the text it came from."""
    assert PathPattern.of("docs/**").text == "docs/**"
