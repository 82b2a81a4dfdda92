"""The worker's desk for ``council ask --question``: a command reviewer's question to a person.

A command reviewer cannot be paused across runs, so its question does not stop it: the
question reaches the worker through ``scripts/`` beside ``$COUNCIL_JOURNAL`` and is checked
at the source (:func:`~council.asks.ask.checked_ask`, the run's artifact store the scope).
Refused, the reviewer goes on; accepted, it is kept on the attempt (:attr:`AskDesk.asked`)
and the run waits after the round; on the run after the answer, the same question gets it
at once. Files (JSON, written whole then renamed): ``scripts/{id}.ask.json``
``{"question", "component"?}`` by ``council ask``; ``scripts/{id}.asked.json``
``{"outcome": "refused" | "asked" | "answered" | "busy", ...}`` by the desk (``busy``: a
second question while the first waits).

Source: docs/evidence-and-asks.md §2.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from council.asks.ask import checked_ask
from council.asks.paused import Paused, Resumption, pending, too_many_asks
from council.errors import AskRefused
from reviewers.base import ArtifactDesk
from reviewers.sandbox.desk_files import Unreadable, read_request, write_reply
from reviewers.sandbox.script_desk import ASK_SUFFIX, ASKED_SUFFIX, POLL_MS

DOOR = "council ask --question"
"""The door a command reviewer's question comes through, named in its refusal."""


def question_call(question: str) -> str:
    """The call id of a question (stable: the same question on the next run of the
    program is the same call, and gets the answer)."""
    return "question-" + hashlib.sha256(question.encode("utf-8", "replace")).hexdigest()[:16]


class AskDesk:
    """Serves a reviewer program's ``council ask --question`` requests on a thread.

    ``folder`` is the exchange directory; ``scope`` the run's artifact store (None: none
    attached, a ``props_ref`` is refused ``no-store``); ``resume`` the pause of the
    previous run of the program with the person's answer (None on a first run);
    ``run_id`` and ``participant`` name the ask's id. :attr:`asked` is the question
    accepted in this run of the program (None: none).

    Usage::

        with AskDesk(folder, request.artifacts, request.resume, run_id, pid) as desk:
            ...  # the reviewer program runs
        desk.asked
    """

    def __init__(
        self,
        folder: Path,
        scope: ArtifactDesk | None,
        resume: Resumption | None,
        run_id: str,
        participant: str,
        on_activity: Callable[[], None] = lambda: None,
    ) -> None:
        self.folder, self.scope, self.resume = folder, scope, resume
        self.run_id, self.participant, self.on_activity = run_id, participant, on_activity
        self.asked: Paused | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> AskDesk:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._serve_once()  # a question handed in just before the program ended

    @property
    def stopped(self) -> bool:
        """Whether the desk's thread has ended (after the ``with`` block, it may not have:
        its folder must then stay as it is, see :class:`~reviewers.sandbox.storage.Storage`)."""
        return not self._thread.is_alive()

    def _serve(self) -> None:
        while not self._stop.is_set():
            self._serve_once()
            self._stop.wait(POLL_MS / 1000)

    def _serve_once(self) -> None:
        try:
            found = sorted(p for p in self.folder.iterdir() if p.name.endswith(ASK_SUFFIX))
        except OSError:
            return
        for request in found:
            self._answer(request)

    def _answer(self, request: Path) -> None:
        """Check one question and write its reply. Never raises."""
        name = request.name[: -len(ASK_SUFFIX)]
        try:
            value: object = read_request(request)
        except Unreadable:
            value = None  # answered as an ask without a question: refused (shape)
        with contextlib.suppress(OSError):
            request.unlink()
        self.on_activity()
        reply = self.reply(value)
        with contextlib.suppress(OSError):
            write_reply(self.folder / f"{name}{ASKED_SUFFIX}", reply)

    def reply(self, value: object) -> dict[str, Any]:
        """The reply to one request's JSON ``value`` (see the module docstring)."""
        if not isinstance(value, dict):
            value = {}
        try:
            ask = checked_ask(
                value.get("question"), value.get("component"), self.scope, door=DOOR, reviewer=True
            )
        except AskRefused as refused:
            return {"outcome": "refused", "code": refused.code, "message": str(refused)}
        call = question_call(ask.question)
        resume = self.resume
        if resume is not None and resume.paused.call_id == call:
            shown: dict[str, Any] = {"outcome": "answered", "answer": resume.answer.value}
            if resume.answer.reason:
                shown["reason"] = resume.answer.reason
            return shown
        too_many = too_many_asks(resume)
        if too_many is not None:
            return {"outcome": "refused", "code": "too-many", "message": too_many}
        if self.asked is not None and self.asked.call_id != call:
            return {
                "outcome": "busy",
                "message": "one question at a time: this run of the reviewer already put "
                "a question to a person; ask this one after their answer",
            }
        asked = resume.paused.asked + 1 if resume is not None else 1
        self.asked = Paused(ask=ask, call_id=call, messages=[], replies=[(call, None)], asked=asked)
        return {"outcome": "asked", "id": pending(self.run_id, self.participant, self.asked).id}
