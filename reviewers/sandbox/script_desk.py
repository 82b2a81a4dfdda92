"""The worker's desk for ``council run-script``: a command reviewer's scripts, run for it.

A command reviewer's sandbox cannot make another (tried: bubblewrap inside bubblewrap
fails, "Creating new namespace failed" or "setting up uid map: Operation not permitted")
and may keep the network, so ``council run-script`` inside it hands the program to the
worker through ``scripts/`` beside ``$COUNCIL_JOURNAL`` and waits. The worker runs it in a
script sandbox (:mod:`reviewers.sandbox.scripts`, the reviewer's ``script_limits``),
records its row (:class:`~reviewers.base.ScriptSink`), then replies; requests are served
one at a time, oldest first (``dispatch`` from 1). Files (JSON, written whole, renamed):
``scripts/{id}.request.json`` ``{"language", "program"}`` by ``council run-script``;
``scripts/{id}.reply.json``, :meth:`~reviewers.sandbox.scripts.ScriptRun.as_json` plus
``"dispatch"`` and ``"recorded"``, by the desk.

Source: docs/evidence-and-asks.md §1.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reviewers.base import ScriptSink
from reviewers.sandbox.desk_files import Unreadable, read_request, sweep, write_reply
from reviewers.sandbox.scripts import ScriptRun, ScriptRunner, check_submission

SCRIPTS_DIR = "scripts"
"""The directory beside the journal file where requests and replies are exchanged."""

REQUEST_SUFFIX = ".request.json"
REPLY_SUFFIX = ".reply.json"

ASK_SUFFIX = ".ask.json"
"""A command reviewer's question (:mod:`reviewers.sandbox.ask_desk` serves it)."""

ASKED_SUFFIX = ".asked.json"
"""The worker's reply to one question."""

DESK_NAMES = (REQUEST_SUFFIX, REPLY_SUFFIX, ASK_SUFFIX, ASKED_SUFFIX)
"""Every name the desk directory may hold (anything else is swept away)."""

POLL_MS = 50
"""How often the desk looks for a request, in ms."""

TOOL = "run-script"
"""The ``tool`` of a ``council run-script`` row."""


def scripts_dir(journal: Path) -> Path:
    """The request directory that goes with a journal file."""
    return journal.parent / SCRIPTS_DIR


def write_whole(path: Path, value: Any) -> None:
    """Write ``value`` as JSON to ``path`` so a reader never sees half of it (a temporary
    sibling renamed into place). For the program's side, inside its sandbox; the worker
    writes with :func:`~reviewers.sandbox.desk_files.write_reply`. Raises ``OSError``."""
    staging = path.with_name(f".{path.name}.part")
    staging.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    os.replace(staging, path)


class ScriptDesk:
    """Serves a reviewer program's ``council run-script`` requests on a thread.

    ``folder`` is the request directory (:func:`scripts_dir`); ``runner`` runs each
    script; ``sink`` records each row; ``on_activity`` is called when a script starts and
    ends (the reviewer's idle clock). :attr:`served` counts the requests answered.

    Usage::

        with ScriptDesk(folder, runner, request.scripts, activity.touch):
            ...  # the reviewer program runs
    """

    def __init__(
        self,
        folder: Path,
        runner: ScriptRunner,
        sink: ScriptSink,
        on_activity: Callable[[], None] = lambda: None,
    ) -> None:
        self.folder, self.runner, self.sink, self.on_activity = folder, runner, sink, on_activity
        self.served = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> ScriptDesk:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.runner.cancel.set()
        self._thread.join(5)

    @property
    def stopped(self) -> bool:
        """Whether the desk's thread has ended (after the ``with`` block, it may not have:
        its folder must then stay as it is, see :class:`~reviewers.sandbox.storage.Storage`)."""
        return not self._thread.is_alive()

    def _serve(self) -> None:
        while not self._stop.is_set():
            sweep(self.folder, DESK_NAMES, requests=(REQUEST_SUFFIX, ASK_SUFFIX))
            for request in self._pending():
                if self._stop.is_set():
                    return
                self._answer(request)
            self._stop.wait(POLL_MS / 1000)

    def _pending(self) -> list[Path]:
        try:
            found = [p for p in self.folder.iterdir() if p.name.endswith(REQUEST_SUFFIX)]
        except OSError:
            return []

        def age(path: Path) -> tuple[float, str]:
            try:
                return path.stat().st_mtime, path.name
            except OSError:
                return 0.0, path.name

        return sorted(found, key=age)

    def _answer(self, request: Path) -> None:
        """Run one request, record its row, write its reply. Never raises."""
        name = request.name[: -len(REQUEST_SUFFIX)]
        try:
            value, unreadable = read_request(request), None
        except Unreadable as why:
            value, unreadable = None, f"the request file is {why}"
        with contextlib.suppress(OSError):
            request.unlink()
        self.served += 1
        dispatch = self.served
        self.on_activity()
        if unreadable is not None:
            submitted: str | tuple[str, str] = unreadable
        elif isinstance(value, dict):
            submitted = check_submission(value)
        else:
            submitted = "not a JSON object"
        program = value.get("program") if isinstance(value, dict) else None
        text = program if isinstance(program, str) and "\0" not in program else None
        if isinstance(submitted, str):
            run = ScriptRun(outcome="not-run", reason=submitted)
        else:
            run = self.runner.run(*submitted)
        self.on_activity()
        row = run.row(f"{TOOL}-{dispatch}", TOOL, dispatch, text)
        try:
            stored = self.sink.append(row)
        except Exception as error:  # a sink that breaks its promise not to raise
            stored = f"not recorded ({type(error).__name__})"
        reply = {**run.as_json(), "dispatch": dispatch, "recorded": stored == "Recorded."}
        if stored != "Recorded.":
            reply["not_recorded"] = stored
        with contextlib.suppress(OSError):
            write_reply(self.folder / f"{name}{REPLY_SUFFIX}", reply)
