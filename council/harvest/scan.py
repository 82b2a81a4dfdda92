"""One linear pass over an answer: its complete JSON objects and its findings arrays.

A decoder started at every ``{`` would be quadratic on brace-heavy prose, so the text is
read ONCE with a stack of open ``{``/``[`` frames (:mod:`council.harvest.machine`, tokens in
:mod:`council.harvest.tokens`). Outside every brace it is prose, where quotes open nothing;
inside, strings are tracked and each frame checks the grammar. A frame that is not JSON is
dead, yet a complete object inside it (a fenced answer after an unclosed ``{`` in prose) is
still found. Lenient only where models slip: raw LF, CR and tab in strings; a repeated key
keeps its last value. A ``"findings": [`` array is walked for salvage even in a dead
object. The same machine is the lenient :func:`decode` (an answer, a fence, a journal
entry). Source: docs/harvest.md §3 (finding the JSON, linear reading), §5, §6.
"""

from __future__ import annotations

from dataclasses import dataclass

from council.harvest.machine import Candidate, FindingsArray, Machine, NotJson, held
from council.harvest.tokens import CONTROL, JSON_SPACE, LITERALS, NUMBER, STRING_REST, STRINGS

__all__ = ["NOT_JSON", "Candidate", "FindingsArray", "Scan", "decode", "held", "scan"]


@dataclass(frozen=True)
class Scan:
    """What one pass over an answer found.

    * ``candidates``: outermost complete objects holding a findings list, in text order
      (each with its first ``cap`` entries and the count of all of them).
    * ``arrays``: every findings array (inside candidates too), in order of their ``[``.
    * ``findings_not_a_list``: some complete object holds a ``findings`` key whose value
      is not a list (``{"findings": null}``).

    Source: docs/harvest.md §3.1, §3.2, §3.4.
    """

    candidates: tuple[Candidate, ...]
    arrays: tuple[FindingsArray, ...]
    findings_not_a_list: bool


def scan(text: str, cap: int | None = None) -> Scan:
    """Read ``text`` once and report its candidates and findings arrays (docs/harvest.md §3).

    Linear in ``len(text)``: no decoder is started per ``{``; each value is built once,
    as its tokens arrive. ``cap`` (None: no cap): entries past the first ``cap`` of a
    findings array are counted, not built (docs/harvest.md §6); what is found and counted is
    the same whatever the cap. Never raises.
    """
    machine = Machine(text, strict=False, cap=cap)
    machine.run(0)
    machine.finish()
    arrays = sorted(machine.arrays, key=lambda array: array.at)
    return Scan(tuple(machine.candidates), tuple(arrays), machine.not_a_list)


NOT_JSON = object()
"""What :func:`decode` returns for text that is not one JSON value."""


def decode(text: str, cap: int | None = None) -> object:
    """Decode ``text`` as exactly one JSON value, leniently; :data:`NOT_JSON` otherwise.

    Surrounding JSON whitespace is allowed. The leniency is the harvest's, no more: raw
    LF, CR and tab inside strings, duplicated keys keep their last value. ``NaN``,
    comments, trailing commas and single quotes are not JSON. ``cap``: a root ARRAY
    keeps its first ``cap`` items and counts the rest (:func:`held` says how many it
    held), for the bare array of docs/harvest.md §3.4 under the cap of §6. Linear, never
    raises.

    Source: docs/harvest.md §3 ("JSON is read leniently"), §5 (journal-unreadable), §6.
    """
    body = text.strip(JSON_SPACE)
    if not body:
        return NOT_JSON
    if body[0] in "{[":
        machine = Machine(body, strict=True, cap=cap)
        machine.open_root(body[0])
        try:
            end = machine.run(1)
        except NotJson:
            return NOT_JSON
        return machine.root if not machine.live and end == len(body) else NOT_JSON
    if body[0] == '"':
        rest = STRING_REST.match(body, 1)
        if rest is None or rest.end() != len(body) or CONTROL.search(body) is not None:
            return NOT_JSON
        try:
            return STRINGS.decode(body)
        except ValueError:
            return NOT_JSON
    if body in LITERALS:
        return LITERALS[body]
    if NUMBER.fullmatch(body):
        try:
            return float(body) if body.strip("-0123456789") else int(body)
        except ValueError:
            return NOT_JSON
    return NOT_JSON
