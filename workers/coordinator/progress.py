"""What the waiting CLI shows while the council works: one row or one line per participant.

:meth:`Progress.for_stream` picks the display once from where the text goes (stderr, so
stdout stays the report): a terminal gets a live ``rich`` table left on screen when closed
(the final states stay in the scrollback); anything else (a CI log, a pipe) gets one plain
line per STATE CHANGE, never one per poll, because a log that repeats "hawk running" every
second hides the moment something happened. The caller hands over the whole picture each
time (``update(states)``); the display decides what is new.

Source: docs/architecture.md (the CLI waits on the chord; embedded and distributed mode
alike).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from council.model.report import ParticipantState
from council.rendering.escape import for_log
from workers.app.clock import now_ms
from workers.stores.run_record import Progress as StoredProgress

STATE_STYLES: dict[str, str] = {
    "pending": "dim",
    "running": "cyan",
    "answered": "green",
    "stopped": "yellow",
    "failed": "bold red",
    "asking": "magenta",
}
"""The rich style of each participant state in the live table."""

HEARTBEAT_MS = 60_000
"""Milliseconds a plain log may stay silent while reviewers work: then one line says who
is still at it (a CI log silent for minutes reads as a hung job)."""

FINISHED_STATES = frozenset({"answered", "stopped", "failed", "asking"})
"""States a participant does not leave again in this round (``asking``: until its
question is answered and it is sent again)."""


@dataclass(frozen=True)
class ParticipantProgress:
    """Where one participant stands right now, as the CLI last read it.

    ``findings`` counts what it has produced so far (journal entries while running,
    findings once answered); ``elapsed_ms`` is its running time in milliseconds;
    ``detail`` is a short phrase for people ("stopped by the idle clock", a failure).
    """

    participant: str
    state: ParticipantState
    findings: int = 0
    elapsed_ms: int = 0
    detail: str = ""


class Progress(ABC):
    """A progress display: give it every participant's state on each poll, then close it.

    Usage::

        with Progress.for_stream(sys.stderr) as progress:
            while not done:
                progress.update(read_states())

    ``update`` takes a mapping keyed by participant id; rows keep the order in which
    participants were first seen, whatever order later mappings use. Updating a closed
    display raises RuntimeError (misuse).
    """

    @classmethod
    def for_stream(cls, stream: TextIO, *, live: bool | None = None) -> Progress:
        """The display fit for ``stream``: live on a terminal, plain lines otherwise.

        ``live`` overrides the choice (None = ask ``stream.isatty()``); a live display
        forced onto a non-terminal stream still writes the terminal codes to it.
        """
        if live is None:
            live = _is_tty(stream)
        if live:
            return LiveProgress(Console(file=stream, force_terminal=True))
        return PlainProgress(stream)

    @abstractmethod
    def update(self, states: Mapping[str, ParticipantProgress]) -> None:
        """Show the current state of every participant in ``states``."""

    @abstractmethod
    def close(self) -> None:
        """Finish the display (idempotent); later updates raise."""

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


class PlainProgress(Progress):
    """One line per state change, for logs and pipes.

    A participant's first appearance prints unless it is ``pending`` (waiting to start
    is not news); after that a line prints only when its state differs from the last
    one printed. Counts and times alone never print a line, except that after
    ``heartbeat_ms`` (milliseconds of ``clock``) with no line while someone is still at
    work, one line names who is still waiting and how far each is. Lines of one update
    follow first-seen order; the stream is flushed after each update that wrote something.
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        prefix: str = "council",
        clock: Callable[[], int] = now_ms,
        heartbeat_ms: int = HEARTBEAT_MS,
    ) -> None:
        self._stream = stream
        self._prefix = prefix
        self._last: dict[str, str] = {}
        self._closed = False
        self._clock = clock
        self._heartbeat_ms = heartbeat_ms
        self._said_ms = clock()

    def update(self, states: Mapping[str, ParticipantProgress]) -> None:
        """Print a line for every participant whose state changed since the last one."""
        _refuse_closed(self._closed)
        lines: list[str] = []
        for key in _ordered(self._last, states):
            now = states[key]
            before = self._last.get(key)
            self._last[key] = now.state
            if now.state == before or (before is None and now.state == "pending"):
                continue
            lines.append(self._line(now))
        at = self._clock()
        if not lines and at - self._said_ms >= self._heartbeat_ms:
            order = _ordered(self._last, states)
            waiting = [states[k] for k in order if states[k].state not in FINISHED_STATES]
            if waiting:
                lines.append(self._still(waiting, len(states)))
        if lines:
            self._stream.write("".join(line + "\n" for line in lines))
            self._stream.flush()
            self._said_ms = at

    def _still(self, waiting: list[ParticipantProgress], everyone: int) -> str:
        """The heartbeat: ``still waiting on 2 of 5: hawk running (3 findings, 64.0 s), …``."""
        each = ", ".join(_standing(p) for p in waiting)
        line = f"{self._prefix}: still waiting on {len(waiting)} of {everyone}: {each}"
        return for_log(line, one_line=True)

    def _line(self, now: ParticipantProgress) -> str:
        """One line for a log: the detail (free text from a reviewer, a program's stderr)
        has its whitespace folded and its control characters and workflow commands
        escaped (:func:`~council.rendering.escape.for_log`)."""
        detail = f": {' '.join(now.detail.split())}" if now.detail.strip() else ""
        return for_log(f"{self._prefix}: {_standing(now)}{detail}", one_line=True)

    def close(self) -> None:
        """Stop accepting updates; the lines already written stay as they are."""
        self._closed = True


class LiveProgress(Progress):
    """A live ``rich`` table on a terminal, redrawn on each update, kept when closed.

    The table starts with the first update (nothing is drawn for a run that ends before
    its first poll). While it is live, rich redirects prints to stdout and stderr above
    it, so log lines do not tear the table. Text from participants is shown literally,
    never read as rich markup, and with its control characters escaped (rich keeps an
    escape sequence as it is: ``\x1b]`` would reach the terminal).
    """

    def __init__(self, console: Console) -> None:
        self._console = console
        self._rows: dict[str, ParticipantProgress] = {}
        self._live: Live | None = None
        self._closed = False

    def update(self, states: Mapping[str, ParticipantProgress]) -> None:
        """Record the new states and redraw the table."""
        _refuse_closed(self._closed)
        for key in _ordered(self._rows, states):
            self._rows[key] = states[key]
        table = self._table()
        if self._live is None:
            self._live = Live(table, console=self._console, auto_refresh=False, transient=False)
            self._live.start(refresh=True)
        else:
            self._live.update(table, refresh=True)

    def _table(self) -> Table:
        rows = list(self._rows.values())
        finished = sum(1 for row in rows if row.state in FINISHED_STATES)
        total = sum(row.findings for row in rows)
        table = Table(
            title="council",
            caption=f"{finished} of {len(rows)} finished, {_findings(total)}",
        )
        table.add_column("participant")
        table.add_column("state")
        table.add_column("findings", justify="right")
        table.add_column("elapsed", justify="right")
        table.add_column("detail", overflow="fold")
        for row in rows:
            table.add_row(
                Text(for_log(row.participant, one_line=True)),
                Text(row.state, style=STATE_STYLES[row.state]),
                Text(str(row.findings)),
                Text(_seconds(row.elapsed_ms)),
                Text(for_log(row.detail, one_line=True)),
            )
        return table

    def close(self) -> None:
        """Draw the last table and leave it on screen; stop redirecting output."""
        if self._live is not None and not self._closed:
            self._live.stop()
        self._closed = True


def _ordered(seen: Mapping[str, object], states: Mapping[str, ParticipantProgress]) -> list[str]:
    """Keys of ``states``: those seen before in first-seen order, then new ones."""
    known = [key for key in seen if key in states]
    fresh = [key for key in states if key not in seen]
    return known + fresh


def _refuse_closed(closed: bool) -> None:
    if closed:
        raise RuntimeError("the progress display is closed; make a new one to show more")


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except ValueError:  # a closed stream is no terminal
        return False


def _standing(p: ParticipantProgress) -> str:
    """``hawk running (3 findings, 64.0 s)``: one participant in a plain line."""
    return f"{p.participant} {p.state} ({_findings(p.findings)}, {_seconds(p.elapsed_ms)})"


def _findings(count: int) -> str:
    return "1 finding" if count == 1 else f"{count} findings"


def _seconds(ms: int) -> str:
    return f"{ms / 1000:.1f} s"


def progress_view(states: Mapping[str, StoredProgress]) -> dict[str, ParticipantProgress]:
    """What the display shows of a run's stored progress (participant id → its stored
    :class:`~workers.stores.run_record.Progress`): each participant's state, findings, elapsed
    ms (to now while it runs, to its last update once done) and detail."""
    now = now_ms()
    view: dict[str, ParticipantProgress] = {}
    for pid, s in states.items():
        start = s.started_ms
        end = s.updated_ms if s.state not in ("pending", "running") else now
        elapsed = (end or now) - start if start is not None else 0
        view[pid] = ParticipantProgress(
            participant=pid,
            state=s.state,
            findings=s.findings,
            elapsed_ms=max(0, elapsed),
            detail=s.detail,
        )
    return view
