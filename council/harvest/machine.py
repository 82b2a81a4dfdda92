"""The stack machine that reads an answer's JSON in one pass (see :mod:`.scan`).

Open ``{``/``[`` frames in a dead prefix and a live suffix: a live frame checks the grammar
as tokens arrive and builds its value; a frame whose text is not JSON dies with every frame
around it, keeping only its kind (to match closers). A complete live object with a
``findings`` list is a candidate; the ``[`` after ``"findings":`` opens an array walked for
salvage, live or not. Under a reading cap, entries past it are counted, not built, and the
grammar is still checked, so candidates and counts never depend on the cap: by Python's C
decoder in one call where it can vouch for the entry, else token by token.
Source: docs/harvest.md §3 (finding the JSON; linear reading), §6 (``over-cap``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from json import JSONDecodeError, JSONDecoder
from typing import Any, Literal

from council.harvest.tokens import (
    CONTROL,
    FOLLOWS_ARRAY,
    LITERALS,
    STRING_REST,
    STRINGS,
    STRUCTURE,
    TOKEN,
    cut_token,
    run_end,
)

OBJECT, ARRAY = 0, 1
"""Frame kinds (``OBJECT`` is 0, so a run of dead objects is a run of zero bytes)."""

_KEY_OR_CLOSE, _KEY, _COLON, _VALUE, _NEXT, _ITEM_OR_CLOSE, _ITEM = range(7)
"""Grammar states: what a live frame accepts next (``_NEXT``: a comma or its closer)."""

MAX_NESTING = 2048
"""Live frames at most: a value nested deeper is not read (it is treated as not JSON).

No reviewer writes JSON that deep; the cap bounds the memory a hostile answer such as
ten million ``[`` can take (dead frames cost one byte each, so braces in prose are not
capped).
"""


class Entries(list[object]):
    """The items of a capped array as built, and how many whole items after them were
    only counted (``skipped``): the reading cap of docs/harvest.md §6."""

    __slots__ = ("skipped",)

    def __init__(self) -> None:
        super().__init__()
        self.skipped = 0


def held(items: list[object]) -> int:
    """How many whole items an array held: those built, plus those past the cap."""
    return len(items) + (items.skipped if isinstance(items, Entries) else 0)


def _no_constant(name: str) -> object:
    """``NaN`` and ``Infinity`` are not JSON (Python's decoder would accept them)."""
    raise ValueError(name)


_SKIM = JSONDecoder(strict=False, parse_constant=_no_constant)
"""Checks an entry past the cap in one C call; raw control characters are checked apart."""

_ESCAPED_LETTER = re.compile(r"\\u00[67]")
"""A ``\\u`` escape of a lowercase letter: a key spelled so may decode to ``findings``."""


@dataclass(frozen=True)
class Candidate:
    """A complete JSON object whose ``findings`` value is a list (outermost only).

    ``start``/``end`` are character offsets into the answer (``end`` exclusive);
    ``entries`` is the decoded findings list (under a reading cap, at least its first
    ``cap`` entries). Source: docs/harvest.md §3.1, §6.
    """

    start: int
    end: int
    entries: list[object]
    count: int
    """How many entries the list held, past the reading cap too (docs/harvest.md §6)."""


@dataclass
class FindingsArray:
    """The ``[`` after a ``"findings":`` key, walked for salvage (docs/harvest.md §3.2).

    ``at`` is the offset of the ``[``. ``entries`` are the whole entries read before the
    walk ended (under a reading cap, at least the first ``cap`` of them: :attr:`count`
    says how many there were). ``ending``: ``closed`` (its ``]`` arrived and every entry was
    JSON), ``stopped`` (an entry, or what followed one, was not JSON although the text
    went on), ``open`` (the text ended first: the list was cut off).
    """

    at: int
    entries: list[object] = field(default_factory=list)
    ending: Literal["closed", "stopped", "open"] = "open"

    @property
    def count(self) -> int:
        """How many whole entries the walk found, past the reading cap too (docs/harvest.md §6)."""
        return held(self.entries)


class NotJson(Exception):
    """Raised in strict mode at the first token that is not JSON; caught by ``decode``."""


class _Frame:
    """One open, live ``{`` or ``[``: its grammar state and the value built so far.

    ``limit`` (arrays only): how many items are built; the rest are counted. ``exact``:
    the value must be built whole, because it is (inside) an entry that will be read.
    """

    __slots__ = ("array", "exact", "key", "kind", "limit", "start", "state", "value")

    def __init__(
        self,
        kind: int,
        start: int,
        array: FindingsArray | None,
        exact: bool = False,
        limit: int | None = None,
    ) -> None:
        self.kind = kind
        self.start = start
        self.key = ""
        self.state = _KEY_OR_CLOSE if kind == OBJECT else _ITEM_OR_CLOSE
        self.array = array
        self.exact = exact
        self.limit = limit if kind == ARRAY else None
        self.value: Any = {}
        if kind == ARRAY:
            items: list[object] = Entries() if self.limit is not None else []
            self.value = items
            if array is not None:
                array.entries = items  # the walk's whole entries are this list, as built

    def child_exact(self) -> bool:
        """Whether a value opening inside this frame now must be built whole."""
        return self.exact or (self.limit is not None and len(self.value) < self.limit)


class Machine:
    """The stack machine shared by :func:`scan` (prose around) and :func:`decode` (none).

    The stack is a dead prefix and a live suffix: a frame dies with every frame around
    it, so the dead ones are always at the bottom. Dead frames need only their kind (to
    match closers), one byte each; live frames carry their grammar state and value, at
    most :data:`MAX_NESTING` of them. ``strict`` (the decoder) raises :class:`NotJson`
    at the first token that is not JSON instead of killing frames; prose mode never
    raises. ``cap`` (None: none) is the reading cap: how many entries of each findings
    array (of the root array, for the decoder) are built; the rest are only counted.
    Source: docs/harvest.md §3, §6.
    """

    def __init__(self, text: str, strict: bool, cap: int | None = None) -> None:
        self.text = text
        self.strict = strict
        self.cap = cap
        self.skim_from = 0
        """No skim starts before this offset: the C decoder already read up to it."""
        self.skim_depth = MAX_NESTING
        """No skim starts deeper than this: inside an entry the C decoder gave up on."""
        self.dead = bytearray()
        self.live: list[_Frame] = []
        self.candidates: list[Candidate] = []
        self.arrays: list[FindingsArray] = []
        self.not_a_list = False
        self.array_at = -1
        self.root: object = None

    def run(self, pos: int) -> int:
        """Read from ``pos``; return where reading stopped (the root closed, or the end).

        In prose mode an empty stack means prose, so the next ``{`` is searched; in
        strict mode an empty stack means the root value closed. Linear: every step
        consumes at least one character, and each frame is pushed, killed and popped at
        most once. Raises :class:`NotJson` in strict mode only. Source: docs/harvest.md §3.
        """
        text, live, dead, n = self.text, self.live, self.dead, len(self.text)
        token, structure = TOKEN.match, STRUCTURE.search
        while True:
            if not live:
                if not dead:
                    if self.strict:
                        return pos
                    pos = text.find("{", pos)
                    if pos < 0:
                        return n
                    pos = self._structure("{", pos)
                    continue
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
                pos = self._structure(char, p)
                continue
            top = live[-1]
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
                pos = self._structure(match.group(2), match.start(2))
            elif kind == 3:
                self._number(top, match.group(3))
            elif kind == 4:
                self._scalar(top, LITERALS[match.group(4)], None)
            elif pos == n and cut_token(match.group(5)):
                return n
            else:
                self._poison()

    def open_root(self, char: str) -> None:
        """Start strict reading at offset 0, where the root ``{`` or ``[`` stands.

        Used by ``decode`` (docs/harvest.md §3.4, §5); a root array is capped by ``cap``.
        Never raises.
        """
        self._open(OBJECT if char == "{" else ARRAY, 0, self.cap)

    def finish(self) -> None:
        """Record the findings arrays the end of the text left open (the list was cut).

        Source: docs/harvest.md §3.3 (``cut-off``). Never raises.
        """
        for frame in self.live:
            if frame.array is not None:
                frame.array.ending = "open"
                self.arrays.append(frame.array)

    def _string_end(self, p: int) -> int:
        """Offset just past the string opening at ``p``, or -1 if the text ends first."""
        rest = STRING_REST.match(self.text, p + 1)
        return -1 if rest is None else rest.end()

    def _note_findings_key(self, p: int, end: int) -> None:
        """Remember the ``[`` when the string at ``p`` is ``"findings"`` followed by ``: [``."""
        if end - p == 10 and self.text.startswith('"findings"', p):
            follows = FOLLOWS_ARRAY.match(self.text, end)
            if follows is not None:
                self.array_at = follows.end() - 1

    def _string(self, top: _Frame, p: int, end: int) -> None:
        """A complete string token in a live frame: decode it and feed it to the grammar."""
        text = self.text
        if CONTROL.search(text, p + 1, end - 1) is not None:
            self._poison()
        elif text.find("\\", p + 1, end - 1) < 0:
            chars = text[p + 1 : end - 1]
            self._scalar(top, chars, chars)
        else:
            try:
                value = STRINGS.decode(text[p:end])
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
        if top.kind == OBJECT:
            if state == _VALUE:
                top.value[top.key] = value
                top.state = _NEXT
            elif key is not None and state in (_KEY_OR_CLOSE, _KEY):
                top.key = key
                top.state = _COLON
            else:
                self._poison()
        elif state in (_ITEM_OR_CLOSE, _ITEM):
            _append(top, value)
            top.state = _NEXT
        else:
            self._poison()

    def _structure(self, char: str, p: int) -> int:
        """One of ``{ } [ ] : ,`` at offset ``p``; return the offset to read on from.

        ``:`` and ``,`` only matter in a live frame. Runs of the same bracket are taken
        in one step (a hostile answer of ten million ``{`` must not cost a regex search
        each); the result is exactly that of taking them one by one.
        """
        text = self.text
        after = p + 1
        if char == "{" or char == "[":
            live = self.live
            if live and self._may_skim(live[-1], p):
                end = self._skim(live[-1], p)
                if end > 0:
                    return end
            if text.startswith(char, after):
                after = run_end(text, p)
            if char == "{" and after == p + 1 and text.startswith("}", after) and not self.live:
                return p + 2  # {} where no live frame is open: complete, empty, goes nowhere
            self._open_run(char, p, after)
        elif char == "}":
            if not self.live and text.startswith(char, after):
                after = run_end(text, p)
                self._close_dead_objects(after - p)
            else:
                self._close_object(p)
        elif char == "]":
            self._close_array()
        elif self.live:
            top = self.live[-1]
            if char == ":" and top.kind == OBJECT and top.state == _COLON:
                top.state = _VALUE
            elif char == "," and top.state == _NEXT:
                top.state = _KEY if top.kind == OBJECT else _ITEM
            else:
                self._poison()
        return after

    def _may_skim(self, top: _Frame, p: int) -> bool:
        """Whether the value opening at ``p`` is an item of ``top`` past its cap that the C
        decoder may check (not where an earlier C call already read or gave up)."""
        return (
            top.limit is not None
            and top.state != _NEXT
            and len(top.value) >= top.limit
            and p >= self.skim_from
            and len(self.live) <= self.skim_depth
        )

    def _skim(self, top: _Frame, p: int) -> int:
        """Count the entry opening at ``p`` without building it; where it ends, or -1.

        -1 when the C decoder cannot vouch that the machine would read the entry as one
        whole JSON value with no effect but its count (it is not JSON, is cut, holds a raw
        control character, mentions ``findings`` or a ``\\u00[67]`` escape that might
        spell it, or nests past :data:`MAX_NESTING`): the machine then reads it token by
        token, and no later skim starts inside what the C decoder read (so nothing is
        read twice by it: linear). Source: docs/harvest.md §3 (linear), §6 (the cap).
        """
        text, depth = self.text, len(self.live)
        self.skim_depth = MAX_NESTING  # a skim at this depth: any entry given up on closed
        try:
            end = _SKIM.raw_decode(text, p)[1]
        except JSONDecodeError as error:
            self.skim_from = max(self.skim_from, error.pos)
            return -1
        except (ValueError, RecursionError):  # a constant, a huge number, deep nesting
            self.skim_depth = depth
            return -1
        if (
            text.find("findings", p, end) >= 0
            or _ESCAPED_LETTER.search(text, p, end) is not None
            or CONTROL.search(text, p, end) is not None
            or depth + text.count("{", p, end) + text.count("[", p, end) > MAX_NESTING
        ):
            self.skim_from = end
            return -1
        top.value.skipped += 1
        top.state = _NEXT
        return end

    def _open_run(self, char: str, p: int, end: int) -> None:
        """Open the brackets of ``text[p:end]`` (all ``{`` or all ``[``), as one by one.

        A ``{`` right after a ``{`` stands where a key must be: every live frame dies, and
        so does each following ``{`` but the last. A ``[`` after a ``[`` is a nested
        array (live, up to :data:`MAX_NESTING`).
        """
        kind = OBJECT if char == "{" else ARRAY
        self._open(kind, p)
        if end - p == 1:
            return
        live = self.live
        if kind == OBJECT:
            self._poison()
            self.dead.extend(bytes(end - p - 2))  # OBJECT is 0
            live.append(_Frame(OBJECT, end - 1, None))
            return
        for q in range(p + 1, end):
            exact = False
            if len(live) >= MAX_NESTING:
                self._poison()
            else:
                exact = live[-1].child_exact()
                live[-1].state = _NEXT
            live.append(_Frame(ARRAY, q, None, exact))

    def _close_dead_objects(self, count: int) -> None:
        """``count`` closing braces while no frame is live: pop that many dead objects."""
        dead = self.dead
        for _ in range(count):
            while dead and dead[-1] == ARRAY:
                dead.pop()
            if not dead:
                return  # back in prose: the remaining braces are prose
            dead.pop()

    def _open(self, kind: int, p: int, limit: int | None = None) -> None:
        """Push a live frame, whatever its parent is (an answer may sit inside prose).

        A findings array is capped (``limit``) unless it is inside an entry being built.
        """
        live = self.live
        exact = False
        if live:
            parent = live[-1]
            if len(live) >= MAX_NESTING:
                self._poison()
            elif parent.state in (_VALUE, _ITEM_OR_CLOSE, _ITEM):
                exact = parent.child_exact()
                parent.state = _NEXT  # the value arrives when this child closes
            else:
                self._poison()
        array = None
        if kind == ARRAY and p == self.array_at and not self.strict:
            array = FindingsArray(p)
            limit = None if exact else self.cap
        self.live.append(_Frame(kind, p, array, exact, limit))

    def _close_object(self, p: int) -> None:
        """A ``}``: close the innermost object (arrays left open inside it are not JSON)."""
        live = self.live
        if live:
            top = live[-1]
            if top.kind == OBJECT and top.state in (_KEY_OR_CLOSE, _NEXT):
                live.pop()
                self._object_done(top, p)
                return
            self._poison()
        dead = self.dead
        while dead and dead[-1] == ARRAY:
            dead.pop()
        if dead:
            dead.pop()

    def _object_done(self, top: _Frame, p: int) -> None:
        """A live object closed: note it as a candidate (or a findings non-list), pass it up."""
        found = top.value
        if not self.strict and "findings" in found:
            listed = found["findings"]
            if isinstance(listed, list):
                kept = self.candidates
                while kept and kept[-1].start > top.start:
                    kept.pop()  # nested inside this one: part of it, never a candidate
                kept.append(Candidate(top.start, p + 1, listed, held(listed)))
            else:
                self.not_a_list = True
        self._deliver(found)

    def _close_array(self) -> None:
        """A ``]``: close the innermost array; a stray one inside an object is ignored."""
        live = self.live
        if live:
            top = live[-1]
            if top.kind == ARRAY and top.state != _ITEM:
                live.pop()
                if top.array is not None:
                    top.array.ending = "closed"
                    self.arrays.append(top.array)
                self._deliver(top.value)
                return
            self._poison()  # a trailing comma, or a ] where an object is open
        dead = self.dead
        if dead and dead[-1] == ARRAY:
            dead.pop()

    def _deliver(self, value: object) -> None:
        """Hand a complete value to the live frame it is nested in (or keep it as root)."""
        if self.live:
            parent = self.live[-1]
            if parent.kind == OBJECT:
                parent.value[parent.key] = value
            else:
                _append(parent, value)
        elif not self.dead:
            self.root = value

    def _poison(self) -> None:
        """The top frame is not JSON: it and every live frame around it die.

        Dead frames keep only their kind; a findings walk among them ends ``stopped``
        with the whole entries it had, since a dead frame reads nothing more.
        """
        if self.strict:
            raise NotJson
        for frame in self.live:
            if frame.array is not None:
                frame.array.ending = "stopped"
                self.arrays.append(frame.array)
            self.dead.append(frame.kind)
        self.live.clear()


def _append(frame: _Frame, value: object) -> None:
    """Add an item to an array frame: built while under its limit, else only counted."""
    items = frame.value
    if frame.limit is not None and len(items) >= frame.limit:
        items.skipped += 1
    else:
        items.append(value)
