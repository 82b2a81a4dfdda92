"""Fixtures every test shares: a clean COUNCIL_* environment."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

VENV_BIN = str(Path(sys.executable).parent)
"""The test interpreter's bin/: where ``.[test]`` installed ruff and bandit. Put first on
PATH so the tests that run the real analyzers find them when only ``.venv/bin/python``
was called (``make test``), instead of skipping."""

if VENV_BIN not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = VENV_BIN + os.pathsep + os.environ.get("PATH", "")


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """Strip COUNCIL_* so a developer's own COUNCIL_REDIS_URL cannot leak into a test."""
    for name in list(os.environ):
        if name.startswith("COUNCIL_") and name != "COUNCIL_SHARED_CASES":
            monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """Drop log handlers a test's CLI run bound (to a runner's stderr) and structlog's config."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(level)
    structlog.reset_defaults()
