"""A streamed ``git diff``, cut to the files the roster keeps and counted against the
diff cap while it is read, so a huge change is refused before it is held whole.

Runtime layer (pure bytes, fed from git's pipe). Source: docs/architecture.md "The
shape"; issue "The change under review is untrusted" (every size read has a cap).
"""

from __future__ import annotations

from collections.abc import Callable

from council.change.diff import parse_diff
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
    With ``measure`` nothing is held: each kept file's bytes are counted in :attr:`sizes`
    (new-side path → bytes, diff order) and no cap applies, so a change over its cap can
    be weighed file by file in bounded memory.
    """

    _MARK = b"\ndiff --git "
    _BODY = (b"\n@@", b"\nBinary files ", b"\nGIT binary patch")

    def __init__(
        self,
        keeps: Callable[[bytes], bool] | None,
        cap_bytes: int | None,
        knob: str,
        *,
        measure: bool = False,
    ):
        self.keeps, self.cap, self.knob, self.measure = keeps, cap_bytes, knob, measure
        self.sizes: dict[str, int] = {}
        """With ``measure``: each kept file's bytes (new-side path → bytes)."""
        self.counting: str | None = None
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
        if self.state == "count":
            self._count(piece)
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
            self._begin(head)
            self._keep(head + body)
        else:
            self.state = "drop"
            self._hold_header(head)

    def _close(self) -> None:
        """The file being read ended (the next one starts, or the stream ended)."""
        if self.state == "header" and self.header:
            head = bytes(self.header)
            if self.keeps is None or self.keeps(head):
                self._begin(head)
                self._keep(head)
            else:
                self._hold_header(head)
        self.header = bytearray()
        self.state = "header"
        self.counting = None

    def _begin(self, head: bytes) -> None:
        """A kept file starts: in ``measure`` mode, count it instead of keeping it."""
        if not self.measure:
            return
        files = parse_diff(head.decode("utf-8", "replace")).files
        self.counting = files[0].path if files else ""
        self.sizes.setdefault(self.counting, 0)
        self.state = "count"

    def _count(self, data: bytes) -> None:
        if self.counting is not None:
            self.sizes[self.counting] += len(data)

    def _keep(self, data: bytes) -> None:
        if self.state == "count":
            self._count(data)
            return
        self.out += data
        self.kept += len(data)
        if self.cap is not None and self.kept > self.cap:
            raise ChangeTooLarge("diff", self.kept, self.cap, self.knob, at_least=True)

    def _hold_header(self, head: bytes) -> None:
        if self.measure:
            return
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
