"""Server-sent events read off a streamed HTTP body: a small, linear reader.

Why our own reader: the official SDKs build a pydantic model for every streamed chunk
(``ChatCompletionChunk``, the Messages stream events), and with hundreds of reviews
streaming on one worker that per-chunk work was most of the worker's CPU
(``bench/concurrency.py``). The SDKs still send the request (auth, base URL, headers,
status errors); this module only turns the body's bytes into events, and the backends
``json.loads`` each event's data into plain dicts.

The format (WHATWG HTML, "Server-sent events", "Interpreting an event stream"): lines
end in CRLF, LF or CR; a line starting with ``:`` is a comment; ``field: value`` (one
space after the colon dropped; a line without a colon is a field with an empty value);
``data`` lines accumulate, joined by ``\\n``; ``event`` names the event; a blank line
dispatches it (nothing when no ``data`` line came). An event not closed by a blank line
when the body ends is dropped: the stream was cut, and the backends see no final event.
``id`` and ``retry`` are ignored: nothing reconnects here (a retry restarts the turn).

Linear: every byte is split into its line once; a line spread over many chunks is
joined once, when its end arrives; every line is decoded once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

_BOM = "\ufeff"


class ServerEvent(NamedTuple):
    """One dispatched event: its ``event:`` name (``""`` when it had none) and its data."""

    event: str
    data: str


def iter_events(chunks: Iterable[bytes]) -> Iterator[ServerEvent]:
    """The events of a body arriving in ``chunks`` (split anywhere), in order.

    UTF-8, with undecodable bytes replaced (as the standard says); a leading byte order
    mark is skipped. Lines split on bytes are safe to decode one by one: CR and LF never
    occur inside a multi-byte UTF-8 sequence.
    """
    pending: list[bytes] = []  # the pieces of a line whose end has not arrived yet
    after_cr = False  # the last chunk ended in CR: an LF opening the next one pairs with it
    first_line = True
    event = ""
    data: list[str] = []
    for chunk in chunks:
        if after_cr and chunk:
            after_cr = False
            if chunk[0] == 0x0A:
                chunk = chunk[1:]
        if not chunk:
            continue
        if b"\n" not in chunk and b"\r" not in chunk:
            pending.append(chunk)
            continue
        if pending:
            pending.append(chunk)
            chunk = b"".join(pending)
            pending = []
        lines = chunk.splitlines(keepends=True)
        last = lines[-1][-1]
        if last == 0x0D:
            after_cr = True
        elif last != 0x0A:
            pending.append(lines.pop())
        for raw in lines:
            line = raw.rstrip(b"\r\n").decode("utf-8", "replace")
            if first_line:
                first_line = False
                line = line.removeprefix(_BOM)
            if not line:
                if data:
                    yield ServerEvent(event, "\n".join(data))
                    data = []
                event = ""
                continue
            name, colon, value = line.partition(":")
            if colon and value[:1] == " ":
                value = value[1:]
            if name == "data":
                data.append(value)
            elif name == "event":
                event = value
            # "" (a comment), "id", "retry" and unknown fields are ignored
