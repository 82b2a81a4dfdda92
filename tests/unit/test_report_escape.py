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


def test_inline_shows_the_reviewers_markdown_as_text_but_code_as_code() -> None:
    """Emphasis, links and HTML are written so they render as the characters the reviewer
    typed (backslash escapes, ``<`` as ``&lt;``); a code span stays one."""
    assert inline("x <b> `a<b` *y* [l](z) ~s~") == ("x &lt;b> `a<b` \\*y\\* \\[l\\](z) \\~s\\~")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a ` <i>", "a \\` &lt;i>"),
        ("``a ` <b`` <c>", "``a ` <b`` &lt;c>"),
        ("`x` and `y", "`x` and \\`y"),
        ("`a\\` b", "`a\\` b"),
        ("``` `", "\\`\\`\\` \\`"),
    ],
)
def test_inline_pairs_backtick_runs_as_commonmark_does(text: str, shown: str) -> None:
    """A run opens a span only with a later run of its length (a backslash inside a span
    is literal); every other backtick is escaped."""
    assert inline(text) == shown


def test_inline_an_escaped_backtick_opens_no_span() -> None:
    """The issue's case: ``\\``` ` `` and a later backtick hid ``<details>`` from the
    old span matcher; every backslash and backtick is now escaped on its own."""
    assert inline("\\`<details>`") == "\\\\\\`&lt;details>\\`"


def test_inline_keeps_ordinary_text_readable() -> None:
    """Periods, commas, parentheses, a ``_`` inside a word, an option's dashes and code
    spans are left as they are."""
    text = "Call `pool.close()` in snake_case_name, then return (a, b). --since-last: x"
    assert inline(text) == text


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("# head", "\\# head"),
        ("- item", "\\- item"),
        ("-", "\\-"),
        ("- - -", "\\- - -"),
        ("--- ", "\\---"),
        ("+ item", "\\+ item"),
        ("> q", "\\> q"),
        ("1. one", "1\\. one"),
        ("2) two", "2\\) two"),
        ("===", "\\==="),
        ("/label ~x", "\\/label \\~x"),
    ],
)
def test_inline_escapes_a_leading_block_marker(text: str, escaped: str) -> None:
    """A leading heading, list, quote or setext marker, or a quick action's slash, is
    escaped."""
    assert inline(text) == escaped


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("cc @octocat", f"cc @{ZWJ}octocat"),
        ("@org/team", f"@{ZWJ}org/team"),
        ("mail a@b.io", f"mail a@{ZWJ}b.io"),
        ("fixes #12 and !3, GH-4", f"fixes #{ZWJ}12 and !{ZWJ}3, GH-{ZWJ}4"),
        ("&#64;me &amp; & x", "\\&#" + ZWJ + "64;me \\&amp; & x"),
        ("costs $5", "costs &#36;5"),
    ],
)
def test_inline_defuses_mentions_references_and_entities(text: str, shown: str) -> None:
    """A forge reads no mention, e-mail link or issue reference in reviewer text; an
    entity shows as typed."""
    assert inline(text) == shown


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("see http://evil.example/a).", "see `http://evil.example/a`)."),
        ("www.evil.example", "`www.evil.example`"),
        ("[x](https://e/a|b)", "\\[x\\](`https://e/a`\\|b)"),
        ("<http://evil>", "&lt;`http://evil>`"),
    ],
)
def test_inline_shows_a_linkable_text_as_code(text: str, shown: str) -> None:
    """What GitHub would link by itself is a code span, which no forge links; it stops
    at a ``|`` (a table cell) and leaves a sentence's closing punctuation out."""
    assert inline(text) == shown


def test_cell_escapes_every_pipe() -> None:
    """Pipes are escaped in table cells, inside code spans too (GFM splits first)."""
    assert cell("a|`b|c`") == "a\\|`b\\|c`"
    assert inline("a|`b|c`") == "a\\|`b|c`"


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("src/a.py", "`src/a.py`"),
        ("a`b", "``a`b``"),
        ("`x", "`` `x ``"),
        ("a``b`c", "```a``b`c```"),
        ("a\nb", "`a b`"),
        ("a\rb", "`a b`"),
    ],
)
def test_code_span_fences_longer_than_content(text: str, span: str) -> None:
    """The fence outgrows any backtick run inside; edge backticks get a space pad."""
    assert code(text) == span


def test_block_writes_each_fenced_block_in_its_own_fence() -> None:
    """A reviewer's fenced block is kept as code, inside a fence council writes; the
    prose around it is text."""
    text = "see <this>\n~~~\n<raw>\n~~~\nafter <that>"
    assert block(text) == ["see &lt;this>", "```", "<raw>", "```", "after &lt;that>"]


def test_block_fence_outgrows_the_backticks_inside() -> None:
    """A block holding a run of backticks gets a longer fence, so the run cannot close
    it; an info string holding a backtick is kept on a fence of tildes."""
    text = "```python\nx = '````'\n```"
    assert block(text) == ["`````python", "x = '````'", "`````"]
    assert block("~~~x `y`\n~~~~ z\n~~~~~") == ["~~~~~x `y`", "~~~~ z", "~~~~~"]


def test_block_unclosed_fence_is_closed() -> None:
    """An unclosed fence runs to the end, and council closes it."""
    assert block("```\n<a>\n<b>") == ["```", "<a>", "<b>", "```"]


def test_block_prose_lines_start_no_block() -> None:
    """Each prose line is stripped and escaped like :func:`inline`; blank lines stay."""
    text = "a `x\n\n    y` <b>\n# h\r- i\n"
    assert block(text) == ["a \\`x", "", "y\\` &lt;b>", "\\# h", "\\- i"]


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
