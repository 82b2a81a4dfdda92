"""Finding the likely secrets a change adds, with detect-secrets' plugins.

Scans the ADDED lines of the diff, the change's files the diff does not show (excluded,
skipped, cut by a cap: whole, from the head tree, as models' tools still read them) and
every changed path, and returns each secret's place as
:class:`~council.change.secret_masks.SecretSpan` values, never a value. Such a file over
:data:`EXCLUDED_FILE_MAX_BYTES`, or past :data:`EXCLUDED_MAX_BYTES` in all, is not read and
is WITHHELD from models (fail closed). The plugins are called line by line
(``analyze_line``), not through ``scan_line``/``SecretsCollection``, which rewrite the
library's process-wide settings while an embedded run's worker threads share the process;
they are set up once per process; no secret is verified online; the high-entropy detectors
(:data:`LEFT_OUT`) would mask commit ids and hashes reviewers need. Each file's lines are
first searched whole: a pattern or plugin that matches none of them is not run line by
line (exact, :func:`_may_match`). About 37 µs a line of code without secrets (1 MB of
diff, 34,100 added lines: 1.3 s, 4.9 s without the prefilter). Source: issue "The change
under review is untrusted"; docs/security.md "Secrets in the change".
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from council.change.diff import Change
from council.change.secret_masks import SecretSpan, added_lines_of, digest
from council.errors import IncompleteError
from workers.git.repository import Repository

LEFT_OUT: frozenset[str] = frozenset(
    {"Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector"}
)
"""detect-secrets plugins council does not run (see the module's docstring)."""

EXCLUDED_FILE_MAX_BYTES = 1024 * 1024
"""Largest file the diff does not show (excluded, skipped, cut by a cap; bytes) read from
the head tree to be scanned; a bigger one is withheld from reviewer models."""

EXCLUDED_MAX_BYTES = 4 * 1024 * 1024
"""Most bytes of the files the diff does not show read in all; the files past it are
withheld."""

BINARY_SNIFF_BYTES = 8000
"""A file with a NUL byte in its first 8000 bytes is binary (git's test, and the one the
model tools use to show none): it is not scanned, as no tool shows its text."""

KEY_LINES_MAX = 200
"""Most lines after a private key's ``BEGIN`` line masked when no ``END`` line comes."""

LINE_WHOLE_CHARS = 20_000
"""A line up to this many characters is scanned whole; past it (minified code, or a file
whose line breaks are not ``\n``), in windows of :data:`WINDOW_CHARS` overlapping by
half, to its end: some detect-secrets patterns take time quadratic in what they search."""

WINDOW_CHARS = 4_096
"""The width of the windows a long line's rest is scanned in (a secret up to half of it
is wholly inside one)."""

CHUNK_CHARS = 100_000
"""Lines are prefiltered (:func:`_checks`) in runs of about this many characters, so the
scan's budget is checked between runs."""

SCAN_BUDGET_S = 300.0
"""Most seconds the scan of one change may take; past it the review stops before
anything is sent (:class:`ScanOverBudget`, exit 3): a change crafted to make the
patterns crawl cannot hold a worker, and what was not scanned is never shown unmasked."""

_SURROGATES = re.compile("[\ud800-\udfff]")
"""Undecodable bytes of a file read with ``surrogateescape``: detect-secrets cannot hash
them, so the scan reads U+FFFD in their place (one for one: offsets hold)."""


class ScanOverBudget(IncompleteError):
    """The secret scan did not finish within :data:`SCAN_BUDGET_S`: exit 3, nothing sent."""


_END = re.compile(r"-----END [A-Z0-9 ]*-----|---- END SSH2 ")
_KEY_RUN = re.compile(r"(?<!\\)[A-Za-z0-9+/=]{16,}(?:(?:\\n|\s)*[A-Za-z0-9+/=]{16,})*")
_KEY_HEADER = re.compile(r"[A-Za-z-]+: [^'\"]*[^'\"\s]")
_BODY = re.compile(r"""[\s'"`]*(?:[A-Za-z0-9+/=]{16,}|[A-Za-z-]+: [^'"]*)?(?:\\n)?[\s'",+`\\]*""")
_HEADER = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|BEGIN [A-Z0-9 ]*PRIVATE KEY")


def find_secrets(
    change: Change,
    files: Iterable[tuple[str, str]] = (),
    paths: Iterable[str] = (),
    *,
    budget_s: float | None = None,
) -> list[SecretSpan]:
    """The places of the likely secrets on the change's added lines (in diff order), then
    on every line of ``files`` (``(path, text)``: the files the diff does not show, read
    whole from the head tree, :func:`excluded_files`), then in ``paths`` themselves (every
    path the change touches, either side: ``place = "path"`` spans).

    Finds that overlap on a line are one secret. Raises :class:`ScanOverBudget` past
    ``budget_s`` seconds (default :data:`SCAN_BUDGET_S`), never for what the lines hold;
    ``ImportError`` when detect-secrets is not installed (a dependency of council).
    """
    plugins = _plugins()
    budget = SCAN_BUDGET_S if budget_s is None else budget_s
    deadline = _Deadline(time.monotonic() + budget, budget)
    spans: list[SecretSpan] = []
    for changed in change.files:
        lines = list(added_lines_of(changed))
        spans += _scan_lines(plugins, changed.path, lines, _count(spans), deadline=deadline)
    for path, text in files:
        lines = [(n, t.removesuffix("\r")) for n, t in enumerate(text.split("\n"), 1)]
        spans += _scan_lines(plugins, path, lines, _count(spans), deadline=deadline)
    for path in dict.fromkeys(paths):
        for kind, start, stop in _joined(_line_secrets(_checks(plugins, path), path, path, 1)):
            value = path[start:stop]
            if kind != "Private Key" and value:
                spans.append(
                    SecretSpan(
                        secret=_count(spans), path=path, line=0, start=start, end=stop,
                        kind=kind, digest=digest(value), place="path",
                    )
                )  # fmt: skip
    return spans


def excluded_files(
    repo: Repository,
    head: str,
    paths: Iterable[str],
    start: int = 0,
    reasons: Mapping[str, str] | None = None,
) -> tuple[list[tuple[str, str]], list[SecretSpan]]:
    """The files the diff does not show to scan, read from the head tree, and those
    withheld unread.

    ``paths`` are the change's files whose added lines the diff does not show (excluded
    by ``[paths]``, skipped on purpose, left out by a cap); ``reasons`` says why for some
    (``lock file``), and a withheld file's ``kind`` says it. Returns ``(files, withheld)``:
    ``files`` as ``(path, text)`` (UTF-8, undecodable
    bytes as surrogates, as a worker reads its tree) for the files at ``paths`` in
    ``head``, a symbolic link's text being its target (deleted ones and submodules have
    no text there); ``withheld`` a
    ``file`` span (numbered from ``start``) for each over :data:`EXCLUDED_FILE_MAX_BYTES`
    or past :data:`EXCLUDED_MAX_BYTES` in all, never read. Binary files (a NUL byte in
    the first :data:`BINARY_SNIFF_BYTES`) are left out of ``files``. Raises
    :class:`~council.errors.RepositoryError` when git fails.
    """
    entries = repo.entries_at(head, list(paths))
    wanted: list[tuple[str, str]] = []
    withheld: list[SecretSpan] = []
    budget = EXCLUDED_MAX_BYTES
    for path, entry in entries.items():
        if entry.kind != "blob" or entry.mode not in ("100644", "100755", "120000"):
            continue
        why = None
        if entry.size > EXCLUDED_FILE_MAX_BYTES:
            why = f"{entry.size} bytes, over the {EXCLUDED_FILE_MAX_BYTES}-byte cap"
        elif entry.size > budget:
            why = f"past the {EXCLUDED_MAX_BYTES} bytes read of such files in all"
        if why is not None:
            if reasons and path in reasons:
                why = f"{reasons[path]}; {why}"
            withheld.append(
                SecretSpan(
                    secret=start + len(withheld), path=path, line=0, start=0, end=0,
                    kind=f"not scanned: {why}", digest=digest(""), place="file",
                )
            )  # fmt: skip
            continue
        budget -= entry.size
        wanted.append((path, entry.obj))
    blobs = repo.blobs([obj for _, obj in wanted])
    files = [
        (path, blobs[obj].decode("utf-8", "surrogateescape"))
        for path, obj in wanted
        if b"\0" not in blobs[obj][:BINARY_SNIFF_BYTES]
    ]
    return files, withheld


def _count(spans: list[SecretSpan]) -> int:
    """The next secret's number."""
    return spans[-1].secret + 1 if spans else 0


@dataclass(frozen=True)
class _Check:
    """One plugin as a file's lines are scanned: ``regexes`` its denylist to run line by
    line (those that may match in this file), None to call its ``analyze_line``."""

    plugin: Any
    kind: str
    regexes: tuple[re.Pattern[str], ...] | None


_UNSAFE_JOINED = re.compile(r"\(\?<!|\(\?!|\(\?>|[*+?}]\+|\\[AZz]")
"""Pattern parts whose meaning may change when a line is followed by a line break and
more (negative lookarounds, atomic groups, possessive quantifiers, string anchors): a
pattern holding one is never skipped on the strength of the whole file's text."""


@functools.cache
def _multiline(pattern: str, flags: int) -> re.Pattern[str]:
    return re.compile(pattern, flags | re.MULTILINE)


def _may_match(regex: re.Pattern[str], joined: str | None) -> bool:
    """Whether ``regex`` may match one of the lines ``joined`` holds (joined by line
    breaks): False only when it matches none. Without negative lookarounds, atomic
    groups, possessive quantifiers or string anchors, a match inside one line is a match
    of the pattern in MULTILINE mode on the joined text (``^`` and ``$`` match at the
    line breaks, and a line break is a non-word character like a line's ends), so a
    search that finds none proves no line matches."""
    if joined is None or _UNSAFE_JOINED.search(regex.pattern):
        return True
    return _multiline(regex.pattern, regex.flags).search(joined) is not None


@functools.cache
def _keyword_words() -> re.Pattern[str]:
    """What every one of detect-secrets' keyword regexes holds: one of its denylisted
    words (``password``, ``api_key``, ``secret``…), in any case."""
    from detect_secrets.plugins import keyword

    return re.compile("|".join(keyword.DENYLIST), re.IGNORECASE)


def _checks(plugins: Iterable[Any], joined: str | None) -> list[_Check]:
    """The plugins to run on the lines ``joined`` holds (None: all of them, every
    pattern): a denylist pattern that matches none of the lines, and the keyword or
    private-key plugin when none of its words is there, are left out. Exact: a line's
    finds are what every plugin would find on it (``tests/unit/test_secret_scan_fast.py``)."""
    out: list[_Check] = []
    for plugin in plugins:
        kind = str(plugin.secret_type)
        denylist = getattr(plugin, "denylist", None)
        if kind == "Secret Keyword":
            if joined is None or _keyword_words().search(joined):
                out.append(_Check(plugin, kind, None))
        elif denylist is not None and kind != "Private Key":
            regexes = tuple(r for r in denylist if _may_match(r, joined))
            if regexes:
                out.append(_Check(plugin, kind, regexes))
        elif denylist is None or any(_may_match(r, joined) for r in denylist):
            out.append(_Check(plugin, kind, None))
    return out


def _units(text: str) -> list[tuple[int, str]]:
    """What of one line is scanned, ``(offset, text)``: the line whole up to
    :data:`LINE_WHOLE_CHARS`, then windows of :data:`WINDOW_CHARS` overlapping by half."""
    if len(text) <= LINE_WHOLE_CHARS:
        return [(0, text)]
    out = [(0, text[:LINE_WHOLE_CHARS])]
    step = WINDOW_CHARS // 2
    at = LINE_WHOLE_CHARS - step
    while at + step < len(text):
        out.append((at, text[at : at + WINDOW_CHARS]))
        at += step
    return out


def _runs(lines: list[tuple[int, str]]) -> list[tuple[int, int]]:
    """``lines`` cut into runs of about :data:`CHUNK_CHARS` characters, as index ranges."""
    out: list[tuple[int, int]] = []
    start, size = 0, 0
    for index, (_, text) in enumerate(lines):
        if size and size + len(text) > CHUNK_CHARS:
            out.append((start, index))
            start, size = index, 0
        size += len(text) + 1
    if start < len(lines):
        out.append((start, len(lines)))
    return out


def _scan_lines(
    plugins: Iterable[Any],
    path: str,
    lines: list[tuple[int, str]],
    first: int,
    *,
    prefilter: bool = True,
    deadline: _Deadline | None = None,
) -> list[SecretSpan]:
    """The spans of one file's lines (``(line number, text)``), secrets numbered from
    ``first``. The plugins and patterns that match none of a run's lines (:func:`_runs`)
    are not run line by line on it (``prefilter``; the finds are the same without it,
    only slower). Raises :class:`ScanOverBudget` once ``deadline`` passed."""
    clean = [(n, _SURROGATES.sub("\ufffd", t)) for n, t in lines]
    checks_of: dict[int, list[_Check]] = {}
    for start, stop in _runs(clean):
        _in_time(deadline, path, clean[start][0])
        joined = "\n".join(u for _, t in clean[start:stop] for _, u in _units(t))
        run_checks = _checks(plugins, joined if prefilter else None)
        checks_of.update(dict.fromkeys(range(start, stop), run_checks))
    spans: list[SecretSpan] = []
    count = first
    index = 0
    while index < len(lines):
        number, text = lines[index]
        checks = checks_of[index]
        if not checks:
            index += 1
            continue
        _in_time(deadline, path, number)
        found = _line_secrets(checks, path, clean[index][1], number)
        if any(kind == "Private Key" for kind, _, _ in found):
            body = _key_block(lines, index)
            if body:
                spans += [_span(count, path, n, t, a, b, "Private Key") for n, t, a, b in body]
                count += 1
                index += body[-1][0] - number + 1
                continue
        for kind, start, stop in _joined([f for f in found if f[0] != "Private Key"]):
            spans.append(_span(count, path, number, text, start, stop, kind))
            count += 1
        index += 1
    return spans


@dataclass(frozen=True)
class _Deadline:
    """When the scan must have finished (``time.monotonic()``), and its budget in seconds."""

    at: float
    budget_s: float


def _in_time(deadline: _Deadline | None, path: str, line: int) -> None:
    """Raise :class:`ScanOverBudget`, naming where the scan was, once ``deadline`` passed."""
    if deadline is not None and time.monotonic() > deadline.at:
        raise ScanOverBudget(
            f"the secret scan of the change did not finish within {deadline.budget_s:g} s "
            f"(it was at {path!r} line {line}), so nothing was sent: a change this large, "
            "or lines crafted to make detect-secrets' patterns crawl, cannot be reviewed "
            "with its secrets masked. Review it in smaller changes"
        )


def _joined(found: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """Finds on one line with overlapping characters joined (the first kind kept)."""
    out: list[tuple[str, int, int]] = []
    for kind, start, stop in sorted(found, key=lambda f: (f[1], -f[2])):
        if stop <= start:
            continue
        if out and start < out[-1][2]:
            out[-1] = (out[-1][0], out[-1][1], max(stop, out[-1][2]))
        else:
            out.append((kind, start, stop))
    return out


def _span(
    secret: int, path: str, line: int, text: str, start: int, end: int, kind: str
) -> SecretSpan:
    value = text[start:end]
    return SecretSpan(
        secret=secret, path=path, line=line, start=start, end=end, kind=kind, digest=digest(value)
    )


@functools.cache
def _plugins() -> tuple[Any, ...]:
    """One instance of every detect-secrets plugin council runs, made once per process
    (importing detect-secrets, and the ``requests`` it loads, is most of a scan's cost;
    the plugins are only read, never changed, so threads share them)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    classes: Iterable[type[Any]] = get_mapping_from_secret_type_to_class().values()
    return tuple(
        cls() for cls in sorted(classes, key=lambda c: c.__name__) if cls.__name__ not in LEFT_OUT
    )


def _line_secrets(
    checks: Iterable[_Check], path: str, text: str, number: int
) -> list[tuple[str, int, int]]:
    """``(kind, start, end)`` of each secret the checks (:func:`_checks`) find on one line
    (character offsets; overlapping finds are all kept,
    :func:`~council.change.secret_masks.mask_line` joins them)."""
    out: list[tuple[str, int, int]] = []
    for at, part in _units(text):
        found = _part_secrets(checks, path, part, number)
        out += [(kind, start + at, stop + at) for kind, start, stop in found]
    return out


def _part_secrets(
    checks: Iterable[_Check], path: str, text: str, number: int
) -> list[tuple[str, int, int]]:
    """:func:`_line_secrets` on one part of a line (:func:`_units`)."""
    from detect_secrets.filters import heuristic

    out: list[tuple[str, int, int]] = []
    for check in checks:
        kind, plugin = check.kind, check.plugin
        if check.regexes is not None:
            for regex in check.regexes:
                for match in regex.finditer(text):
                    out.append((kind, *_value_span(match)))
            continue
        for found in plugin.analyze_line(filename=path, line=text, line_number=number):
            value = found.secret_value or ""
            if kind != "Private Key" and _filtered(heuristic, value, text):
                continue
            start = text.find(value) if value else -1
            if kind == "Private Key" or start < 0:
                out.append((kind, 0, 0) if kind == "Private Key" else (kind, 0, len(text)))
            else:
                out.append((kind, start, start + len(value)))
    return out


def _value_span(match: re.Match[str]) -> tuple[int, int]:
    """Where a regex detector's value is: its longest group of at least 8 characters,
    else the whole match."""
    groups = [i for i in range(1, (match.re.groups or 0) + 1) if match.group(i)]
    best = max(groups, key=lambda i: len(match.group(i)), default=None)
    if best is not None and len(match.group(best)) >= 8:
        return match.span(best)
    return match.span()


def _filtered(heuristic: Any, value: str, line: str) -> bool:
    """detect-secrets' heuristic filters: a value that is templated, a reference, a
    sequence, a UUID or a ``$VARIABLE`` is not a secret."""
    return bool(
        heuristic.is_templated_secret(value)
        or heuristic.is_prefixed_with_dollar_sign(value)
        or heuristic.is_sequential_string(value)
        or heuristic.is_potential_uuid(value)
        or heuristic.is_indirect_reference(line)
    )


def _key_block(lines: list[tuple[int, str]], at: int) -> list[tuple[int, str, int, int]]:
    """The body of a private key whose header is on ``lines[at]``: ``(line, text, start,
    end)`` of each run of key characters to mask, on the header's own line (a key
    written in one string) and on the consecutive added lines that look like a key's
    (base64, or ``Name: value`` headers) up to its ``END`` marker. Empty when nothing
    after the header looks like a key (a detector's own pattern, say)."""
    number, text = lines[at]
    header = _HEADER.search(text)
    after = header.end() if header else 0
    end = _END.search(text, after)
    taken: list[tuple[int, str, int, int]] = []
    inline = _KEY_RUN.search(text[: end.start() if end else len(text)], after)
    if inline is not None:
        stop = end.start() if end is not None else inline.end()
        taken.append((number, text, inline.start(), stop))
    if end is not None:
        return taken
    for offset in range(1, KEY_LINES_MAX + 1):
        if at + offset >= len(lines) or lines[at + offset][0] != number + offset:
            break
        n, t = lines[at + offset]
        marker = _END.search(t)
        if marker is not None:
            run = _KEY_RUN.search(t[: marker.start()])
            if run is not None:
                taken.append((n, t, run.start(), marker.start()))
            break
        if not _BODY.fullmatch(t):
            break
        run = _KEY_RUN.search(t) or _KEY_HEADER.search(t)
        if run is not None:
            taken.append((n, t, run.start(), run.end()))
    return taken
