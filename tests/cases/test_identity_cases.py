"""Runs every shared identity case (shared/cases/identity/*.json) against a fresh Ledger.

One data-driven test, ids = file names; a new case file is picked up without code
changes, and a case this harness cannot interpret fails (it is never skipped).
The shared folder is found beside the repository (``../shared/cases``) or at
``$COUNCIL_SHARED_CASES``; a missing folder fails with a message saying where it looked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from council.errors import IdentityRefused
from council.session.ledger import Ledger, attributed_ids
from tests.cases.loader import cases_root

IDENTITY_DIR = cases_root() / "identity"
CASE_FILES = sorted(IDENTITY_DIR.glob("*.json")) if IDENTITY_DIR.is_dir() else []
PARAMS = [pytest.param(path, id=path.name) for path in CASE_FILES] or [
    pytest.param(None, id="identity-cases-missing")
]


def _claim(ledger: Ledger, step: Mapping[str, Any], where: str) -> None:
    """Run one claim step and check it was held or refused as the case expects."""
    attributed = attributed_ids(step.get("findings", []))
    expect = step["expect"]
    if expect == "held":
        identity = ledger.claim(step["role"], step["participant"], attributed)
        assert identity.id == step["participant"]["id"], where
    elif expect == "refused":
        with pytest.raises(IdentityRefused) as caught:
            ledger.claim(step["role"], step["participant"], attributed)
        text = str(caught.value)
        for mention in step.get("refusal_mentions", []):
            assert mention in text, f"{where}: refusal does not mention {mention!r}: {text}"
    else:
        pytest.fail(f"{where}: unknown claim expectation {expect!r}")


@pytest.mark.parametrize("path", PARAMS)
def test_identity_case(path: Path | None) -> None:
    """Each shared identity case's steps give the expected claims, releases and held()."""
    if path is None:
        pytest.fail(
            f"no identity cases found: {IDENTITY_DIR} is missing or empty. "
            f"Lay shared/ beside the repository or set COUNCIL_SHARED_CASES."
        )
    case = json.loads(path.read_text(encoding="utf-8"))
    ledger = Ledger()
    for index, step in enumerate(case["steps"]):
        where = f"{path.name} step {index} ({step.get('op')})"
        op = step.get("op")
        if op == "claim":
            _claim(ledger, step, where)
        elif op == "release":
            assert ledger.release(step["id"]) is step["expect"], where
        elif op == "held":
            assert [identity.id for identity in ledger.held()] == step["expect"], where
        else:
            pytest.fail(f"{where}: unknown op {op!r}")
