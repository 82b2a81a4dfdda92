"""Files that configure analyzers, and what a change to them means for its own review.

An analyzer reads its configuration from the tree it checks, so a pull request adding
``[tool.ruff] exclude = ["src"]`` switches the linter off for itself. The changed files
that configure analyzers are listed (:data:`ANALYZER_CONFIGS`, by name at any depth, as
most analyzers read the nearest one; :data:`SECTIONED` ones only where their analyzer
tables differ), and a ``command``/``sarif`` reviewer with ``config_from = "base"`` (the
default) reads the BASE's versions (``workers/coordinator/config_overlay.py``). Model
reviewers read the change's: reviewing it is their job. Pure: the caller reads the blobs
(bytes, None where absent). Source: issue "The change under review is untrusted";
docs/architecture.md "The shape" (the trusted configuration is the base's).
"""

from __future__ import annotations

import json
import posixpath
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal

CONFIG_OPTION = "config_from"
"""The program reviewers' roster option: ``"base"`` (the default) or ``"head"``."""

CONFIG_SOURCES: tuple[str, ...] = ("base", "head")
"""Values of ``config_from``: which side's analyzer configuration a program reads."""

DEFAULT_CONFIG_SOURCE = "base"
"""A program reviewer's ``config_from`` when the roster sets none."""

CONFIG_FIX = (
    'Write config_from = "base" (the default: the program reads the base\'s analyzer '
    'configuration) or "head" (the change\'s, which the change controls)'
)

ANALYZER_CONFIGS: tuple[tuple[str, str], ...] = (
    # Python
    ("pyproject.toml", "[tool.*] tables: ruff, mypy, pylint, bandit, black, isort, pyright…"),
    ("setup.cfg", "flake8, mypy, pycodestyle, isort, pylint sections"),
    ("tox.ini", "flake8, pycodestyle, isort sections"),
    ("ruff.toml", "ruff"),
    (".ruff.toml", "ruff"),
    (".flake8", "flake8"),
    ("mypy.ini", "mypy (its plugins run)"),
    (".mypy.ini", "mypy (its plugins run)"),
    (".pylintrc", "pylint (its load-plugins run)"),
    ("pylintrc", "pylint (its load-plugins run)"),
    (".bandit", "bandit (skips and excludes)"),
    ("pyrightconfig.json", "pyright"),
    (".pycodestyle", "pycodestyle"),
    (".pydocstyle", "pydocstyle"),
    (".pydocstylerc", "pydocstyle"),
    (".isort.cfg", "isort"),
    (".pre-commit-config.yaml", "pre-commit (which hooks run)"),
    # JavaScript and TypeScript
    ("package.json", "eslintConfig, prettier, stylelint keys"),
    (".eslintrc", "eslint"),
    (".eslintrc.*", "eslint"),
    ("eslint.config.*", "eslint (a program it runs)"),
    (".eslintignore", "eslint (files it skips)"),
    (".prettierrc", "prettier"),
    (".prettierrc.*", "prettier"),
    ("prettier.config.*", "prettier (a program it runs)"),
    (".prettierignore", "prettier (files it skips)"),
    (".stylelintrc", "stylelint"),
    (".stylelintrc.*", "stylelint"),
    ("stylelint.config.*", "stylelint (a program it runs)"),
    (".stylelintignore", "stylelint (files it skips)"),
    ("biome.json", "biome"),
    ("biome.jsonc", "biome"),
    ("tsconfig.json", "tsc (strictness, files it checks)"),
    ("tsconfig.*.json", "tsc (strictness, files it checks)"),
    ("jsconfig.json", "tsc and editors"),
    ("deno.json", "deno lint"),
    ("deno.jsonc", "deno lint"),
    (".jshintrc", "jshint"),
    (".jshintignore", "jshint (files it skips)"),
    ("tslint.json", "tslint"),
    # Go, Rust, Ruby, others
    (".golangci.yml", "golangci-lint"),
    (".golangci.yaml", "golangci-lint"),
    (".golangci.toml", "golangci-lint"),
    (".golangci.json", "golangci-lint"),
    ("staticcheck.conf", "staticcheck"),
    ("Cargo.toml", "[lints] and [workspace.lints]: rustc and clippy lints"),
    ("clippy.toml", "clippy"),
    (".clippy.toml", "clippy"),
    ("rustfmt.toml", "rustfmt"),
    (".rustfmt.toml", "rustfmt"),
    ("deny.toml", "cargo-deny"),
    (".rubocop.yml", "rubocop"),
    (".rubocop_todo.yml", "rubocop (offenses it ignores)"),
    (".shellcheckrc", "shellcheck"),
    (".hadolint.yaml", "hadolint"),
    (".hadolint.yml", "hadolint"),
    (".yamllint", "yamllint"),
    (".yamllint.yml", "yamllint"),
    (".yamllint.yaml", "yamllint"),
    (".markdownlint.json", "markdownlint"),
    (".markdownlint.yaml", "markdownlint"),
    (".markdownlint.yml", "markdownlint"),
    (".markdownlintrc", "markdownlint"),
    (".clang-tidy", "clang-tidy"),
    ("CPPLINT.cfg", "cpplint"),
    ("phpstan.neon", "phpstan"),
    ("phpstan.neon.dist", "phpstan"),
    ("phpcs.xml", "phpcs"),
    ("phpcs.xml.dist", "phpcs"),
    (".phpcs.xml", "phpcs"),
    ("psalm.xml", "psalm"),
    (".swiftlint.yml", "swiftlint"),
    ("detekt.yml", "detekt"),
    (".sqlfluff", "sqlfluff"),
    (".semgrepignore", "semgrep (files it skips)"),
    (".semgrep.yml", "semgrep"),
    (".semgrep.yaml", "semgrep"),
    (".gitleaks.toml", "gitleaks"),
    (".gitleaksignore", "gitleaks (findings it ignores)"),
    (".secrets.baseline", "detect-secrets (secrets it ignores)"),
    (".trivyignore", "trivy (findings it ignores)"),
    ("trivy.yaml", "trivy"),
    (".checkov.yml", "checkov"),
    (".checkov.yaml", "checkov"),
)
"""``(file name pattern, what it configures)``: the name (``fnmatch``, case-sensitive) of
a file that configures an analyzer, matched at any depth of the tree."""

SECTIONED: dict[str, tuple[tuple[str, ...], ...]] = {
    "pyproject.toml": (("tool",),),
    "Cargo.toml": (("lints",), ("workspace", "lints")),
    "package.json": (("eslintConfig",), ("eslintIgnore",), ("prettier",), ("stylelint",)),
}
"""File name → the tables (key paths) that configure analyzers in it: the file counts
only when one of them differs between base and head."""

PER_TOOL: frozenset[tuple[str, ...]] = frozenset({("tool",)})
"""Sectioned tables whose children each configure one tool (``[tool.ruff]``,
``[tool.mypy]``): a change is named by the children that differ, not the whole table."""

TABLES_NAMED = 10
"""At most this many changed tables are named for one file."""

_BARE = re.compile(r"[A-Za-z0-9_-]+")

How = Literal["added", "deleted", "edited"]


@dataclass(frozen=True)
class ConfigChange:
    """One changed file that configures analyzers.

    ``how``: ``added`` (not at the base: a base-config reader goes without it),
    ``deleted`` (not in the head: restored), ``edited``; ``reason`` what it configures.
    """

    path: str
    how: How
    reason: str


def config_reason(path: str) -> str | None:
    """What the file at ``path`` configures (from :data:`ANALYZER_CONFIGS`), or None."""
    name = posixpath.basename(path)
    for pattern, reason in ANALYZER_CONFIGS:
        if fnmatchcase(name, pattern):
            return reason
    return None


def config_changes(
    changed: Iterable[tuple[str, bytes | None, bytes | None]],
) -> list[ConfigChange]:
    """The analyzer configuration files among a change's files, in the order given.

    ``changed`` holds ``(path, base bytes, head bytes)`` for files the change touches
    (None: not on that side; a link's bytes are its target). A file of
    :data:`SECTIONED` counts only when its analyzer tables differ (or either side cannot
    be parsed); a file equal on both sides does not count. Never raises.
    """
    out: list[ConfigChange] = []
    for path, base, head in changed:
        reason = config_reason(path)
        if reason is None or base == head:
            continue
        name = posixpath.basename(path)
        how: How = "added" if base is None else "deleted" if head is None else "edited"
        if name in SECTIONED:
            tables = changed_tables(name, base, head)
            if tables == [] and how == "edited":
                continue  # no analyzer table differs
            if tables:
                shown = ", ".join(tables[:TABLES_NAMED])
                more = len(tables) - TABLES_NAMED
                reason = shown + (f" and {more} more" if more > 0 else "")
        out.append(ConfigChange(path, how, reason))
    return out


def changed_tables(name: str, base: bytes | None, head: bytes | None) -> list[str] | None:
    """The analyzer tables of a :data:`SECTIONED` file that differ between ``base`` and
    ``head`` (None: the file is not on that side), by name: ``[tool.ruff]``,
    ``[workspace.lints]``, ``eslintConfig``; a :data:`PER_TOOL` table by its children
    that differ. None when a side cannot be parsed. A name that is not a bare key is
    JSON-quoted (it is the change's text).

    Why: a note saying ``[tool.*] tables: ruff, mypy, …`` for a change to
    ``[tool.ruff]`` alone reads as if all of them changed.
    """
    before = _document(name, base) if base is not None else {}
    after = _document(name, head) if head is not None else {}
    if before is None or after is None:
        return None
    found: list[str] = []
    for keys in SECTIONED[name]:
        old, new = _at(before, keys), _at(after, keys)
        if old == new:
            continue
        olds, news = old if old is not None else {}, new if new is not None else {}
        if keys in PER_TOOL and isinstance(olds, dict) and isinstance(news, dict):
            children = sorted({*olds, *news}, key=str)
            found += [
                _table_name(name, (*keys, c)) for c in children if olds.get(c) != news.get(c)
            ]
        else:
            found.append(_table_name(name, keys))
    return found


def _document(name: str, blob: bytes) -> dict[str, Any] | None:
    """A :data:`SECTIONED` file parsed (TOML or JSON), or None when it cannot be."""
    try:
        text = blob.decode("utf-8")
        doc: Any = tomllib.loads(text) if name.endswith(".toml") else json.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def _at(doc: dict[str, Any], keys: Sequence[str]) -> Any:
    value: Any = doc
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _table_name(name: str, keys: Sequence[str]) -> str:
    """``[tool.ruff]`` in a TOML file, ``eslintConfig`` in a JSON one; a key that is not
    bare is JSON-quoted."""
    parts = [k if _BARE.fullmatch(k) else json.dumps(k, ensure_ascii=False) for k in keys]
    joined = ".".join(parts)
    return f"[{joined}]" if name.endswith(".toml") else joined


def config_note(
    changes: Sequence[ConfigChange], base_readers: Sequence[str], head_readers: Sequence[str]
) -> str | None:
    """The run's note about the analyzer configuration the change edits, or None.

    Names each file (JSON-quoted: a file name is the change's text), how it changed
    and what it configures, then which program reviewers read the base's versions
    (``base_readers``, ``config_from = "base"``) and which the change's
    (``head_readers``); model reviewers read the change's. At most 20 files are named.
    """
    if not changes:
        return None
    named = "; ".join(
        f"{json.dumps(c.path, ensure_ascii=False)} ({c.how}: {c.reason})" for c in changes[:20]
    )
    more = f"; and {len(changes) - 20} more" if len(changes) > 20 else ""
    said = f"the change edits analyzer configuration: {named}{more}."
    if base_readers:
        said += (
            f" The program reviewers {', '.join(base_readers)} read the base's versions "
            f'(config_from = "base"): a file the change added is left out, one it deleted '
            f"is restored."
        )
    if head_readers:
        said += (
            f" The program reviewers {', '.join(head_readers)} read the change's versions "
            f'(config_from = "head").'
        )
    return said + " Model reviewers read the change's: review what it changes."
