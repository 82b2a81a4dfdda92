"""Redis refusals (``OOM``, ``READONLY``, ``MISCONF``, ``NOREPLICAS``) are held like an
outage: the writer keeps its data and retries, the refusal is counted; any other error
is raised at once. Real refusals against a real redis-server: tests/faults/test_refusals.py."""

from __future__ import annotations

import pytest
import redis
from structlog.testing import capture_logs

from workers.app.metrics import REDIS_REFUSALS
from workers.execution.outage_retry import held_back, patiently, refused

OOM = redis.OutOfMemoryError("command not allowed when used memory > 'maxmemory'.")
MISCONF = redis.ResponseError(
    "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist"
)
SCRIPT_OOM = redis.ResponseError(
    "Error running script (call to f_x): @user_script:4: OOM command not allowed when used "
    "memory > 'maxmemory'."
)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (OOM, "OOM"),
        (redis.ReadOnlyError("You can't write against a read only replica."), "READONLY"),
        (MISCONF, "MISCONF"),
        (SCRIPT_OOM, "OOM"),
        (redis.ResponseError("NOREPLICAS Not enough good replicas to write."), "NOREPLICAS"),
        (redis.ResponseError("WRONGTYPE Operation against a key"), None),
        (redis.ResponseError("ERR unknown command 'BOOM'"), None),
        (redis.ConnectionError("refused"), None),
    ],
)
def test_a_refusal_is_named_by_its_code(error: Exception, code: str | None) -> None:
    assert refused(error) == code
    assert held_back(error) is (code is not None or isinstance(error, redis.ConnectionError))


def test_a_refused_write_is_retried_counted_and_said_once() -> None:
    tries: list[int] = []

    def step() -> str:
        tries.append(1)
        if len(tries) < 4:
            raise OOM
        return "kept"

    before = REDIS_REFUSALS.labels("OOM")._value.get()
    with capture_logs() as logged:
        assert patiently("journal", step, until=float("inf"), sleep=lambda s: None) == "kept"
    assert len(tries) == 4
    assert REDIS_REFUSALS.labels("OOM")._value.get() - before == 3
    warned = [e for e in logged if e["log_level"] == "warning"]
    assert [e["event"] for e in warned] == ["redis_refused"]


def test_a_failovers_unblocked_is_held_not_a_refusal() -> None:
    """A BLPOP cut off by its Redis turning replica is waited out (the CLI's wait)."""
    unblocked = redis.ResponseError(
        "UNBLOCKED force unblock from blocking operation, instance state changed "
        "(master -> replica?)"
    )
    assert held_back(unblocked) and refused(unblocked) is None


def test_another_response_error_is_raised_at_once() -> None:
    def step() -> None:
        raise redis.ResponseError("WRONGTYPE Operation against a key")

    with pytest.raises(redis.ResponseError):
        patiently("journal", step, until=float("inf"), sleep=lambda s: None)
