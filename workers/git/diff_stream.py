"""A streamed ``git diff``, cut to the files the roster keeps and counted against the
diff cap while it is read, so a huge change is refused before it is held whole.

Runtime layer (pure bytes, fed from git's pipe). Source: docs/architecture.md "The
shape"; issue "The change under review is untrusted" (every size read has a cap).
"""

from __future__ import annotations

from collections.abc import Callable

from council.errors import ChangeTooLarge

DIFF_HEADER_MAX_BYTES = 64 * 1024
"""Bytes of one file's ``diff --git`` header read before it is judged kept or excluded
(a header is a few lines; one this long is judged on what was read)."""


class DiffCut:
    """Streamed ``git diff`` bytes, cut to what the caller keeps, counted against a cap.

    The stream is cut before every ``diff --git`` line (a hunk line never starts with
    one). While a file's header is read (up to its first ``@@``, ``Binary files`` or
    ``GIT binary patch`` line, at most :data:`DIFF_HEADER_MAX_BYTES`) nothing is decided;
    then ``keeps(header)`` says whether the file is kept (None: every file is). A kept
    file goes on whole and its bytes count; an excluded one keeps its header only. Past
    ``cap_bytes`` counted, :class:`ChangeTooLarge` is raised at once (at least the count).
    The excluded files' headers are counted apart, against the same cap (a change of a
    million excluded files would otherwise grow what is held without a bound): past it,
    :class:`ChangeTooLarge` names them (``part of the diff naming excluded files``).
    """

    _MARK = b"\ndiff --git "
    _BODY = (b"\n@@", b"\nBinary files ", b"\nGIT binary patch")

    def __init__(self, keeps: Callable[[bytes], bool] | None, cap_bytes: int | None, knob: str):
        self.keeps, self.cap, self.knob = keeps, cap_bytes, knob
        self.out = bytearray()
        self.buf = bytearray()
        self.header = bytearray()
        self.state = "header"
        self.kept = 0
        """Bytes of kept files so far (what the cap counts)."""
        self.headers = 0
        """Bytes of excluded files' headers so far (counted apart, against the same cap)."""

    def feed(self, chunk: bytes) -> None:
        """Take the next bytes git wrote."""
        self.buf += chunk
        while True:
            cut = self.buf.find(self._MARK)
            if cut < 0:
                self._take(len(self.buf) - (len(self._MARK) - 1))
                return
            self._take(cut + 1)
            self._close()

    def finish(self) -> bytes:
        """The kept bytes, once git is done."""
        self._take(len(self.buf))
        self._close()
        return bytes(self.out)

    def _take(self, count: int) -> None:
        if count <= 0:
            return
        piece = bytes(self.buf[:count])
        del self.buf[:count]
        if self.state == "keep":
            self._keep(piece)
            return
        if self.state == "drop":
            return
        self.header += piece
        starts = [i for i in (self.header.find(m) for m in self._BODY) if i >= 0]
        if not starts and len(self.header) <= DIFF_HEADER_MAX_BYTES:
            return
        at = min(starts) + 1 if starts else len(self.header)
        head, body = bytes(self.header[:at]), bytes(self.header[at:])
        self.header = bytearray()
        if self.keeps is None or self.keeps(head):
            self.state = "keep"
            self._keep(head + body)
        else:
            self.state = "drop"
            self._hold_header(head)

    def _close(self) -> None:
        """The file being read ended (the next one starts, or the stream ended)."""
        if self.state == "header" and self.header:
            head = bytes(self.header)
            if self.keeps is None or self.keeps(head):
                self._keep(head)
            else:
                self._hold_header(head)
        self.header = bytearray()
        self.state = "header"

    def _keep(self, data: bytes) -> None:
        self.out += data
        self.kept += len(data)
        if self.cap is not None and self.kept > self.cap:
            raise ChangeTooLarge("diff", self.kept, self.cap, self.knob, at_least=True)

    def _hold_header(self, head: bytes) -> None:
        self.out += head
        self.headers += len(head)
        if self.cap is not None and self.headers > self.cap:
            raise ChangeTooLarge(
                "part of the diff naming excluded files",
                self.headers,
                self.cap,
                self.knob,
                at_least=True,
            )
