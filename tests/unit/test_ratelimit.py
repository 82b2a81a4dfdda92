"""The shared rate limiter on fakeredis (tests/integration/test_ratelimit_real.py collects
these again on a real redis-server). Windows are shortened to about a second."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import fakeredis
import pytest
from redis.commands.core import Script

from council.roster.rate_limits import RateLimit
from workers.stores.keys import Keys
from workers.stores.ratelimit import RedisRateLimiter

KEYS = Keys("council:")
WINDOW_MS = 1000


@pytest.fixture
def client() -> Iterator[Any]:
    """An in-process fakeredis client (with Lua)."""
    yield fakeredis.FakeRedis(server=fakeredis.FakeServer())


class _Counting:
    """A client that counts the scripts run through it and passes everything on."""

    def __init__(self, client: Any) -> None:
        self.client, self.scripts = client, 0

    def register_script(self, script: str) -> Script:
        return Script(self, script)  # type: ignore[arg-type]

    def evalsha(self, *args: Any) -> Any:
        self.scripts += 1
        return self.client.evalsha(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


def _limiter(client: Any, window_ms: int = WINDOW_MS, **limits: RateLimit) -> RedisRateLimiter:
    named = {name.replace("__", ":"): limit for name, limit in limits.items()}
    return RedisRateLimiter(client, KEYS, named, window_ms=window_ms)


def _soon(seconds: float = 0.2) -> float:
    return time.monotonic() + seconds


def test_unlimited_key_is_admitted_at_once_without_touching_redis(client: Any) -> None:
    """A key no limit applies to is admitted even past its deadline, and writes nothing."""
    limiter = _limiter(client, openai=RateLimit(rpm=1, tpm=1))
    assert limiter.acquire("anthropic:claude-sonnet-4", 10**9, time.monotonic() - 1)
    limiter.correct("anthropic:claude-sonnet-4", 10**9, 1)
    assert client.dbsize() == 0


def test_many_threads_never_exceed_rpm_in_any_window(client: Any) -> None:
    """Twelve acquisitions from six threads against rpm=4: no window holds five admissions."""
    rpm, threads, each = 4, 6, 2
    limiter = _limiter(client, openai=RateLimit(rpm=rpm))
    seen: dict[bytes, float] = {}
    done = threading.Event()

    def sample() -> None:
        # Every admission stays in the server's log for a whole window: sampling it every
        # 20 ms collects each one with the server's own admission time.
        while not done.is_set():
            seen.update(client.zrange(KEYS.ratelimit_requests("openai"), 0, -1, withscores=True))
            time.sleep(0.02)
        seen.update(client.zrange(KEYS.ratelimit_requests("openai"), 0, -1, withscores=True))

    results: list[bool] = []

    def work() -> None:
        for _ in range(each):
            results.append(limiter.acquire("openai:gpt-4.1", 0, _soon(30)))

    sampler = threading.Thread(target=sample)
    sampler.start()
    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    done.set()
    sampler.join()
    assert results == [True] * threads * each
    admitted = sorted(seen.values())
    assert len(admitted) == threads * each
    spans = [admitted[i + rpm] - admitted[i] for i in range(len(admitted) - rpm)]
    assert min(spans) >= WINDOW_MS


def test_two_limiters_share_one_limit(client: Any) -> None:
    """Two workers' limiters on the same Redis count against the same rpm."""
    first = _limiter(client, openai=RateLimit(rpm=2))
    second = _limiter(client, openai=RateLimit(rpm=2))
    assert first.acquire("openai:m", 0, _soon())
    assert second.acquire("openai:m", 0, _soon())
    assert not first.acquire("openai:m", 0, _soon(0.05))
    assert not second.acquire("openai:m", 0, _soon(0.05))


def test_deadline_expiry_returns_false_after_waiting_until_it(client: Any) -> None:
    """With the window full, acquire waits until its deadline, then says not admitted."""
    limiter = _limiter(client, window_ms=2000, openai=RateLimit(rpm=1))
    assert limiter.acquire("openai:m", 0, _soon())
    started = time.monotonic()
    assert not limiter.acquire("openai:m", 0, started + 0.3)
    assert 0.3 <= time.monotonic() - started < 1.0


def test_past_deadline_still_gets_one_try(client: Any) -> None:
    """A deadline already passed is admitted when there is room, refused at once otherwise."""
    limiter = _limiter(client, openai=RateLimit(rpm=1))
    assert limiter.acquire("openai:m", 0, time.monotonic() - 1)
    started = time.monotonic()
    assert not limiter.acquire("openai:m", 0, time.monotonic() - 1)
    assert time.monotonic() - started < 0.1


def test_waiter_sleeps_until_the_window_frees(client: Any) -> None:
    """A blocked acquire is admitted once the window frees, after a few script runs only."""
    counting = _Counting(client)
    limiter = _limiter(counting, openai=RateLimit(rpm=1))
    assert limiter.acquire("openai:m", 0, _soon())
    started = time.monotonic()
    assert limiter.acquire("openai:m", 0, _soon(5))
    assert 0.9 <= time.monotonic() - started < 2.0
    assert counting.scripts <= 4


def test_tokens_per_minute_hold_back_until_the_window_frees(client: Any) -> None:
    """tpm=100: 60 then 50 waits; 40 fits at once; 10 more waits for the 60 to leave."""
    limiter = _limiter(client, openai=RateLimit(tpm=100))
    assert limiter.acquire("openai:m", 60, _soon())
    assert not limiter.acquire("openai:m", 50, _soon(0.1))
    assert limiter.acquire("openai:m", 40, _soon(0.1))
    started = time.monotonic()
    assert limiter.acquire("openai:m", 10, _soon(5))
    assert 0.7 <= time.monotonic() - started < 2.0


def test_settle_gives_back_unused_tokens(client: Any) -> None:
    """An admission settled below its estimate frees the difference at once."""
    limiter = _limiter(client, openai=RateLimit(tpm=100))
    assert limiter.acquire("openai:m", 80, _soon())
    assert not limiter.acquire("openai:m", 70, _soon(0.05))
    limiter.correct("openai:m", 80, 20)
    assert limiter.acquire("openai:m", 70, _soon(0.05))


def test_settle_counts_tokens_above_the_estimate(client: Any) -> None:
    """An admission settled above its estimate holds back the excess."""
    limiter = _limiter(client, openai=RateLimit(tpm=100))
    assert limiter.acquire("openai:m", 10, _soon())
    limiter.correct("openai:m", 10, 90)
    assert not limiter.acquire("openai:m", 20, _soon(0.05))
    assert limiter.acquire("openai:m", 10, _soon(0.05))


def test_settle_without_an_admission_counts_only_an_excess(client: Any) -> None:
    """Settling what this thread never acquired counts an excess and ignores a shortfall."""
    limiter = _limiter(client, openai=RateLimit(tpm=100))
    limiter.correct("openai:m", 50, 10)
    assert client.dbsize() == 0
    limiter.correct("openai:m", 0, 80)
    assert not limiter.acquire("openai:m", 30, _soon(0.05))
    assert limiter.acquire("openai:m", 20, _soon(0.05))


def test_request_above_tpm_is_admitted_alone(client: Any) -> None:
    """A request estimated above tpm is admitted into an empty window, then fills it."""
    limiter = _limiter(client, openai=RateLimit(tpm=100))
    assert limiter.acquire("openai:m", 500, _soon())
    assert not limiter.acquire("openai:m", 1, _soon(0.05))


def test_model_and_provider_limits_both_apply(client: Any) -> None:
    """A model's own limit and its provider's are both held; other models share the provider's."""
    limiter = _limiter(client, openai=RateLimit(rpm=2), openai__m1=RateLimit(rpm=1))
    assert limiter.acquire("openai:m1", 0, _soon())
    assert not limiter.acquire("openai:m1", 0, _soon(0.05))
    assert limiter.acquire("openai:m2", 0, _soon())
    assert not limiter.acquire("openai:m3", 0, _soon(0.05))


def test_keys_expire_one_window_after_the_last_admission(client: Any) -> None:
    """Both keys carry a TTL of at most one window and are gone once it passes."""
    limiter = _limiter(client, openai=RateLimit(rpm=5, tpm=100))
    assert limiter.acquire("openai:m", 10, _soon())
    for key in KEYS.ratelimit_keys("openai"):
        assert 0 < client.pttl(key) <= WINDOW_MS, key
    time.sleep(WINDOW_MS / 1000 + 0.1)
    # EXISTS, not DBSIZE: a real server counts an expired key in DBSIZE until its
    # active expiry cycle samples it; reading the key is what expires it for sure.
    assert client.exists(*KEYS.ratelimit_keys("openai")) == 0
    assert client.keys("*") == []


def test_rpm_only_limit_writes_no_tokens_key(client: Any) -> None:
    """A limit without tpm keeps only the requests log."""
    limiter = _limiter(client, openai=RateLimit(rpm=5))
    assert limiter.acquire("openai:m", 10, _soon())
    limiter.correct("openai:m", 10, 500)
    assert client.keys("*") == [KEYS.ratelimit_requests("openai").encode()]


def test_rate_limit_keys_are_under_the_prefix_and_distinct() -> None:
    """Rate-limit keys start with the prefix and collide with no run or session key."""
    keys = Keys("x:")
    limit = keys.ratelimit_keys("openai:gpt-4.1")
    others = keys.run_keys("r", ["p"], {"p": 1}) + keys.session_keys("s") + [keys.runs_index()]
    assert all(k.startswith("x:ratelimit:") for k in limit)
    assert len(set(limit)) == 2 and not set(limit) & set(others)


def test_window_must_be_positive(client: Any) -> None:
    """A window shorter than one millisecond is refused."""
    with pytest.raises(ValueError, match="window_ms"):
        _limiter(client, window_ms=0)
