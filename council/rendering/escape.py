"""Reviewer text made safe to place inside a Markdown report, a terminal or a forge.

Subjects, discussions and paths come from models and programs: a ``|`` splits a table
cell, a ``<details>`` swallows the page, a backtick closes a code span. Each helper makes
one kind of place safe and keeps the Markdown a reviewer meant; raw HTML is neutralized
outside code (GitHub renders some). :func:`no_controls` is the one rule for control and
invisible characters (a terminal runs ``\\x1b]``; U+202E reorders what a forge shows);
:func:`for_log` adds a CI log's command lines (``::error``, ``##[``), :func:`for_forge` a
posted body's mentions, :func:`no_controls_json` a JSON file's text. Linear in the input.
Source: issue "The change under review is untrusted"; docs/architecture.md "Reports, the
CLI and the gate".
"""

from __future__ import annotations

import re
from collections.abc import Callable

_BACKTICKS = re.compile(r"`+")
_WHITESPACE = re.compile(r"\s+")
_BLOCK_MARK = re.compile(r"^([#>|]|[-+*](?=\s|$)|[-*_=](?=[-*_=\s]*$))")
"""A line start Markdown would read as a block: a heading, quote or table mark; a bullet
(``-``, ``+``, ``*`` followed by a space or nothing: ``--since-last`` is no bullet); or a
line of only ``-``/``*``/``_``/``=`` (a thematic break, a setext underline)."""
_ORDERED_MARK = re.compile(r"^(\d{1,9})([.)])")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
"""What :func:`no_controls` escapes: the C0 controls but newline and tab (NUL, escape,
carriage return, backspace...), DEL, the C1 controls (U+0080-U+009F, the next-line
U+0085 among them); the line and paragraph separators (U+2028, U+2029); and the
bidirectional controls: the marks (U+061C, U+200E, U+200F), the embeddings and
overrides (U+202A-U+202E) and the isolates (U+2066-U+2069). The zero-width joiner
(U+200D) is not among them: :func:`no_mentions` writes it."""
_UNSAFE = re.compile(f"[{_CONTROLS}]")
_UNSAFE_LINE = re.compile(f"[\t\n{_CONTROLS}]")
_WORKFLOW_COMMAND = re.compile(r"^([^\S\n]*)::", re.MULTILINE)


def _no_html(text: str) -> str:
    return text.replace("<", "&lt;")


def _outside_code(text: str, change: Callable[[str], str]) -> str:
    """Apply ``change`` to the parts of ``text`` that are not inside a code span.

    A code span opens at a run of N backticks and closes at the next run of exactly N
    (CommonMark); a run with no partner is literal text. The partner of every run is
    found in one backward pass, so the walk stays linear.
    """
    runs = list(_BACKTICKS.finditer(text))
    partner: list[int | None] = [None] * len(runs)
    later: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        width = len(runs[index].group())
        partner[index] = later.get(width)
        later[width] = index
    out: list[str] = []
    position = index = 0
    while index < len(runs):
        close = partner[index]
        if close is None:
            index += 1
            continue
        out.append(change(text[position : runs[index].start()]))
        out.append(text[runs[index].start() : runs[close].end()])
        position = runs[close].end()
        index = close + 1
    out.append(change(text[position:]))
    return "".join(out)


def inline(text: str) -> str:
    """One line of reviewer text for a paragraph or list item.

    Whitespace runs (newlines included) become one space so the text cannot start a
    new block; raw HTML is neutralized outside code spans; a leading block marker
    (``#``, ``>``, ``-``, ``1.``, ...) is escaped so a list item stays a list item.
    """
    flat = _WHITESPACE.sub(" ", text).strip()
    flat = _ORDERED_MARK.sub(r"\1\\\2", _BLOCK_MARK.sub(r"\\\1", flat, count=1), count=1)
    return _outside_code(flat, _no_html)


def cell(text: str) -> str:
    """Reviewer text for a GFM table cell: :func:`inline`, and every ``|`` escaped.

    GFM splits cells on ``|`` before it reads code spans, so the pipe is escaped
    everywhere, inside code spans too (``\\|`` renders as ``|`` there).
    """
    return inline(text).replace("|", "\\|")


def code(text: str) -> str:
    """Text shown literally as a code span, whatever backticks it holds.

    The fence is one backtick longer than the longest run inside; a space pads both
    ends when the text starts or ends with a backtick (CommonMark strips exactly that
    one space again). Newlines become spaces, as they would inside a span anyway.
    """
    flat = text.replace("\r", " ").replace("\n", " ")
    longest = max((len(m.group()) for m in _BACKTICKS.finditer(flat)), default=0)
    fence = "`" * (longest + 1)
    padded = flat.startswith("`") or flat.endswith("`") or not flat.strip()
    pad = " " if padded else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def block(text: str) -> list[str]:
    """A multi-line discussion as lines of Markdown, to be quoted or placed as is.

    Fenced code blocks are kept verbatim; everything else keeps its Markdown with raw
    HTML neutralized outside code spans. Each paragraph is read as one piece, so a
    code span that wraps a line is still recognized (and one never spans paragraphs).
    """
    lines = text.splitlines()
    out: list[str] = []
    prose: list[str] = []
    fence: str | None = None
    for line in lines:
        if fence is not None:
            out.append(line)
            if line.strip().startswith(fence) and set(line.strip()) == {fence[0]}:
                fence = None
            continue
        opened = _FENCE.match(line)
        if opened is None and line.strip():
            prose.append(line)
            continue
        if opened is None:
            out.extend(_prose(prose))
            prose = []
            out.append(line)
            continue
        out.extend(_prose(prose))
        prose = []
        fence = opened.group(1)
        out.append(line)
    out.extend(_prose(prose))
    return out


def _prose(lines: list[str]) -> list[str]:
    if not lines:
        return []
    return _outside_code("\n".join(lines), _no_html).split("\n")


def _escape_control(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def no_controls(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control and invisible bidirectional character made visible.

    Each character of :data:`_CONTROLS` is written as its escape, ``\\x1b``,
    ``\\x00``, ``\\x85`` (up to U+00FF) or ``\\u202e``; newlines and tabs are kept,
    as bodies need them, unless ``one_line`` (a title, a description, a log line), where
    they are escaped too (``\\x0a``, ``\\x09``). Why: a forge, a terminal or an editor
    would act on them or hide them, and the text comes from models and from the change
    (an analyzer's message echoes the change's string literals). The escape reads the
    same in Markdown (a backslash before a letter is literal) and in plain text.

    Idempotent (the escapes hold no such character); linear; never raises.
    """
    return (_UNSAFE_LINE if one_line else _UNSAFE).sub(_escape_control, text)


def for_log(text: str, *, one_line: bool = False) -> str:
    """``text`` safe to print on a terminal or into a CI log, still readable.

    * Control characters, line and paragraph separators and bidirectional controls are
      escaped by :func:`no_controls` (``\\x1b``, ``\\u202e``); newlines and tabs are
      kept unless ``one_line``.
    * A line whose first non-blank characters are ``::`` (a GitHub Actions workflow
      command such as ``::error title=…::`` or ``::add-mask::``) gets a backslash
      before them, and every ``##[`` (the older command form, read anywhere in a
      line) becomes ``##\\[``. In Markdown both backslashes are escapes of punctuation:
      the rendered text is unchanged.

    Idempotent (escaping twice changes nothing more); linear in the text.
    """
    escaped = no_controls(text, one_line=one_line)
    escaped = _WORKFLOW_COMMAND.sub(r"\1\\::", escaped)
    return escaped.replace("##[", "##\\[")


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def no_controls_json(dumped: str) -> str:
    """JSON text (``json.dumps`` output) with every character :func:`no_controls` escapes
    written as a JSON ``\\u`` escape (four hexadecimal digits) instead of raw.

    ``json.dumps(..., ensure_ascii=False)`` escapes the C0 controls but writes DEL, the
    C1 controls, the separators and the bidirectional controls raw. Those can only sit
    inside strings (JSON's own syntax is ASCII), and a ``\\u`` escape there decodes to
    the same character: the data is unchanged (a path still names its file, a
    fingerprint still matches), but no file council writes holds such a character raw
    for a terminal, an editor or a diff view to act on. Idempotent; never raises.
    """
    return _UNSAFE.sub(_json_escape, dumped)


# -- text posted where a forge acts on it -----------------------------------------------

ZWJ = "\u200d"
"""The zero-width joiner (U+200D) placed after an ``@``: invisible, and no forge reads
``@`` + U+200D + ``name`` as a mention."""

_MENTION = re.compile(r"(?<![\w`])@(?=[A-Za-z0-9_])")
"""An ``@`` that starts a mention on GitHub or GitLab: ``@user``, ``@org/team``,
``@group/subgroup``, ``@all``. Not an e-mail address (a word character before it)."""

_AT_ENTITY = re.compile(r"&(?:#0*64|#[xX]0*40|commat);?")
"""``@`` written as an HTML entity: GitHub finds mentions in the rendered text, where
``&#64;user`` has become ``@user``."""

_URL = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*://|www\.)[^\s<>()]+")
"""A URL: its ``@`` (``https://host/@author``, ``user@host``) is no mention once linked,
and a joiner in it would break the link."""

_QUICK_ACTION = re.compile(r"^([ \t>]*)/(?=[A-Za-z])", re.MULTILINE)
"""A line GitLab would run as a quick action (``/merge``, ``/approve``, ``/close``)."""


def _defuse_mentions(text: str) -> str:
    out: list[str] = []
    position = 0
    for url in _URL.finditer(text):
        out.append(_MENTION.sub("@" + ZWJ, _AT_ENTITY.sub("@", text[position : url.start()])))
        out.append(url.group())
        position = url.end()
    out.append(_MENTION.sub("@" + ZWJ, _AT_ENTITY.sub("@", text[position:])))
    return "".join(out)


def _outside_fences(text: str, change: Callable[[str], str]) -> str:
    """Apply ``change`` to each run of lines outside fenced code blocks (whose text no
    forge links or acts on), keeping the line breaks as they are."""
    lines = text.split("\n")
    out: list[str] = []
    prose: list[str] = []
    fence: str | None = None
    for line in lines:
        if fence is not None:
            out.append(line)
            if line.strip().startswith(fence) and set(line.strip()) == {fence[0]}:
                fence = None
            continue
        opened = _FENCE.match(line)
        if opened is None:
            prose.append(line)
            continue
        if prose:
            out.append(change("\n".join(prose)))
            prose = []
        fence = opened.group(1)
        out.append(line)
    if prose:
        out.append(change("\n".join(prose)))
    return "\n".join(out)


def no_mentions(text: str) -> str:
    """Markdown with every mention neutralized, for a body a forge will post.

    ``@user`` and ``@org/team`` in reviewer text would notify (or page) whoever they
    name when the council posts it, under the council's account: a pull request can
    write them into the code a reviewer quotes. An ``@`` that would mention gets a
    zero-width joiner after it (it still reads ``@user``); an ``@`` spelt as an HTML
    entity is written out first so it gets one too. Left alone: code spans and fenced
    blocks (forges never mention from them), URLs, e-mail addresses. Idempotent and
    linear; never raises.
    """
    return _outside_fences(text, lambda prose: _outside_code(prose, _defuse_mentions))


def for_forge(text: str) -> str:
    """Markdown as a forge may post it: no mention notifies anyone
    (:func:`no_mentions`), then no control or bidirectional character is left raw
    (:func:`no_controls`; newlines and tabs are kept). Mentions are found first, on the
    raw text, so that an ``@`` after a raw control is still defused. For every body
    posted on GitHub or GitLab (a GitLab note also needs :func:`no_quick_actions`).
    Idempotent; linear; never raises.
    """
    return no_controls(no_mentions(text))


def no_quick_actions(text: str) -> str:
    """Markdown that GitLab will not run as quick actions, for a GitLab note.

    GitLab runs a note's lines that start with ``/command`` (``/merge``, ``/approve``,
    ``/assign``) with the permissions of the account posting it; reviewer text can
    start a line (a quoted discussion, a path). A zero-width joiner before the slash
    makes it plain text. Fenced blocks are left alone (GitLab ignores them). Idempotent.
    """
    return _outside_fences(text, lambda prose: _QUICK_ACTION.sub(r"\1" + ZWJ + "/", prose))
