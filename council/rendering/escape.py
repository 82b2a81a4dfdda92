"""Reviewer text made safe to place inside a Markdown report, a terminal or a forge.

Subjects, discussions, paths and names come from models, programs and the change. In
Markdown they are written so that CommonMark (and GitHub's and GitLab's extensions) can
read them only as text (:func:`inline`, :func:`cell`, :func:`block`) or as code
(:func:`code`, and the fenced blocks :func:`block` writes itself); the reviewer's own
Markdown is shown, not rendered. Why, and what each escape is for: docs/security.md
"Reviewer text in Markdown". :func:`no_controls` is the one rule for control and
invisible characters (a terminal runs ``\\x1b]``; U+202E reorders what a forge shows);
:func:`for_log` adds a CI log's command lines (``::error``, ``##[``), :func:`for_forge` a
posted body's mentions, :func:`no_controls_json` a JSON file's text. Linear in the input.
Source: issue "The change under review is untrusted", issue 24 ("Text that renders as
text"); docs/architecture.md "Reports, the CLI and the gate".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from council.evidence.regions import CodeRegion, code_regions

ZWJ = "\u200d"
"""The zero-width joiner (U+200D): invisible, placed after an ``@``, a ``#`` or a ``!``
so that no forge reads what follows as a mention or a reference."""

_BACKTICKS = re.compile(r"`+")
_WHITESPACE = re.compile(r"\s+")
_LINE_BREAK = re.compile(r"\r\n?|\n")
"""CommonMark's line endings: LF, CR and CR LF."""

_LINKABLE = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*://|[Ww][Ww][Ww]\.|(?i:mailto|xmpp):)[^\s|<]+")
"""What GitHub's Markdown would link without brackets (an extended autolink:
``https://…``, ``www.…``, ``mailto:…``; any ``scheme://``, whatever precedes it: GitHub
links the ``http://`` of ``12http://``): shown as code instead, which no forge links. It
runs to a space, a ``|`` or a ``<`` (no autolink goes past one)."""

_LINK_TAIL = ".,;:!?'\")]*_~"
"""Trailing punctuation left out of a linkable text's code span (a sentence's period)."""

_ACTIVE = re.compile(
    r"[\\`*\[\]~|<$]|&(?=[#A-Za-z])|(?<![^\W_])_|_(?![^\W_])|[@#!&](?=[0-9])|@(?=\w)"
    r"|(?<![A-Za-z0-9])(?i:gh)-(?=[0-9])"
)
"""A character of reviewer text Markdown or a forge would act on, wherever it stands:
see :func:`_neutral`. An ``_`` between two letters or digits (``snake_case``) is inert in
CommonMark and kept."""

_LINE_START = re.compile(r"^(?:([#>/]|[-+](?=[ \t]|$)|[-=](?=[-= \t]*$))|([0-9]{1,9})([.)]))")
"""A line start Markdown or GitLab would read as structure: a heading or quote (``#``,
``>``), a bullet (``-`` or ``+`` before a space or nothing: ``--since-last`` is none), a
thematic break or setext underline (a line of ``-`` or ``=``), a quick action (``/``),
an ordered list item (``1.``, ``1)``). ``*``, ``_``, ``` ` ```, ``~``, ``<``,
``|`` and ``[`` are escaped wherever they stand."""

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


def _neutral_char(match: re.Match[str]) -> str:
    found = match.group()
    if found == "<":
        return "&lt;"
    if found == "$":
        return "&#36;"
    if found[-1] == "-" or found in "@#!":
        return found + ZWJ
    if found == "&" and match.string[match.end() : match.end() + 1].isdigit():
        return found + ZWJ
    return "\\" + found


def _neutral(text: str) -> str:
    """``text`` (no line break) with every character of :data:`_ACTIVE` neutralized.

    Backslash-escaped: ``\\``, ``` ` ```, ``*``, ``_`` (but inside a word), ``[``, ``]``,
    ``~``, ``|`` and an ``&`` that could start an entity; ``<`` becomes ``&lt;`` (no tag,
    no autolink), ``$`` ``&#36;`` (no math). A zero-width joiner follows an ``@`` before
    a word character (no mention, no e-mail link) and a ``#``, ``!``, ``&`` or ``GH-``
    before a digit (no issue or merge-request reference)."""
    return _ACTIVE.sub(_neutral_char, text)


def _literal(text: str) -> str:
    """One line of reviewer text as CommonMark reads only as text, its linkable parts
    (:data:`_LINKABLE`) as code spans."""
    out: list[str] = []
    at = 0
    for link in _LINKABLE.finditer(text):
        whole = link.group()
        shown = whole.rstrip(_LINK_TAIL)
        if _LINKABLE.fullmatch(shown) is None:
            shown = whole
        out.append(_neutral(text[at : link.start()]))
        out.append(code(shown))
        at = link.start() + len(shown)
    out.append(_neutral(text[at:]))
    return "".join(out)


def _line_start(match: re.Match[str]) -> str:
    mark, number, delimiter = match.groups()
    return f"\\{mark}" if mark else f"{number}\\{delimiter}"


def _code_spans(text: str) -> list[tuple[str, bool]]:
    """``text`` cut into pieces of prose and of code span content (``True``), as
    CommonMark pairs backtick runs within it: an opening run not escaped by a backslash
    (its escaped first backtick is prose) closes at the next run of the same length; a
    run with no partner is prose. It decides only what is shown as code: prose is
    escaped and a span written again by :func:`code`. One backward pass; linear."""
    runs = list(_BACKTICKS.finditer(text))
    starts = [run.start() + int(_escaped(text, run.start())) for run in runs]
    partner: list[int | None] = [None] * len(runs)
    later: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        partner[index] = later.get(runs[index].end() - starts[index])
        later[len(runs[index].group())] = index
    pieces: list[tuple[str, bool]] = []
    position = index = 0
    while index < len(runs):
        close = partner[index]
        if close is None or starts[index] == runs[index].end():
            index += 1
            continue
        pieces.append((text[position : starts[index]], False))
        pieces.append((text[runs[index].end() : runs[close].start()], True))
        position = runs[close].end()
        index = close + 1
    pieces.append((text[position:], False))
    return pieces


def _line(text: str, *, in_cell: bool = False) -> str:
    """One line of reviewer text, stripped, that starts no block and no quick action:
    its code spans written again by :func:`code` (a ``|`` in one escaped in a table cell),
    the rest :func:`_literal`."""
    out: list[str] = []
    for piece, is_code in _code_spans(text.strip()):
        if not is_code:
            shown = _literal(piece)
        else:
            shown = code(piece).replace("|", "\\|") if in_cell else code(piece)
        if out and out[-1].endswith("`") and shown.startswith("`"):
            out.append(ZWJ)  # two spans side by side would read as one run of backticks
        if shown:
            out.append(shown)
    return _LINE_START.sub(_line_start, "".join(out), count=1)


def inline(text: str) -> str:
    """Reviewer text as one line of a paragraph, a list item or a heading.

    Whitespace runs (newlines included) become one space so the text cannot start a new
    block; a leading block marker (``#``, ``>``, ``- ``, ``1.``) or ``/`` is escaped; code
    spans stay code (written again by :func:`code`), a URL becomes one; everything else
    is read as text only (:func:`_neutral`): it renders as the reviewer typed it.
    """
    return _line(_WHITESPACE.sub(" ", text))


def cell(text: str) -> str:
    """Reviewer text for a GFM table cell: :func:`inline`, with every ``|`` escaped,
    inside code spans too (GFM splits a row on ``|`` before it reads code spans; ``\\|``
    renders as ``|`` there)."""
    return _line(_WHITESPACE.sub(" ", text), in_cell=True)


def code(text: str) -> str:
    """Text shown literally as a code span, whatever backticks it holds.

    The fence is one backtick longer than the longest run inside; a space pads both
    ends when the text starts or ends with a backtick (CommonMark strips exactly that
    one space again). Newlines become spaces, as they would inside a span anyway.
    """
    flat = _LINE_BREAK.sub(" ", text)
    longest = max((len(m.group()) for m in _BACKTICKS.finditer(flat)), default=0)
    fence = "`" * (longest + 1)
    padded = flat.startswith("`") or flat.endswith("`") or not flat.strip()
    pad = " " if padded else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def block(text: str, after: Mapping[int, str] | None = None) -> list[str]:
    """A multi-line discussion as lines of Markdown, to be quoted or placed as is.

    Each fenced block (found as :func:`~council.evidence.code_regions` finds the blocks a
    reviewer showed) is written again inside council's own fence, of backticks (of
    tildes when its info string, kept, holds a backtick), longer than any run of them it
    holds, so nothing in it can close it. Every other line is :func:`inline`'s text:
    escaped, stripped, no block marker, blank lines kept. ``after`` maps a block's
    position (from 1) to a line of council's Markdown written after it (a script's
    verdict). Linear; never raises.
    """
    notes = after or {}
    out: list[str] = []
    at = 0
    for region in code_regions(text, len(text)).read:
        out += _prose(text[at : region.start])
        out += _fenced(region)
        if region.position in notes:
            out.append(notes[region.position])
        at = region.end
    out += _prose(text[at:])
    return out


def _prose(text: str) -> list[str]:
    lines = _LINE_BREAK.split(text)
    if lines[-1] == "":
        lines.pop()  # the break ending the last line, not a blank line
    return [_line(line) for line in lines]


def _fenced(region: CodeRegion) -> list[str]:
    content = region.content.replace("\r\n", "\n").replace("\r", "\\x0d")
    info = region.info.replace("\r", "\\x0d")
    char = "~" if "`" in info else "`"  # a backtick fence's info string holds no backtick
    longest = max((len(m.group()) for m in re.finditer(f"{char}+", content)), default=0)
    fence = char * max(3, longest + 1)
    return [fence + info, *content.split("\n"), fence]


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

_MENTION = re.compile(r"(?<![\w`])@(?=[A-Za-z0-9_])")
"""An ``@`` that starts a mention on GitHub or GitLab: ``@user``, ``@org/team``,
``@group/subgroup``, ``@all``. Not an e-mail address (a word character before it)."""

_AT_ENTITY = re.compile(r"&(?:#0*64|#[xX]0*40|commat);?(?=[A-Za-z0-9_])")
"""``@`` written as an HTML entity before a name: GitHub finds mentions in the rendered
text, where ``&#64;user`` has become ``@user``."""

_URL = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*://|www\.)[^\s<>()]+")
"""A URL: its ``@`` (``https://host/@author``, ``user@host``) is no mention once linked,
and a joiner in it would break the link."""

_QUICK_ACTION = re.compile(r"^([ \t>]*)/(?=[A-Za-z])", re.MULTILINE)
"""A line GitLab would run as a quick action (``/merge``, ``/approve``, ``/close``)."""


def _outside_code(text: str, change: Callable[[str], str]) -> str:
    """Apply ``change`` to the parts of ``text`` that are not inside a code span.

    A code span opens at a run of N backticks not escaped by a backslash and closes at
    the next run of exactly N (CommonMark); a run with no partner is literal text. The
    partner of every run is found in one backward pass, so the walk stays linear. A
    second line of defence only: council's Markdown leaves no reviewer text to find
    here (:func:`inline`, :func:`block`); where this reading and CommonMark's differ, it
    errs towards changing more.
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
        if close is None or _escaped(text, runs[index].start()):
            index += 1
            continue
        out.append(change(text[position : runs[index].start()]))
        out.append(text[runs[index].start() : runs[close].end()])
        position = runs[close].end()
        index = close + 1
    out.append(change(text[position:]))
    return "".join(out)


def _escaped(text: str, at: int) -> bool:
    """Whether the character at ``at`` follows an odd run of backslashes (an escape)."""
    before = at
    while before > 0 and text[before - 1] == "\\":
        before -= 1
    return (at - before) % 2 == 1


def _joined(match: re.Match[str]) -> str:
    return match.group() + ZWJ


def _defuse_mentions(text: str) -> str:
    out: list[str] = []
    position = 0
    for url in _URL.finditer(text):
        out.append(_MENTION.sub("@" + ZWJ, _AT_ENTITY.sub(_joined, text[position : url.start()])))
        out.append(url.group())
        position = url.end()
    out.append(_MENTION.sub("@" + ZWJ, _AT_ENTITY.sub(_joined, text[position:])))
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
    zero-width joiner after it (it still reads ``@user``); so does an ``@`` spelt as an
    HTML entity (``&#64;``). Left alone: code spans and fenced
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
    makes it plain text. Fenced blocks too: GitLab skips only some fences (a bare
    ```` ``` ```` line), so no line is trusted to be code. Idempotent.
    """
    return _QUICK_ACTION.sub(r"\1" + ZWJ + "/", text)
