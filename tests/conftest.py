"""Fixtures every test shares: a clean COUNCIL_* environment."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """Strip COUNCIL_* so a developer's own COUNCIL_REDIS_URL cannot leak into a test."""
    for name in list(os.environ):
        if name.startswith("COUNCIL_") and name != "COUNCIL_SHARED_CASES":
            monkeypatch.delenv(name, raising=False)
