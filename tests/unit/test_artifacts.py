"""The artifact store on fakeredis: refs, the run's scope, the caps, the run's retention
(the same tests run on a real redis-server in tests/integration/test_artifacts_real.py,
which re-collects them with another ``client``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import fakeredis
import pytest

from council.asks import checked_component
from council.errors import AskRefused, ConfigurationError
from tests.unit.test_stores import _participant, _record, _sessions, _settle
from workers.app.services import build_runtime
from workers.app.settings import Settings
from workers.stores.artifacts import (
    REF_PATTERN,
    ArtifactRefused,
    ArtifactStore,
    ArtifactTooLarge,
)
from workers.stores.keys import Keys

KEYS = Keys("council:")


@pytest.fixture
def client() -> Iterator[Any]:
    """An in-process fakeredis client (with Lua)."""
    yield fakeredis.FakeRedis(server=fakeredis.FakeServer())


def opened(client: Any, *runs: str) -> None:
    """Open each run as the council does (its record written with its opening TTL)."""
    sessions = _sessions(client)
    for run in runs:
        sessions.open_run(_record(run), [("reviewer", _participant(f"hawk-{run}"))], 2000)


def test_put_returns_a_fresh_ref_and_reads_back_bytes_and_json(client: Any) -> None:
    """A put returns art_ + 22 base62 characters, new each time; bytes come back as
    bytes and a JSON value as that value, with its kind and size in the head."""
    opened(client, "r1")
    store = ArtifactStore(client, KEYS)
    options = {"options": [f"owner-{i}" for i in range(200)], "title": "Qui possède ça ?"}
    blob = b"\x00\xffraw"
    as_json, as_bytes = store.put("r1", options), store.put("r1", blob)
    for ref in (as_json, as_bytes):
        assert REF_PATTERN.fullmatch(ref) and len(ref) == 26
    assert as_json != as_bytes
    got = store.get("r1", as_json)
    assert got is not None and got.kind == "json" and got.value() == options
    raw = store.get("r1", as_bytes)
    assert raw is not None and raw.kind == "bytes" and raw.value() == blob
    head = store.head("r1", as_json)
    assert head is not None and (head.kind, head.size) == ("json", len(got.data))
    assert store.total("r1") == len(got.data) + len(blob)
    assert store.get("r1", store.put("r1", "a string is JSON")) is not None


def test_a_ref_resolves_only_in_its_own_run(client: Any) -> None:
    """Another run's ref is unknown here: head, get and the ask's scope all say so."""
    opened(client, "r1", "r2")
    store = ArtifactStore(client, KEYS)
    ref = store.put("r1", {"a": 1})
    assert store.head("r2", ref) is None and store.get("r2", ref) is None
    assert not store.exists("r2", ref) and not store.scope("r2").resolves(ref)
    assert store.scope("r1").resolves(ref)
    value = {"component_id": "reviewer-choice-list", "props_ref": ref}
    assert checked_component(value, store.scope("r1"), door="d").props_ref == ref
    with pytest.raises(AskRefused) as caught:
        checked_component(value, store.scope("r2"), door="d")
    assert caught.value.code == "unresolved-ref"


def test_text_the_store_could_not_have_made_resolves_nowhere(client: Any) -> None:
    """A ref not of the store's form is never looked up: not the hash's other fields
    (``total``, ``{ref}:kind``), not a ref with its case or length changed."""
    opened(client, "r1")
    store = ArtifactStore(client, KEYS)
    ref = store.put("r1", b"x")
    for fake in ("total", f"{ref}:kind", ref.upper(), ref[:-1], ref + "0", f" {ref}", ""):
        assert store.head("r1", fake) is None, fake
        assert store.get("r1", fake) is None, fake
        assert not store.scope("r1").resolves(fake), fake


def test_an_artifact_over_the_cap_is_refused_naming_it(client: Any) -> None:
    """A put over the artifact cap is refused before anything is written; the error
    names the cap in bytes and the setting that raises it."""
    opened(client, "r1")
    store = ArtifactStore(client, KEYS, max_bytes=10)
    assert store.get("r1", store.put("r1", b"0123456789")) is not None
    with pytest.raises(ArtifactTooLarge) as caught:
        store.put("r1", b"0123456789A")
    assert (caught.value.size, caught.value.cap) == (11, 10)
    assert "COUNCIL_ARTIFACT_MAX_BYTES" in str(caught.value) and "10 bytes" in str(caught.value)
    assert isinstance(caught.value, ConfigurationError)
    with pytest.raises(ArtifactTooLarge):
        store.put("r1", "x" * 9)  # 11 bytes of JSON, quotes included
    assert store.total("r1") == 10


def test_a_run_s_artifacts_together_are_capped(client: Any) -> None:
    """Past the run's cap a put is refused (naming COUNCIL_ARTIFACT_RUN_MAX_BYTES) and
    nothing of it is stored; another run has its own allowance."""
    opened(client, "r1", "r2")
    store = ArtifactStore(client, KEYS, max_bytes=8, run_max_bytes=20)
    refs = [store.put("r1", b"12345678"), store.put("r1", b"12345678")]
    with pytest.raises(ArtifactTooLarge) as caught:
        store.put("r1", b"12345")
    assert caught.value.knob == "COUNCIL_ARTIFACT_RUN_MAX_BYTES"
    assert (caught.value.size, caught.value.cap) == (21, 20)
    assert store.total("r1") == 16
    assert len(client.hkeys(KEYS.run_artifacts("r1"))) == 2 * len(refs) + 1
    assert store.put("r1", b"1234") and store.put("r2", b"12345678")


def test_a_put_needs_a_live_run_and_a_json_value(client: Any) -> None:
    """An artifact belongs to a run: a run never opened (or expired) refuses the put and
    stores nothing; a value JSON cannot carry is refused too."""
    store = ArtifactStore(client, KEYS)
    with pytest.raises(ArtifactRefused, match="unknown or expired"):
        store.put("nobody", b"x")
    assert not client.exists(KEYS.run_artifacts("nobody"))
    opened(client, "r1")
    for bad in ({"a": float("nan")}, {"a": {1, 2}}, "lone \ud800"):
        with pytest.raises(ArtifactRefused):
            store.put("r1", bad)  # type: ignore[arg-type]
    assert store.total("r1") == 0


def test_artifacts_get_the_run_s_retention_when_it_settles(client: Any) -> None:
    """Before settling the artifacts hash has the run's opening TTL (its deadline plus
    the retention, like the run record); settling gives it the run retention; a put after
    settling keeps the run's remaining TTL."""
    opened(client, "r1")
    store = ArtifactStore(client, KEYS)
    ref = store.put("r1", {"a": 1})
    assert 600 < client.ttl(KEYS.run_artifacts("r1")) <= client.ttl(KEYS.run("r1")) + 1
    _settle(_sessions(client), _record("r1"), 1, 3000)
    assert 0 < client.ttl(KEYS.run_artifacts("r1")) <= 600
    client.delete(KEYS.run_artifacts("r1"))
    late = store.put("r1", b"after settling")
    assert 0 < client.ttl(KEYS.run_artifacts("r1")) <= 600
    assert store.get("r1", late) is not None and store.get("r1", ref) is None


def test_the_runtime_carries_the_store_with_the_settings_caps(client: Any) -> None:
    """build_runtime (embedded mode's too, on its fakeredis) gives an artifact store whose
    caps are COUNCIL_ARTIFACT_MAX_BYTES and COUNCIL_ARTIFACT_RUN_MAX_BYTES."""
    settings = Settings(artifact_max_bytes=4, artifact_run_max_bytes=6)
    rt = build_runtime(settings, client, mode="embedded")
    opened(client, "r1")
    ref = rt.artifacts.put("r1", b"1234")
    assert rt.artifacts.get("r1", ref) is not None
    with pytest.raises(ArtifactTooLarge, match="COUNCIL_ARTIFACT_MAX_BYTES"):
        rt.artifacts.put("r1", b"12345")
    with pytest.raises(ArtifactTooLarge, match="COUNCIL_ARTIFACT_RUN_MAX_BYTES"):
        rt.artifacts.put("r1", b"123")
    defaults = Settings()
    assert (defaults.artifact_max_bytes, defaults.artifact_run_max_bytes) == (2**20, 2**24)
