"""A worker's standard streams, one JSON object per line: nothing else reaches them.

Teams follow workers through their logs with ``jq``; one line of ASCII art, one Python
warning or one bare traceback breaks it for everyone. So each writer becomes a JSON line at
its source, through :mod:`workers.app.logging`'s processor chain: Celery's banner
(:class:`JsonWorker`), ``safe_say``'s ``os.write`` to fd 1 (Celery has no setting for it,
celery#8101), warnings, the three exception hooks, and ``sys.stdout``/``sys.stderr`` as
:class:`LineStream` objects; all of it on the real stderr, one ordered stream
(:func:`install_worker_output`). Not caught: bytes written to fd 1 or 2 below Python (a C
extension, ``faulthandler``), and click's usage errors for ``council worker``'s own options,
printed before the command runs. Source: docs/architecture.md "Observability",
docs/celery.md §2.1.
"""

from __future__ import annotations

import atexit
import io
import logging
import os
import platform
import sys
import threading
import warnings
from types import TracebackType
from typing import Any, TextIO

import structlog
from celery.apps.worker import Worker as CeleryWorker

from workers.app.logging import configure_logging, real_stream, redact_url, render_json_line

log = structlog.get_logger("council.worker")
warnings_log = structlog.get_logger("py.warnings")

TRACEBACK_HEAD = "Traceback (most recent call last):"
"""The first line of a traceback as ``traceback.print_exc`` writes it."""

_installed = threading.Lock()
_state: dict[str, bool] = {"atexit": False}


class LineStream(io.TextIOBase):
    """A text stream that logs each line written to it (``printed``, with ``stream``
    and ``text``) instead of writing it; the log goes to ``original``.

    Lines are complete at ``\\n``; a partial line waits for the rest, and is logged on
    :meth:`flush`. A traceback written line by line (``Traceback (most recent call
    last):`` up to the first unindented line after it) is one ``printed_traceback``
    record with the text in ``exception``. Thread-safe. A write made while logging
    (logging's own "--- Logging error ---") is rendered without the logging machinery,
    so nothing loops. ``fileno()`` raises ``io.UnsupportedOperation``, as for any
    stream without a descriptor, so no one writes past it by the descriptor.
    """

    def __init__(self, name: str, level: int, original: TextIO) -> None:
        super().__init__()
        self.name = name
        self.level = level
        self.council_original = original
        """The stream the log lines go to (:func:`workers.app.logging.real_stream` reads it)."""
        self._lock = threading.RLock()
        self._pending = ""
        self._traceback: list[str] | None = None
        self._busy = threading.local()
        self._log = structlog.get_logger(f"council.{name}")

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    @property
    def errors(self) -> str:  # type: ignore[override]
        return "backslashreplace"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        with self._lock:
            self._pending += text
            *lines, self._pending = self._pending.split("\n")
            for line in lines:
                self._line(line)
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._pending and self._traceback is None:
                line, self._pending = self._pending, ""
                self._line(line)

    def close_out(self) -> None:
        """Log whatever is still held (a partial line, an unfinished traceback)."""
        with self._lock:
            if self._pending:
                line, self._pending = self._pending, ""
                self._line(line)
            if self._traceback is not None:
                block, self._traceback = self._traceback, None
                self._emit_traceback(block)

    def _line(self, line: str) -> None:
        line = line.rstrip("\r")
        if self._traceback is not None:
            self._traceback.append(line)
            if line and not line[0].isspace() and line != TRACEBACK_HEAD:
                block, self._traceback = self._traceback, None
                self._emit_traceback(block)
            return
        if line.strip() == TRACEBACK_HEAD:
            self._traceback = [line]
            return
        if line.strip():
            self._emit(self.level, "printed", stream=self.name, text=line)

    def _emit_traceback(self, block: list[str]) -> None:
        last = next((b for b in reversed(block) if b.strip()), "")
        self._emit(
            logging.ERROR,
            "printed_traceback",
            stream=self.name,
            text=last,
            exception="\n".join(block),
        )

    def _emit(self, level: int, event: str, **fields: Any) -> None:
        if getattr(self._busy, "on", False):  # logging itself wrote here: no loop
            name = logging.getLevelName(level).lower()
            line = render_json_line(event, level=name, logger=f"council.{self.name}", **fields)
            self.council_original.write(line + "\n")
            self.council_original.flush()
            return
        self._busy.on = True
        try:
            self._log.log(level, event, **fields)
        finally:
            self._busy.on = False


def _showwarning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """``warnings.showwarning``: one ``python_warning`` line with the warning's parts."""
    warnings_log.warning(
        "python_warning",
        category=category.__name__,
        warning=str(message),
        filename=filename,
        lineno=lineno,
    )


def _excepthook(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
    """``sys.excepthook``: the uncaught exception as one line, traceback in ``exception``."""
    log.critical("uncaught_exception", error_type=kind.__name__, exc_info=(kind, error, tb))


def _thread_excepthook(args: threading.ExceptHookArgs) -> None:
    """``threading.excepthook``: as :func:`_excepthook`, with the thread's name."""
    if args.exc_type is SystemExit:
        return
    error = args.exc_value if args.exc_value is not None else args.exc_type()
    log.error(
        "uncaught_exception",
        thread=args.thread.name if args.thread is not None else None,
        error_type=args.exc_type.__name__,
        exc_info=(args.exc_type, error, args.exc_traceback),
    )


def _unraisablehook(unraisable: Any) -> None:
    """``sys.unraisablehook`` (an exception in ``__del__``, a callback at shutdown)."""
    try:
        where = repr(unraisable.object)
    except Exception:
        where = "<unprintable object>"
    exc_type = unraisable.exc_type
    error = unraisable.exc_value if unraisable.exc_value is not None else exc_type()
    log.error(
        "unraisable_exception",
        message=unraisable.err_msg or "Exception ignored in",
        object=where,
        error_type=exc_type.__name__,
        exc_info=(exc_type, error, unraisable.exc_traceback),
    )


def _say(msg: str, f: Any = None) -> None:
    """``celery.apps.worker.safe_say``, as JSON: Celery calls it from signal handlers
    (shutdown, Ctrl-C, SIGUSR1's stack dump), where the logging machinery may be mid-write
    on this very thread. So the line is rendered without it and written with
    ``os.write`` to the real stderr's descriptor, as Celery writes its own. Never raises."""
    if logging.getLogger().getEffectiveLevel() > logging.INFO:
        return
    try:
        line = render_json_line(
            "celery_notice", level="info", logger="celery.apps.worker", text=str(msg).strip()
        )
        os.write(real_stream(sys.stderr).fileno(), (line + "\n").encode())
    except (OSError, ValueError):
        pass  # as Celery's own: losing a notice must never abort a shutdown


class JsonWorker(CeleryWorker):  # type: ignore[misc]
    """Celery's worker program, its banner logged as one ``worker_banner`` line.

    The fields are the banner's: ``hostname``, ``celery_version``, ``app``,
    ``transport`` and ``results`` (passwords masked), ``concurrency``, ``pool``,
    ``task_events``, ``queues``, ``tasks`` (the council's) and ``platform``.
    ``--quiet`` still silences it. Installed as the app's ``Worker`` by
    :class:`workers.app.celery_config.CouncilCelery`.
    """

    def emit_banner(self) -> None:
        app = self.app
        pool = self.pool_cls if isinstance(self.pool_cls, str) else self.pool_cls.__module__
        with app.connection_for_write() as connection:
            # kombu's own mask writes ":**@" even for a URL without a password.
            transport = redact_url(connection.as_uri(include_password=True))
        from celery import VERSION_BANNER

        log.info(
            "worker_banner",
            hostname=self.hostname,
            celery_version=VERSION_BANNER,
            app=app.main,
            transport=transport,
            results=redact_url(app.backend.as_uri(include_password=True)),
            concurrency=self.concurrency,
            pool=str(pool).rsplit(".", 1)[-1],
            task_events=bool(self.task_events),
            queues=sorted(app.amqp.queues),
            tasks=sorted(name for name in app.tasks if not name.startswith("celery.")),
            platform=platform.platform(),
        )


def install_worker_output(level: str = "INFO") -> None:
    """Make every line this process writes to stdout or stderr JSON, at ``level``.

    Idempotent (a second call re-applies the level and the hooks, wrapping no stream
    twice). Raises ``ValueError`` for an unknown level (:func:`configure_logging`).
    """
    with _installed:
        original = real_stream(sys.stderr)
        configure_logging(level=level, stream=original)
        if not isinstance(sys.stdout, LineStream):
            sys.stdout = LineStream("stdout", logging.INFO, original)
        if not isinstance(sys.stderr, LineStream):
            sys.stderr = LineStream("stderr", logging.WARNING, original)
        install_hooks()
        if not _state["atexit"]:
            _state["atexit"] = True
            atexit.register(_close_out)


def install_hooks() -> None:
    """Warnings, uncaught exceptions and Celery's notices as JSON lines (no streams)."""
    import celery.apps.worker

    warnings.showwarning = _showwarning
    sys.excepthook = _excepthook
    threading.excepthook = _thread_excepthook
    sys.unraisablehook = _unraisablehook
    celery.apps.worker.safe_say = _say


def _close_out() -> None:
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, LineStream):
            stream.close_out()


def _level_name(loglevel: object) -> str:
    if isinstance(loglevel, int) and loglevel > 0:
        return logging.getLevelName(loglevel)
    if isinstance(loglevel, str) and loglevel:
        return loglevel.upper()
    return "INFO"


def _on_celeryd_init(sender: Any = None, options: Any = None, **_: Any) -> None:
    """``celeryd_init``: the worker program starts; its output becomes JSON from here."""
    level = options.get("loglevel") if isinstance(options, dict) else None
    install_worker_output(_level_name(level))


def _on_after_setup(sender: Any = None, **_: Any) -> None:
    """``celeryd_after_setup``: Celery's logging setup called ``logging.captureWarnings``
    (its text lines); put the structured warnings back."""
    install_hooks()


def connect_celery_signals() -> None:
    """Connect the worker program's receivers (fixed dispatch ids: safe to call twice)."""
    from celery import signals

    signals.celeryd_init.connect(
        _on_celeryd_init, weak=False, dispatch_uid="council.stdio.celeryd_init"
    )
    signals.celeryd_after_setup.connect(
        _on_after_setup, weak=False, dispatch_uid="council.stdio.celeryd_after_setup"
    )
