"""Loading the shared cases (``shared/cases/<folder>/*.json``) for data-driven tests.

Every case file is its own test, ids = file names, so a new case is picked up without code
changes. The folder lives beside the repository (``../shared/cases``) or where
``$COUNCIL_SHARED_CASES`` points; a missing or empty folder fails the test run with a
message saying where it looked (a case is never skipped).

The repeat helper of ``shared/cases/README.md`` is applied here, for any folder:
``"answer_repeat": {"marker", "char", "count"}`` (or a list of them) replaces every
``marker`` in every string value of the case, at any depth, with ``char * count``;
object keys are never replaced, nor are the case's ``name``, ``why`` and
``answer_repeat`` values.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

UNTOUCHED = frozenset({"name", "why", "answer_repeat"})
"""The case fields the repeat helper leaves alone."""


class CaseError(ValueError):
    """A case file this harness cannot interpret (the test fails, it is never skipped)."""


def cases_root() -> Path:
    """The shared cases folder: ``$COUNCIL_SHARED_CASES``, else ``../shared/cases``."""
    override = os.environ.get("COUNCIL_SHARED_CASES")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2].parent / "shared" / "cases"


def case_params(folder: str) -> list[Any]:
    """One ``pytest.param`` per ``*.json`` file of a folder, id = the file name.

    When the folder is missing or holds no case, a single param whose value is the
    folder's path (a string, not a file) is returned, so the test can fail loudly.
    """
    where = cases_root() / folder
    files = sorted(where.glob("*.json")) if where.is_dir() else []
    if not files:
        return [pytest.param(str(where), id=f"{folder}-cases-missing")]
    return [pytest.param(path, id=path.name) for path in files]


def load_case(path: Path | str) -> dict[str, Any]:
    """Read one case file and apply its repeat helper; fail clearly when there is none.

    Raises :class:`CaseError` when the case cannot be interpreted (not a JSON object, a
    malformed ``answer_repeat``), and fails the test when ``path`` names no case file.
    """
    if not isinstance(path, Path):
        pytest.fail(
            f"no shared cases found at {path}: the folder is missing or empty. Check out "
            "the shared cases beside the repository (../shared/cases) or point "
            "COUNCIL_SHARED_CASES at them."
        )
    case = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(case, dict):
        raise CaseError(f"{path.name}: a case must be a JSON object")
    repeats = _repeats(case.get("answer_repeat"), path.name)
    if not repeats:
        return case
    return {
        key: value if key in UNTOUCHED else _replaced(value, repeats) for key, value in case.items()
    }


def _repeats(spec: object, name: str) -> list[tuple[str, str]]:
    """The (marker, replacement) pairs of an ``answer_repeat`` value (object or list)."""
    if spec is None:
        return []
    specs = spec if isinstance(spec, list) else [spec]
    pairs: list[tuple[str, str]] = []
    for one in specs:
        if not isinstance(one, dict) or set(one) != {"marker", "char", "count"}:
            raise CaseError(f"{name}: answer_repeat needs exactly marker, char and count")
        marker, char, count = one["marker"], one["char"], one["count"]
        if not (isinstance(marker, str) and marker and isinstance(char, str) and char):
            raise CaseError(f"{name}: answer_repeat marker and char must be non-empty text")
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise CaseError(f"{name}: answer_repeat count must be a whole number >= 0")
        pairs.append((marker, char * count))
    return pairs


def _replaced(value: Any, repeats: list[tuple[str, str]]) -> Any:
    """``value`` with every marker replaced in its strings, at any depth (keys untouched)."""
    if isinstance(value, str):
        for marker, replacement in repeats:
            value = value.replace(marker, replacement)
        return value
    if isinstance(value, list):
        return [_replaced(item, repeats) for item in value]
    if isinstance(value, dict):
        return {key: _replaced(item, repeats) for key, item in value.items()}
    return value
