"""A crafted embedded state file (workers/stores/state_shape.py): a field of the wrong
type or out of range, a string that is not what the stores read, a file too deep or too
big, is refused with the field named (exit 2), never a traceback, and nothing of it is
loaded or pruned. Source: docs/architecture.md "Embedded state"."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

import fakeredis
import pytest

from tests.unit.test_cli_rounds import Session
from workers.stores import state_shape
from workers.stores.keys import Keys
from workers.stores.state_file import StateFileError, load_state, save_state

KEYS = Keys("council:")
FAR = int(time.time() * 1000) + 3_600_000


def _valid() -> dict[str, Any]:
    return {
        "expires_ms": FAR,
        "issued": 2,
        "ledger": "[]",
        "findings": {},
        "attributed": [],
        "fingerprints": {},
        "reviewed": {},
        "recall": "",
        "dismissed": {},
        "waiting": {},
        "answers": {},
        "acted": {},
        "runs": {},
    }


def _client() -> Any:
    return fakeredis.FakeRedis(server=fakeredis.FakeServer())


CRAFTED = [
    ("expires_ms", 10**30, "expires_ms is 1000000000000000000000000000000, outside"),
    ("expires_ms", True, "expires_ms is true, not an integer"),
    ("expires_ms", -1, "expires_ms is -1, outside"),
    ("issued", {}, "issued is {}, not an integer"),
    ("issued", 10**30, "issued is 1000000000000000000000000000000, outside"),
    ("issued", False, "issued is false, not an integer"),
    ("findings", [1, 2], "findings is not an object"),
    ("findings", {"a": {"b": 1}}, 'findings["a"] is not a string'),
    ("reviewed", {"run": 5, "head": None}, 'reviewed["run"] is not a string'),
    ("waiting", {"r1": "not json"}, 'waiting["r1"] cannot be read'),
    ("findings", {"1": '{"subject": "x"}'}, 'findings["1"] cannot be read'),
    ("ledger", "not a ledger", "ledger cannot be read"),
    ("attributed", [1], "attributed is not a list of strings"),
    (
        "runs",
        {"r": {"expires_ms": 10**30, "keys": {"run:r": {"type": "string", "value": "YQ=="}}}},
        'runs["r"].expires_ms is 1000000000000000000000000000000, outside',
    ),
    (
        "runs",
        {"r": {"expires_ms": None, "keys": {"session:x:ledger": {"type": "string", "value": ""}}}},
        'runs["r"].keys["session:x:ledger"] is not a key of run "r"',
    ),
]


@pytest.mark.parametrize(("field", "value", "said"), CRAFTED)
def test_a_crafted_field_is_refused_naming_it_and_nothing_is_loaded_or_pruned(
    tmp_path: Path, field: str, value: Any, said: str
) -> None:
    """Before: redis errors, pydantic errors and tracebacks at load or later in the
    review, and ``expires_ms: true`` silently counted as expired (a bool is an int), so
    the session's ledger and dismissals were dropped by the next save."""
    path = tmp_path / "state.json"
    session = {**_valid(), field: value}
    path.write_text(json.dumps({"version": 1, "sessions": {"s": session, "other": _valid()}}))
    before = path.read_bytes()
    client = _client()
    with pytest.raises(StateFileError) as raised:
        load_state(client, KEYS, path, only="s")
    message = str(raised.value)
    assert str(path) in message and f'sessions["s"].{said}' in message
    assert "fix or remove that field" in message
    assert list(client.scan_iter()) == []
    with contextlib.suppress(StateFileError):  # a wrong type: refused; else unchanged
        save_state(client, KEYS, path, {})
    assert path.read_bytes() == before


def test_a_valid_session_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"version": 1, "sessions": {"s": _valid()}}))
    client = _client()
    load_state(client, KEYS, path)
    assert client.get(KEYS.session_issued("s")) == b"2"


@pytest.mark.parametrize("depth", [100, 100_000])
def test_a_file_nested_too_deep_is_refused(tmp_path: Path, depth: int) -> None:
    """Before: 100,000 levels were a RecursionError traceback."""
    path = tmp_path / "state.json"
    path.write_text('{"version": 1, "sessions": {}, "x": ' + "[" * depth + "]" * depth + "}")
    with pytest.raises(StateFileError, match="nests deeper than the 64 levels allowed"):
        load_state(_client(), KEYS, path)


def test_a_file_over_the_cap_is_refused_saying_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file was read whole, however big; it is read up to the cap (256 MiB; 1 KiB
    here) and refused past it."""
    monkeypatch.setattr(state_shape, "MAX_STATE_BYTES", 1024)
    path = tmp_path / "state.json"
    sessions = {f"s{i}": _valid() for i in range(20)}
    path.write_text(json.dumps({"version": 1, "sessions": sessions}))
    with pytest.raises(StateFileError, match="the file is over the 1,024 bytes council reads"):
        load_state(_client(), KEYS, path)


def test_boolean_track_records_are_not_loaded(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    records = {"owl\x1fr\x1frounds": True, "owl\x1fr\x1fupheld": 2}
    path.write_text(json.dumps({"version": 1, "sessions": {}, "records": records}))
    client = _client()
    load_state(client, KEYS, path)
    assert client.hgetall(KEYS.records()) == {b"owl\x1fr\x1fupheld": b"2"}


def test_council_review_on_a_crafted_state_file_exits_2_naming_the_field(tmp_path: Path) -> None:
    session = Session(tmp_path)
    session.state.write_text(
        json.dumps({"version": 1, "sessions": {"s": {**_valid(), "expires_ms": True}}})
    )
    before = session.state.read_bytes()
    done, report = session.review()
    assert done.exit_code == 2 and report is None
    assert 'sessions["s"].expires_ms is true, not an integer' in done.output
    assert "Traceback" not in done.output
    assert session.state.read_bytes() == before
