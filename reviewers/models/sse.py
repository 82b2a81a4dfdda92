"""Server-sent events read off a streamed HTTP body: a small, linear reader.

Why our own: the official SDKs build a pydantic model for every streamed chunk, and with
hundreds of reviews streaming on one worker that was most of its CPU
(``bench/concurrency.py``). The SDKs still send the request (auth, headers, status
errors); this reader turns the body's bytes into events, whose data the backends
``json.loads`` into plain dicts. Format: WHATWG HTML, "Interpreting an event stream". An
event the body ends before its blank line is dropped (the stream was cut: the backends see
no final event); ``id`` and ``retry`` are ignored (nothing reconnects, a retry restarts the
turn). Linear: every byte is split into its line once, and every line joined and decoded
once, however many chunks it spans.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

_BOM = "\ufeff"


class ServerEvent(NamedTuple):
    """One dispatched event: its ``event:`` name (``""`` when it had none) and its data."""

    event: str
    data: str


class EventReader:
    """Events out of a body fed in chunks (split anywhere): :meth:`feed` returns those
    each chunk completed, in order.

    UTF-8, with undecodable bytes replaced (as the standard says); a leading byte order
    mark is skipped. Lines split on bytes are safe to decode one by one: CR and LF never
    occur inside a multi-byte UTF-8 sequence. An event still open when the body ends is
    never returned (the stream was cut).
    """

    def __init__(self) -> None:
        self._pending: list[bytes] = []  # pieces of a line whose end has not arrived yet
        self._after_cr = False  # the last chunk ended in CR: a leading LF pairs with it
        self._first_line = True
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[ServerEvent]:
        """The events that ``chunk`` completed (often none, sometimes several)."""
        if self._after_cr and chunk:
            self._after_cr = False
            if chunk[0] == 0x0A:
                chunk = chunk[1:]
        if not chunk:
            return []
        if b"\n" not in chunk and b"\r" not in chunk:
            self._pending.append(chunk)
            return []
        if self._pending:
            self._pending.append(chunk)
            chunk = b"".join(self._pending)
            self._pending = []
        lines = chunk.splitlines(keepends=True)
        last = lines[-1][-1]
        if last == 0x0D:
            self._after_cr = True
        elif last != 0x0A:
            self._pending.append(lines.pop())
        out: list[ServerEvent] = []
        for raw in lines:
            line = raw.rstrip(b"\r\n").decode("utf-8", "replace")
            if self._first_line:
                self._first_line = False
                line = line.removeprefix(_BOM)
            if not line:
                if self._data:
                    out.append(ServerEvent(self._event, "\n".join(self._data)))
                    self._data = []
                self._event = ""
                continue
            name, colon, value = line.partition(":")
            if colon and value[:1] == " ":
                value = value[1:]
            if name == "data":
                self._data.append(value)
            elif name == "event":
                self._event = value
            # "" (a comment), "id", "retry" and unknown fields are ignored
        return out


def iter_events(chunks: Iterable[bytes]) -> Iterator[ServerEvent]:
    """The events of a body arriving in ``chunks`` (split anywhere), in order
    (:class:`EventReader` over an iterable)."""
    reader = EventReader()
    for chunk in chunks:
        yield from reader.feed(chunk)
