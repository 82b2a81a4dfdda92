"""Masking the likely secrets a change adds, wherever its text goes but the tree.

An added AWS key would otherwise reach every model provider, Redis and, once quoted, the
pull request. The coordinator finds them on the ADDED lines and names each by place only
(:class:`SecretSpan`: a digest, never the value). The prompts' diff is
:func:`mask_change`'d, paths too (:func:`masked_path`); a worker reads the values back from
its tree (:func:`values_from`) and a :class:`Masker` masks all a reviewer returns before it
is stored; model tools read :func:`masked_file` copies (:func:`withheld_text` for a
withheld file); analyzers read the real tree, sandboxed, since a secret scanner must see
the secret; :func:`secrets_note` names places, never a value. Pure. Source: issue "The
change under review is untrusted"; docs/architecture.md "State in Redis" (``run:{run}:secrets``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from council.change.diff import Change, ChangedFile
from council.model.backend_result import ReviewResult
from council.model.coverage import Coverage, SkippedFile

MASK = "[masked secret]"
"""What a masked secret reads as: a model still sees that a secret was there, and can
say so (a committed credential is a finding)."""

MIN_VALUE_CHARS = 8
"""Values shorter than this are not masked in free text (they would mask ordinary words);
their place in the diff and the tree is masked all the same."""

MIN_MIXED_CHARS = 6
"""Values this long are masked in free text too when one of their characters is not a
letter (``hunter2``): such a string is no ordinary word (:class:`Masker`)."""

SHOWN_PLACES = 20
"""At most this many places are named in the run's note."""


class SecretSpan(BaseModel):
    """One masked stretch: of one added line (a private key spans several lines: one span
    each, the same ``secret``), of one path, or one withheld file.

    ``start``/``end`` are character offsets into what ``place`` names; ``line`` is the
    new-side line (from 1) for ``place="line"``, else 0. A withheld file (``place="file"``,
    ``0:0``) is a file to read whole (excluded, skipped, cut by a cap) over the scan's
    caps, kept from reviewer models unscanned;
    ``kind`` says why, and ``secret`` numbers it among the others though it is not a secret.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    secret: int = Field(ge=0)
    """Which secret of the change, from 0; the spans of one secret share it."""
    path: str
    """The new-side path as the repository spells it: the tree is read by it."""
    line: int = Field(ge=0)
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    kind: str
    """What detect-secrets called it (``AWS Access Key``); for a withheld file, why."""
    digest: str
    """The first 16 hex digits of the value's SHA-256 (UTF-8), so a worker can tell it
    read the right characters back."""
    place: Literal["line", "path", "file"] = "line"
    """What ``start:end`` index: ``line``, the added line's text without the diff's ``+``
    and the newline; ``path``, the path itself (a file or directory named with a key);
    ``file``, nothing. ``line`` when a stored span does not say."""


SPANS: TypeAdapter[list[SecretSpan]] = TypeAdapter(list[SecretSpan])
"""Reads and writes the JSON list of spans a run stores."""


def digest(value: str) -> str:
    """The digest a :class:`SecretSpan` carries for ``value``."""
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def added_lines_of(changed: ChangedFile, context: bool = False) -> Iterator[tuple[int, str]]:
    """The added lines of one file's patch: ``(new-side line number, text)``, the text
    without the ``+`` and the line ending (with ``context``, the context lines too: every
    new-side line the patch shows). Read from the hunk headers, as git wrote them; a
    deleted or binary file has none."""
    if changed.status == "deleted" or changed.binary:
        return
    number: int | None = None
    for raw in changed.patch.split("\n"):
        if raw.startswith("@@"):
            number = _new_start(raw)
            continue
        if number is None or not raw:
            continue
        mark = raw[0]
        if mark == "+" or (context and mark == " "):
            yield number, raw[1:].removesuffix("\r")
            number += 1
        elif mark == " ":
            number += 1


def _new_start(header: str) -> int | None:
    """The new-side start of a ``@@ -a,b +c,d @@`` header, or None when unreadable."""
    for part in header.split(" ")[1:3]:
        if part.startswith("+"):
            first = part[1:].split(",", 1)[0]
            return int(first) if first.isdigit() else None
    return None


def _by_line(spans: Iterable[SecretSpan]) -> dict[tuple[str, int], list[SecretSpan]]:
    out: dict[tuple[str, int], list[SecretSpan]] = {}
    for span in spans:
        if span.place == "line" and span.line >= 1:
            out.setdefault((span.path, span.line), []).append(span)
    return out


def name_values(spans: Iterable[SecretSpan]) -> tuple[str, ...]:
    """The secret values the ``path`` spans find in paths (each once, longest first), read
    from the spans' own paths; one whose digest does not match is left out."""
    found: list[str] = []
    for span in spans:
        value = span.path[span.start : span.end]
        if span.place == "path" and value and digest(value) == span.digest:
            found.append(value)
    return tuple(sorted(set(found), key=len, reverse=True))


def masked_path(path: str, spans: Iterable[SecretSpan]) -> str:
    """``path`` with every secret value found in a changed path replaced by :data:`MASK`
    (whatever its length: ``keys/AKIA….txt`` reads ``keys/[masked secret].txt``). Two
    paths that differ only by their secrets read alike."""
    for value in name_values(spans):
        path = path.replace(value, MASK)
    return path


def mask_coverage(coverage: Coverage, spans: Iterable[SecretSpan]) -> Coverage:
    """``coverage`` with every path masked (:func:`masked_path`)."""
    spans = tuple(spans)
    if not spans:
        return coverage

    def files(found: Iterable[SkippedFile]) -> tuple[SkippedFile, ...]:
        return tuple(
            f.model_copy(
                update={"path": masked_path(f.path, spans), "why": masked_path(f.why, spans)}
            )
            for f in found
        )

    return coverage.model_copy(
        update={
            "meant": tuple(masked_path(p, spans) for p in coverage.meant),
            "skipped": files(coverage.skipped),
            "unreviewed": files(coverage.unreviewed),
        }
    )


def withheld(spans: Iterable[SecretSpan]) -> dict[str, str]:
    """The files withheld from reviewer models (``file`` spans): path → why."""
    return {s.path: s.kind for s in spans if s.place == "file"}


def withheld_text(path: str, why: str) -> str:
    """What a withheld file holds in the tree models' tools read (one line)."""
    return (
        f"[council: {json.dumps(path, ensure_ascii=False)} is withheld from reviewer models: "
        f"it was too big to scan for secrets ({why})]\n"
    )


def _git_quoted(value: str) -> str:
    """``value`` as it reads inside one of git's C-style quoted paths (octal escapes for
    bytes above 0x7f and control characters, ``\\"`` and ``\\\\``)."""
    out: list[str] = []
    for byte in value.encode("utf-8", "surrogateescape"):
        char = chr(byte)
        if char in '"\\':
            out.append("\\" + char)
        elif byte < 0x20 or byte >= 0x7F:
            out.append(f"\\{byte:03o}")
        else:
            out.append(char)
    return "".join(out)


def _mask_names(text: str, values: Sequence[str]) -> str:
    """``text`` with each path secret replaced by :data:`MASK`, as written and as git
    quotes it in a diff header."""
    for value in values:
        for form in dict.fromkeys((value, _git_quoted(value))):
            text = text.replace(form, MASK)
    return text


def mask_line(text: str, spans: Iterable[SecretSpan]) -> str:
    """``text`` with each span's characters replaced by :data:`MASK` (overlapping spans
    are joined; a span past the line's end is cut to it)."""
    cuts = sorted((max(0, s.start), min(len(text), s.end)) for s in spans)
    merged: list[tuple[int, int]] = []
    for start, end in cuts:
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    for start, end in reversed(merged):
        text = text[:start] + MASK + text[end:]
    return text


def mask_change(change: Change, spans: Sequence[SecretSpan]) -> Change:
    """The change with every span masked in its files' patches (what reviewers read), and
    the secrets found in paths masked in every file's path, old path, note and patch
    (headers and lines alike, :func:`masked_path`); line numbers, hunks and everything
    else stay as they were. Never raises."""
    if not spans:
        return change
    lines = _by_line(spans)
    names = name_values(spans)
    files: list[ChangedFile] = []
    for changed in change.files:
        mine = {n: s for (p, n), s in lines.items() if p == changed.path}
        if mine and changed.status != "deleted":
            changed = changed.model_copy(update={"patch": _mask_patch(changed.patch, mine)})
        if names:
            changed = changed.model_copy(
                update={
                    "path": _mask_names(changed.path, names),
                    "old_path": _mask_names(changed.old_path, names)
                    if changed.old_path is not None
                    else None,
                    "note": _mask_names(changed.note, names) if changed.note else changed.note,
                    "patch": _mask_names(changed.patch, names),
                }
            )
        files.append(changed)
    notes = tuple(_mask_names(n, names) for n in change.notes) if names else change.notes
    return change.model_copy(update={"files": tuple(files), "notes": notes})


def _mask_patch(patch: str, spans: dict[int, list[SecretSpan]]) -> str:
    out: list[str] = []
    number: int | None = None
    for raw in patch.split("\n"):
        if raw.startswith("@@"):
            number = _new_start(raw)
        elif number is not None and raw[:1] == "+":
            if number in spans:
                body, cr = (raw[1:-1], "\r") if raw.endswith("\r") else (raw[1:], "")
                raw = "+" + mask_line(body, spans[number]) + cr
            number += 1
        elif number is not None and raw[:1] == " ":
            number += 1
        out.append(raw)
    return "\n".join(out)


def masked_file(text: str, spans: Iterable[SecretSpan]) -> str:
    """A head file's text (one file's spans) with every span masked, line by line."""
    lines = text.split("\n")
    for (_, number), found in _by_line(spans).items():
        if number <= len(lines):
            line = lines[number - 1]
            body, cr = (line[:-1], "\r") if line.endswith("\r") else (line, "")
            lines[number - 1] = mask_line(body, found) + cr
    return "\n".join(lines)


def values_from(
    spans: Iterable[SecretSpan], lines_of: Callable[[str], Sequence[str] | None]
) -> tuple[str, ...]:
    """The secret values, read back at the spans' places: ``lines_of(path)`` gives a
    file's lines (None when it cannot be read). A span whose characters do not match its
    digest is left out (the file is not the one the coordinator read). Never raises."""
    values: list[str] = list(name_values(spans))
    files: dict[str, Sequence[str] | None] = {}
    for span in spans:
        if span.place != "line":
            continue
        if span.path not in files:
            files[span.path] = lines_of(span.path)
        lines = files[span.path]
        if lines is None or span.line > len(lines):
            continue
        value = lines[span.line - 1].removesuffix("\r")[span.start : span.end]
        if value and digest(value) == span.digest and value not in values:
            values.append(value)
    return tuple(values)


@dataclass(frozen=True)
class Masker:
    """Masks known secret values in free text (a reviewer's answer, journal entry,
    failure or note): values of :data:`MIN_VALUE_CHARS` characters or more, and of
    :data:`MIN_MIXED_CHARS` or more when one character is not a letter (a keyword
    detector's ``password = "hunter2"`` finds ``hunter2``); shorter ones are skipped."""

    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        kept = {v for v in self.values if _maskable(v)}
        object.__setattr__(self, "values", tuple(sorted(kept, key=len, reverse=True)))

    def text(self, text: str) -> str:
        """``text`` with every value replaced by :data:`MASK` (longest first)."""
        for value in self.values:
            if value in text:
                text = text.replace(value, MASK)
        return text


def _maskable(value: str) -> bool:
    """Whether a secret value is long or odd enough to mask in free text."""
    if len(value) >= MIN_VALUE_CHARS:
        return True
    return len(value) >= MIN_MIXED_CHARS and not value.isalpha()


def masked_result(masker: Masker, result: ReviewResult) -> ReviewResult:
    """``result`` with the secret values masked in its answer, failure, notes and the
    question it asked a person (what is archived, harvested, stored and reported)."""
    if not masker.values:
        return result
    paused = result.paused
    if paused is not None:
        asked = paused.ask.model_copy(update={"question": masker.text(paused.ask.question)})
        paused = paused.model_copy(update={"ask": asked})
    return replace(
        result,
        answer=masker.text(result.answer),
        failure=masker.text(result.failure) if result.failure is not None else None,
        notes=tuple(masker.text(n) for n in result.notes),
        paused=paused,
    )


def secrets_note(spans: Sequence[SecretSpan]) -> str | None:
    """The run's note: how many likely secrets were masked and where (``path:line``, or
    ``path (file name, kind)`` for one in a path; JSON-quoted masked paths, at most
    :data:`SHOWN_PLACES`), and which files were withheld unscanned, never a value; None
    when there is neither."""
    first: dict[int, SecretSpan] = {}
    for span in spans:
        first.setdefault(span.secret, span)
    if not first:
        return None

    def place(s: SecretSpan) -> str:
        shown = json.dumps(masked_path(s.path, spans), ensure_ascii=False)
        return (
            f"{shown} (file name, {s.kind})"
            if s.place == "path"
            else f"{shown}:{s.line} ({s.kind})"
        )

    found = [place(s) for _, s in sorted(first.items()) if s.place != "file"]
    kept = [s for _, s in sorted(first.items()) if s.place == "file"]
    said: list[str] = []
    if found:
        more = f" and {len(found) - SHOWN_PLACES} more" if len(found) > SHOWN_PLACES else ""
        said.append(
            f"{len(found)} likely secret(s) the change adds were masked as {MASK} in what "
            f"reviewer models and reports see: {', '.join(found[:SHOWN_PLACES])}{more}. "
            f"Analyzers read the real files. A secret pushed to a pull request is exposed: "
            f"revoke it."
        )
    if kept:
        named = ", ".join(
            f"{json.dumps(masked_path(s.path, spans), ensure_ascii=False)} ({s.kind})"
            for s in kept[:SHOWN_PLACES]
        )
        more = f" and {len(kept) - SHOWN_PLACES} more" if len(kept) > SHOWN_PLACES else ""
        said.append(
            f"{len(kept)} file(s) over the secret scan's caps were not scanned and are "
            f"withheld from reviewer models' tools: {named}{more}."
        )
    return " ".join(said)
