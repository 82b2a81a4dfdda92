"""What is not sent to the reviewers that read the change in their prompt, and why.

Lock files, minified bundles, vendored trees and generated files drown a review and are
rarely written by hand: they are skipped by default, each named in the report with its
reason (:class:`~council.model.coverage.SkippedFile`). A path is a kind by the BASE
tree's ``linguist-generated`` / ``linguist-vendored`` attributes (the change must not
configure its own review; ``=false`` takes a well-known pattern back), else by the
well-known patterns below. The roster's ``[paths] review_kinds`` sends whole kinds anyway,
``review_anyway`` single paths. When a change is over the hard cap, :func:`value_rank`
orders what is sent first: source, then tests, then docs. Pure.
Source: docs/guide.md "What is skipped, and coverage".
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from council.change.path_patterns import first_match, matches_any

SkipKind = Literal["lock", "minified", "vendored", "generated"]
"""A kind of file skipped by default; ``[paths] review_kinds`` sends a kind anyway."""

SKIP_KINDS: tuple[SkipKind, ...] = ("lock", "minified", "vendored", "generated")

LOCK_FILES: frozenset[str] = frozenset(
    {
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lockb",
        "poetry.lock",
        "Pipfile.lock",
        "pdm.lock",
        "uv.lock",
        "Cargo.lock",
        "Gemfile.lock",
        "go.sum",
        "composer.lock",
        "mix.lock",
        "Podfile.lock",
        "pubspec.lock",
        "packages.lock.json",
        "flake.lock",
        "gradle.lockfile",
        "Package.resolved",
        "conda-lock.yml",
    }
)
"""File names (at any depth) of package managers' lock files."""

MINIFIED_PATTERNS: tuple[str, ...] = ("*.min.js", "*.min.mjs", "*.min.css")

MINIFIED_LINE_CHARS = 5_000
"""A changed line longer than this (characters) marks a file of a
:data:`MINIFIED_LINE_PATTERNS` kind minified: a bundle on one line reads as noise and
costs a context window."""

MINIFIED_LINE_PATTERNS: tuple[str, ...] = ("*.js", "*.mjs", "*.cjs", "*.css", "*.map")
"""The kinds a long line may mark minified: those minified in real life. Any other file
with a long line is shown (within the reviewers' context budgets): a change must not
skip its own code by writing one long comment."""

BINARY_PATTERNS: tuple[str, ...] = tuple(
    f"*.{ext}"
    for ext in (
        # images
        *("png", "jpg", "jpeg", "gif", "webp", "bmp", "ico", "icns", "tif", "tiff"),
        *("avif", "heic", "psd", "xcf"),
        # fonts
        *("woff", "woff2", "ttf", "otf", "eot"),
        # archives and packages
        *("zip", "gz", "tgz", "bz2", "xz", "zst", "7z", "rar", "tar", "jar", "war", "whl"),
        # compiled objects
        *("o", "a", "so", "dylib", "dll", "exe", "lib", "obj", "class", "pyc", "pyo", "wasm"),
        # audio and video
        *("mp3", "mp4", "m4a", "wav", "ogg", "flac", "webm", "mov", "avi"),
        # documents and data
        *("pdf", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp"),
        *("sqlite", "sqlite3", "parquet", "npy", "npz"),
    )
)
"""Names (matched lower-cased) of the kinds a binary diff may be skipped as: files that
are binary in real life. A file git shows as binary (a NUL byte) of any other kind, and
not marked ``-diff``/``binary`` by the base tree's ``.gitattributes``, is a file no
reviewer can read: named, and the round is partial (:func:`binary_unknown`)."""

VENDORED_PATTERNS: tuple[str, ...] = (
    "**/vendor/**",
    "**/vendored/**",
    "**/node_modules/**",
    "**/third_party/**",
    "**/third-party/**",
    "**/bower_components/**",
)

GENERATED_PATTERNS: tuple[str, ...] = (
    "*.pb.go",
    "*.pb.cc",
    "*.pb.h",
    "*_pb2.py",
    "*_pb2.pyi",
    "*_pb2_grpc.py",
    "*.generated.*",
    "*.g.dart",
    "*.freezed.dart",
    "*.js.map",
    "*.css.map",
)

REASONS: dict[str, str] = {
    "lock": "lock file",
    "minified": "minified",
    "vendored": "vendored",
    "generated": "generated",
    "binary": "binary",
    "unreadable": "binary, of no known binary kind",
    "file-cap": "over the per-file cap",
    "change-cap": "over the hard cap of the change",
    "budget": "a line over the reviewer's context budget",
}
"""Reason code → what a report says."""

AttrValue = Literal["set", "unset", "unspecified"]
"""A ``linguist-*`` attribute as the base tree's ``.gitattributes`` give it (``true`` and
a bare name read as ``set``, ``false`` and ``-name`` as ``unset``)."""


@dataclass(frozen=True)
class SkipPolicy:
    """The roster's ``[paths]`` say on skipping: kinds sent anyway, paths sent anyway."""

    review_kinds: tuple[SkipKind, ...] = ()
    review_anyway: tuple[str, ...] = ()


def skip_kind(
    path: str,
    attributes: Mapping[str, AttrValue] | None = None,
    policy: SkipPolicy = SkipPolicy(),
) -> tuple[SkipKind, str] | None:
    """Why ``path`` is skipped by default: ``(kind, why)`` (``why`` names the rule:
    ``lock file``, ``vendored (.gitattributes)``, ``generated (*.pb.go)``), or None
    when it is sent. ``attributes`` are the base tree's ``linguist-generated`` and
    ``linguist-vendored`` for the path (absent: unspecified)."""
    if matches_any(path, policy.review_anyway):
        return None
    attrs = attributes or {}
    found = _kind(path, attrs)
    if found is None or found[0] in policy.review_kinds:
        return None
    return found


def _kind(path: str, attrs: Mapping[str, AttrValue]) -> tuple[SkipKind, str] | None:
    if posixpath.basename(path) in LOCK_FILES:
        return "lock", REASONS["lock"]
    if (pattern := first_match(path, MINIFIED_PATTERNS)) is not None:
        return "minified", f"minified ({pattern})"
    for kind, patterns in (("vendored", VENDORED_PATTERNS), ("generated", GENERATED_PATTERNS)):
        said = attrs.get(f"linguist-{kind}", "unspecified")
        if said == "set":
            return _typed(kind), f"{kind} (.gitattributes linguist-{kind})"
        if said == "unspecified" and (pattern := first_match(path, patterns)) is not None:
            return _typed(kind), f"{kind} ({pattern})"
    return None


def _typed(kind: str) -> SkipKind:
    return "vendored" if kind == "vendored" else "generated"


def minified_by_lines(path: str, patch: str, policy: SkipPolicy = SkipPolicy()) -> str | None:
    """Why a file whose diff ``patch`` holds a line over :data:`MINIFIED_LINE_CHARS` is
    skipped as minified (``minified (a line of 80000 characters)``), or None: none is,
    the path is of no :data:`MINIFIED_LINE_PATTERNS` kind (``app.py`` is shown), or
    the roster sends minified files or this path anyway."""
    if "minified" in policy.review_kinds or matches_any(path, policy.review_anyway):
        return None
    if not matches_any(path.lower(), MINIFIED_LINE_PATTERNS):
        return None
    longest = max((len(line) for line in patch.split("\n")), default=0)
    if longest <= MINIFIED_LINE_CHARS:
        return None
    return f"minified (a line of {longest} characters)"


def binary_unknown(path: str) -> str | None:
    """Why a file git shows as binary cannot be skipped on purpose (its kind is none of
    :data:`BINARY_PATTERNS`: a NUL byte in ``deploy.sh`` hides a script ``sh`` runs), or
    None: it is of a known binary kind. A deleted file is never asked (it hides no code)."""
    if matches_any(path.lower(), BINARY_PATTERNS):
        return None
    return (
        "binary, of no known binary kind; to skip it on purpose, mark it binary in the "
        "base tree's .gitattributes or exclude it with [paths]"
    )


DOCS_PATTERNS: tuple[str, ...] = ("*.md", "*.rst", "*.txt", "*.adoc", "docs/**", "doc/**")
TEST_PATTERNS: tuple[str, ...] = (
    "**/tests/**",
    "**/test/**",
    "**/__tests__/**",
    "**/spec/**",
    "test_*.py",
    "*_test.*",
    "*.test.*",
    "*.spec.*",
)


def value_rank(path: str) -> int:
    """0 for source, 1 for tests, 2 for docs: which files are sent first when a change is
    over its hard cap (lower first)."""
    if matches_any(path, DOCS_PATTERNS):
        return 2
    if matches_any(path, TEST_PATTERNS):
        return 1
    return 0


def within_cap(sizes: Sequence[tuple[str, int]], cap_bytes: int) -> tuple[list[str], list[str]]:
    """Which files fit ``cap_bytes`` (their diff sizes in bytes summed), best value first.

    ``sizes`` are ``(path, bytes)`` in diff order. Files are taken by :func:`value_rank`,
    then diff order; one that does not fit is left out and the next tried. Returns
    ``(kept, left out)``, each in diff order.
    """
    order = sorted(range(len(sizes)), key=lambda i: (value_rank(sizes[i][0]), i))
    room = cap_bytes
    taken: set[int] = set()
    for i in order:
        if sizes[i][1] <= room:
            taken.add(i)
            room -= sizes[i][1]
    kept = [p for i, (p, _) in enumerate(sizes) if i in taken]
    left = [p for i, (p, _) in enumerate(sizes) if i not in taken]
    return kept, left
