"""Following a JSONL journal file that a reviewer program appends to while it runs.

A ``command`` or ``sarif`` reviewer records findings by appending one JSON object per line
to the file named by ``COUNCIL_JOURNAL``. The file is followed while the program runs, so
every entry reaches the journal sink (Redis, in the runtime) the moment its line is
complete: a worker that dies mid-review keeps what the program wrote down (docs/harvest.md §1,
§5; docs/architecture.md "journal").

Source: docs/harvest.md §1 (recording as it goes), §5 (the journal), §7 (a stopped reviewer
keeps its journal).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from reviewers.base import JournalSink

LINE_CAP_BYTES = 1024 * 1024
"""Longest journal line forwarded, in bytes (the journal store's per-entry cap)."""

READ_CHUNK_BYTES = 64 * 1024
"""How much of the file is read at once, in bytes; bounds memory per poll."""

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""The program owns the file's directory: a link is never followed, a FIFO never waited on."""


class JournalFollower:
    """Forwards each complete new line of a journal file to a :class:`JournalSink`.

    A line is the bytes up to ``\\n`` (a ``\\r`` before it dropped), decoded as UTF-8 with
    replacement and forwarded as given; blank lines are not entries. A line over
    ``line_cap_bytes`` is not forwarded; it is counted in :attr:`notes`, and so are lines the
    sink refused ("Not recorded": the journal store is full, say), since a program reading no
    replies cannot know. A file that shrank (rewritten by the program) is read again from its
    start. Only a regular file is read, never through a link (the program may replace the
    file). Never raises: a file that cannot be read is treated as not (yet) written.
    """

    def __init__(self, path: Path, sink: JournalSink, line_cap_bytes: int = LINE_CAP_BYTES) -> None:
        self._path = path
        self._sink = sink
        self._cap = line_cap_bytes
        self._offset = 0
        self._pending = bytearray()
        self._skipping = False
        self.forwarded = 0
        """How many entries were forwarded to the sink so far."""
        self.refused = 0
        """How many forwarded lines the sink did not record."""
        self.dropped = 0
        """How many lines were not forwarded, over ``line_cap_bytes``."""
        self._refusal = ""
        self._notes: list[str] = []

    @property
    def notes(self) -> list[str]:
        """Sentences about lines that were not forwarded (over the cap) or not recorded."""
        if not self.refused:
            return list(self._notes)
        return [
            *self._notes,
            f"{self.refused} journal line(s) were not recorded; the first reply: {self._refusal}",
        ]

    def poll(self) -> int:
        """Forward the complete lines written since the last call; return how many."""
        before = self.forwarded
        try:
            fd = os.open(self._path, _READ_FLAGS)
        except OSError:
            return 0  # not written yet, or gone (or a link: never followed)
        try:
            with os.fdopen(fd, "rb") as handle:
                if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                    return 0
                handle.seek(0, 2)
                size = handle.tell()
                if size < self._offset:
                    self._offset = 0
                    self._pending.clear()
                    self._skipping = False
                handle.seek(self._offset)
                while chunk := handle.read(READ_CHUNK_BYTES):
                    self._offset += len(chunk)
                    self._take(chunk)
        except OSError:
            pass  # unreadable now: nothing new to forward
        return self.forwarded - before

    def finish(self, cut: bool = False) -> int:
        """Forward what is left, the final unterminated line included unless ``cut`` (the
        program's storage was full: that line is where the cap cut it, noted, not
        forwarded); return how many."""
        before = self.forwarded
        self.poll()
        if self._pending and not self._skipping and cut:
            self._notes.append(
                f"the journal's last line was cut by the storage cap and not forwarded "
                f"(after {self.forwarded} forwarded entries)"
            )
        elif self._pending and not self._skipping:
            self._forward(bytes(self._pending))
        self._pending.clear()
        self._skipping = False
        return self.forwarded - before

    def _take(self, chunk: bytes) -> None:
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if self._skipping:
                self._skipping = False
            else:
                self._pending += chunk[start:end]
                self._forward(bytes(self._pending))
            self._pending.clear()
            start = end + 1
        if self._skipping:
            return
        self._pending += chunk[start:]
        if len(self._pending) > self._cap:
            self._pending.clear()
            self._skipping = True
            self.dropped += 1
            self._notes.append(
                f"a journal line longer than {self._cap} bytes was not forwarded "
                f"(after {self.forwarded} forwarded entries)"
            )

    def _forward(self, line: bytes) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            return
        if len(line) > self._cap:
            self.dropped += 1
            self._notes.append(
                f"a journal line longer than {self._cap} bytes was not forwarded "
                f"(after {self.forwarded} forwarded entries)"
            )
            return
        reply = self._sink.append(line.decode("utf-8", errors="replace"))
        self.forwarded += 1
        if reply.startswith("Not recorded"):
            self.refused += 1
            self._refusal = self._refusal or reply
