"""The artifact store tests of tests/unit/test_artifacts.py, run again on a real
redis-server (its Lua, TTLs and hash commands, not fakeredis's)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.test_artifacts import *  # noqa: F403 - the same tests, collected here again

pytestmark = pytest.mark.integration


@pytest.fixture
def client(real_redis: Any) -> Any:
    """A client on the real, emptied test redis-server (overrides the fakeredis one)."""
    return real_redis
