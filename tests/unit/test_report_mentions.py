"""Posted text notifies no one and runs nothing: no_mentions, no_quick_actions."""

from __future__ import annotations

import pytest

from council.rendering.escape import ZWJ, no_mentions, no_quick_actions
from council.rendering.gitlab import gitlab_safe

J = ZWJ


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cc @alice", f"cc @{J}alice"),
        ("@octo-org/security please", f"@{J}octo-org/security please"),
        ("(@bob)", f"(@{J}bob)"),
        ("see /@carol", f"see /@{J}carol"),
        (
            "&#64;dave and &#x40;erin &commat;frank",
            f"&#64;{J}dave and &#x40;{J}erin &commat;{J}frank",
        ),
        ("mail a@b.io", "mail a@b.io"),
        ("`@in-code` and ``x @y``", "`@in-code` and ``x @y``"),
        ("https://medium.com/@author/post", "https://medium.com/@author/post"),
        ("a @ b", "a @ b"),
        ("@all and @here", f"@{J}all and @{J}here"),
    ],
)
def test_mentions_are_neutralized(text: str, expected: str) -> None:
    """An @ that would mention gets a zero-width joiner; code, URLs, addresses do not."""
    assert no_mentions(text) == expected


def test_fenced_blocks_are_left_alone() -> None:
    """Inside a fence nothing is mentioned, so nothing is changed."""
    text = "say @x\n```\n@y\n```\nand @z"
    assert no_mentions(text) == f"say @{J}x\n```\n@y\n```\nand @{J}z"


def test_no_mentions_is_idempotent_and_linear() -> None:
    """Twice is once; a huge body is quick."""
    text = "@a `b` @c &#64;d https://x/@e\n" * 3
    once = no_mentions(text)
    assert no_mentions(once) == once
    no_mentions("@u `v` " * 100_000)


def test_quick_actions_are_neutralized() -> None:
    """Lines starting /command (also quoted, indented, fenced: GitLab skips only some
    fences) are plain text; a path is too."""
    text = "/merge\n> /approve\n  /assign @me\nsee /usr/bin\n```\n/close\n```"
    out = no_quick_actions(text)
    assert out.splitlines()[:4] == [
        f"{J}/merge",
        f"> {J}/approve",
        f"  {J}/assign @me",
        "see /usr/bin",
    ]
    assert f"\n{J}/close\n" in out and no_quick_actions(out) == out


def test_gitlab_safe_is_both() -> None:
    """A GitLab note: no mention, no quick action."""
    assert gitlab_safe("/unassign @bob") == f"{J}/unassign @{J}bob"
