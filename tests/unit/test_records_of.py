"""Settling reads the track records of its reviewers only (one HMGET), the same records
the whole hash holds for them: the read no longer grows with every reviewer ever seen."""

from __future__ import annotations

import fakeredis
from hypothesis import given, settings
from hypothesis import strategies as st

from council.model.participant import Participant
from council.ranking.records import COUNTS, ID_ONLY, TrackRecord, record_for, record_keys
from workers.stores.keys import Keys
from workers.stores.track.records import RedisRecords

PEOPLE = ("hawk", "owl", "wren")
IDENTITIES = ("aaaa", "bbbb", ID_ONLY)

records = st.builds(
    lambda who, ident, counts, cost: TrackRecord(
        participant=who, identity=ident, cost_usd=cost, priced=cost > 0, **counts
    ),
    st.sampled_from(PEOPLE),
    st.sampled_from(IDENTITIES),
    st.fixed_dictionaries({name: st.integers(0, 5) for name in COUNTS}),
    st.sampled_from([0.0, 0.25]),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(records, max_size=12), st.sets(st.sampled_from(PEOPLE)))
def test_the_records_of_some_pairs_are_those_the_whole_hash_holds_for_them(
    held: list[TrackRecord], asked: set[str]
) -> None:
    store = RedisRecords(fakeredis.FakeRedis(server=fakeredis.FakeServer()), Keys("t:"))
    store.add(held)
    pairs = [(who, ident) for who in sorted(asked) for ident in IDENTITIES]
    whole = store.all()
    assert store.of(pairs) == {pair: r for pair, r in whole.items() if pair in pairs}


def test_a_reviewer_gets_the_same_record_from_its_keys_as_from_the_whole_hash() -> None:
    """record_keys names what record_for reads: the identity's record and the id-only one."""
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    store = RedisRecords(client, Keys("t:"))
    hawk = Participant(id="hawk", backend="replay")
    own = record_keys(hawk.identity())
    assert own[-1] == ID_ONLY and len(own) == 2
    store.add(
        [
            TrackRecord(participant="hawk", identity=own[0], findings=3, rounds=1),
            TrackRecord(participant="hawk", identity=ID_ONLY, confirmed=2),
            TrackRecord(participant="owl", identity=own[0], findings=9),
        ]
    )
    read = store.of([("hawk", key) for key in own])
    assert ("owl", own[0]) not in read
    got = record_for(read, "hawk", hawk.identity())
    assert got == record_for(store.all(), "hawk", hawk.identity())
    assert (got.findings, got.confirmed, got.rounds) == (3, 2, 1)
    assert record_keys(None) == (ID_ONLY,)
