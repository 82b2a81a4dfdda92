"""The TTL tests of tests/unit/test_store_ttls.py, on a real redis-server."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.test_store_ttls import *  # noqa: F403 - the same tests, collected here again


@pytest.fixture
def client(real_redis: Any) -> Any:
    """A client on the real, emptied test redis-server (overrides the fakeredis one)."""
    return real_redis
