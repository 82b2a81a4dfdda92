"""Helpers for tests that run reviewer programs in the real bubblewrap sandbox."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from reviewers.sandbox.bubblewrap import Bubblewrap


def bwrap_or_skip() -> None:
    """Skip where bubblewrap cannot run here; in CI (``CI`` set) fail instead: CI installs
    it (``.ci/run``), so a sandbox test must not pass there by being skipped."""
    trouble = Bubblewrap().trouble()
    if trouble is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"bubblewrap must work in CI: {trouble}")
    pytest.skip(trouble)


@contextmanager
def tcp_listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP listener on 127.0.0.1 of THIS machine, accepting on a thread; yields its
    port and the first bytes of each connection it received."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    received.append(conn.recv(100))
                except OSError:
                    received.append(b"")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], received
    finally:
        stop.set()
        thread.join(2)
        server.close()
