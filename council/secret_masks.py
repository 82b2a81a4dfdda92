"""Masking the likely secrets a change adds, wherever its text goes but the tree.

A pull request that adds an AWS key, a GitHub token or a private key would have them
sent verbatim to every model provider (the prompt's diff, a tool's reply), stored in
Redis (the diff, answers, journals) and posted on the pull request once a model quotes
them. So the coordinator finds likely secrets on the ADDED lines of the diff
(``workers/secret_scan.py``, with detect-secrets' plugins) and describes each by place
only, as :class:`SecretSpan` values: the characters ``start:end`` of new-side line
``line`` of ``path``, with a digest of the value, never the value. Then:

* the diff reviewers read is :func:`mask_change`'d: every span becomes :data:`MASK`
  (the prompts, the judge's prompt, the stored diff);
* a worker reads the values back from its unpacked head tree (:func:`values_from`,
  checked against the digests) and masks them (:class:`Masker`) in everything a reviewer
  returns before it is stored or reported: answers, journal entries, failures, notes;
* model reviewers' tools read a copy of the tree whose files hold the masks
  (:func:`masked_file`); program reviewers (analyzers) read the real tree: they run
  sandboxed, without network, and a secret scanner must see the secret;
* the run's note (:func:`secrets_note`) counts them and names their places
  (``path:line``), never a value.

Usage::

    masked = mask_change(change, spans)                  # what the prompts show
    masker = Masker(values_from(spans, lines_of))        # on a worker
    masker.text('the key is AKIA…')                      # 'the key is [masked secret]'

Pure: values in, values out. Source: issue "The change under review is untrusted";
docs/architecture.md "State in Redis" (``run:{run}:secrets``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from council.diff import Change, ChangedFile
from council.review_result import ReviewResult

MASK = "[masked secret]"
"""What a masked secret reads as: a model still sees that a secret was there, and can
say so (a committed credential is a finding)."""

MIN_VALUE_CHARS = 8
"""Values shorter than this are not masked in free text (they would mask ordinary words);
their place in the diff and the tree is masked all the same."""

SHOWN_PLACES = 20
"""At most this many places are named in the run's note."""


class SecretSpan(BaseModel):
    """One masked stretch of one added line (a private key spans several lines: one span
    each, the same ``secret``).

    ``secret`` numbers the secret in the change (from 0); ``path`` is the new-side path;
    ``line`` the new-side line number (from 1); ``start``/``end`` the characters of that
    line's text (without the diff's ``+`` and the newline); ``kind`` what detect-secrets
    called it (``AWS Access Key``); ``digest`` the first 16 hex digits of the value's
    SHA-256 (UTF-8), so a worker can tell it read the right characters back.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    secret: int = Field(ge=0)
    path: str
    line: int = Field(ge=1)
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    kind: str
    digest: str


SPANS: TypeAdapter[list[SecretSpan]] = TypeAdapter(list[SecretSpan])
"""Reads and writes the JSON list of spans a run stores."""


def digest(value: str) -> str:
    """The digest a :class:`SecretSpan` carries for ``value``."""
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def added_lines_of(changed: ChangedFile) -> Iterator[tuple[int, str]]:
    """The added lines of one file's patch: ``(new-side line number, text)``, the text
    without the ``+`` and the line ending. Read from the hunk headers, as git wrote them;
    a deleted or binary file has none."""
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
        if mark == "+":
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
        out.setdefault((span.path, span.line), []).append(span)
    return out


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
    """The change with every span masked in its files' patches (what reviewers read);
    line numbers, hunks and everything else stay as they were. Never raises."""
    if not spans:
        return change
    lines = _by_line(spans)
    files: list[ChangedFile] = []
    for changed in change.files:
        mine = {n: s for (p, n), s in lines.items() if p == changed.path}
        if not mine or changed.status == "deleted":
            files.append(changed)
            continue
        files.append(changed.model_copy(update={"patch": _mask_patch(changed.patch, mine)}))
    return change.model_copy(update={"files": tuple(files)})


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
    values: list[str] = []
    files: dict[str, Sequence[str] | None] = {}
    for span in spans:
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
    failure or note). ``values`` shorter than :data:`MIN_VALUE_CHARS` are skipped."""

    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        kept = sorted({v for v in self.values if len(v) >= MIN_VALUE_CHARS}, key=len, reverse=True)
        object.__setattr__(self, "values", tuple(kept))

    def text(self, text: str) -> str:
        """``text`` with every value replaced by :data:`MASK` (longest first)."""
        for value in self.values:
            if value in text:
                text = text.replace(value, MASK)
        return text


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
    """The run's note: how many likely secrets were masked and where (``path:line``,
    JSON-quoted paths, at most :data:`SHOWN_PLACES`), never a value; None when none."""
    first: dict[int, SecretSpan] = {}
    for span in spans:
        first.setdefault(span.secret, span)
    if not first:
        return None
    places = [
        f"{json.dumps(s.path, ensure_ascii=False)}:{s.line} ({s.kind})"
        for _, s in sorted(first.items())
    ]
    more = f" and {len(places) - SHOWN_PLACES} more" if len(places) > SHOWN_PLACES else ""
    return (
        f"{len(first)} likely secret(s) the change adds were masked as {MASK} in what "
        f"reviewer models and reports see: {', '.join(places[:SHOWN_PLACES])}{more}. "
        f"Analyzers read the real files. A secret pushed to a pull request is exposed: "
        f"revoke it."
    )
