"""Git's quoted path names, as they appear in the headers of ``git diff``.

Git writes a path that holds a double quote, a backslash, a control character or (with
the default ``core.quotePath``) any byte above 0x7f as a C-style quoted string: the
path ``ä.py`` appears as ``"a/\\303\\244.py"``. The diff model must read these back into
the names the repository uses, or a finding on ``ä.py`` could never land on the diff.

This module is pure text handling for :mod:`council.change.diff`. Source: docs/architecture.md
"Layers" (the diff model is domain), docs/harvest.md §2 (anchors name paths).
"""

from __future__ import annotations

import json
import re
import unicodedata

_ESCAPES: dict[str, int] = {
    "a": 0x07,
    "b": 0x08,
    "t": 0x09,
    "n": 0x0A,
    "v": 0x0B,
    "f": 0x0C,
    "r": 0x0D,
    '"': 0x22,
    "\\": 0x5C,
}
"""The single-character escapes git's ``quote_c_style`` writes, and the byte each means."""

_QUOTED_AT_END = re.compile(r'(?:^|\s)("(?:[^"\\]|\\.)*")$')
"""A quoted string that ends the text (the second name of a ``diff --git`` line)."""


def is_quoted(text: str) -> bool:
    """Whether ``text`` is a whole C-style quoted string (``"..."``, length ≥ 2)."""
    return len(text) >= 2 and text.startswith('"') and text.endswith('"')


def unquote(text: str) -> str:
    """The path a git-quoted string stands for; text that is not quoted is returned as is.

    Octal escapes are bytes (``\\303\\244`` is the UTF-8 of ``ä``); the bytes are decoded
    as UTF-8 with replacement characters, so a path in another encoding still yields a
    stable name rather than an exception. An unknown escape keeps its character; a
    trailing lone backslash is kept. Why: git quotes every non-ASCII path by default.
    Never raises.
    """
    if not is_quoted(text):
        return text
    body = text[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        char = body[i]
        if char != "\\" or i + 1 == len(body):
            out += char.encode("utf-8", "surrogatepass")
            i += 1
            continue
        nxt = body[i + 1]
        octal = body[i + 1 : i + 4]
        if len(octal) == 3 and all(c in "01234567" for c in octal):
            out.append(int(octal, 8) & 0xFF)
            i += 4
        elif nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        else:
            out += nxt.encode("utf-8", "surrogatepass")
            i += 2
    return out.decode("utf-8", "replace")


def take_quoted(text: str) -> tuple[str, str] | None:
    """Split a leading quoted string off ``text``: ``(quoted, rest)``, or None.

    ``quoted`` keeps its quotes (pass it to :func:`unquote`); ``rest`` is what follows,
    unstripped. None when ``text`` does not start with a closed quoted string.
    """
    if not text.startswith('"'):
        return None
    i = 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return text[: i + 1], text[i + 1 :]
        i += 1
    return None


def strip_prefix(path: str, prefix: str) -> str:
    """``path`` without its diff prefix (``a/`` or ``b/``) when it has one."""
    return path[len(prefix) :] if path.startswith(prefix) else path


def header_names(rest: str) -> tuple[str, str] | None:
    """The two paths of a ``diff --git`` line, prefixes kept, or None when ambiguous.

    ``rest`` is the text after ``diff --git ``. Either name may be quoted. Two unquoted
    names are split where git itself splits them: when both sides name the same path
    (every change but a rename or copy), the line is ``a/P b/P`` and splits in the
    middle; otherwise at the only `` b/`` in the line. A rename whose names hold spaces
    is ambiguous here and returns None: its ``rename from``/``rename to`` lines say it.
    """
    rest = rest.rstrip("\r\n")
    first = take_quoted(rest)
    if first is not None:
        second = first[1].lstrip(" ")
        return unquote(first[0]), unquote(second)
    last = _QUOTED_AT_END.search(rest)
    if last is not None:
        return rest[: last.start(1)].rstrip(" "), unquote(last.group(1))
    if len(rest) % 2 == 1:
        half = len(rest) // 2
        left, sep, right = rest[:half], rest[half], rest[half + 1 :]
        if sep == " " and left[2:] == right[2:]:
            return left, right
    if rest.count(" b/") == 1:
        left, _, right = rest.partition(" b/")
        return left, "b/" + right
    return None


_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
"""Unicode categories escaped by :func:`shown`: controls (newline, escape), format
characters (bidirectional overrides, zero-width), line and paragraph separators, and
lone surrogates (undecodable bytes of a file name)."""


def shown(path: str) -> str:
    """A path as council writes it in text a model or a person reads: a JSON string.

    ``src/app.py`` → ``"src/app.py"``; ``a\nb`` → ``"a\\nb"``. Every character that could
    end a line, start a terminal escape or reorder the text around it (categories
    :data:`_UNSAFE_CATEGORIES`) is written as a ``\\u`` escape (four hex digits);
    everything else is kept as it is, non-ASCII letters included. Why: a file name is
    chosen by the change under review, and one holding a newline must not write its own
    lines into a prompt or a log.
    """
    out = []
    for char in json.dumps(path, ensure_ascii=False):
        if unicodedata.category(char) in _UNSAFE_CATEGORIES:
            out.append(f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else _surrogates(char))
        else:
            out.append(char)
    return "".join(out)


def _surrogates(char: str) -> str:
    """A character beyond U+FFFF as JSON's two ``\\u`` escapes (a surrogate pair)."""
    high, low = divmod(ord(char) - 0x10000, 0x400)
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"
