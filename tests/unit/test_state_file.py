"""The embedded state file (workers/stores/state_file.py): the three-way merge of a save,
sessions other processes saved meanwhile kept, and the session locks."""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import fakeredis
import pytest

from workers.stores.keys import Keys
from workers.stores.state_file import (
    MISSING,
    StateFileError,
    load_state,
    lock_sessions,
    merged,
    read_sessions,
    save_state,
)

KEYS = Keys("council:")


def _ledger(name: str) -> str:
    """A session's ledger (the JSON a load checks) of one reviewer named ``name``."""
    who = {"id": name, "role": "reviewer", "backend": "replay", "model": "recorded"}
    return json.dumps([who])


@pytest.mark.parametrize(
    ("base", "ours", "theirs", "expected"),
    [
        (1, 1, 2, 2),  # only they changed it
        (1, 3, 1, 3),  # only we did
        (1, 3, 3, 3),  # both, alike
        (1, 3, 2, 3),  # both, differently: this save's wins
        (MISSING, 3, MISSING, 3),  # we added it
        (1, MISSING, 1, MISSING),  # we removed it, they left it
        (1, MISSING, 2, 2),  # we removed it, they changed it: kept
        (1, 1, MISSING, MISSING),  # they removed it
        ({"a": 1, "b": 1}, {"a": 2, "b": 1}, {"a": 1, "b": 2}, {"a": 2, "b": 2}),
        ({"a": 1}, {"a": 1, "x": 5}, {"y": 6}, {"y": 6, "x": 5}),
        (MISSING, {"a": 1}, {"b": 2}, {"b": 2, "a": 1}),  # both added one object
    ],
)
def test_merged_is_a_three_way_merge(base: Any, ours: Any, theirs: Any, expected: Any) -> None:
    """A side that did not change a value yields the other's; objects merge key by key;
    where both changed one value this save's wins, but nothing the other changed is lost
    to a removal."""
    assert merged(base, ours, theirs) == expected


def _client() -> Any:
    return fakeredis.FakeRedis(server=fakeredis.FakeServer())


def test_two_saves_from_one_loaded_file_keep_each_others_sessions(tmp_path: Path) -> None:
    """Two processes load the same file, each files its own session, both save: the
    file holds both (the second save merges with what the first wrote)."""
    path = tmp_path / "state.json"
    first, second = _client(), _client()
    loaded_first = load_state(first, KEYS, path)
    loaded_second = load_state(second, KEYS, path)
    first.set(KEYS.session_ledger("repo-a#main"), _ledger("a"))
    first.incrby(KEYS.session_issued("repo-a#main"), 3)
    second.set(KEYS.session_ledger("repo-b#main"), _ledger("b"))
    save_state(first, KEYS, path, loaded_first)
    save_state(second, KEYS, path, loaded_second)
    sessions = read_sessions(path)
    assert sorted(sessions) == ["repo-a#main", "repo-b#main"]
    a = sessions["repo-a#main"]
    assert (a["ledger"], a["issued"]) == (_ledger("a"), 3)
    assert sessions["repo-b#main"]["ledger"] == _ledger("b")


def test_a_dismissal_saved_during_a_review_of_its_session_is_kept(tmp_path: Path) -> None:
    """A short command's change to a session (a dismissal) saved while a review of the
    same session ran is kept when the review saves its filing: merged key by key."""
    path = tmp_path / "state.json"
    seed = _client()
    seed.set(KEYS.session_ledger("s"), _ledger("s"))
    save_state(seed, KEYS, path)
    review, dismiss = _client(), _client()
    loaded_review = load_state(review, KEYS, path)
    loaded_dismiss = load_state(dismiss, KEYS, path)
    dismiss.hset(KEYS.session_dismissed("s"), "f" * 64, '{"reason": "validated upstream"}')
    save_state(dismiss, KEYS, path, loaded_dismiss)
    review.hset(KEYS.session_findings("s"), "1", '{"subject": "x"}')
    review.incrby(KEYS.session_issued("s"), 1)
    save_state(review, KEYS, path, loaded_review)
    session = read_sessions(path)["s"]
    assert list(session["dismissed"]) == ["f" * 64]
    assert (session["findings"], session["issued"]) == ({"1": '{"subject": "x"}'}, 1)


def test_a_save_that_changes_nothing_writes_nothing(tmp_path: Path) -> None:
    """Loading and saving an unchanged state leaves the file as it was (another
    process's file, byte for byte)."""
    path = tmp_path / "state.json"
    seed = _client()
    seed.set(KEYS.session_ledger("s"), _ledger("old"))
    save_state(seed, KEYS, path)
    before = path.read_bytes()
    reader = _client()
    loaded = load_state(reader, KEYS, path)
    theirs = before.replace(b"old", b"new")
    path.write_bytes(theirs)  # another process saved since
    save_state(reader, KEYS, path, loaded)
    assert path.read_bytes() == theirs


def test_an_unreadable_file_names_itself(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text('{"version": 7, "sessions": {}}')
    with pytest.raises(StateFileError, match=str(path)):
        load_state(_client(), KEYS, path)


HOLDER = """
import sys
import time
from pathlib import Path
from workers.stores.state_file import lock_sessions
held = lock_sessions(Path(sys.argv[1]), sys.argv[2])
print("held", flush=True)
sys.stdin.readline()
"""


def test_a_session_lock_is_one_sessions(tmp_path: Path) -> None:
    """While another process holds session A's lock, session B's is taken at once; A's
    is not (a non-blocking try fails); a writer naming no session would wait for A."""
    path = tmp_path / "state.json"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), "repo-a#main"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        (other,) = lock_sessions(path, "repo-b#main")
        other.close()
        locks = sorted((path.parent / "state.json.locks").iterdir())
        assert len(locks) == 2
        busy = []
        for lock in locks:
            with lock.open("ab") as handle:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    busy.append(lock.name)
        assert len(busy) == 1  # A's, held by the other process
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()


def _write(path: Path, sessions: dict[str, Any]) -> None:
    path.write_text(json.dumps({"version": 1, "sessions": sessions}))


def _saved(ledger: str, expires_ms: int | None) -> dict[str, Any]:
    session: dict[str, Any] = {
        "issued": 1,
        "ledger": ledger,
        "findings": {},
        "attributed": [],
        "fingerprints": {},
    }
    if expires_ms is not None:
        session["expires_ms"] = expires_ms
    return session


def test_a_session_past_its_retention_is_not_loaded_and_the_next_save_drops_it(
    tmp_path: Path,
) -> None:
    """The file keeps what retention keeps (as Redis's TTL would): a session whose
    ``expires_ms`` has passed is not loaded, and a save (of another session) removes it;
    a live session keeps its expiry."""
    path = tmp_path / "state.json"
    now = int(time.time() * 1000)
    old, live = _saved(_ledger("old"), now - 1), _saved(_ledger("live"), now + 60_000)
    _write(path, {"old": old, "live": live})
    client = _client()
    loaded = load_state(client, KEYS, path, retention_ms=3_600_000)
    assert client.get(KEYS.session_ledger("old")) is None
    assert client.get(KEYS.session_ledger("live")) == _ledger("live").encode()
    assert client.pexpiretime(KEYS.session_ledger("live")) == now + 60_000
    client.set(KEYS.session_ledger("new"), _ledger("new"))
    client.expire(KEYS.session_ledger("new"), 3600)
    save_state(client, KEYS, path, loaded)
    sessions = read_sessions(path)
    assert sorted(sessions) == ["live", "new"]
    assert sessions["live"]["expires_ms"] == now + 60_000
    assert sessions["new"]["expires_ms"] > now


def test_a_session_saved_before_expiries_gets_the_retention_from_its_first_load(
    tmp_path: Path,
) -> None:
    """A file written before sessions carried ``expires_ms`` still loads; its sessions
    are given ``retention_ms`` from the load and saved with it, so they expire too."""
    path = tmp_path / "state.json"
    _write(path, {"s": _saved(_ledger("s"), None)})
    before = int(time.time() * 1000)
    client = _client()
    loaded = load_state(client, KEYS, path, retention_ms=3_600_000)
    expires = client.pexpiretime(KEYS.session_ledger("s"))
    assert before + 3_600_000 <= expires <= int(time.time() * 1000) + 3_600_000
    save_state(client, KEYS, path, loaded)
    assert read_sessions(path)["s"]["expires_ms"] == expires


def test_a_review_loads_its_own_session_only_and_keeps_the_others(tmp_path: Path) -> None:
    """``only``: the other sessions are neither loaded (a file of many sessions costs a
    review its own) nor lost or changed by the save."""
    path = tmp_path / "state.json"
    far = int(time.time() * 1000) + 3_600_000
    _write(path, {f"s{i}": _saved(_ledger(f"r{i}"), far) for i in range(50)})
    client = _client()
    loaded = load_state(client, KEYS, path, only="s7")
    assert [k.decode() for k in client.scan_iter(match="*ledger")] == [KEYS.session_ledger("s7")]
    client.set(KEYS.session_ledger("s7"), _ledger("r7, filed"))
    save_state(client, KEYS, path, loaded)
    sessions = read_sessions(path)
    assert len(sessions) == 50
    assert sessions["s7"]["ledger"] == _ledger("r7, filed")
    assert sessions["s8"] == _saved(_ledger("r8"), far)
