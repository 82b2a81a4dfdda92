"""The ``replay`` backend: a recorded answer and journal, played back under the clocks.

Our ``MockTransport`` (docs/style.md habit 6): tests and demos plug it in instead of
patching a model client, and it exercises the same journal, stop and failure paths as a
live reviewer. Options: ``answer`` (required), ``journal`` (JSONL) and ``latency_ms``. A
relative path is trusted configuration, read beside ``--roster`` (``base_dir``) or from
the BASE tree (the coordinator hands those files over as ``options["recorded"]``), never
from the working directory, which in CI is the change under review.

Source: docs/harvest.md §1, §5, §7; docs/identity-and-clocks.md "Clocks"; issue "The
change under review is untrusted".
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from council.errors import RosterError
from council.model.backend_result import ReviewResult, Stop, decode_answer
from council.model.participant import Clocks
from council.roster.backend_options import BASE_DIR, RECORDED, refuse_unknown, where_of
from reviewers.base import ReviewRequest

LATENCY_CEILING_MS = 8 * 60 * 60 * 1000
"""Longest latency a replay may ask for, in ms (the clocks' ceiling, 8 h)."""


def check_options(options: Mapping[str, Any], where: str) -> None:
    """Refuse bad options of a ``replay`` reviewer.

    ``answer`` is a required non-empty path; ``journal`` an optional path; ``latency_ms``
    an optional whole number of milliseconds in [0, 8 h]. Files are not opened here (they
    may live only on the worker's host). Raises :class:`RosterError` at
    ``{where}.{option}``.
    """
    refuse_unknown(options, ("answer", "journal", "latency_ms"), where, "replay")
    for key, required in (("answer", True), ("journal", False)):
        value = options.get(key)
        if value is None and not required:
            continue
        if not isinstance(value, str) or not value.strip():
            raise RosterError(
                f"{where}.{key}",
                "missing, or not a file path" if required else "not a file path",
                f'Set {key} = "PATH" (relative to the roster file)',
            )
    latency = options.get("latency_ms", 0)
    if isinstance(latency, bool) or not isinstance(latency, int):
        raise RosterError(
            f"{where}.latency_ms",
            "not a whole number of milliseconds",
            "Write latency_ms = 1500 (milliseconds, not seconds)",
        )
    if not 0 <= latency <= LATENCY_CEILING_MS:
        raise RosterError(
            f"{where}.latency_ms",
            f"{latency} is outside [0, {LATENCY_CEILING_MS}] milliseconds",
            "Use 0 for no latency, at most 8 hours",
        )


def _resolve(options: Mapping[str, Any], value: str) -> Path:
    path = Path(value).expanduser()
    if path.is_absolute():
        return path
    return Path(str(options.get(BASE_DIR) or ".")) / path


def _recording(options: Mapping[str, Any], what: str) -> bytes | str:
    """The ``answer`` or ``journal`` file's bytes: the base-tree text the coordinator
    handed over (``options["recorded"]``) when it did, else the file read from disk;
    or a failure sentence naming the path."""
    recorded = options.get(RECORDED)
    if isinstance(recorded, Mapping) and isinstance(recorded.get(what), str):
        text: str = recorded[what]
        return text.encode("utf-8")
    return _read(_resolve(options, options[what]), what)


def _read(path: Path, what: str) -> bytes | str:
    """The file's bytes, or a failure sentence naming the path."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return f"replay {what} file '{path}' not found"
    except OSError as error:
        return f"replay {what} file '{path}' cannot be read: {error.strerror}"


class ReplayReviewer:
    """Plays back a recorded answer and journal; never raises for a reviewer fault.

    With ``latency_ms`` = L and n journal entries, entry i (from 0) is forwarded at
    L·(i+1)/(n+1) ms and the answer returned at L. The clocks apply as to a live reviewer (an
    event past ``backstop_ms``, a gap over ``idle_ms``, ``request.cancel``); a stopped replay
    keeps the entries forwarded so far and returns no answer (it had not "arrived"), and there
    is no soft deadline (a recording cannot wrap up). Bad options or a missing or unreadable
    file are a failure naming the path; both files are read first, so a failure forwards
    nothing. Blank journal lines are skipped, the others forwarded as given.
    """

    def review(self, request: ReviewRequest) -> ReviewResult:
        """Play the recording back into ``request.journal`` and return its answer."""
        started = time.monotonic()
        options = request.participant.options
        try:
            check_options(options, where_of(request.participant))
        except RosterError as error:
            return ReviewResult(failure=str(error))
        answer = _recording(options, "answer")
        if isinstance(answer, str):
            return ReviewResult(failure=answer)
        entries: list[str] = []
        if options.get("journal") is not None:
            journal = _recording(options, "journal")
            if isinstance(journal, str):
                return ReviewResult(failure=journal)
            text = journal.decode("utf-8", errors="replace")
            entries = [line.rstrip("\r") for line in text.split("\n") if line.strip()]
        latency_ms: int = options.get("latency_ms", 0)
        clocks = request.participant.clocks
        count = len(entries)
        forwarded = 0
        last_ms = 0
        for index in range(count + 1):
            at_ms = latency_ms * (index + 1) // (count + 1) if index < count else latency_ms
            stop = _stop_before(at_ms, last_ms, clocks.backstop_ms, clocks.idle_ms)
            wait_until_ms = at_ms if stop is None else _stop_at(last_ms, clocks, stop)
            if request.cancel.wait(_seconds_until(started, wait_until_ms)):
                stop = Stop(limit="cancelled")
            if stop is not None:
                return ReviewResult(
                    stop=stop, duration_ms=_elapsed_ms(started), journal_entries=forwarded
                )
            if index < count:
                request.journal.append(entries[index])
                forwarded += 1
            last_ms = at_ms
        text, notes = decode_answer(answer)
        return ReviewResult(
            answer=text,
            duration_ms=_elapsed_ms(started),
            journal_entries=forwarded,
            notes=notes,
        )


def _stop_before(at_ms: int, last_ms: int, backstop_ms: int, idle_ms: int) -> Stop | None:
    """The clock that fires before an event due at ``at_ms`` (the last one at ``last_ms``)."""
    if at_ms > backstop_ms and backstop_ms <= last_ms + idle_ms:
        return Stop(limit="wall-clock", budget_ms=backstop_ms)
    if at_ms - last_ms > idle_ms:
        return Stop(limit="idle", budget_ms=idle_ms)
    return None


def _stop_at(last_ms: int, clocks: Clocks, stop: Stop) -> int:
    """When (ms from the start) a stop fires: the backstop, or the idle budget after."""
    return clocks.backstop_ms if stop.limit == "wall-clock" else last_ms + clocks.idle_ms


def _seconds_until(started: float, at_ms: int) -> float:
    return max(0.0, started + at_ms / 1000 - time.monotonic())


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
