"""The ``council`` console script: the command line, with an interrupt at start-up quiet.

Start-up (importing pydantic, redis, celery: most of a second, more on a busy CI runner)
does nothing that needs undoing, so Ctrl-C during it exits 130 with one line on stderr,
never a traceback from inside an import. The handler is installed before anything heavy is
imported and handed back to Python by :func:`started` just before a command runs; from then
on an interrupt is the command's (``council review`` cancels its run), and one no command
handled still exits 130 (:class:`workers.cli.group.CouncilGroup`). Once the command is
done the process ends without the interpreter's teardown (:func:`_end_now`). This module
imports only the standard library. Ctrl-C in the interpreter's own first tens of
milliseconds may still print Python's traceback.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from types import FrameType

INTERRUPTED_EXIT = 130
"""128 + SIGINT, as a shell reports a command stopped by Ctrl-C."""

INTERRUPTED_LINE = "council: interrupted"
"""The one line on stderr when an interrupt stops the command line before a command
handles it."""


def main() -> None:
    """Run the ``council`` command line; Ctrl-C before a command runs exits 130 quietly.

    Once the command is done the process ends at once (:func:`_end_now`)."""
    _quiet_start()
    try:
        from workers.cli import main as council

        council()
    except KeyboardInterrupt:
        interrupted()
    except SystemExit as done:
        _end_now(done.code)
        raise


def _end_now(code: object) -> None:
    """End the process with ``code`` (as ``sys.exit`` takes it) without tearing the
    interpreter down: the exit handlers run and stdout and stderr are flushed, but the
    thousand modules a review loaded are not freed one by one (a third of a second of
    CPU, more on a busy runner, at the end of every command, ``council record`` too).
    Returns, for the usual exit, while a thread other than the main one that Python
    would wait for is still running."""
    main_thread = threading.main_thread()
    if any(t is not main_thread and not t.daemon for t in threading.enumerate()):
        return
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): Python prints it and exits 1
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"{code}\n")
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(status & 0xFF)


def started() -> None:
    """Hand Ctrl-C back to Python's default (``KeyboardInterrupt``): a command is about to
    run and handles interrupts itself. Does nothing when :func:`main` did not install the
    start-up handler (the CLI invoked in a test, or SIGINT ignored by the parent)."""
    if signal.getsignal(signal.SIGINT) is _start_up_interrupt and _on_main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def interrupted() -> None:
    """Say "council: interrupted" on stderr and exit 130, whatever stderr's state."""
    _say_interrupted()
    raise SystemExit(INTERRUPTED_EXIT)


def _quiet_start() -> None:
    """Install the start-up handler, unless SIGINT is not Python's default (a parent that
    ignores it, as ``nohup`` does, keeps it ignored)."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler and _on_main_thread():
        signal.signal(signal.SIGINT, _start_up_interrupt)


def _start_up_interrupt(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C during start-up: nothing was sent or written yet, so end now. Why not
    raise: a ``KeyboardInterrupt`` raised inside an import can land in one of
    importlib's weakref callbacks, where Python prints "Exception ignored ... Traceback"
    and carries on."""
    _say_interrupted()
    os._exit(INTERRUPTED_EXIT)


def _say_interrupted() -> None:
    try:
        sys.stderr.write(INTERRUPTED_LINE + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, KeyboardInterrupt):
        pass  # stderr closed, or a second Ctrl-C: the exit code still says it


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


if __name__ == "__main__":
    main()
