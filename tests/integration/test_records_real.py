"""Track records on a real redis-server: ``{prefix}records`` adds up (HINCRBY, a cost by
HINCRBYFLOAT), concurrent additions lose none, and a dismissal repeated counts once
(docs/ranking.md "Track records")."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from council.ranking.records import TrackRecord
from workers.stores.keys import Keys
from workers.stores.sessions import SessionStore
from workers.stores.track.records import RedisRecords

pytestmark = pytest.mark.integration

KEYS = Keys("test-records:")


def test_records_add_up_and_read_back(real_redis: Any) -> None:
    store = RedisRecords(real_redis, KEYS)
    store.add([TrackRecord(participant="hawk", identity="k1", confirmed=2, findings=5)])
    store.add(
        [TrackRecord(participant="hawk", identity="k1", dismissed=1, cost_usd=0.25, priced=True)]
    )
    store.add([TrackRecord(participant="hawk", identity="k2", confirmed=7)])
    held = store.all()
    first = held[("hawk", "k1")]
    assert (first.confirmed, first.dismissed, first.findings) == (2, 1, 5)
    assert first.priced and first.cost_usd == pytest.approx(0.25)
    assert held[("hawk", "k2")].confirmed == 7
    assert real_redis.ttl(KEYS.records()) == -1  # no expiry: retention never prunes it


def test_concurrent_additions_lose_none(real_redis: Any) -> None:
    store = RedisRecords(real_redis, KEYS)
    one = TrackRecord(participant="owl", identity="k", dismissed=1)

    def add_many() -> None:
        for _ in range(50):
            store.add([one])

    threads = [threading.Thread(target=add_many) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.all()[("owl", "k")].dismissed == 200


def test_a_repeated_dismissal_counts_once(real_redis: Any) -> None:
    sessions = SessionStore(real_redis, KEYS, session_retention_s=60, run_retention_s=60)
    against = [TrackRecord(participant="hawk", identity="k", dismissed=1)]
    first = sessions.dismiss("s", "f" * 64, "no", 1, records=against)
    again = sessions.dismiss("s", "f" * 64, "still no", 2, records=against)
    assert (first, again) == (True, False)
    assert RedisRecords(real_redis, KEYS).all()[("hawk", "k")].dismissed == 1
    assert sessions.dismissals("s")["f" * 64].reason == "still no"
