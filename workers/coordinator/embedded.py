"""Embedded mode: the same tasks and canvas inside the CLI process, no server to install.

Celery runs on its ``memory://`` broker with the ``cache+memory://`` result backend and an
in-process worker on a threads pool; the council's state lives on an in-process fakeredis
server. Sessions (ledger, findings, ids) are loaded from and saved to a local state file,
so identities and finding ids survive between embedded runs and a CI cache can carry them.
Source: docs/architecture.md "Two modes, one code path", docs/celery.md §1.12.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from queue import Empty
from typing import IO, Any

import fakeredis
from celery.contrib.testing.worker import start_worker
from kombu.transport import memory

from workers.app import services as runtime
from workers.app.celery_config import create_app
from workers.app.services import Runtime, build_runtime
from workers.app.settings import Settings
from workers.stores.keys import Keys
from workers.stores.sessions import SessionStore
from workers.stores.state_file import load_state, lock_sessions, save_state

MAX_THREADS = 32
"""Most reviewer threads an embedded council runs at once."""

DRAIN_S = 0.05
"""Longest wait, in seconds, of one drain of the embedded broker (see
:class:`PromptMemoryTransport`)."""

_posted = threading.Condition()
"""Notified whenever a message is put on an embedded broker's queue."""
_posts = [0]
"""How many messages were put so far (under ``_posted``): a drain that saw none waits for
this to move."""


class _SignalledChannel(memory.Channel):
    """kombu's in-memory channel, which wakes the drains waiting on :data:`_posted` when a
    message is put (the queues are the process's, shared by every memory channel) or
    acknowledged or rejected (late acks, prefetch 1: a worker whose threads are all busy
    takes the next message, a chord's callback say, once one of them is acknowledged)."""

    def basic_ack(self, delivery_tag: Any, multiple: bool = False) -> None:
        super().basic_ack(delivery_tag, multiple)  # type: ignore[no-untyped-call]
        _signal()

    def basic_reject(self, delivery_tag: Any, requeue: bool = False) -> None:
        super().basic_reject(delivery_tag, requeue)  # type: ignore[no-untyped-call]
        _signal()

    def _put(self, queue: Any, message: Any, **kwargs: Any) -> None:
        super()._put(queue, message, **kwargs)  # type: ignore[no-untyped-call]
        _signal()

    def _put_fanout(
        self, exchange: Any, message: Any, routing_key: Any = None, **kwargs: Any
    ) -> None:
        super()._put_fanout(exchange, message, routing_key, **kwargs)  # type: ignore[no-untyped-call]
        _signal()


def _signal() -> None:
    with _posted:
        _posts[0] += 1
        _posted.notify_all()


class PromptMemoryTransport(memory.Transport):
    """kombu's ``memory://`` transport, whose drains wait for a message instead of polling,
    and at most :data:`DRAIN_S`.

    Why: kombu's virtual transport looks at its queues every ``polling_interval`` (5 ms
    here once: 200 looks a second, taken from the reviewers on a small machine); a drain
    here sleeps until a message is put (:class:`_SignalledChannel`). Why the cap: Celery's
    worker loop drains the broker for 2 s between two looks at its shutdown flag, and
    drains once more after it saw it, so stopping the in-process worker took 4 s on every
    ``council review``; an idle worker now wakes 20 times a second.
    """

    Channel = _SignalledChannel

    stopping = False
    """Set when the worker is asked to stop (:func:`_hurry_stop`): a drain then delivers
    what is there and waits for nothing more."""

    def drain_events(self, connection: Any, timeout: Any = None, **kwargs: Any) -> Any:
        """Deliver one message, waiting for one at most ``timeout`` (capped at
        :data:`DRAIN_S`); ``TimeoutError`` (``socket.timeout``) when none came, as kombu's
        drains say it."""
        wait = DRAIN_S if timeout is None else min(float(timeout), DRAIN_S)
        deadline = time.monotonic() + wait
        cycle: Any = self.cycle  # the round robin over the open channels
        while True:
            with _posted:
                seen = _posts[0]
            try:
                return cycle.get(self._deliver, timeout=0)
            except Empty:
                pass
            left = deadline - time.monotonic()
            if left <= 0 or self.stopping:
                raise TimeoutError
            with _posted:
                if _posts[0] == seen:
                    _posted.wait(left)


def default_state_path() -> Path:
    """``$XDG_CACHE_HOME/council/state.json`` (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "council" / "state.json"


@contextlib.contextmanager
def embedded_council(
    settings: Settings, threads: int, session: str | None = None
) -> Iterator[tuple[Any, Runtime]]:
    """An in-process Celery app, worker and state store; yields ``(app, runtime)``.

    The state file (``settings.state_path`` or :func:`default_state_path`) is read before
    and merged into after (:mod:`workers.stores.state_file`), holding the lock of
    ``session`` (the run's) meanwhile: another embedded run of the same session waits,
    runs of other sessions go on at once. None holds every session's lock (a caller
    that cannot name its session waits for every run on the file). A state file that
    cannot be read is named in a :class:`~workers.stores.state_file.StateFileError`
    (the CLI reports it as a configuration error).
    """
    state_path = settings.state_path or default_state_path()
    scratch: Path | None = None
    if settings.work_dir is None:
        scratch = Path(tempfile.mkdtemp(prefix="council-embedded-"))
        settings = settings.model_copy(update={"work_dir": scratch})
    server = fakeredis.FakeServer()
    client: Any = fakeredis.FakeRedis(server=server)
    keys = Keys(settings.prefix)
    locks = lock_sessions(state_path, session)
    try:
        loaded = load_state(
            client, keys, state_path, retention_ms=settings.session_retention_s * 1000, only=session
        )
    except BaseException:
        _release(locks)
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
        ) as worker:
            try:
                yield app, rt
            finally:
                _hurry_stop(worker)
    finally:
        runtime.install(None)
        try:
            save_state(client, keys, state_path, loaded)
        finally:
            _release(locks)
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)


def _hurry_stop(worker: Any) -> None:
    """Ask the in-process worker to stop now, and wake its drains to see it: the stop
    :func:`~celery.contrib.testing.worker.start_worker` asks for next (the same flag)
    was otherwise seen only once a drain's wait ran out, twice (up to 2 ×
    :data:`DRAIN_S`, about a tenth of a second at the end of every round)."""
    from celery.worker import state

    consumer = getattr(worker, "consumer", None)
    transport = getattr(getattr(consumer, "connection", None), "transport", None)
    if isinstance(transport, PromptMemoryTransport):
        transport.stopping = True
    state.should_terminate = 0
    _signal()


def _release(locks: list[IO[bytes]]) -> None:
    for handle in locks:
        handle.close()


@contextlib.contextmanager
def state_sessions(
    settings: Settings, *, save: bool, session: str | None = None
) -> Iterator[SessionStore]:
    """The sessions of the embedded state file, on an in-process fakeredis.

    For the commands that read or change a session without running a council (``check``,
    ``release``); merged back into the file when ``save`` and the block did not raise.
    A writer holds ``session``'s lock (None: every session's) meanwhile, so an embedded
    review of it waits, or is waited for. Raises
    :class:`~workers.stores.state_file.StateFileError` when the file cannot be read.
    """
    with state_runtime(settings, save=save, session=session) as rt:
        yield rt.sessions


@contextlib.contextmanager
def state_runtime(
    settings: Settings, *, save: bool, session: str | None = None
) -> Iterator[Runtime]:
    """The stores of the embedded state file (sessions, and the runs it keeps: those
    waiting on their reviewers' questions, with their artifacts), on an in-process
    fakeredis, with no council running; as :func:`state_sessions`."""
    path = settings.state_path or default_state_path()
    client: Any = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    keys = Keys(settings.prefix)
    # A writer holds the session's lock, so an embedded review of it running meanwhile
    # cannot overwrite what this block changes (nor this block what the review filed).
    locks = lock_sessions(path, session) if save else []
    try:
        loaded = load_state(client, keys, path, retention_ms=settings.session_retention_s * 1000)
        yield build_runtime(settings, client, mode="embedded")
        if save:
            save_state(client, keys, path, loaded)
    finally:
        _release(locks)
