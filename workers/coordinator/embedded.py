"""Embedded mode: the same tasks and canvas inside the CLI process, no server to install.

Celery runs on its ``memory://`` broker with the ``cache+memory://`` result backend and an
in-process worker on a threads pool; the council's state lives on an in-process fakeredis
server. Sessions (ledger, findings, ids) are loaded from and saved to a local state file,
so identities and finding ids survive between embedded runs and a CI cache can carry them.
Source: docs/architecture.md "Two modes, one code path", docs/celery.md §1.12.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import fcntl
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import fakeredis
from celery.contrib.testing.worker import start_worker
from kombu.transport import memory

from council.errors import ConfigurationError
from workers.app import services as runtime
from workers.app.celery_config import create_app
from workers.app.clock import now_ms
from workers.app.services import Runtime, build_runtime
from workers.app.settings import Settings
from workers.stores.keys import Keys
from workers.stores.sessions import SessionStore

STATE_VERSION = 1
"""Version of the embedded state file's shape."""

MAX_THREADS = 32
"""Most reviewer threads an embedded council runs at once."""

DRAIN_S = 0.05
"""Longest wait, in seconds, of one drain of the embedded broker (see
:class:`PromptMemoryTransport`)."""


class PromptMemoryTransport(memory.Transport):
    """kombu's ``memory://`` transport, whose drains wait at most :data:`DRAIN_S`.

    Why: Celery's worker loop drains the broker for 2 s between two looks at its shutdown
    flag, and drains once more after it saw it, so stopping the in-process worker took
    4 s on every ``council review``. A short drain only costs an idle loop turn.
    """

    def drain_events(self, connection: Any, timeout: Any = None, **kwargs: Any) -> Any:
        """Drain as kombu does; a bounded drain waits at most :data:`DRAIN_S` seconds."""
        capped = None if timeout is None else min(float(timeout), DRAIN_S)
        return super().drain_events(connection, timeout=capped, **kwargs)  # type: ignore[no-untyped-call]


class StateFileError(ConfigurationError, ValueError):
    """The embedded state file cannot be read (exit 2; the message names the file)."""


def default_state_path() -> Path:
    """``$XDG_CACHE_HOME/council/state.json`` (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "council" / "state.json"


@contextlib.contextmanager
def embedded_council(settings: Settings, threads: int) -> Iterator[tuple[Any, Runtime]]:
    """An in-process Celery app, worker and state store; yields ``(app, runtime)``.

    The state file (``settings.state_path`` or :func:`default_state_path`) is read before
    and written after, atomically. A state file that cannot be read is named in a
    :class:`StateFileError` (the CLI reports it as a configuration error).
    """
    state_path = settings.state_path or default_state_path()
    scratch: Path | None = None
    if settings.work_dir is None:
        scratch = Path(tempfile.mkdtemp(prefix="council-embedded-"))
        settings = settings.model_copy(update={"work_dir": scratch})
    server = fakeredis.FakeServer()
    client: Any = fakeredis.FakeRedis(server=server)
    keys = Keys(settings.prefix)
    lock = _lock_state(state_path)
    try:
        load_state(client, keys, state_path)
    except BaseException:
        lock.close()
        raise
    rt = build_runtime(settings, client, mode="embedded")
    runtime.install(rt)
    app = create_app(settings, embedded=True)
    app.conf.broker_transport = f"{__name__}:{PromptMemoryTransport.__name__}"
    try:
        with start_worker(
            app,
            pool="threads",
            concurrency=max(1, min(threads, MAX_THREADS)),
            perform_ping_check=False,
            loglevel="WARNING",
            shutdown_timeout=30.0,
        ):
            yield app, rt
    finally:
        runtime.install(None)
        try:
            save_state(client, keys, state_path)
        finally:
            lock.close()
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)


def _lock_state(path: Path) -> IO[bytes]:
    """Hold the state file's lock for the whole run, so two embedded runs sharing one
    state file take turns instead of the last one overwriting the other's sessions.

    Neither the state file nor its lock is used through a symbolic link (the lock is
    opened with ``O_NOFOLLOW``: opening a dangling link would create its target).
    Raises :class:`StateFileError` when the file's folder cannot be made or written,
    or the file or its lock is a symbolic link.
    """
    lock = path.parent / (path.name + ".lock")
    for file in (path, lock):
        if file.is_symlink():
            raise StateFileError(
                f"the embedded state file {path} cannot be used: {file} is a symbolic "
                f"link, and council does not read or write its state through links; pass "
                f"--state with a path outside the checkout"
            )
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
        print(
            f"council: waiting for another embedded run to release {path}",
            file=sys.stderr,
            flush=True,
        )
        fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


@contextlib.contextmanager
def state_sessions(settings: Settings, *, save: bool) -> Iterator[SessionStore]:
    """The sessions of the embedded state file, on an in-process fakeredis.

    For the commands that read or change a session without running a council (``check``,
    ``release``); written back atomically when ``save`` and the block did not raise.
    Raises :class:`StateFileError` when the file cannot be read.
    """
    with state_runtime(settings, save=save) as rt:
        yield rt.sessions


@contextlib.contextmanager
def state_runtime(settings: Settings, *, save: bool) -> Iterator[Runtime]:
    """The stores of the embedded state file (sessions, and the runs it keeps: those
    waiting on their reviewers' questions, with their artifacts), on an in-process
    fakeredis, with no council running; as :func:`state_sessions`."""
    path = settings.state_path or default_state_path()
    client: Any = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    keys = Keys(settings.prefix)
    # A writer takes the state file's lock, so an embedded review running meanwhile
    # cannot overwrite what this block changes (nor this block what the review filed).
    lock = _lock_state(path) if save else None
    try:
        load_state(client, keys, path)
        yield build_runtime(settings, client, mode="embedded")
        if save:
            save_state(client, keys, path)
    finally:
        if lock is not None:
            lock.close()


_SESSION_TAILS = (":ledger", ":dismissed", ":reviewed", ":waiting", ":answers")
"""Keys whose presence makes a session worth saving: a session may hold only dismissals
(``council dismiss`` before its first review)."""


def _sessions(client: Any, keys: Keys) -> set[str]:
    marker = f"{keys.prefix}session:"
    found: set[str] = set()
    for tail in _SESSION_TAILS:
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


def _snapshot(client: Any, keys: Keys, run_id: str, now_ms: int) -> dict[str, Any]:
    """Every key of one run (``run:{id}`` and ``run:{id}:…``) as JSON: name without the
    prefix → ``{type, value}``, bytes in base64 (strings, hashes, lists: the kinds a run
    holds), and when the run expires (ms since the epoch; None: no TTL)."""
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
    return {"expires_ms": now_ms + ttl if ttl > 0 else None, "keys": out}


def _restore(client: Any, keys: Keys, saved: dict[str, Any], now_ms: int) -> None:
    """Put a run's :func:`_snapshot` back; nothing when it expired meanwhile."""
    expires = saved.get("expires_ms")
    if expires is not None and expires <= now_ms:
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


def save_state(client: Any, keys: Keys, path: Path) -> None:
    """Write every session's ledger, findings, id counter, reported fingerprints, last
    reviewed run, recall (:mod:`council.session.remembered`) and dismissals to ``path`` (atomic).

    The last four, and the runs waiting on a person with the answers given to them,
    were added after version 1 was first written; they are optional in the file, so an
    older file still loads and an older council ignores them. So is ``runs``: the keys
    of each waiting run whose reviewers asked a person (:func:`_snapshot`), which a later
    ``council review`` or ``council resume`` continues; they expire with the run.
    """
    now = now_ms()
    sessions: dict[str, Any] = {}
    for s in sorted(_sessions(client, keys)):
        sessions[s] = {
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
            "runs": {r: _snapshot(client, keys, r, now) for r in _asking_runs(client, keys, s)},
        }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".state-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"version": STATE_VERSION, "sessions": sessions}, out)
    os.replace(tmp, path)


def load_state(client: Any, keys: Keys, path: Path) -> None:
    """Load sessions saved by :func:`save_state`; a missing file is an empty state."""
    if not path.exists():
        return
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != STATE_VERSION:
            raise ValueError(f"version {data.get('version')!r}, expected {STATE_VERSION}")
        for s, v in data["sessions"].items():
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
            ):
                if v.get(name):
                    client.hset(key, mapping=dict(v[name]))
            for saved in (v.get("runs") or {}).values():
                _restore(client, keys, saved, now_ms())
    except (OSError, ValueError, KeyError, TypeError, AttributeError, binascii.Error) as exc:
        raise StateFileError(
            f"the embedded state file {path} cannot be read ({exc}); move it away to "
            f"start fresh, or pass --state PATH"
        ) from None
