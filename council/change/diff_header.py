"""The header of one file's section of ``git diff``: its paths, status, modes, binary.

Between ``diff --git a/P b/P`` and the first ``@@`` git writes what happened to the file:
``new file mode``, ``deleted file mode``, ``old mode``/``new mode``, ``rename from``/
``rename to`` (``-M``), ``copy from``/``copy to``, ``index``, ``---``/``+++`` and
``Binary files … differ``. :class:`FileHeader` reads those lines one at a time and then
says which paths the file had on each side. Kept apart from :mod:`council.change.diff` because
path reading is where diffs get odd (quoted names, spaces, no ``---`` line at all).
Pure text handling. Source: docs/architecture.md "Layers" (diff model).
"""

from __future__ import annotations

from typing import Literal

from council.change.quoted_paths import header_names, strip_prefix, unquote

Status = Literal["added", "modified", "deleted", "renamed"]
"""What happened to a file. A copy (``-C``) counts as ``added``."""

DEV_NULL = "/dev/null"
"""The name git gives the missing side of an added or deleted file."""


class FileHeader:
    """What the header lines of one file's diff said; filled in by :meth:`read`.

    ``old``/``new`` are paths named by rename/copy or ``---``/``+++`` lines (None when
    no such line named them); ``status`` starts as ``modified``.
    """

    def __init__(self) -> None:
        self.old: str | None = None
        self.new: str | None = None
        self.status: Status = "modified"
        self.binary = False
        self.old_mode: str | None = None
        self.new_mode: str | None = None

    def read(self, line: str) -> None:
        """Take one header line into account (unknown lines are ignored)."""
        body = line.rstrip("\n").rstrip("\r")
        word, _, value = body.partition(" ")
        if body.startswith("old mode "):
            self.old_mode = body[len("old mode ") :]
        elif body.startswith("new mode "):
            self.new_mode = body[len("new mode ") :]
        elif body.startswith("new file mode "):
            self.status, self.new_mode = "added", body[len("new file mode ") :]
        elif body.startswith("deleted file mode "):
            self.status, self.old_mode = "deleted", body[len("deleted file mode ") :]
        elif body.startswith(("rename from ", "copy from ")):
            self.old = unquote(body.split(" ", 2)[2])
            self.status = "renamed" if word == "rename" else "added"
        elif body.startswith(("rename to ", "copy to ")):
            self.new = unquote(body.split(" ", 2)[2])
        elif word == "---":
            self._side("old", value)
        elif word == "+++":
            self._side("new", value)
        elif body.startswith("Binary files ") and body.endswith(" differ"):
            self.binary = True

    def _side(self, side: Literal["old", "new"], value: str) -> None:
        """A ``---`` (old) or ``+++`` (new) line; git may end the name with a tab."""
        name = value.split("\t", 1)[0]
        if name == DEV_NULL:
            self.status = "added" if side == "old" else "deleted"
            return
        path = strip_prefix(unquote(name), "a/" if side == "old" else "b/")
        if side == "old":
            self.old = path
        else:
            self.new = path

    def names(self, rest: str) -> tuple[str, str] | None:
        """(old, new) paths: rename/copy and ``---``/``+++`` lines first, then the header.

        ``rest`` is the ``diff --git`` line after ``diff --git ``. None when no line
        named the file at all (an ambiguous header and no other path line).
        """
        old, new = self.old, self.new
        if old is None or new is None:
            pair = header_names(rest)
            if pair is not None:
                a, b = pair
                if a.startswith("a/") and b.startswith("b/"):
                    a, b = a[2:], b[2:]
                old, new = old if old is not None else a, new if new is not None else b
        if old is None and new is None:
            return None
        return (old if old is not None else new or ""), (new if new is not None else old or "")
