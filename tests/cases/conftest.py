"""The shared cases are required in CI and optional on a plain clone.

When the folder :func:`tests.cases.loader.cases_root` names is missing, the case modules
are not collected and ONE test, ``test_shared_cases_present``, skips with one line that
says where they were looked for and how to get them. With
``COUNCIL_REQUIRE_SHARED_CASES=1`` (``.ci/run`` sets it) that test fails instead, and
every case test fails loudly naming the folder (:func:`tests.cases.loader.load_case`).
"""

from __future__ import annotations

import fnmatch
import os

import pytest

from tests.cases.loader import cases_root

REQUIRED = os.environ.get("COUNCIL_REQUIRE_SHARED_CASES", "") not in ("", "0")
"""Whether a missing shared-cases folder fails the run (CI) instead of skipping."""

PRESENT = cases_root().is_dir()

collect_ignore_glob = [] if PRESENT or REQUIRED else ["test_*_cases.py"]


def missing_reason() -> str:
    """The one line said when the shared cases are not here."""
    return (
        f"shared cases not found at {cases_root()}: the data-driven case tests were not run. "
        "Put the project's shared/ folder beside the checkout, or set COUNCIL_SHARED_CASES"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A case module named on the command line is collected even so (pytest ignores
    ``collect_ignore_glob`` for explicit paths): without the folder, and not required,
    its tests skip with the same line instead of failing."""
    if PRESENT or REQUIRED:
        return
    skip = pytest.mark.skip(reason=missing_reason())
    for item in items:
        if fnmatch.fnmatch(item.path.name, "test_*_cases.py"):
            item.add_marker(skip)
