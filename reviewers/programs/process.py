"""Running a reviewer program: the process runner of command and sarif.

A reviewer program is any executable: the prompt goes to its stdin, its answer comes on
stdout, and it may record findings as it goes in the JSONL file named by
``COUNCIL_JOURNAL``. This module finds the program and checks it can run, builds its
allowlisted environment and temporary directories, decides its confinement (bubblewrap,
or unconfined with a note, or a failure), and starts it; it then runs in its own process
group (:mod:`reviewers.programs.process_group`) and is supervised under our clocks
(:mod:`reviewers.programs.supervision`). Times in milliseconds; never raises for a
reviewer fault (the failure is in the result).

Source: docs/identity-and-clocks.md "Clocks", docs/harvest.md §1 and §7, docs/architecture.md.
"""

from __future__ import annotations

import errno
import os
import subprocess  # nosec B404
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Literal

from council.model.backend_result import Stop
from council.roster.backend_options import SANDBOX_OPTION
from council.roster.script_limits import limits_of
from reviewers.base import ReviewRequest
from reviewers.programs.journal_file import JournalFollower
from reviewers.programs.process_group import BUSY_RETRY_MS, start_program
from reviewers.programs.program_search import find_program, interpreter_bin, search_path
from reviewers.programs.supervision import Ran, supervise
from reviewers.sandbox.ask_desk import AskDesk
from reviewers.sandbox.bubblewrap import (
    PROGRAM_STORAGE_BYTES,
    Box,
    Bubblewrap,
    Limits,
    SandboxError,
    busy_start,
    program_env,
)
from reviewers.sandbox.script_desk import ScriptDesk, scripts_dir
from reviewers.sandbox.scripts import ScriptRunner
from reviewers.sandbox.storage import JOURNAL_NAME, STORE, Storage, split, start_held


def program_limits(storage_bytes: int) -> Limits:
    """What a sandboxed reviewer program (``command``, ``sarif``) may use, ``storage_bytes``
    the worker's cap (``COUNCIL_PROGRAM_STORAGE_BYTES``, default 64 MiB): 4096 descriptors
    open at once (RLIMIT_NOFILE); files of at most the cap (RLIMIT_FSIZE); its journal,
    ``scripts/``, ``HOME``, ``TMPDIR`` and ``/tmp`` in one in-memory file system and
    ``/dev/shm`` in another, together the cap (:func:`~reviewers.sandbox.storage.split`).
    Nothing it writes reaches the worker's disk and all of it is bounded. Why: the program
    is trusted (from the base) but reads the untrusted change, which may steer it into
    writing without end. No memory (RLIMIT_AS) or process cap: runtimes such as node
    reserve far more address space than they use, and the kernel exempts root from
    RLIMIT_NPROC; the idle and backstop clocks bound its time. Source: issue "The change
    under review is untrusted" (every size has a cap); docs/security.md "Sandbox"."""
    files_bytes, shm_bytes = split(storage_bytes)
    return Limits(
        file_size_bytes=storage_bytes,
        open_files=4096,
        tmp_bytes=files_bytes,
        shm_bytes=shm_bytes,
    )


PROGRAM_LIMITS = program_limits(PROGRAM_STORAGE_BYTES)
"""The limits under the default cap, 64 MiB (``PROGRAM_STORAGE_BYTES``)."""

JOURNAL_ENV = "COUNCIL_JOURNAL"
"""The variable that names the journal file (JSONL, one finding per line) to a program."""


class _CannotStart(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


ProgramTrouble = Literal["directory", "missing", "not-executable"]
"""Why a path cannot be run as a program (see :func:`program_trouble`)."""


def program_trouble(path: Path) -> ProgramTrouble | None:
    """Why ``path`` cannot be run as a program here, or None when it can: a directory,
    nothing there (or not a regular file), or no execute permission for this process.

    One check for every place that reads a program: the runner, the coordinator (a
    program beside ``--roster``) and ``council check``; each words the fix for its reader.
    """
    if path.is_dir():
        return "directory"
    if not path.is_file():
        return "missing"
    if not os.access(path, os.X_OK):
        return "not-executable"
    return None


def _locate(request: ReviewRequest, env: Mapping[str, str]) -> str:
    """The executable to run: the materialized one, else the option, found and checked."""
    if request.program is not None:
        path = request.program
    else:
        name = str(request.participant.options.get("program", "")).strip()
        if not name:
            raise _CannotStart("no program to run: the reviewer has no 'program' option")
        if os.sep not in name and (os.altsep is None or os.altsep not in name):
            found = find_program(name, env.get("PATH"))
            if found is None:
                raise _CannotStart(
                    f"program {name!r} not found beside council's interpreter "
                    f"({interpreter_bin()}) nor on PATH; install it (pip install it into "
                    f"council's virtualenv, or with your package manager), or set the "
                    f"reviewer's program option to its absolute path"
                )
            return found
        path = Path(name).expanduser()
        if not path.is_absolute():
            path = Path(str(request.participant.options.get("base_dir") or ".")) / path
    trouble = program_trouble(path)
    if trouble == "directory":
        raise _CannotStart(
            f"program '{path}' is a directory, not a program; set the reviewer's program "
            f"option to the executable file inside it"
        )
    if trouble == "missing":
        raise _CannotStart(f"program '{path}' not found; check the reviewer's program option")
    if trouble == "not-executable":
        raise _CannotStart(f"program '{path}' is not executable; run chmod +x on it")
    return str(path)


def run_program(request: ReviewRequest, args: Sequence[str]) -> Ran:
    """Run the reviewer's program on the prompt under its clocks (ms); never raises.

    argv = [program] + ``args``, in ``request.workdir``. The program is ``request.program``
    (materialized from the BASE tree) when set, else ``options["program"]``: a bare name on the
    child's PATH, an absolute path, or one relative to ``options["base_dir"]``; an ``args``
    entry naming a BASE file is that file, materialized (``request.arg_files``). The
    environment is :func:`~reviewers.sandbox.bubblewrap.program_env` with ``COUNCIL_JOURNAL``,
    a fresh file followed every :data:`~reviewers.programs.supervision.POLL_MS` ms; ``scripts/``
    beside it is the desks' (:mod:`~reviewers.sandbox.script_desk`,
    :mod:`~reviewers.sandbox.ask_desk`); sandboxed, both are in its in-memory storage of
    ``request.sandbox.storage_bytes`` (:mod:`~reviewers.sandbox.storage`), freed once it
    ended. Confinement: ``request.sandbox``, see docs/security.md "Sandbox" (None:
    unconfined, no note). Stops: ``backstop_ms`` → ``wall-clock``; ``idle_ms`` with no stdout
    byte, journal line or change of ``request.heard()`` → ``idle``; ``request.cancel`` →
    ``cancelled``; a full storage → ``disk``. A stop kills the process group, keeping partial
    stdout and the journal; at exit, leftovers are stopped too.
    """
    started = time.monotonic()
    if request.cancel.is_set():
        return Ran(stop=Stop(limit="cancelled"))
    workdir = request.workdir
    if workdir is not None and not workdir.is_dir():
        return Ran(failure=f"working directory '{workdir}' does not exist")
    args = [str(request.arg_files.get(i, arg)) for i, arg in enumerate(args)]
    options = request.participant.options
    bwrap, note, failure = _confinement(request)
    if failure is not None:
        return Ran(failure=failure)
    with tempfile.TemporaryDirectory(prefix="council-program-", ignore_cleanup_errors=True) as tmp:
        box_dir = Path(tmp) / "box"
        box_dir.mkdir(mode=0o700)
        if bwrap is not None:  # inside the sandbox; the worker reads it through Storage
            journal = STORE / JOURNAL_NAME
        else:
            journal = Path(tmp) / "journal" / JOURNAL_NAME
            journal.parent.mkdir(mode=0o700)
            journal.touch(mode=0o600)
            scripts_dir(journal).mkdir(mode=0o700)
        env = program_env(
            {**os.environ, "PATH": search_path(os.environ.get("PATH"))},
            temp_dir=box_dir,
            council={**request.env, JOURNAL_ENV: str(journal)},
            names=[str(n) for n in options.get("env", [])],
            tree=workdir,
            sandbox="bwrap" if bwrap is not None else "none",
            store=STORE if bwrap is not None else None,
        )
        try:
            argv = [_locate(request, env), *args]
        except _CannotStart as error:
            return Ran(failure=error.reason)
        storage_bytes = request.sandbox.storage_bytes if request.sandbox else PROGRAM_STORAGE_BYTES
        box = Box(
            temp_dir=box_dir,
            workdir=workdir,
            read_only=tuple(request.arg_files.values()),
            network=options.get("network") is True,
            limits=program_limits(storage_bytes),
            temp_in_memory=True,
            store=STORE,
        )
        runner = ScriptRunner(
            workdir,
            limits_of(options),
            bwrap=request.sandbox.bwrap if request.sandbox is not None else "bwrap",
        )
        notes = (note,) if note is not None else ()
        for wait_ms in (*BUSY_RETRY_MS, None):
            storage: Storage | None = None
            try:
                if bwrap is not None:
                    proc, storage = start_held(bwrap, box, argv, env)
                else:
                    proc = start_program(argv, workdir, env)
            except SandboxError as error:
                return Ran(failure=f"cannot sandbox program '{argv[0]}': {error}")
            except OSError as error:
                hint = " (a script needs a #! line)" if error.errno == errno.ENOEXEC else ""
                return Ran(failure=f"could not start program '{argv[0]}': {error.strerror}{hint}")
            try:
                ran = _watch(request, proc, storage, journal, runner, started)
            finally:
                if storage is not None:  # after the sandbox ended: frees its memory
                    storage.close()
            if not _busy(bwrap, ran):
                return replace(ran, notes=(*notes, *ran.notes))
            if wait_ms is None:
                break
            time.sleep(wait_ms / 1000)
        return Ran(
            failure=f"could not start program '{argv[0]}': Text file busy",
            duration_ms=ran.duration_ms,
        )


def _watch(
    request: ReviewRequest,
    proc: subprocess.Popen[bytes],
    storage: Storage | None,
    journal: Path,
    runner: ScriptRunner,
    started: float,
) -> Ran:
    """Serve the desks and follow the journal while :func:`supervise` watches ``proc``;
    through ``storage``'s descriptors when sandboxed, else the host's ``journal``."""
    desk = storage.desk if storage is not None else scripts_dir(journal)
    asks = AskDesk(
        desk,
        request.artifacts,
        request.resume,
        request.env.get("COUNCIL_RUN", ""),
        request.participant.id,
    )
    with ScriptDesk(desk, runner, request.scripts) as scripts, asks:
        follower = JournalFollower(storage.journal if storage else journal, request.journal)
        ran = supervise(proc, request, follower, started, storage)
    if storage is not None and not (scripts.stopped and asks.stopped):
        storage.keep_open = True
        stuck = "a desk thread did not stop: the program's storage stays held by the worker"
        ran = replace(ran, notes=(*ran.notes, stuck))
    return replace(ran, asked=asks.asked)


def _busy(bwrap: Bubblewrap | None, ran: Ran) -> bool:
    """Whether a sandboxed program never started because its file was busy (bwrap's own
    exec failed; see :data:`BUSY_RETRY_MS`): nothing was printed nor journalled."""
    return (
        bwrap is not None
        and not ran.stdout
        and not ran.journal_entries
        and busy_start(ran.status, ran.stderr_tail)
    )


def _confinement(request: ReviewRequest) -> tuple[Bubblewrap | None, str | None, str | None]:
    """How to run the request's program: ``(bwrap, note, failure)``.

    Confined: ``(bwrap, None, None)``. bubblewrap cannot run here: ``(None, None,
    failure)`` when the worker's policy or the roster forbids running unconfined, else
    ``(None, note, None)`` (the result's note; the CLI adds the run's). No policy:
    ``(None, None, None)``.
    """
    policy = request.sandbox
    if policy is None:
        return None, None, None
    bwrap = Bubblewrap(policy.bwrap)
    trouble = bwrap.trouble()
    if trouble is None:
        return bwrap, None, None
    refused = "the program was not run: a reviewer program runs only in a sandbox"
    if policy.required is not None:
        return None, None, f"{refused} {policy.required}, and {trouble}"
    if request.participant.options.get(SANDBOX_OPTION) == "required":
        return None, None, f'{refused} (the roster says sandbox = "required"), and {trouble}'
    return None, f"ran WITHOUT a sandbox: {trouble}", None
