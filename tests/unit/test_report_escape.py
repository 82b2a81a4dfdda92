"""Reviewer text made safe inside Markdown (council.rendering.escape)."""

from __future__ import annotations

import json

import pytest

from council.rendering.escape import (
    ZWJ,
    block,
    cell,
    code,
    for_forge,
    for_log,
    inline,
    no_controls,
    no_controls_json,
)


def test_inline_collapses_whitespace() -> None:
    """Newlines and runs of spaces become one space, so no new block can start."""
    assert inline("  a\n\n  b\tc ") == "a b c"


def test_inline_neutralizes_html_outside_code_spans() -> None:
    """'<' is escaped in prose and kept inside a code span."""
    assert inline("x <b> `a<b` y") == "x &lt;b> `a<b` y"


def test_inline_unmatched_backtick_is_prose() -> None:
    """A lone backtick opens nothing, so what follows is still escaped."""
    assert inline("a ` <i>") == "a ` &lt;i>"


def test_inline_double_backtick_span() -> None:
    """A span opened by two backticks closes only at two backticks."""
    assert inline("``a ` <b`` <c>") == "``a ` <b`` &lt;c>"


@pytest.mark.parametrize(
    ("text", "escaped"),
    [("# head", "\\# head"), ("- item", "\\- item"), ("> q", "\\> q"), ("1. one", "1\\. one")],
)
def test_inline_escapes_a_leading_block_marker(text: str, escaped: str) -> None:
    """A leading heading, list or quote marker is escaped."""
    assert inline(text) == escaped


def test_cell_escapes_every_pipe() -> None:
    """Pipes are escaped in table cells, inside code spans too (GFM splits first)."""
    assert cell("a|`b|c`") == "a\\|`b\\|c`"


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("src/a.py", "`src/a.py`"),
        ("a`b", "``a`b``"),
        ("`x", "`` `x ``"),
        ("a``b`c", "```a``b`c```"),
        ("a\nb", "`a b`"),
    ],
)
def test_code_span_fences_longer_than_content(text: str, span: str) -> None:
    """The fence outgrows any backtick run inside; edge backticks get a space pad."""
    assert code(text) == span


def test_block_keeps_fences_verbatim() -> None:
    """Lines inside a fenced block are untouched; prose around them is escaped."""
    text = "see <this>\n~~~\n<raw>\n~~~\nafter <that>"
    assert block(text) == ["see &lt;this>", "~~~", "<raw>", "~~~", "after &lt;that>"]


def test_block_unclosed_fence_keeps_the_rest_verbatim() -> None:
    """An unclosed fence runs to the end, as Markdown would render it."""
    assert block("```\n<a>\n<b>") == ["```", "<a>", "<b>"]


def test_block_code_span_never_crosses_paragraphs() -> None:
    """A backtick in one paragraph cannot hide HTML in the next one."""
    assert block("a `x\n\ny` <b>") == ["a `x", "", "y` &lt;b>"]


def test_block_code_span_may_wrap_a_line() -> None:
    """Within a paragraph a code span continues over a line break."""
    assert block("a `x\ny<z` w") == ["a `x", "y<z` w"]


@pytest.mark.timeout(30)
def test_linear_on_backtick_heavy_text() -> None:
    """Many unmatched backtick runs of different widths stay fast."""
    text = " ".join("`" * (i % 50 + 1) + "<" for i in range(100_000))
    inline(text)
    block(text)


@pytest.mark.parametrize(
    ("char", "escaped"),
    [
        ("\x00", "\\x00"),
        ("\x1b", "\\x1b"),
        ("\r", "\\x0d"),
        ("\x7f", "\\x7f"),
        ("\x85", "\\x85"),
        ("\x9b", "\\x9b"),
        ("\u061c", "\\u061c"),
        ("\u200e", "\\u200e"),
        ("\u200f", "\\u200f"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
        ("\u202a", "\\u202a"),
        ("\u202e", "\\u202e"),
        ("\u2066", "\\u2066"),
        ("\u2069", "\\u2069"),
    ],
)
def test_no_controls_escapes_each_control(char: str, escaped: str) -> None:
    """Each C0/C1 control, separator and bidirectional control is written as its escape,
    in a body and on one line alike."""
    assert no_controls(f"a{char}b") == f"a{escaped}b"
    assert no_controls(f"a{char}b", one_line=True) == f"a{escaped}b"


def test_no_controls_keeps_newlines_and_tabs_unless_one_line() -> None:
    """A body keeps its newlines and tabs; a one-line field escapes them too."""
    assert no_controls("a\n\tb") == "a\n\tb"
    assert no_controls("a\n\tb", one_line=True) == "a\\x0a\\x09b"


def test_no_controls_is_idempotent_and_leaves_the_rest() -> None:
    """Escaping twice changes nothing more; accents, emoji and the joiner the mention
    rule writes are kept."""
    text = f"café 😀 @{ZWJ}user \x1b[1m\u202e"
    once = no_controls(text)
    assert no_controls(once) == once
    assert once == f"café 😀 @{ZWJ}user \\x1b[1m\\u202e"


def test_for_log_uses_the_same_rule() -> None:
    """The log escaping is :func:`no_controls` plus the workflow-command rule."""
    text = "x\u200e\x9b\u2066\n::error::y"
    assert for_log(text) == no_controls(text).replace("\n::", "\n\\::")


def test_for_forge_defuses_a_mention_behind_a_control() -> None:
    """An ``@`` right after a raw control still gets its joiner, and the control shows."""
    assert for_forge("\u202e@owner") == f"\\u202e@{ZWJ}owner"
    assert for_forge(for_forge("\u202e@owner")) == for_forge("\u202e@owner")


def test_no_controls_json_is_lossless() -> None:
    """JSON text keeps the exact characters, as ``\\u`` escapes, none of them raw."""
    value = {"path": "a\u202e\x9b\u2028\x7f\x1b\x00.py", "text": "café\n"}
    dumped = no_controls_json(json.dumps(value, ensure_ascii=False))
    assert json.loads(dumped) == value
    assert "café" in dumped
    assert not any(c in dumped for c in "\u202e\x9b\u2028\x7f\x1b\x00")
    assert no_controls_json(dumped) == dumped
