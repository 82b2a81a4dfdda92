"""The lexical rules of the harvest's lenient JSON: tokens, strings, cut tokens.

Only what models are known to slip on is accepted beyond strict JSON: raw LF, CR and tab
inside strings. Everything here is a compiled pattern or a small pure function used by
:mod:`council.harvest.machine` on its single pass.

Source: docs/harvest.md §3 ("JSON is read leniently where models are known to slip").
"""

from __future__ import annotations

import re
from json import JSONDecoder

TOKEN = re.compile(
    r"""[ \t\n\r]*+(?:
        (")                                                  # 1: a string opens
      | ([{}\[\]:,])                                         # 2: structure
      | (-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)(?=[ \t\n\r,\]}])  # 3: number
      | (true|false|null)(?=[ \t\n\r,\]}])                   # 4: literal
      | ([^ \t\n\r{}\[\]":,]+)                               # 5: anything else
    )""",
    re.VERBOSE,
)
"""The next token inside a live frame; a number or literal counts once its delimiter came."""

RUNS = {char: re.compile(re.escape(char) + "+") for char in "{[}"}
"""A run of one bracket, taken in one step."""

STRUCTURE = re.compile(r'[{}\[\]"]')
"""What still matters inside a dead frame: nesting, and strings (which hide braces)."""

STRING_REST = re.compile(r'[^"\\]*+(?:\\[\s\S][^"\\]*+)*+"')
"""The rest of a string after its opening quote, through its closing quote."""

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
"""Raw control characters a string may not hold (LF, CR and tab are accepted)."""

FOLLOWS_ARRAY = re.compile(r"[ \t\n\r]*+:[ \t\n\r]*+\[")
"""What must follow a ``"findings"`` string for it to open a findings array."""

NUMBER_PREFIX = re.compile(
    r"-|-?(?:0|[1-9][0-9]*)(?:\.|\.[0-9]+(?:[eE][+-]?[0-9]*)?|[eE][+-]?[0-9]*)?"
)
"""A number the end of the text may have cut (``0.``, ``12``, ``1e-``)."""

NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
STRINGS = JSONDecoder(strict=False)
"""Decodes the escapes of one string token already checked by the patterns above."""

LITERALS: dict[str, object] = {"true": True, "false": False, "null": None}
JSON_SPACE = " \t\n\r"
"""The four whitespace characters JSON allows between tokens."""


def run_end(text: str, p: int) -> int:
    """The offset just past the run of ``text[p]`` (a bracket) that starts at ``p``.

    Why: a hostile answer of ten million ``{`` is read in one step per run, not per
    character (docs/harvest.md §3, linear reading). Never raises for a bracket at ``p``.
    """
    run = RUNS[text[p]].match(text, p)
    return p + 1 if run is None else run.end()


def cut_token(spelled: str) -> bool:
    """Whether text at the very end could be a number or literal the end cut short.

    Why: ``{"confidence": 0.`` at the end of an answer is a cut, not malformed JSON, and
    the difference decides ``cut-off`` against ``malformed-json`` (docs/harvest.md §3.3).
    Never raises.
    """
    if NUMBER_PREFIX.fullmatch(spelled):
        return True
    return any(word.startswith(spelled) for word in LITERALS)
