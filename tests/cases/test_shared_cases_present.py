"""One line for the whole shared-case suite when the cases are not beside the checkout."""

from __future__ import annotations

import pytest

from tests.cases.conftest import PRESENT, REQUIRED, missing_reason
from tests.cases.loader import cases_root


def test_shared_cases_present() -> None:
    """The shared cases are here (CI requires them; a plain clone skips them, saying so)."""
    where = cases_root()
    if PRESENT:
        assert any(where.glob("*/*.json")), f"{where} holds no case"
        return
    message = missing_reason()
    if REQUIRED:
        pytest.fail(message + " (COUNCIL_REQUIRE_SHARED_CASES is set)")
    pytest.skip(message)
