"""Reviewer text made safe inside Markdown (council.report.escape)."""

from __future__ import annotations

import time

import pytest

from council.report.escape import block, cell, code, inline


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
    started = time.perf_counter()
    inline(text)
    block(text)
    assert time.perf_counter() - started < 10
