"""The embedded state file: embedded mode's sessions, kept in one JSON file between runs.

Embedded mode's stores are an in-process fakeredis, so identities and finding ids would
die with the process; the sessions (ledger, findings, the id counter, reported
fingerprints, the last reviewed head, the recall, dismissals, runs waiting on a person,
the findings counted as acted on) are loaded from ``PATH`` before a run and saved after
it, atomically (a temporary file renamed over it: a reader never sees half a file).

Two embedded reviews of different sessions run at once; two of one session take turns.
So a review holds its session's lock (``PATH.locks/<digest>``, :func:`lock_sessions`) for
its whole run, and a save holds the file's lock (``PATH.lock``, :func:`lock_file`) only
while it reads the file again, merges and writes: each session is merged three ways
(:func:`merged`) between what this process loaded, what it holds now and what the file
holds now, so a session another process saved meanwhile is kept, and so is what a short
command (``council dismiss``) added to this very session while the review ran, key by
key. A writer that cannot name its session before loading (``council answer`` finds its
ask in any session) holds every session's lock instead. A council of the time before
session locks holds ``PATH.lock`` for its whole run: a save of this one waits for it.
Lock files stay (one empty file per session ever locked): removing a file another
process may be waiting on would let a third lock a new file of the same name.

Each session carries ``expires_ms``, when its retention ends (``session_retention_s``
after its last review or dismissal, as Redis's TTL would): a load skips a session past
it and the next save drops it from the file, so the file holds what retention keeps, not
every session a machine ever reviewed. A review loads its own session only.

A file too big or too deep, or a session of the wrong shape, is refused naming the field
(:mod:`workers.stores.state_shape`, :func:`bad_state`): nothing of it is loaded or pruned.

Source: docs/architecture.md "Embedded state".
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import fcntl
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from council.errors import ConfigurationError, IncompleteError
from workers.app.clock import now_ms
from workers.stores.keys import Keys
from workers.stores.state_shape import (
    MAX_DEPTH,
    MAX_STATE_BYTES,
    BadState,
    check_contents,
    check_sessions,
    read_document,
)

STATE_VERSION = 1
"""Version of the embedded state file's shape."""

Sessions = dict[str, Any]
"""The file's ``sessions`` object: session → its saved keys (see :func:`save_state`)."""


class StateFileError(ConfigurationError, ValueError):
    """The embedded state file cannot be read (exit 2; the message names the file)."""


class StateNotSaved(IncompleteError):
    """The embedded state file could not be written (a full disk, a file size limit):
    exit 3; the message names the file and what it still holds."""


TEMP_PREFIX = ".state-"
"""The prefix of a save's temporary file, beside the state file."""

STALE_TEMP_S = 60.0
"""A temporary file of a save this many seconds old was left by a save killed mid-write
(a save takes well under a second): the next save removes it."""


class _Missing:
    """What a merge reads where a value is absent (a session or key on one side only)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def merged(base: Any, ours: Any, theirs: Any) -> Any:
    """The three-way merge of one JSON value: ``base`` as this process loaded it, ``ours``
    as it holds it now, ``theirs`` as the file holds it now (:data:`MISSING` where absent).

    A side that did not change it yields the other's; objects are merged key by key (a
    key one side removed and the other left alone is removed); where both changed one
    value (a string, a number, a list) this save's wins, except that a value the other
    side changed is never removed. Pure; never raises.
    """
    if ours == base:
        return theirs
    if theirs in (base, ours):
        return ours
    if isinstance(ours, dict) and isinstance(theirs, dict):
        start = base if isinstance(base, dict) else {}
        out: dict[str, Any] = {}
        for key in dict.fromkeys([*theirs, *ours]):
            here = (start.get(key, MISSING), ours.get(key, MISSING), theirs.get(key, MISSING))
            value = merged(*here)
            if value is not MISSING:
                out[key] = value
        return out
    return theirs if ours is MISSING else ours


def _refuse_links(path: Path, *others: Path) -> None:
    for file in (path, *others):
        if file.is_symlink():
            raise StateFileError(
                f"the embedded state file {path} cannot be used: {file} is a symbolic "
                f"link, and council does not read or write its state through links; pass "
                f"--state with a path outside the checkout"
            )


def _locked(path: Path, lock: Path, waiting: str | None) -> tuple[IO[bytes], bool]:
    """An exclusive ``flock`` on ``lock`` (opened with ``O_NOFOLLOW``: opening a dangling
    link would create its target), and whether it had to wait: when another process
    holds it, ``waiting`` (unless None) is said on stderr and the call waits."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
        handle = os.fdopen(fd, "ab")
    except OSError as exc:
        raise StateFileError(
            f"the embedded state file {path} cannot be used ({exc.strerror}: "
            f"{exc.filename}); pass --state with a path in a writable folder"
        ) from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        if waiting is not None:
            print(f"council: {waiting}", file=sys.stderr, flush=True)
        fcntl.flock(handle, fcntl.LOCK_EX)
        return handle, True
    return handle, False


def lock_file(path: Path) -> IO[bytes]:
    """Hold the state file's own lock (``PATH.lock``) until the returned handle is closed.

    Raises :class:`StateFileError` when the file's folder cannot be made or written, or
    the file or its lock is a symbolic link.
    """
    lock = path.parent / (path.name + ".lock")
    _refuse_links(path, lock)
    return _locked(path, lock, f"waiting for another embedded run to release {path}")[0]


DIGEST_CHARS = 32
"""Hex characters of a session lock's name (of the SHA-256 of the session's name)."""


def lock_sessions(path: Path, session: str | None) -> list[IO[bytes]]:
    """Hold session locks of the state file ``path`` until the handles are closed: the
    lock of ``session`` (another embedded run of it waits, and says so on stderr; runs of
    other sessions do not), or with None every session's lock there is, in one order
    (for a writer that learns which session it changes only once it has read the file:
    it waits for every review running on this file). Take them before :func:`lock_file`,
    never while holding it: a save takes that one while holding its session's. Raises as
    :func:`lock_file`.
    """
    folder = path.parent / (path.name + ".locks")
    _refuse_links(path, folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        names = sorted(
            p.name
            for p in folder.iterdir()
            if len(p.name) == DIGEST_CHARS and all(c in "0123456789abcdef" for c in p.name)
        )
    except OSError as exc:
        raise StateFileError(
            f"the embedded state file {path} cannot be used ({exc.strerror}: "
            f"{exc.filename}); pass --state with a path in a writable folder"
        ) from None
    _refuse_links(path, folder)
    if session is not None:
        digest = hashlib.sha256(session.encode("utf-8", "surrogateescape")).hexdigest()
        waiting = f"waiting for another embedded run of session {session!r} to finish ({path})"
        return [_locked(path, folder / digest[:DIGEST_CHARS], waiting)[0]]
    held: list[IO[bytes]] = []
    said: str | None = f"waiting for the embedded runs on {path} to finish"
    try:
        for name in names:  # said once, at the first lock another process holds
            handle, waited = _locked(path, folder / name, said)
            held.append(handle)
            said = None if waited else said
    except BaseException:
        for handle in held:
            handle.close()
        raise
    return held


def _sessions(client: Any, keys: Keys) -> set[str]:
    marker = f"{keys.prefix}session:"
    found: set[str] = set()
    for tail in (":ledger", ":dismissed", ":reviewed", ":waiting", ":answers"):
        # A session may hold only dismissals (council dismiss before its first review).
        for raw in client.scan_iter(match=f"{marker}*{tail}"):
            name = raw.decode()
            found.add(name[len(marker) : -len(tail)])
    return found


def _hash(client: Any, key: str) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in client.hgetall(key).items()}


def _asking_runs(client: Any, keys: Keys, session: str) -> list[str]:
    """The session's waiting runs whose reviewers asked a person: their keys are kept in
    the state file (the paused conversations, the tree, the artifacts), since the run
    goes on in a later process."""
    found: list[str] = []
    for run_id, raw in _hash(client, keys.session_waiting(session)).items():
        asks = json.loads(raw).get("report", {}).get("asks", [])
        if any(isinstance(a, dict) and a.get("participant") and not a.get("answer") for a in asks):
            found.append(run_id)
    return sorted(found)


def _snapshot(client: Any, keys: Keys, run_id: str, now: int) -> dict[str, Any]:
    """Every key of one run (``run:{id}`` and ``run:{id}:…``) as JSON: name without the
    prefix → ``{type, value}``, bytes in base64 (strings, hashes, lists: the kinds a run
    holds; its journals' entry-id sets are left out, needed only while an attempt runs),
    and when the run expires (ms since the epoch; None: no TTL)."""
    tail = client.scan_iter(match=keys.run(run_id) + ":*")
    names = [keys.run(run_id), *(k.decode() for k in tail)]
    out: dict[str, Any] = {}
    for name in names:
        kind = client.type(name).decode()
        if kind == "string":
            value: Any = _b64(client.get(name))
        elif kind == "hash":
            value = {_b64(k): _b64(v) for k, v in client.hgetall(name).items()}
        elif kind == "list":
            value = [_b64(v) for v in client.lrange(name, 0, -1)]
        else:
            continue
        out[name[len(keys.prefix) :]] = {"type": kind, "value": value}
    ttl = int(client.pttl(keys.run(run_id)))
    return {"expires_ms": now + ttl if ttl > 0 else None, "keys": out}


def _restore(client: Any, keys: Keys, saved: dict[str, Any], now: int) -> None:
    """Put a run's :func:`_snapshot` back; nothing when it expired meanwhile."""
    expires = saved.get("expires_ms")
    if expires is not None and expires <= now:
        return
    for name, item in saved["keys"].items():
        full, value = keys.prefix + name, item["value"]
        if item["type"] == "string":
            client.set(full, _unb64(value))
        elif item["type"] == "hash" and value:
            client.hset(full, mapping={_unb64(k): _unb64(v) for k, v in value.items()})
        elif item["type"] == "list" and value:
            client.rpush(full, *(_unb64(v) for v in value))
        if expires is not None:
            client.pexpireat(full, expires)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"))


def held_sessions(client: Any, keys: Keys) -> Sessions:
    """The sessions ``client`` holds, as the file keeps them: each session's ledger,
    findings, id counter, reported fingerprints, last reviewed run, recall
    (:mod:`council.session.remembered`) and dismissals.

    The last four, and the runs waiting on a person with the answers given to them,
    were added after version 1 was first written; they are optional in the file, so an
    older file still loads and an older council ignores them. So is ``runs``: the keys
    of each waiting run whose reviewers asked a person (:func:`_snapshot`), which a later
    ``council review`` or ``council resume`` continues; they expire with the run. So is
    ``acted``: the outdated findings whose raisers' ``acted`` was counted (once each).
    """
    now = now_ms()
    sessions: Sessions = {}
    for s in sorted(_sessions(client, keys)):
        sessions[s] = {
            "expires_ms": _expires_ms(client, keys, s),
            "issued": int(client.get(keys.session_issued(s)) or 0),
            "ledger": (client.get(keys.session_ledger(s)) or b"").decode(),
            "findings": _hash(client, keys.session_findings(s)),
            "attributed": sorted(m.decode() for m in client.smembers(keys.session_attributed(s))),
            "fingerprints": _hash(client, keys.session_fingerprints(s)),
            "reviewed": _hash(client, keys.session_reviewed(s)),
            "recall": (client.get(keys.session_recall(s)) or b"").decode(),
            "dismissed": _hash(client, keys.session_dismissed(s)),
            "waiting": _hash(client, keys.session_waiting(s)),
            "answers": _hash(client, keys.session_answers(s)),
            "acted": _hash(client, keys.session_acted(s)),
            "runs": {r: _snapshot(client, keys, r, now) for r in _asking_runs(client, keys, s)},
        }
    return sessions


def _session_keys(keys: Keys, s: str) -> list[str]:
    return [
        keys.session_issued(s),
        keys.session_ledger(s),
        keys.session_findings(s),
        keys.session_attributed(s),
        keys.session_recall(s),
        keys.session_fingerprints(s),
        keys.session_reviewed(s),
        keys.session_dismissed(s),
        keys.session_waiting(s),
        keys.session_answers(s),
        keys.session_acted(s),
    ]


def _expires_ms(client: Any, keys: Keys, s: str) -> int | None:
    """When the session's retention ends (ms since the epoch): the latest expiry of its
    keys; None when none of them has one."""
    found = [int(client.pexpiretime(k)) for k in _session_keys(keys, s)]
    return max((t for t in found if t > 0), default=None)


def _expired(saved: Any, now: int) -> bool:
    expires = saved.get("expires_ms") if isinstance(saved, dict) else None
    return isinstance(expires, int) and expires <= now


def read_sessions(path: Path) -> Sessions:
    """The sessions the file at ``path`` holds now ({} when there is no file). Raises
    :class:`StateFileError` naming the file when it cannot be read."""
    if not path.exists():
        return {}
    try:
        data = read_document(path)
        if data.get("version") != STATE_VERSION:
            raise ValueError(f"version {data.get('version')!r}, expected {STATE_VERSION}")
        sessions = data["sessions"]
        if not isinstance(sessions, dict):
            raise TypeError("its sessions are not an object")
        check_sessions(sessions)
        return sessions
    except BadState as exc:
        raise bad_state(path, exc) from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StateFileError(
            f"the embedded state file {path} cannot be read ({exc}); move it away to "
            f"start fresh, or pass --state PATH"
        ) from None


def bad_state(path: Path, exc: BadState) -> StateFileError:
    """The error for a state file of the wrong shape: the file, the field, how to fix it."""
    fix = "" if exc.where == "the file" else "fix or remove that field, "
    return StateFileError(
        f"the embedded state file {path} cannot be read: {exc.where} {exc.what}. Nothing "
        f"was loaded from it and it is left as it is (a state file is at most "
        f"{MAX_STATE_BYTES // (1024 * 1024)} MiB, nests at most {MAX_DEPTH} levels, and "
        f"holds integer times and counters, never booleans); {fix}move the file away to "
        "start fresh, or pass --state PATH"
    )


def save_state(
    client: Any, keys: Keys, path: Path, loaded: Sessions | None = None, *, locked: bool = False
) -> None:
    """Save the sessions ``client`` holds into ``path``, merged with what the file holds
    now (:func:`merged`, per session; ``loaded`` is what :func:`load_state` read, None:
    nothing); atomic. Takes the file's lock while it reads, merges and writes, unless
    the caller holds it (``locked``). Writes nothing when the merge changes nothing.
    Raises :class:`StateFileError` when the file became unreadable meanwhile.
    """
    ours = held_sessions(client, keys)
    lock = None if locked else lock_file(path)
    try:
        theirs = read_sessions(path)
        now = now_ms()
        result = {
            s: v for s, v in merged(loaded or {}, ours, theirs).items() if not _expired(v, now)
        }
        added = _records_added(client, keys)
        if result == theirs and not added and path.exists():
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        _clean_stale_temps(path.parent)
        kept = _records_now(path)
        if added:
            held = dict(kept.get("records", {}))
            for name, amount in added.items():
                held[name] = 1 if name.endswith("\x1fpriced") else held.get(name, 0) + amount
            kept = {"records": held}
        _write_atomically(path, {"version": STATE_VERSION, "sessions": result, **kept})
        if added:  # saved: a second save of this process adds only what came after
            client.delete(keys.records_loaded())
            held_now = client.hgetall(keys.records())
            if held_now:
                client.hset(keys.records_loaded(), mapping=held_now)
    finally:
        if lock is not None:
            lock.close()


def _amounts(client: Any, key: str) -> dict[str, float]:
    raw = client.hgetall(key)
    out: dict[str, float] = {}
    for name, value in raw.items():
        amount = float(value)
        out[name.decode()] = int(amount) if amount.is_integer() else amount
    return out


def _records_added(client: Any, keys: Keys) -> dict[str, float]:
    """What this process added to the track records (``{prefix}records`` less what was
    loaded into it): a save adds it to the file's records as they are then, so an
    ``outcomes import`` or another review's save meanwhile is kept."""
    loaded = _amounts(client, keys.records_loaded())
    out: dict[str, float] = {}
    for name, amount in _amounts(client, keys.records()).items():
        more = amount - loaded.get(name, 0)
        if more > 0:
            out[name] = more
    return out


def _load_records(client: Any, keys: Keys, path: Path) -> None:
    """The file's track records into ``{prefix}records`` (and a copy as loaded), so the
    council reads and adds to them as it does on Redis."""
    records = _records_now(path).get("records", {})
    held = {
        k: v
        for k, v in records.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and v > 0
    }
    if held:
        client.hset(keys.records(), mapping=held)
        client.hset(keys.records_loaded(), mapping=held)


def _write_atomically(path: Path, data: Mapping[str, Any]) -> None:
    """Write ``data`` to a temporary file beside ``path``, then replace ``path`` with it.
    A write that fails (``ENOSPC``, ``EFBIG``) removes its temporary file and raises
    :class:`StateNotSaved` naming the file: ``path`` still holds what it held."""
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=TEMP_PREFIX, suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise StateNotSaved(
            f"the embedded state file {path} could not be saved ({exc.strerror or exc}); it "
            "still holds what it held before this command: the findings, ids and "
            "dismissals this command added to its sessions are not in it. Free space there "
            "(or pass --state PATH elsewhere) and run the command again"
        ) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _clean_stale_temps(folder: Path) -> None:
    """Remove the temporary files of saves killed mid-write (older than
    :data:`STALE_TEMP_S`); never raises."""
    cutoff = time.time() - STALE_TEMP_S
    with contextlib.suppress(OSError):
        for temp in folder.glob(f"{TEMP_PREFIX}*.json"):
            with contextlib.suppress(OSError):
                if not temp.is_symlink() and temp.stat().st_mtime < cutoff:
                    temp.unlink()


def _records_now(path: Path) -> dict[str, Any]:
    """``{"records": ...}`` as the file holds it now (track records, kept beside the
    sessions and never pruned with them: :mod:`workers.stores.track.records`), else {}."""
    try:
        records = read_document(path).get("records")
    except (OSError, ValueError, AttributeError):
        return {}
    return {"records": records} if isinstance(records, dict) else {}


def load_state(
    client: Any,
    keys: Keys,
    path: Path,
    *,
    retention_ms: int | None = None,
    only: str | None = None,
) -> Sessions:
    """Load the sessions the file at ``path`` holds into ``client`` (a missing file is an
    empty state), or only the session ``only``; what was read, for :func:`save_state`'s
    merge. A session past its ``expires_ms`` is not loaded (and is in what was read, so
    the save drops it); one saved before expiries were kept gets ``retention_ms`` from
    now (None: no expiry). Raises :class:`StateFileError` naming the file when it cannot
    be read."""
    sessions = read_sessions(path)
    now = now_ms()
    try:
        for s, v in sessions.items():
            if not _expired(v, now) and (only is None or s == only):
                check_contents(s, v)
    except BadState as exc:
        raise bad_state(path, exc) from None
    _load_records(client, keys, path)
    try:
        for s, v in sessions.items():
            if _expired(v, now) or (only is not None and s != only):
                continue
            _load_session(client, keys, s, v)
            expires = v.get("expires_ms")
            if expires is None and retention_ms is not None:
                expires = now + retention_ms
            if isinstance(expires, int):
                for key in _session_keys(keys, s):
                    client.pexpireat(key, expires)
    except (ValueError, KeyError, TypeError, AttributeError, binascii.Error) as exc:
        raise StateFileError(
            f"the embedded state file {path} cannot be read ({exc}); move it away to "
            f"start fresh, or pass --state PATH"
        ) from None
    return {s: v for s, v in sessions.items() if only is None or s == only or _expired(v, now)}


def _load_session(client: Any, keys: Keys, s: str, v: Mapping[str, Any]) -> None:
    if v["issued"]:
        client.set(keys.session_issued(s), v["issued"])
    if v["ledger"]:
        client.set(keys.session_ledger(s), v["ledger"])
    if v["findings"]:
        client.hset(keys.session_findings(s), mapping=v["findings"])
    if v["attributed"]:
        client.sadd(keys.session_attributed(s), *v["attributed"])
    if v.get("recall"):
        client.set(keys.session_recall(s), v["recall"])
    for name, key in (
        ("fingerprints", keys.session_fingerprints(s)),
        ("reviewed", keys.session_reviewed(s)),
        ("dismissed", keys.session_dismissed(s)),
        ("waiting", keys.session_waiting(s)),
        ("answers", keys.session_answers(s)),
        ("acted", keys.session_acted(s)),
    ):
        if v.get(name):
            client.hset(key, mapping=dict(v[name]))
    for saved in (v.get("runs") or {}).values():
        _restore(client, keys, saved, now_ms())
