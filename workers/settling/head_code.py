"""Reading the head tree's code at settling, for the occurrences findings are filed with.

A finding's fingerprint names the code it is about (:mod:`council.model.occurrence`), and
the domain never reads files: settling runs on a worker, which unpacks the run's pinned
head tree (once per run, :class:`~workers.execution.unpacked_trees.TreeCache`; a worker
that reviewed the run has it already) and hands the domain a reader of its lines. The
change's likely secrets are masked in what is read, as they are in everything else that
leaves the tree (:mod:`council.change.secret_masks`): a code hash of a line holding a
short key could be guessed back. Source: docs/identity-and-clocks.md "Occurrences".
"""

from __future__ import annotations

import tarfile
from collections.abc import Sequence
from pathlib import Path

import structlog

from council.change.secret_masks import Masker, SecretSpan, masked_file
from council.errors import CouncilError
from council.model.occurrence import file_lines
from workers.app.services import Runtime
from workers.execution.backend_request import tree_lines, tree_values
from workers.stores.run_record import RunRecord

log = structlog.get_logger("council.settle")

UNREAD_NOTE = (
    "the head tree could not be read when the round was filed, so its findings name no "
    "code: a dismissal or baseline entry covers them only at the same place, and never "
    "one at or above the gate's fail_on in a file the change edits; one recorded for "
    "their code does not cover them"
)
"""The report's note when settling could not read the run's head tree."""

CODE_MAX_BYTES = 4 * 1024 * 1024
"""The largest file whose code settling reads for occurrences (4 MiB): the change is
untrusted, and a 200 MB minified file must not be read whole to hash one line. A finding
on a larger file names its place instead, and the report says so (:func:`over_cap_note`)."""


def over_cap_note(paths: Sequence[str]) -> str:
    """The report's note naming the files too large to read for their findings' code."""
    shown = ", ".join(sorted(paths)[:10]) + (" …" if len(paths) > 10 else "")
    return (
        f"{len(paths)} file(s) over {CODE_MAX_BYTES // (1024 * 1024)} MiB were not read for "
        f"their findings' code ({shown}): a dismissal or baseline entry covers those findings "
        "only at the same place, and never one at or above the gate's fail_on while the "
        "change edits the file"
    )


class HeadCode:
    """A :data:`~council.model.occurrence.CodeReader` over one run's head tree: the tree
    is unpacked on the first read, each file read once, secrets masked. ``unread`` is
    True once the tree could not be had (no archive, an archive that does not unpack):
    every read then answers None, and the caller notes it (:data:`UNREAD_NOTE`)."""

    def __init__(
        self, rt: Runtime, record: RunRecord, spans: Sequence[SecretSpan] | None = None
    ) -> None:
        """``spans``: the places of the change's secrets when the caller read them
        already (None: read on the first read of the tree)."""
        self._rt, self._record = rt, record
        self._given = spans
        self._tree: Path | None = None
        self._opened = False
        self._masker = Masker()
        self._spans: Sequence[SecretSpan] = ()
        self.unread = False
        self.over_cap: set[str] = set()
        """Paths too large to read (:data:`CODE_MAX_BYTES`), for the report's note."""

    def _open(self) -> Path | None:
        if self._opened:
            return self._tree
        self._opened = True
        rt, run_id = self._rt, self._record.run_id
        try:
            if self._record.witness is not None:
                self._tree = rt.trees.tree(run_id, lambda: rt.runs.tree(run_id))
            given = self._given
            self._spans = tuple(given if given is not None else rt.runs.secrets(run_id))
        except (OSError, CouncilError, ValueError, EOFError, tarfile.TarError) as exc:
            log.warning("head_tree_unread", run_id=run_id, error=str(exc))
            self._tree = None
        if self._tree is None:
            self.unread = True
            return None
        tree = self._tree
        if self._spans:
            self._masker = Masker(tree_values(tree, self._spans))
        return tree

    def __call__(self, path: str) -> list[str] | None:
        """The lines of ``path`` in the head tree, secrets masked (None: no such file)."""
        tree = self._open()
        if tree is not None and _size(tree, path) > CODE_MAX_BYTES:
            self.over_cap.add(path)
            return None
        raw = tree_lines(tree, path)
        if raw is None:
            return None
        text = "\n".join(raw)
        spans = [s for s in self._spans if s.path == path and s.place == "line"]
        if spans:
            text = masked_file(text, spans)
        return file_lines(self._masker.text(text))


def _size(tree: Path, path: str) -> int:
    """The size in bytes of ``path`` in ``tree`` without following a link (0: none)."""
    try:
        return (tree / path).lstat().st_size
    except OSError:
        return 0
