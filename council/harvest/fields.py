"""The general rules for reading any field of a reviewer's entry.

Every text is trimmed with ``str.strip()``; a blank text and ``null`` count as absent;
of two aliases (``subject``/``title``, ``discussion``/``body``, ``file``/``path``) the
first USABLE value wins and an unused alias is never judged; a value of the wrong type
for a text field counts as absent (the caller decides whether that warns). Text that
reaches a finding is made storable: a lone UTF-16 surrogate (which a ``\\ud800`` escape
can produce and which no UTF-8 store can hold) becomes U+FFFD.

Source: docs/harvest.md §4 ("General rules for every field").
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from council.model.findings import Warning, WarningCode

_SURROGATE = re.compile(r"[\ud800-\udfff]")
"""A lone surrogate (a valid pair was already joined when the JSON was decoded)."""

_SHOWN_CHARS = 80
"""How many characters of a reviewer's value a warning message quotes at most."""


class EntryWarnings:
    """The warnings of reading one entry, in the order the checks ran (docs/harvest.md §4).

    ``at`` names the entry (``findings[2]``, ``recorded[0]``); every message starts with
    it, so a message read alone still says which entry it is about (docs/harvest.md
    principle 2: no silent loss). Never raises.
    """

    def __init__(self, at: str) -> None:
        self.at = at
        self.items: list[Warning] = []

    def add(self, code: WarningCode, message: str) -> None:
        """Record one warning; ``message`` continues the sentence after the entry's name.

        Source: docs/harvest.md §6 (entry-level codes).
        """
        self.items.append(Warning(code=code, at=self.at, message=f"{self.at} {message}"))


@dataclass(frozen=True)
class TextField:
    """The text read from one field or its aliases.

    ``text`` is the first usable value, trimmed (None when none was usable); ``wrong``
    names the consulted fields whose value was of the wrong type, in alias order. When a
    usable value was found, ``wrong`` is empty: a usable alias makes them irrelevant.
    Source: docs/harvest.md §4 (general rules).
    """

    text: str | None
    wrong: tuple[str, ...] = ()


def text_value(value: object) -> str | bool | None:
    """One value read as text: the trimmed text, None when absent, False when not text.

    ``null`` and blank text are absent; any other non-string is the wrong type.
    Trimming is ``str.strip()`` (U+3000 and U+0085 go; U+200B stays). Never raises.
    Source: docs/harvest.md §4 (general rules).
    """
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    return False


def first_text(entry: Mapping[object, object], *names: str) -> TextField:
    """The first usable text among ``names`` (aliases, in order) of an entry.

    An alias after the first usable one is never judged. The text is trimmed and made
    storable (:func:`clean`). Never raises. Source: docs/harvest.md §4 (general rules).
    """
    wrong: list[str] = []
    for name in names:
        read = text_value(entry.get(name))
        if isinstance(read, str):
            return TextField(clean(read))
        if read is False:
            wrong.append(name)
    return TextField(None, tuple(wrong))


def clean(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, so any store can hold it.

    Why: a ``\\ud800`` escape decodes to a lone surrogate, which neither UTF-8 nor the
    canonical models accept; the rest of the text is kept as it came. Never raises.
    """
    return _SURROGATE.sub("\ufffd", text)


def compact_json(value: object) -> str:
    """A value as compact JSON text (``["a","b"]``), the way docs/harvest.md §4 quotes labels.

    A value too large or nested too deeply to encode is described instead of quoted;
    never raises.
    """
    try:
        spelled = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (RecursionError, TypeError, ValueError):
        spelled = f"({type_name(value)} too large or too deeply nested to quote)"
    return clean(spelled)


def shown(value: object) -> str:
    """A reviewer's value as a warning message quotes it: JSON, at most 80 characters.

    Never raises. Source: docs/harvest.md §2 (a warning's message is a sentence for people).
    """
    spelled = compact_json(value.strip() if isinstance(value, str) else value)
    if len(spelled) > _SHOWN_CHARS:
        spelled = spelled[: _SHOWN_CHARS - 1] + "…"
    return spelled


def type_name(value: object) -> str:
    """The JSON name of a value's type, for messages ("a number", "an object").

    Never raises. Source: docs/harvest.md §4 (``not-an-object``, ``wrong-type``).
    """
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return "null" if value is None else f"a {type(value).__name__}"
