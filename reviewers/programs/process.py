"""Running a reviewer program under our clocks: the process runner of command and sarif.

A reviewer program is any executable: the prompt goes to its stdin, its answer comes on
stdout, and it may record findings as it goes in the JSONL file named by
``COUNCIL_JOURNAL``. It runs in its own process group (its own session), so a stop kills
everything it started, grandchildren included: a reviewer that shells out to a model CLI
must not leave that CLI running after we gave up on it.

Celery's time limits do not apply in a threads pool, so these clocks are the real ones
(docs/architecture.md "Worker pool"). The soft deadline (``answer_ms``) does not apply: a plain
program has no channel on which to be asked to wrap up; only the backstop, the idle clock
and a cancellation stop it.

Source: docs/identity-and-clocks.md "Clocks", docs/harvest.md §1 and §7, docs/architecture.md.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import subprocess  # nosec B404
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Literal, cast

from council.asks.paused import Paused
from council.model.backend_result import Stop
from council.roster.backend_options import SANDBOX_OPTION
from council.roster.script_limits import limits_of
from reviewers.base import ReviewRequest
from reviewers.models.activity import Activity
from reviewers.programs.journal_file import JournalFollower
from reviewers.programs.program_search import find_program, interpreter_bin, search_path
from reviewers.sandbox.ask_desk import AskDesk
from reviewers.sandbox.bubblewrap import (
    Box,
    Bubblewrap,
    Limits,
    SandboxError,
    busy_start,
    program_env,
)
from reviewers.sandbox.script_desk import ScriptDesk, scripts_dir
from reviewers.sandbox.scripts import ScriptRunner

POLL_MS = 100
"""How often the clocks are checked and the journal file is read, in milliseconds."""

KILL_GRACE_MS = 1000
"""Time between SIGTERM and SIGKILL to a stopped program's process group, in ms."""

STDOUT_CAP_BYTES = 20 * 1024 * 1024
"""Most stdout kept, in bytes: past it the first half and the LAST half are kept (a
reviewer's final answer comes last), the middle is dropped, and that is noted."""

STDERR_TAIL_BYTES = 4096
"""How much of the end of stderr is kept for a failure message, in bytes."""

STDERR_TAIL_LINES = 10
"""How many of the last stderr lines a failure message quotes."""

BUSY_RETRY_MS = (10, 20, 50, 100, 200, 500, 1000)
"""Waits, in ms, before each new try to start a program the kernel calls busy (ETXTBSY).

Why: a program file written by this process (a base-tree program, see
``workers.execution.unpacked_trees``) stays open for writing in any child another thread forked in the
instant before the write's descriptor closed, until that child execs. Starting the
program then fails with "Text file busy" though nothing is wrong with it; the window is
a few milliseconds (golang/go#22315 describes the same race)."""

PROGRAM_LIMITS = Limits(
    file_size_bytes=1024 * 1024 * 1024,
    open_files=4096,
    tmp_bytes=256 * 1024 * 1024,
)
"""What a sandboxed reviewer program (``command``, ``sarif``) may use: files of at most
1 GiB written (RLIMIT_FSIZE), 4096 descriptors open at once (RLIMIT_NOFILE), and its
``HOME``/``TMPDIR``, ``/tmp`` and ``/dev/shm`` each an in-memory file system of 256 MiB,
so nothing it writes reaches the worker's disk and what it writes is bounded. Why: the
program is trusted (from the base) but reads the untrusted change, which may steer it
into writing without end. No memory (RLIMIT_AS) or process cap by default: runtimes such
as node reserve far more address space than they use, and the kernel exempts root from
RLIMIT_NPROC; the idle and backstop clocks bound its time. Source: issue "The change
under review is untrusted" (every size has a cap); docs/architecture.md "Layers"."""


PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal a process gets when its parent dies (Linux)."""

_PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
"""libc's prctl, looked up once here, not in a forked child (no dlsym after fork)."""


def _die_with_worker(parent: int) -> Callable[[], None] | None:
    """The child's preexec: SIGKILL this program when the worker dies (Linux), for a
    program run unconfined (a sandboxed one gets the same from bwrap's
    ``--die-with-parent``, see :mod:`reviewers.sandbox.bubblewrap`).

    Why: a worker SIGKILLed (OOM, a lost host's kill) cannot stop its reviewer programs;
    reparented to PID 1 they would run on past their backstop, recording into an attempt
    nobody will file. ``PR_SET_PDEATHSIG`` fires on the death of the THREAD that forked
    the child, not only the process: the review thread that starts a program is the one
    that supervises it until it ends (:func:`_supervise`), so it outlives the program
    unless the whole worker dies, which is exactly when the program must die too. A
    worker dead between the fork and the prctl is caught by comparing the parent pid.
    Only async-signal-safe work happens in the child (one prctl call, getppid, _exit).
    """
    prctl = _PRCTL
    if prctl is None:
        return None

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


JOURNAL_ENV = "COUNCIL_JOURNAL"
"""The variable that names the journal file (JSONL, one finding per line) to a program."""


@dataclass(frozen=True)
class Ran:
    """What running a program produced.

    * ``failure``: set when the program could not be started (the reason, verbatim);
      everything else is then empty.
    * ``stdout``: what it printed (at most ``STDOUT_CAP_BYTES``), ``stdout_capped`` when
      more was printed and dropped.
    * ``status``: the exit status (negative: killed by that signal); None when stopped.
    * ``stop``: the clock (or cancellation) that stopped it.
    * ``stderr_tail``: the last ``STDERR_TAIL_BYTES`` of stderr.
    * ``journal_entries``: lines of the journal file forwarded to the sink.
    * ``notes``: sentences about dropped output or journal lines.
    * ``duration_ms``: wall time from start to the end of the program, in ms.
    * ``asked``: the question it put to a person through ``council ask --question``
      and the worker accepted (:mod:`reviewers.sandbox.ask_desk`); None: none.
    """

    stdout: bytes = b""
    stdout_capped: bool = False
    status: int | None = None
    stop: Stop | None = None
    failure: str | None = None
    stderr_tail: bytes = b""
    journal_entries: int = 0
    notes: tuple[str, ...] = ()
    duration_ms: int = 0
    asked: Paused | None = None

    @property
    def answer(self) -> str:
        """The stdout decoded as UTF-8, invalid bytes replaced."""
        return self.stdout.decode("utf-8", errors="replace")

    def exit_reason(self) -> str:
        """One phrase for a failure: 'exited with status 3: <last lines of stderr>'."""
        status = self.status if self.status is not None else 0
        if status < 0:
            try:
                name = signal.Signals(-status).name
            except ValueError:
                name = f"signal {-status}"
            text = f"was killed by {name}"
        else:
            text = f"exited with status {status}"
        lines = self.stderr_tail.decode("utf-8", errors="replace").strip().splitlines()
        if not lines:
            return text + " and printed nothing on stderr"
        return text + ": " + "\n".join(lines[-STDERR_TAIL_LINES:])


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


class _Capture:
    """Reads one pipe to its end on a thread.

    Up to ``cap`` bytes are kept whole. Past it, with ``tail`` only the last ``cap``
    bytes are kept; without, the first ``cap // 2`` and the last ``cap // 2`` (so a long
    investigation log does not push out the answer printed at the end).
    """

    def __init__(self, stream: IO[bytes], cap: int, tail: bool, activity: Activity | None):
        self._stream, self._cap, self._tail, self._activity = stream, cap, tail, activity
        self.head = bytearray()
        self.rest = bytearray()
        self.capped = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @property
    def data(self) -> bytes:
        """What was kept, in order (head, then the tail when the middle was dropped)."""
        return bytes(self.head + self.rest)

    def _run(self) -> None:
        read1 = getattr(self._stream, "read1", self._stream.read)
        half = self._cap // 2
        while True:
            try:
                chunk: bytes = read1(65536)
            except (OSError, ValueError):
                return
            if not chunk:
                return
            if self._activity is not None:
                self._activity.touch()
            if self._tail:
                self.rest += chunk
                if len(self.rest) > self._cap:
                    self.capped = True
                    del self.rest[: len(self.rest) - self._cap]
                continue
            if len(self.head) + len(self.rest) + len(chunk) <= self._cap:
                self.head += chunk
                continue
            if len(self.head) < half:
                take = half - len(self.head)
                self.head += chunk[:take]
                chunk = chunk[take:]
            elif len(self.head) > half:
                self.rest = self.head[half:] + self.rest
                del self.head[half:]
            self.rest += chunk
            if len(self.rest) > self._cap - half:
                self.capped = True
                del self.rest[: len(self.rest) - (self._cap - half)]


def _feed(stream: IO[bytes], data: bytes) -> None:
    """Write the prompt to stdin and close it; a program that stops reading is fine."""
    # A program that closed stdin or exited does not want the rest: not a fault.
    with contextlib.suppress(OSError, ValueError):
        stream.write(data)
        stream.flush()
    with contextlib.suppress(OSError):
        stream.close()


def _group_alive(pgid: int) -> bool:
    """Whether a process group still has a running (not zombie) member."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # members exist that we may not signal
    return _running_member(pgid)


def _running_member(pgid: int) -> bool:
    """Whether /proc lists a member of the group that is not a zombie (True without /proc).

    Why: an orphaned grandchild whose new parent never reaps it (PID 1 in many containers)
    stays a zombie in the group; signals to the group still "succeed", and waiting for it
    would always cost the whole grace.
    """
    if not os.path.isdir("/proc"):
        return True
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(os.path.join(entry.path, "stat"), encoding="utf-8") as handle:
                    fields = handle.read().rsplit(")", 1)[-1].split()
            except OSError:
                continue  # exited while we looked
            if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
                return True
    return False


def _signal_group(pgid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def kill_group(proc: subprocess.Popen[bytes], grace_ms: int = KILL_GRACE_MS) -> None:
    """Stop a program and everything in its process group: SIGTERM, then SIGKILL.

    Why: a stopped reviewer must not leave children (a model CLI, a language server)
    running and holding our pipes. ``grace_ms`` is how long the group gets to exit on
    SIGTERM. The leader is reaped before returning. Never raises for a group already gone.
    """
    pgid = proc.pid
    if _group_alive(pgid):
        _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace_ms / 1000
        while time.monotonic() < deadline:
            if proc.poll() is not None and not _group_alive(pgid):
                break
            time.sleep(0.02)
        else:
            _signal_group(pgid, signal.SIGKILL)
    proc.wait()


def run_program(request: ReviewRequest, args: Sequence[str]) -> Ran:
    """Run the reviewer's program on the prompt under its clocks; never raises.

    argv = [program] + ``args``; program = ``request.program`` when set (materialized
    from the base tree), else ``options["program"]`` (a bare name on the child's PATH, an
    absolute path, or a path relative to ``options["base_dir"]``, else the current
    directory); an entry of ``args`` that names a file of the BASE tree is replaced by
    that file, materialized (``request.arg_files``). cwd = ``request.workdir``.

    The environment is an allowlist (:func:`~reviewers.sandbox.bubblewrap.program_env`):
    PATH (council's interpreter's ``bin/`` first, as programs are found, see
    :mod:`~reviewers.programs.program_search`) without relative entries nor entries in the
    tree, HOME and TMPDIR in a private temp dir, LANG/LC_ALL/TZ,
    council's ``request.env``, ``COUNCIL_JOURNAL`` (a fresh, empty JSONL file, removed
    afterwards) and the variables the roster entry lists in ``env``; never a provider's
    key nor ``COUNCIL_REDIS_URL``. Beside the journal, ``scripts/`` (writable) is where
    ``council run-script`` hands its scripts to the worker, which runs them in a script
    sandbox and records their rows in ``request.scripts``
    (:mod:`reviewers.sandbox.script_desk`), and where ``council ask --question`` hands
    a question to a person, checked by the worker (:mod:`reviewers.sandbox.ask_desk`).
    The journal file is followed every ``POLL_MS`` ms, each complete line forwarded to
    ``request.journal``.

    Confinement (``request.sandbox``, see :mod:`reviewers.sandbox.bubblewrap`): the program
    runs in a bubblewrap sandbox (the tree read-only, no network unless the entry says
    ``network = true``, the worker's home hidden). When bubblewrap cannot run here, a
    policy with ``required`` set (CI, a distributed worker) or a roster with
    ``[council] sandbox = "required"`` makes it a failure naming the package; otherwise
    it runs unconfined with a note saying so. ``request.sandbox`` None: unconfined, no
    note (tests and tools that run trusted programs).

    Clocks (ms): ``backstop_ms`` → stop ``wall-clock``; ``idle_ms`` with no stdout byte, no
    new journal line and no new entry in ``request.heard()`` → stop ``idle``;
    ``request.cancel`` → stop ``cancelled``. On a stop the group is killed
    (:func:`kill_group`); partial stdout and the journal are kept.
    When the program exits, anything it left running in its group is stopped too.
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
        journal = Path(tmp) / "journal" / "journal.jsonl"
        journal.parent.mkdir(mode=0o700)
        journal.touch(mode=0o600)
        desk_dir = scripts_dir(journal)
        desk_dir.mkdir(mode=0o700)
        box_dir = Path(tmp) / "box"
        box_dir.mkdir(mode=0o700)
        env = program_env(
            {**os.environ, "PATH": search_path(os.environ.get("PATH"))},
            temp_dir=box_dir,
            council={**request.env, JOURNAL_ENV: str(journal)},
            names=[str(n) for n in options.get("env", [])],
            tree=workdir,
            sandbox="bwrap" if bwrap is not None else "none",
        )
        try:
            argv = [_locate(request, env), *args]
        except _CannotStart as error:
            return Ran(failure=error.reason)
        box = Box(
            temp_dir=box_dir,
            workdir=workdir,
            read_only=tuple(request.arg_files.values()),
            writable=(journal, desk_dir),
            network=options.get("network") is True,
            limits=PROGRAM_LIMITS,
            temp_in_memory=True,
        )
        runner = ScriptRunner(
            workdir,
            limits_of(options),
            bwrap=request.sandbox.bwrap if request.sandbox is not None else "bwrap",
        )
        notes = (note,) if note is not None else ()
        for wait_ms in (*BUSY_RETRY_MS, None):
            try:
                proc = bwrap.start(box, argv, env) if bwrap else _start(argv, workdir, env)
            except SandboxError as error:
                return Ran(failure=f"cannot sandbox program '{argv[0]}': {error}")
            except OSError as error:
                hint = " (a script needs a #! line)" if error.errno == errno.ENOEXEC else ""
                return Ran(failure=f"could not start program '{argv[0]}': {error.strerror}{hint}")
            asks = AskDesk(
                desk_dir,
                request.artifacts,
                request.resume,
                request.env.get("COUNCIL_RUN", ""),
                request.participant.id,
            )
            with ScriptDesk(desk_dir, runner, request.scripts), asks:
                follower = JournalFollower(journal, request.journal)
                ran = _supervise(proc, request, follower, started)
            if not _busy(bwrap, ran):
                return replace(ran, notes=(*notes, *ran.notes), asked=asks.asked)
            if wait_ms is None:
                break
            time.sleep(wait_ms / 1000)
        return Ran(
            failure=f"could not start program '{argv[0]}': Text file busy",
            duration_ms=ran.duration_ms,
        )


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


def _start(argv: list[str], workdir: Path | None, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start the program in its own session with piped stdio; raises ``OSError``.

    A start refused as "Text file busy" is tried again after each wait of
    :data:`BUSY_RETRY_MS` (about 1.9 s in all) before the error is raised.
    """
    for wait_ms in (*BUSY_RETRY_MS, None):
        try:
            # Running the roster's program is this module's job; argv, never a shell.
            return subprocess.Popen(  # nosec B603
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=workdir,
                env=env,
                start_new_session=True,
                preexec_fn=_die_with_worker(os.getpid()),  # see its docstring
            )
        except OSError as error:
            if error.errno != errno.ETXTBSY or wait_ms is None:
                raise
            time.sleep(wait_ms / 1000)
    raise AssertionError("unreachable: the last try raises or returns")


def _supervise(
    proc: subprocess.Popen[bytes],
    request: ReviewRequest,
    follower: JournalFollower,
    started: float,
) -> Ran:
    # All three streams were opened as pipes, so none of them is None.
    stdin, stdout, stderr = (cast("IO[bytes]", s) for s in (proc.stdin, proc.stdout, proc.stderr))
    clocks = request.participant.clocks
    activity = Activity()
    out = _Capture(stdout, STDOUT_CAP_BYTES, tail=False, activity=activity)
    err = _Capture(stderr, STDERR_TAIL_BYTES, tail=True, activity=None)
    feeder = threading.Thread(
        target=_feed, args=(stdin, request.prompt.encode("utf-8")), daemon=True
    )
    feeder.start()
    stop: Stop | None = None
    heard = request.heard()
    while proc.poll() is None:
        if follower.poll():
            activity.touch()
        if (now_heard := request.heard()) != heard:  # a `council record` straight to Redis
            heard = now_heard
            activity.touch()
        elapsed_ms = int((time.monotonic() - started) * 1000)
        if request.cancel.is_set():
            stop = Stop(limit="cancelled")
        elif elapsed_ms >= clocks.backstop_ms:
            stop = Stop(limit="wall-clock", budget_ms=clocks.backstop_ms)
        elif activity.since_ms() >= clocks.idle_ms:
            stop = Stop(limit="idle", budget_ms=clocks.idle_ms)
        if stop is not None:
            break
        wait_ms = min(
            POLL_MS,
            clocks.backstop_ms - elapsed_ms,
            clocks.idle_ms - activity.since_ms(),
        )
        request.cancel.wait(max(wait_ms, 1) / 1000)
    kill_group(proc)
    duration_ms = int((time.monotonic() - started) * 1000)
    notes: list[str] = []
    for capture, stream, name in ((out, stdout, "stdout"), (err, stderr, "stderr")):
        capture.thread.join(KILL_GRACE_MS / 1000)
        if capture.thread.is_alive():
            notes.append(f"{name} stayed open after the program's process group ended")
        else:
            stream.close()
    feeder.join(KILL_GRACE_MS / 1000)
    follower.finish()
    notes.extend(follower.notes)
    if out.capped:
        notes.append(
            f"stdout was over {STDOUT_CAP_BYTES} bytes: its first and last "
            f"{STDOUT_CAP_BYTES // 2} bytes were read, the middle was dropped"
        )
    return Ran(
        stdout=bytes(out.data),
        stdout_capped=out.capped,
        status=None if stop is not None else proc.returncode,
        stop=stop,
        stderr_tail=bytes(err.data),
        journal_entries=follower.forwarded,
        notes=tuple(notes),
        duration_ms=duration_ms,
    )
