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
from workers.stores.track.records import RedisRecords, add_acted

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


def test_an_outdated_finding_counts_acted_once_however_often_filed(real_redis: Any) -> None:
    """Eight filings (a redelivered settle, a later round) of finding 7 gone outdated, from
    four threads at once: its raisers' ``acted`` is counted once; finding 8 once too."""
    acted = {
        7: [TrackRecord(participant="hawk", identity="k", acted=1)],
        8: [
            TrackRecord(participant="hawk", identity="k", acted=1),
            TrackRecord(participant="owl", identity="k", acted=1),
        ],
    }

    def file_twice(run_id: str) -> None:
        for _ in range(2):
            pipe = real_redis.pipeline(transaction=True)
            add_acted(pipe, KEYS, "s", run_id, acted)
            pipe.execute()

    threads = [threading.Thread(target=file_twice, args=(f"r{n}",)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    held = RedisRecords(real_redis, KEYS).all()
    assert (held[("hawk", "k")].acted, held[("owl", "k")].acted) == (2, 1)
    assert sorted(real_redis.hkeys(KEYS.session_acted("s"))) == [b"7", b"8"]
