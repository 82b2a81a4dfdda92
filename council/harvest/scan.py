"""One linear pass over an answer: its complete JSON objects and its findings arrays.

Models answer in prose with JSON somewhere inside: fenced or bare, nested in a wrapper,
next to code braces (``if (x) { y }``), cut off mid-entry. Starting a JSON decoder at
every ``{`` would be quadratic on brace-heavy prose, so this module reads the text ONCE,
left to right, with a stack of open ``{``/``[`` frames:

* Outside every brace the text is prose: only ``{`` matters (quotes there never open a
  string, so a quoted ``"findings": [...]`` in a sentence is not a key).
* Inside a brace, strings are tracked (a brace inside a string never counts) and each
  frame checks the JSON grammar as its tokens arrive, building its value as it goes. A
  frame whose text is not JSON (``{ strict: true }``, a trailing comma, a comment) is
  *dead*: it, and every frame around it, can never be a complete JSON value; its nesting
  is still tracked, so a complete object inside it (the fenced answer after an unclosed
  ``{`` in prose) is still found.
* JSON is read leniently only where models are known to slip: raw LF, CR and tab inside
  strings are accepted (other raw control characters are not) and a duplicated key keeps
  its last value. Nothing else is guessed.
* A ``"findings"`` key followed by ``:`` and ``[`` opens a *findings array*, walked entry
  by entry for salvage even when the object around it is dead or never closes: an entry
  counts once its last character arrived; the walk stops at the first entry that is not
  JSON although its text went on.

The same machine, with no prose around it, is the lenient decoder :func:`decode` (the
whole answer, a fence's content, a stored journal entry).

Source: harvest.md §3 (finding the JSON, linear reading), §5 (journal entries).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from json import JSONDecoder
from typing import Any, Literal

_OBJECT, _ARRAY = 0, 1
"""Frame kinds."""

_KEY_OR_CLOSE, _KEY, _COLON, _VALUE, _NEXT, _ITEM_OR_CLOSE, _ITEM = range(7)
"""Grammar states: what a live frame accepts next (``_NEXT``: a comma or its closer)."""

_TOKEN = re.compile(
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

_STRUCTURE = re.compile(r'[{}\[\]"]')
"""What still matters inside a dead frame: nesting, and strings (which hide braces)."""

_STRING_REST = re.compile(r'[^"\\]*+(?:\\[\s\S][^"\\]*+)*+"')
"""The rest of a string after its opening quote, through its closing quote."""

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
"""Raw control characters a string may not hold (LF, CR and tab are accepted)."""

_FOLLOWS_ARRAY = re.compile(r"[ \t\n\r]*+:[ \t\n\r]*+\[")
"""What must follow a ``"findings"`` string for it to open a findings array."""

_NUMBER_PREFIX = re.compile(
    r"-|-?(?:0|[1-9][0-9]*)(?:\.|\.[0-9]+(?:[eE][+-]?[0-9]*)?|[eE][+-]?[0-9]*)?"
)
"""A number the end of the text may have cut (``0.``, ``12``, ``1e-``)."""

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_STRINGS = JSONDecoder(strict=False)
"""Decodes the escapes of one string token already checked by the patterns above."""

_LITERALS: dict[str, object] = {"true": True, "false": False, "null": None}
_JSON_SPACE = " \t\n\r"


@dataclass(frozen=True)
class Candidate:
    """A complete JSON object whose ``findings`` value is a list (outermost only).

    ``start``/``end`` are character offsets into the answer (``end`` exclusive);
    ``entries`` is the decoded findings list.
    """

    start: int
    end: int
    entries: list[object]


@dataclass
class FindingsArray:
    """The ``[`` after a ``"findings":`` key, walked for salvage (harvest.md §3.2).

    ``at`` is the offset of the ``[``. ``entries`` are the whole entries read before the
    walk ended. ``ending``: ``closed`` (its ``]`` arrived and every entry was JSON),
    ``stopped`` (an entry, or what followed one, was not JSON although the text went
    on), ``open`` (the text ended first: the list was cut off).
    """

    at: int
    entries: list[object] = field(default_factory=list)
    ending: Literal["closed", "stopped", "open"] = "open"


@dataclass(frozen=True)
class Scan:
    """What one pass over an answer found.

    * ``candidates``: outermost complete objects holding a findings list, in text order.
    * ``arrays``: every findings array (inside candidates too), in order of their ``[``.
    * ``findings_not_a_list``: some complete object holds a ``findings`` key whose value
      is not a list (``{"findings": null}``).
    """

    candidates: tuple[Candidate, ...]
    arrays: tuple[FindingsArray, ...]
    findings_not_a_list: bool


class _NotJson(Exception):
    """Raised inside :func:`decode` at the first token that is not JSON."""


class _Frame:
    """One open ``{`` or ``[``: its grammar state and the value built so far."""

    __slots__ = ("array", "dead", "key", "kind", "start", "state", "value")

    def __init__(self, kind: int, start: int, array: FindingsArray | None) -> None:
        self.kind = kind
        self.start = start
        self.dead = False
        self.key = ""
        self.state = _KEY_OR_CLOSE if kind == _OBJECT else _ITEM_OR_CLOSE
        self.array = array
        self.value: Any = {}
        if kind == _ARRAY:
            items: list[object] = []
            self.value = items
            if array is not None:
                array.entries = items  # the walk's whole entries are this list, as built


class _Pass:
    """The stack machine shared by :func:`scan` (prose around) and :func:`decode` (none)."""

    def __init__(self, text: str, strict: bool) -> None:
        self.text = text
        self.strict = strict
        self.stack: list[_Frame] = []
        self.candidates: list[Candidate] = []
        self.arrays: list[FindingsArray] = []
        self.not_a_list = False
        self.array_at = -1
        self.root: object = None

    def run(self, pos: int) -> int:
        """Read from ``pos``; return where reading stopped (the root closed, or the end).

        In prose mode an empty stack means prose, so the next ``{`` is searched; in
        strict mode an empty stack means the root value closed. Linear: every step
        consumes at least one character, and each frame is pushed and popped once.
        """
        text, stack, n = self.text, self.stack, len(self.text)
        token, structure = _TOKEN.match, _STRUCTURE.search
        while True:
            if not stack:
                if self.strict:
                    return pos
                pos = text.find("{", pos)
                if pos < 0:
                    return n
                self._open(_OBJECT, pos)
                pos += 1
                continue
            top = stack[-1]
            if top.dead:
                found = structure(text, pos)
                if found is None:
                    return n
                p = found.start()
                char = text[p]
                if char == '"':
                    pos = self._string_end(p)
                    if pos < 0:
                        return n
                    self._note_findings_key(p, pos)
                    continue
                pos = p + 1
                self._structure(char, p)
                continue
            match = token(text, pos)
            if match is None:
                return n
            kind = match.lastindex
            if kind == 1:
                p = match.start(1)
                pos = self._string_end(p)
                if pos < 0:
                    return n
                self._string(top, p, pos)
                continue
            pos = match.end()
            if kind == 2:
                self._structure(match.group(2), match.start(2))
            elif kind == 3:
                self._number(top, match.group(3))
            elif kind == 4:
                self._scalar(top, _LITERALS[match.group(4)], None)
            elif pos == n and _cut_token(match.group(5)):
                return n
            else:
                self._poison()

    def finish(self) -> None:
        """Record the findings arrays the end of the text left open (or stopped)."""
        for frame in self.stack:
            if frame.array is not None:
                frame.array.ending = "stopped" if frame.dead else "open"
                self.arrays.append(frame.array)

    def _string_end(self, p: int) -> int:
        """Offset just past the string opening at ``p``, or -1 if the text ends first."""
        rest = _STRING_REST.match(self.text, p + 1)
        return -1 if rest is None else rest.end()

    def _note_findings_key(self, p: int, end: int) -> None:
        """Remember the ``[`` when the string at ``p`` is ``"findings"`` followed by ``: [``."""
        if end - p == 10 and self.text.startswith('"findings"', p):
            follows = _FOLLOWS_ARRAY.match(self.text, end)
            if follows is not None:
                self.array_at = follows.end() - 1

    def _string(self, top: _Frame, p: int, end: int) -> None:
        """A complete string token in a live frame: decode it and feed it to the grammar."""
        text = self.text
        if _CONTROL.search(text, p + 1, end - 1) is not None:
            self._poison()
        elif text.find("\\", p + 1, end - 1) < 0:
            chars = text[p + 1 : end - 1]
            self._scalar(top, chars, chars)
        else:
            try:
                value = _STRINGS.decode(text[p:end])
            except ValueError:
                self._poison()
            else:
                self._scalar(top, value, value)
        if not self.strict:
            self._note_findings_key(p, end)

    def _number(self, top: _Frame, spelled: str) -> None:
        """A delimited number token: an int, or a float when it has a fraction or exponent."""
        try:
            value: object = float(spelled) if spelled.strip("-0123456789") else int(spelled)
        except ValueError:  # more digits than Python converts: not readable as a number
            self._poison()
            return
        self._scalar(top, value, None)

    def _scalar(self, top: _Frame, value: object, key: str | None) -> None:
        """Feed a complete scalar to the live top frame's grammar (``key``: it is a string)."""
        state = top.state
        if top.kind == _OBJECT:
            if state == _VALUE:
                top.value[top.key] = value
                top.state = _NEXT
            elif key is not None and state in (_KEY_OR_CLOSE, _KEY):
                top.key = key
                top.state = _COLON
            else:
                self._poison()
        elif state in (_ITEM_OR_CLOSE, _ITEM):
            top.value.append(value)
            top.state = _NEXT
        else:
            self._poison()

    def _structure(self, char: str, p: int) -> None:
        """One of ``{ } [ ] : ,`` at offset ``p``."""
        if char == "{":
            self._open(_OBJECT, p)
        elif char == "[":
            self._open(_ARRAY, p)
        elif char == "}":
            self._close_object(p)
        elif char == "]":
            self._close_array()
        else:
            top = self.stack[-1]
            if top.dead:
                return
            if char == ":" and top.kind == _OBJECT and top.state == _COLON:
                top.state = _VALUE
            elif char == "," and top.state == _NEXT:
                top.state = _KEY if top.kind == _OBJECT else _ITEM
            else:
                self._poison()

    def _open(self, kind: int, p: int) -> None:
        """Push a frame; it starts live whatever its parent is (an answer may sit in prose)."""
        stack = self.stack
        if stack and not stack[-1].dead:
            parent = stack[-1]
            if parent.state in (_VALUE, _ITEM_OR_CLOSE, _ITEM):
                parent.state = _NEXT  # the value arrives when this child closes
            else:
                self._poison()
        array = None
        if kind == _ARRAY and p == self.array_at and not self.strict:
            array = FindingsArray(p)
        stack.append(_Frame(kind, p, array))

    def _close_object(self, p: int) -> None:
        """A ``}``: close the innermost object (arrays left open inside it are not JSON)."""
        stack = self.stack
        while stack[-1].kind == _ARRAY:
            self._poison()
            self._pop_array()
            if not stack:
                return
        top = stack[-1]
        if not top.dead and top.state not in (_KEY_OR_CLOSE, _NEXT):
            self._poison()
        stack.pop()
        if top.dead:
            return
        found = top.value
        if not self.strict and "findings" in found:
            listed = found["findings"]
            if isinstance(listed, list):
                kept = self.candidates
                while kept and kept[-1].start > top.start:
                    kept.pop()  # nested inside this one: part of it, never a candidate
                kept.append(Candidate(top.start, p + 1, listed))
            else:
                self.not_a_list = True
        self._deliver(found)

    def _close_array(self) -> None:
        """A ``]``: close the innermost array; a stray one inside an object is not JSON."""
        top = self.stack[-1]
        if top.kind == _OBJECT:
            self._poison()
            return
        if not top.dead and top.state == _ITEM:
            self._poison()  # a trailing comma
        self._pop_array()
        if not top.dead:
            self._deliver(top.value)

    def _pop_array(self) -> None:
        """Pop the top array frame, recording how its findings walk (if any) ended."""
        top = self.stack.pop()
        if top.array is not None:
            top.array.ending = "stopped" if top.dead else "closed"
            self.arrays.append(top.array)

    def _deliver(self, value: object) -> None:
        """Hand a complete value to the frame it is nested in (or keep it as the root)."""
        if not self.stack:
            self.root = value
            return
        parent = self.stack[-1]
        if parent.dead:
            return
        if parent.kind == _OBJECT:
            parent.value[parent.key] = value
        else:
            parent.value.append(value)

    def _poison(self) -> None:
        """The top frame is not JSON: it and every live frame around it die.

        Stops at the first frame already dead, so each frame dies once (linear). A dead
        frame builds nothing more, which freezes a findings walk at its whole entries.
        """
        if self.strict:
            raise _NotJson
        for frame in reversed(self.stack):
            if frame.dead:
                return
            frame.dead = True


def _cut_token(spelled: str) -> bool:
    """Whether text at the very end could be a number or literal the end cut short."""
    if _NUMBER_PREFIX.fullmatch(spelled):
        return True
    return any(word.startswith(spelled) for word in _LITERALS)


def scan(text: str) -> Scan:
    """Read ``text`` once and report its candidates and findings arrays (harvest.md §3).

    Linear in ``len(text)``: no decoder is started per ``{``; each value is built once,
    as its tokens arrive. Never raises.
    """
    machine = _Pass(text, strict=False)
    machine.run(0)
    machine.finish()
    arrays = sorted(machine.arrays, key=lambda array: array.at)
    return Scan(tuple(machine.candidates), tuple(arrays), machine.not_a_list)


NOT_JSON = object()
"""What :func:`decode` returns for text that is not one JSON value."""


def decode(text: str) -> object:
    """Decode ``text`` as exactly one JSON value, leniently; :data:`NOT_JSON` otherwise.

    Surrounding JSON whitespace is allowed. The leniency is the harvest's, no more: raw
    LF, CR and tab inside strings, duplicated keys keep their last value. ``NaN``,
    comments, trailing commas and single quotes are not JSON. Linear, never raises.

    Source: harvest.md §3 ("JSON is read leniently"), §5 (journal-unreadable).
    """
    body = text.strip(_JSON_SPACE)
    if not body:
        return NOT_JSON
    if body[0] in "{[":
        machine = _Pass(body, strict=True)
        machine._open(_OBJECT if body[0] == "{" else _ARRAY, 0)
        try:
            end = machine.run(1)
        except _NotJson:
            return NOT_JSON
        return machine.root if not machine.stack and end == len(body) else NOT_JSON
    if body[0] == '"':
        rest = _STRING_REST.match(body, 1)
        if rest is None or rest.end() != len(body) or _CONTROL.search(body) is not None:
            return NOT_JSON
        try:
            return _STRINGS.decode(body)
        except ValueError:
            return NOT_JSON
    if body in _LITERALS:
        return _LITERALS[body]
    if _NUMBER.fullmatch(body):
        try:
            return float(body) if body.strip("-0123456789") else int(body)
        except ValueError:
            return NOT_JSON
    return NOT_JSON
