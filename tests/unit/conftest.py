"""Fixtures of the logging tests (``test_logging.py``, ``test_task_lines.py``)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import structlog
from celery import signals

from workers.app.logging import clear_task_context, configure_logging, set_record_fields

CELERY_SIGNALS = (
    signals.setup_logging,
    signals.task_prerun,
    signals.task_postrun,
    signals.task_failure,
    signals.task_revoked,
)
"""The Celery signals :func:`workers.app.task_lines.connect_celery_signals` connects."""


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """Put structlog, the root logger, contextvars, the record fields and Celery's
    receivers back after the test."""
    root = logging.getLogger()
    level = root.level
    yield
    for handler in [h for h in root.handlers if h.get_name() == "council"]:
        root.removeHandler(handler)
    root.setLevel(level)
    structlog.reset_defaults()
    clear_task_context()
    set_record_fields(None)
    for sig in CELERY_SIGNALS:
        sig.disconnect(dispatch_uid=f"council.logging.{sig.name}")


@pytest.fixture
def lines() -> Callable[[], list[dict[str, Any]]]:
    """Configure JSON logging into a buffer; the returned callable parses what was written."""
    buffer = io.StringIO()
    configure_logging(stream=buffer)

    def read() -> list[dict[str, Any]]:
        return [json.loads(line) for line in buffer.getvalue().splitlines()]

    return read
