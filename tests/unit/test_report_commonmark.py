"""Reviewer text renders as text: the Markdown council posts, read by a CommonMark parser.

Hostile strings (raw HTML, links, autolinks, bare URLs, mentions, issue references,
quick actions, line-start block markers, backticks, backslashes, pipes, entities) are
placed in every field a reviewer, a change or a file name controls; what council posts
(the Markdown report and step summary, the GitHub review's body and line comments, the
check run's text, the GitLab threads, the GitHub publisher's fallback body) is parsed with
markdown-it-py in CommonMark mode, GFM tables and strikethrough on. No HTML but council's
own ``<details>``, no link, no heading but council's, no mention or reference or bare URL
in text, no quick action on a GitLab line, and every word the reviewer wrote is still
there, as text or code (its backticks may have become a code span's).
Source: issue 24 part 3 ("Text that renders as text"); docs/security.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from council.change.diff import parse_diff
from council.model.findings import FileAnchor, Finding, LineAnchor, Member, Origin, Warning
from council.model.report import CouncilReport, ParticipantSummary
from council.rendering import render_markdown
from council.rendering.escape import ZWJ, block, inline
from council.rendering.github_checks import render_github_checks
from council.rendering.github_review import render_github_review
from council.rendering.gitlab import render_gitlab_discussions
from workers.forge.github_publish import comments_in_body

PARSER = MarkdownIt("commonmark").enable(["table", "strikethrough"])

PIECES = (
    "`", "``", "```", "~~~", "\\", "\\`", "<details>", "</details>", "<summary>",
    "<img src=x>", "<!-- c -->", "@octocat", "@org/team", "[x](http://evil)",
    "![i](http://evil)", "http://evil.example", "<http://evil>", "www.evil.example",
    "[r]: http://evil", "/label ~x", "\n", "\n\n", "|", "&lt;", "&#64;octocat", "&amp;",
    "# ", ">", "- ", "1. ", "*", "_", "~~", "#12", "!3", "a@b.io", " ", "    ", "\t",
    "===", "x", "word", "snake_case", "$", "(", ")", ".",
)  # fmt: skip
"""What hostile strings are made of (a reviewer writes any of them; a change's file
names and string literals reach the findings too)."""

hostile = st.lists(st.sampled_from(PIECES), min_size=1, max_size=12).map("".join)
named = hostile.filter(lambda text: text.strip() != "")

DIFF = (
    "diff --git a/src/a.py b/src/a.py\n"
    "index 04ec35a..0676235 100644\n"
    "--- a/src/a.py\n"
    "+++ b/src/a.py\n"
    "@@ -1,2 +1,3 @@\n"
    " a\n"
    "+b\n"
    " c\n"
)

COUNCIL_HTML = re.compile(r"(?:(?:</?details>|<summary>\d+ warnings?</summary>)\n?)+")
"""The only raw HTML council writes in Markdown: the warnings' fold."""

COUNCIL_HEADING = re.compile(
    r"\S+ Council review: .*|Findings|Not on a changed line|Notes|Line comments GitHub refused"
)
"""The headings council writes (the sections the hostile report has)."""

MENTION = re.compile(r"@\w")
REFERENCE = re.compile(r"[#!&]\d|(?i:gh)-\d")
BARE_LINK = re.compile(r"(?i:[a-z][a-z0-9+.-]*://|www\.|mailto:|xmpp:)|[\w.+-]@[\w-]")
QUICK_ACTION = re.compile(r"^[ \t>]*/[A-Za-z]", re.MULTILINE)


def _report(text: str, name: str, path: str) -> CouncilReport:
    """A report whose every reviewer-controlled field holds hostile text."""
    other = Member(
        participant=name,
        anchor=LineAnchor(path=path, line=3),
        label="issue",
        subject=name,
        discussion=text,
    )
    origin = Origin(kind="reviewer", run_id="r1", participant=name)

    def finding(ident: int, anchor: LineAnchor | FileAnchor) -> Finding:
        own = Member(participant=name, anchor=anchor, label="issue", subject=name)
        return Finding(
            id=ident,
            anchor=anchor,
            label="issue",
            subject=name,
            discussion=text,
            origin=origin,
            severity="critical",
            raised_by=(name, "owl"),
            severity_note=text,
            members=(own, other),
        )

    findings = (
        finding(1, LineAnchor(path=path, line=2)),
        finding(2, FileAnchor(path=path)),
        finding(3, LineAnchor(path="src/a.py", line=2)),
    )
    failed = ParticipantSummary(id=name, backend=name, model=text, state="failed", failure=text)
    return CouncilReport(
        run_id="r1",
        session="s1",
        status="settled",
        head="0123abcd" * 5,
        participants=(failed,),
        findings=findings,
        warnings=(Warning(code="no-json", at=name, message=text),),
        notes=(text,),
    )


def _walk(tokens: Sequence[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        yield from _walk(token.children or ())


def _shown(tokens: Sequence[Token]) -> str:
    """Everything the page shows as text or code, a line break for a break, no joiner;
    the ``##\\[`` :func:`~council.rendering.escape.for_log` writes read back as ``##[``."""
    parts: list[str] = []
    for token in _walk(tokens):
        if token.type in ("text", "code_inline", "code_block", "fence"):
            parts.append(token.content)
        if token.type == "fence":
            parts.append(" " + token.info)
        if token.type in ("softbreak", "hardbreak", "paragraph_close", "fence"):
            parts.append("\n")
    return "".join(parts).replace(ZWJ, "").replace("##\\[", "##[")


def _plain(text: str) -> str:
    """Text as compared with what the page shows: no backticks (the reviewer's code spans
    are shown as code, without them), no whitespace (a span drops a space at its ends)."""
    return "".join(text.replace("`", "").split())


def assert_text_only(markdown: str, said: Sequence[str], *, gitlab: bool = False) -> None:
    """The checks of this module's docstring, on one body."""
    tokens = PARSER.parse(markdown)
    for token in _walk(tokens):
        if token.type in ("html_block", "html_inline"):
            assert COUNCIL_HTML.fullmatch(token.content), token.content
        assert token.type not in ("link_open", "image", "hr", "code_block"), token
        if token.type == "text":
            for rule in (MENTION, REFERENCE, BARE_LINK):
                assert rule.search(token.content) is None, (rule.pattern, token.content)
    for opened, heading in pairwise(tokens):
        if opened.type == "heading_open":
            assert COUNCIL_HEADING.fullmatch(_shown([heading])), heading.content
    if gitlab:
        assert QUICK_ACTION.search(markdown) is None, markdown
    shown = _shown(tokens).replace("`", "")
    for text in said:
        for word in text.split():
            if "```" not in word and "~~~" not in word:
                assert word.replace("`", "") in shown, (word, shown)


@settings(max_examples=150, deadline=None)
@given(text=hostile, name=named, path=named)
def test_every_markdown_council_posts_reads_reviewer_text_as_text(
    text: str, name: str, path: str
) -> None:
    """The Markdown report (and so the step summary and the check run's text), the
    review's body and line comments, the publisher's fallback body and the GitLab
    threads: reviewer text is text, and all of it is there."""
    report = _report(text, name, path)
    said = (text, name, path)
    assert_text_only(render_markdown(report), said)
    checks = json.loads(render_github_checks(report))["output"]
    assert_text_only(checks["text"], said)
    review = json.loads(render_github_review(report))
    assert review["comments"], "the hostile path's finding is a line comment"
    assert_text_only(review["body"], said)
    for comment in review["comments"]:
        assert_text_only(comment["body"], (text, name))
    assert_text_only(comments_in_body(review, "refused")["body"], said)
    threads = json.loads(render_gitlab_discussions(report, parse_diff(DIFF)))["discussions"]
    assert threads, "the finding on src/a.py is a GitLab thread"
    for thread in threads:
        assert_text_only(thread["body"], (text, name), gitlab=True)


@settings(max_examples=150, deadline=None)
@given(name=named, backend=hostile, model=hostile)
def test_a_pipe_stays_in_its_table_cell(name: str, backend: str, model: str) -> None:
    """The participants table: the name and the backend / model each fill their own cell
    however many ``|`` they hold."""
    failed = ParticipantSummary(id=name, backend=backend, model=model, state="failed")
    report = CouncilReport(run_id="r1", session="s1", status="settled", participants=(failed,))
    tokens = PARSER.parse(render_markdown(report))
    cells: list[str] = []
    for opened, content in pairwise(tokens):
        if opened.type == "td_open":
            cells.append(_shown([content]))
    assert [_plain(c) for c in cells[:2]] == [_plain(name), _plain(f"{backend} / {model}")]


@given(text=hostile)
@settings(max_examples=300, deadline=None)
def test_inline_and_block_alone_read_as_text(text: str) -> None:
    """The escaping functions on their own: one line, and a discussion quoted (a line of
    one of its fenced blocks may start ``/``: a GitLab body also passes
    :func:`~council.rendering.escape.no_quick_actions`, checked above)."""
    assert_text_only(f"**issue:** {inline(text)}", (text,), gitlab=True)
    quoted = "\n".join(f"> {line}" if line.strip() else ">" for line in block(text))
    assert_text_only(quoted, (text,))  # a fenced line may start "/": see no_quick_actions


def test_the_issues_case_renders_as_text() -> None:
    """The review the issue posted: an escaped backtick, then ``<details>`` and
    ``<img>``, and mentions after a code span in another field."""
    text = "\\`<details><summary>x</summary><img src=x>` @octocat @org/team"
    report = _report(text, "hawk", "src/`a`.py")
    review = json.loads(render_github_review(report))
    assert_text_only(review["body"], (text,))
    assert "&lt;details>" in review["body"] and "@\u200doctocat" in review["body"]
