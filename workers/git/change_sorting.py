"""Reading a change of any size: what is skipped, what a cap cut, what is sent.

Before git diffs anything, each file of the change is sorted from its path, the BASE
tree's ``linguist-*`` attributes and its blobs' sizes (:func:`council.change.skipping.skip_kind`):
a lock file, a minified bundle, a vendored or generated file is skipped on purpose; a text
file over the per-file cap (:data:`~workers.git.diff_reading.DIFF_FILE_MAX_BYTES`) that is
no such kind is left unreviewed. Then the rest is diffed within the hard cap of the change
(``max_change_bytes``); past it the diff is weighed file by file as a stream and diffed
again holding only the files of most value that fit (:func:`council.change.skipping.within_cap`).
Nothing is held beyond the cap. Runtime layer (runs git). Source: docs/guide.md "What is
skipped, and coverage".
"""

from __future__ import annotations

import subprocess
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from council.change.diff import Change, ChangedFile, read_change, selects
from council.change.skipping import (
    REASONS,
    AttrValue,
    SkipPolicy,
    binary_unknown,
    minified_by_lines,
    skip_kind,
    within_cap,
)
from council.errors import ChangeTooLarge
from council.model.coverage import Coverage, SkippedFile
from workers.git.diff_reading import DIFF_FILE_MAX_BYTES, DIFF_KNOB, DiffReading, shown_text

LINGUIST = ("linguist-generated", "linguist-vendored", "diff")
"""The attributes read from the base tree's ``.gitattributes`` (``diff`` unset: the team
marks the path binary, so it is skipped as binary whatever its kind)."""


@dataclass(frozen=True)
class ReadChange:
    """A change read within its caps: ``change`` holds the files sent (and binary ones,
    shown as binary; and those minified by a line, whose diff was read: analyzers and the
    gate's filter still know them, the prompts do not, :meth:`prompted`); ``excluded``
    the paths ``[paths]`` left out; ``non_utf8`` the paths shown with replacement
    characters; ``skipped`` those left out of the prompts on purpose;
    ``unreviewed`` those a cap left out, and the binary ones no rule skips
    (``unreadable``: shown as binary, seen by none)."""

    change: Change
    excluded: list[str]
    non_utf8: tuple[str, ...]
    skipped: tuple[SkippedFile, ...] = ()
    unreviewed: tuple[SkippedFile, ...] = ()
    sent_anyway: tuple[str, ...] = ()
    """The files minified by a line sent after all (:meth:`with_minified_sent`)."""

    def by_lines(self) -> tuple[SkippedFile, ...]:
        """The files skipped by their content (minified by a line), in the change."""
        held = set(self.change.paths)
        return tuple(f for f in self.skipped if f.path in held)

    def prompted(self) -> Change:
        """The change the prompts show: without the files minified by a line."""
        gone = {f.path for f in self.by_lines()}
        return self.change.model_copy(
            update={"files": tuple(f for f in self.change.files if f.path not in gone)}
        )

    def with_minified_sent(self) -> ReadChange:
        """This read with the files minified by a line sent to the prompts after all:
        when nothing else is left, skipping them would leave the reviewers nothing to
        read because of what the change wrote (a long line)."""
        gone = {f.path for f in self.by_lines()}
        return replace(
            self,
            skipped=tuple(f for f in self.skipped if f.path not in gone),
            sent_anyway=tuple(p for p in self.change.paths if p in gone),
        )

    def coverage(self) -> Coverage:
        """The round's coverage plan: sent, skipped (binary files of a known kind among
        them), not reviewed (cut, or binary of no known kind)."""
        unreadable = {f.path for f in self.unreviewed if f.reason == "unreadable"}
        binary = [f for f in self.change.files if f.binary and f.path not in unreadable]
        return Coverage(
            meant=tuple(f.path for f in self.prompted().files if not f.binary),
            skipped=(*self.skipped, *(_skipped(f.path, "binary") for f in binary)),
            unreviewed=self.unreviewed,
        )


def _skipped(path: str, reason: str, why: str | None = None) -> SkippedFile:
    return SkippedFile(path=path, reason=reason, why=why or REASONS[reason])


class ChangeSorting(DiffReading):
    """:meth:`read_within`: the change sorted, skipped files named, within its hard cap."""

    def read_within(
        self,
        start: str,
        head: str,
        *,
        attributes_from: str | None,
        include: Sequence[str],
        exclude: Sequence[str],
        policy: SkipPolicy,
        cap_bytes: int,
    ) -> ReadChange:
        """The change ``start..head`` as reviewers are sent it.

        Skipped files (by kind, by the base tree's attributes) and files over the
        per-file cap keep only their header in the diff; one minified by a line over
        :data:`~council.change.skipping.MINIFIED_LINE_CHARS` stays in ``change``, named
        skipped; a binary one of no known kind is named ``unreadable``. Past
        ``cap_bytes`` the kept files are weighed
        (:meth:`~workers.git.diff_reading.DiffReading.diff_sizes`) and those that do not
        fit, least value first, are left out as ``change-cap``. Raises
        :class:`~council.errors.RepositoryError` for an unknown ref or when git fails.
        """
        skipped, unreviewed, marked = self._sort(
            start, head, attributes_from, include, exclude, policy
        )
        leave_out = {f.path for f in (*skipped, *unreviewed)}

        def diff(leave_out: set[str]) -> bytes:
            return self.diff(
                start,
                head,
                attributes_from=attributes_from,
                include=include,
                exclude=exclude,
                cap_bytes=cap_bytes,
                leave_out=leave_out,
            )

        try:
            raw = diff(leave_out)
        except ChangeTooLarge as over:
            if over.what != "diff":
                raise
            sizes = self.diff_sizes(
                start,
                head,
                attributes_from=attributes_from,
                include=include,
                exclude=exclude,
                leave_out=leave_out,
            )
            cut = _cut(sizes, cap_bytes)
            unreviewed = [*unreviewed, *cut]
            leave_out |= {f.path for f in cut}
            raw = diff(leave_out)
        change, excluded, non_utf8 = read_change(raw, include, exclude)
        kept: list[ChangedFile] = []
        for f in change.files:
            if f.path in leave_out:
                continue
            unread = f.binary and f.status != "deleted" and f.path not in marked
            if unread and (why := binary_unknown(f.path)):  # a deletion hides no code
                unreviewed.append(_skipped(f.path, "unreadable", why))
            if (minified := minified_by_lines(f.path, f.patch, policy)) is not None:
                skipped.append(_skipped(f.path, "minified", minified))
            kept.append(f)
        change = change.model_copy(update={"files": tuple(kept)})
        order = {p: i for i, p in enumerate(self.changed_paths(start, head))}
        return ReadChange(
            change=change,
            excluded=excluded,
            non_utf8=non_utf8,
            skipped=tuple(sorted(skipped, key=lambda f: order.get(f.path, len(order)))),
            unreviewed=tuple(sorted(unreviewed, key=lambda f: order.get(f.path, len(order)))),
        )

    def _sort(
        self,
        start: str,
        head: str,
        attributes_from: str | None,
        include: Sequence[str],
        exclude: Sequence[str],
        policy: SkipPolicy,
    ) -> tuple[list[SkippedFile], list[SkippedFile], set[str]]:
        """The files ``[paths]`` keeps that are skipped by kind, the text files over the
        per-file cap of no such kind, and the paths the base's attributes mark ``-diff``:
        ``(skipped, unreviewed, marked binary)``, diff order."""
        entries = [
            e
            for e in self.changed_entries(start, head)
            if selects(ChangedFile(path=e.path, old_path=e.old_path), include, exclude)
        ]
        blobs = {sha for e in entries for sha in (e.old, e.new) if set(sha) != {"0"}}
        sizes = self._sizes(sorted(blobs))
        skipped: list[SkippedFile] = []
        unreviewed: list[SkippedFile] = []
        with self._neutral_worktree(attributes_from) as (cwd, env):
            attrs = _linguist([shown_text(e.path) for e in entries], cwd, env)
            marked = {p for p, a in attrs.items() if a.get("diff") == "unset"}
            for e in entries:
                path = shown_text(e.path)
                kind = skip_kind(path, attrs.get(path), policy)
                if kind is not None:
                    skipped.append(_skipped(path, kind[0], kind[1]))
                    continue
                old, new = sizes.get(e.old, 0), sizes.get(e.new, 0)
                if max(old, new) <= DIFF_FILE_MAX_BYTES:
                    continue
                biggest = e.new if new >= old else e.old
                if self._binary(biggest) or self._binary_by_attributes(e.path, cwd, env):
                    continue  # git shows it binary: skipped, or unreadable (read_within)
                why = f"{REASONS['file-cap']} ({max(old, new)} bytes, over {DIFF_FILE_MAX_BYTES})"
                unreviewed.append(_skipped(path, "file-cap", why))
        return skipped, unreviewed, marked


def _cut(sizes: Sequence[tuple[str, int]], cap_bytes: int) -> list[SkippedFile]:
    """The files left out so the rest fits ``cap_bytes`` (each named with its size)."""
    weight = dict(sizes)
    _, left = within_cap(sizes, cap_bytes)
    return [
        _skipped(
            p,
            "change-cap",
            f"{REASONS['change-cap']} ({weight[p]} bytes of diff; the change is over "
            f"{cap_bytes} bytes: {DIFF_KNOB})",
        )
        for p in left
    ]


def _linguist(
    paths: Collection[str], cwd: Path, env: dict[str, str]
) -> dict[str, dict[str, AttrValue]]:
    """Path → its ``linguist-generated``, ``linguist-vendored`` and ``diff`` as the
    attributes in force (the base tree's, in the neutral worktree ``cwd``) give them."""
    if not paths:
        return {}
    done = subprocess.run(
        ["git", "-C", str(cwd), "check-attr", "-z", "--stdin", *LINGUIST],
        input=b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths),
        capture_output=True,
        env=env,
        check=False,
    )
    fields = done.stdout.split(b"\0")
    out: dict[str, dict[str, AttrValue]] = {}
    for i in range(0, len(fields) - 2, 3):
        path = fields[i].decode("utf-8", "replace")
        attr, value = fields[i + 1].decode("ascii", "replace"), fields[i + 2]
        out.setdefault(path, {})[attr] = _value(value)
    return out


def _value(raw: bytes) -> AttrValue:
    """``set``/``true`` → set; ``unset``/``false`` → unset; anything else unspecified."""
    if raw in (b"set", b"true"):
        return "set"
    if raw in (b"unset", b"false"):
        return "unset"
    return "unspecified"
