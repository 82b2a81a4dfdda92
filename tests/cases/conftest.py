"""The shared cases are required in CI and optional on a plain clone.

When the folder :func:`tests.cases.loader.cases_root` names is missing, the case modules
are not collected and ONE test, ``test_shared_cases_present``, skips with one line that
says where they were looked for and how to get them. With
``COUNCIL_REQUIRE_SHARED_CASES=1`` (``.ci/run`` sets it) that test fails instead, and
every case test fails loudly naming the folder (:func:`tests.cases.loader.load_case`).
"""

from __future__ import annotations

import os

from tests.cases.loader import cases_root

REQUIRED = os.environ.get("COUNCIL_REQUIRE_SHARED_CASES", "") not in ("", "0")
"""Whether a missing shared-cases folder fails the run (CI) instead of skipping."""

PRESENT = cases_root().is_dir()

collect_ignore_glob = [] if PRESENT or REQUIRED else ["test_*_cases.py"]
