"""Running one script a reviewer submitted: ``run_script`` and ``council run-script``.

A reviewer (a model's ``run_script`` tool, a command reviewer's ``council run-script``)
submits ``{"language", "program"}``; the program runs once in a bubblewrap sandbox of its
own (:mod:`reviewers.sandbox.bubblewrap`) and the call ends as one :class:`ScriptRun`,
whose row (:class:`~council.evidence.ScriptRow`) the evidence matcher later compares the
reviewer's shown blocks against. The sandbox is stricter than a reviewer program's: the
tree read-only, an in-memory scratch of :data:`SCRATCH_BYTES`, no network, the system's
interpreters only (:data:`SYSTEM_PATH`), uid :data:`SCRIPT_UID`, no capabilities. The
limits (:class:`~council.roster.script_limits.ScriptLimits`) and how each is enforced, a
root worker's pids cgroup included (where none can be made, the script is NOT run):
docs/evidence-and-asks.md §1.

Source: docs/evidence-and-asks.md §1.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess  # nosec B404
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from council.evidence import SCRIPT_MAX_BYTES, RunOutcome, ScriptRow
from council.evidence.matching import fits_cap
from council.roster.script_limits import LANGUAGES, ScriptLimits
from reviewers.sandbox.bubblewrap import Box, Bubblewrap, Limits, SandboxError, program_env

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
"""Where interpreters are looked up, and the script's PATH: the system's, never a venv."""

SCRIPT_UID = 65534
"""The uid and gid a script runs as inside its sandbox (``nobody``)."""

SCRATCH_BYTES = 64 * 1024 * 1024
"""The size of the script's in-memory writable directory, and of its ``/tmp`` (bytes)."""

FILE_BYTES = 32 * 1024 * 1024
"""RLIMIT_FSIZE: the largest file a script may write, in bytes."""

OPEN_FILES = 256
"""RLIMIT_NOFILE: descriptors a script may hold open at once."""

NODE_RESERVE_MB = 1024
"""Address space added to ``memory_mb`` for ``node`` (MiB): V8 reserves about a GiB of
address space at start (measured: node 18 does not start under 512 MiB of RLIMIT_AS)."""

@dataclass(frozen=True)
class ScriptRun:
    """How one script call ended.

    ``outcome``: ``ok`` (exit 0), ``failed`` (a non-zero exit; a signal as ``128 + signal``,
    as bwrap reports it), ``timeout`` (``wall_s`` or ``cpu_s``), ``error`` (the sandbox could
    not run it) or ``not-run`` (refused before it started: bad arguments, no sandbox here, a
    limit that cannot be enforced). ``exit_code``: only when the program exited (not after a
    ``wall_s`` timeout). ``output``: stdout and stderr through one pipe, interleaved as
    written, at most ``output_bytes``, UTF-8 with replacement. ``limit``: the one that stopped
    it (``wall_s``, ``cpu_s``, ``output_bytes``) or that its output shows it hit
    (``memory_mb``, ``processes``). ``reason``: why it did not run, or what broke.
    """

    outcome: RunOutcome
    exit_code: int | None = None
    output: str = ""
    output_capped: bool = False
    limit: str | None = None
    reason: str = ""
    duration_ms: int = 0

    def row(self, tool_call_id: str, tool: str, dispatch: int, text: str | None) -> ScriptRow:
        """The evidence row of this run for one call (``dispatch`` from 1)."""
        return ScriptRow(
            tool_call_id=tool_call_id,
            tool=tool,
            dispatch=dispatch,
            outcome=self.outcome,
            exit_code=self.exit_code,
            text=text,
        )

    def as_json(self) -> dict[str, Any]:
        """The run as JSON (``council run-script --json``), None fields left out."""
        out: dict[str, Any] = {"outcome": self.outcome}
        if self.exit_code is not None:
            out["exit_code"] = self.exit_code
        if self.limit is not None:
            out["limit"] = self.limit
        if self.reason:
            out["reason"] = self.reason
        out["output"] = self.output
        out["output_capped"] = self.output_capped
        out["duration_ms"] = self.duration_ms
        return out


def reply_text(run: ScriptRun, limits: ScriptLimits) -> str:
    """The tool's reply to the model: how it ended, then the output (saying if cut)."""
    if run.outcome == "not-run":
        return f"The script was not run: {run.reason}"
    if run.outcome == "error":
        return f"The script could not be run in its sandbox: {run.reason}"
    head = {
        "ok": "The script exited with status 0.",
        "failed": f"The script exited with status {run.exit_code}.",
        "timeout": "The script was stopped: it ran out of time.",
    }.get(run.outcome, run.outcome)
    if run.limit is not None:
        value = getattr(limits, run.limit)
        head += f" Limit {run.limit} = {value} {_UNITS[run.limit]} stopped it."
    body = run.output if run.output else "(no output)"
    if run.output_capped:
        body += f"\n[output cut at {limits.output_bytes} bytes]"
    return f"{head}\nOutput (stdout and stderr together):\n{body}"


_UNITS = {
    "cpu_s": "CPU seconds",
    "wall_s": "seconds",
    "memory_mb": "MiB",
    "processes": "tasks",
    "output_bytes": "bytes",
}


def check_submission(arguments: Mapping[str, Any]) -> tuple[str, str] | str:
    """``(language, program)`` from a call's arguments, or the refusal sentence.

    ``program`` must be a string of at most :data:`~council.evidence.SCRIPT_MAX_BYTES`
    UTF-8 bytes holding no NUL; ``language`` one of :data:`LANGUAGES`. Never raises.
    """
    language = arguments.get("language")
    program = arguments.get("program")
    if not isinstance(program, str):
        return "program must be the script's text (a string)."
    if language not in LANGUAGES:
        return f"language must be one of {', '.join(LANGUAGES)}."
    if "\0" in program:
        return "program holds a NUL character."
    if not fits_cap(program):
        return f"program is longer than {SCRIPT_MAX_BYTES} bytes."
    return str(language), program


def _memory_bytes(language: str, limits: ScriptLimits) -> int:
    reserve = NODE_RESERVE_MB if language == "node" else 0
    return (limits.memory_mb + reserve) * 1024 * 1024


def _argv(language: str, interpreter: str, program: Path, limits: ScriptLimits) -> list[str]:
    if language == "node":
        return [interpreter, f"--max-old-space-size={limits.memory_mb}", str(program)]
    return [interpreter, str(program)]


class ScriptRunner:
    """Runs scripts in bubblewrap under :class:`ScriptLimits`; one per reviewer attempt.

    ``tree`` is the pinned head tree (None: the script's working directory is its
    private one); ``bwrap`` the bubblewrap binary (the worker's ``COUNCIL_BWRAP``);
    ``cancel`` stops a running script as a ``wall_s`` timeout would.
    """

    def __init__(
        self,
        tree: Path | None,
        limits: ScriptLimits,
        bwrap: str = "bwrap",
        cancel: threading.Event | None = None,
        host_env: Mapping[str, str] | None = None,
    ) -> None:
        self.tree = tree.resolve() if tree is not None else None
        self.limits = limits
        self.bwrap = Bubblewrap(bwrap)
        self.cancel = cancel if cancel is not None else threading.Event()
        self.host_env = dict(os.environ if host_env is None else host_env)

    def run(self, language: str, program: str) -> ScriptRun:
        """Run ``program`` once; never raises (a fault is an ``error`` or ``not-run``)."""
        started = time.monotonic()
        try:
            return self._run(language, program, started)
        except Exception as error:  # the runner never raises into a reviewer's loop
            return ScriptRun(
                outcome="error",
                reason=f"{type(error).__name__}: {error}",
                duration_ms=_ms(started),
            )

    def _run(self, language: str, program: str, started: float) -> ScriptRun:
        if language not in LANGUAGES:
            return ScriptRun(outcome="not-run", reason=f"unknown language {language!r}")
        if self.cancel.is_set():
            return ScriptRun(outcome="not-run", reason="the review was cancelled")
        trouble = self.bwrap.trouble()
        if trouble is not None:
            return ScriptRun(outcome="not-run", reason=f"no sandbox here: {trouble}")
        name, filename = LANGUAGES[language]
        interpreter = shutil.which(name, path=SYSTEM_PATH)
        if interpreter is None:
            return ScriptRun(
                outcome="not-run", reason=f"{name} is not installed on this worker ({language})"
            )
        if self.tree is not None and not self.tree.is_dir():
            return ScriptRun(outcome="not-run", reason="the pinned tree is not there")
        with contextlib.ExitStack() as stack:
            host = Path(
                stack.enter_context(
                    tempfile.TemporaryDirectory(
                        prefix="council-script-", ignore_cleanup_errors=True
                    )
                )
            )
            pids = stack.enter_context(pids_cgroup(self.limits.processes))
            if isinstance(pids, str):
                return ScriptRun(outcome="not-run", reason=pids)
            prog = host / "prog"
            prog.mkdir(mode=0o755)
            script = prog / filename
            script.write_bytes(program.encode("utf-8", "surrogatepass"))
            script.chmod(0o644)
            scratch = host / "box"
            scratch.mkdir(mode=0o700)
            env = program_env(
                {"PATH": SYSTEM_PATH, **{k: v for k, v in self.host_env.items() if k != "PATH"}},
                temp_dir=scratch,
                council={},
                tree=self.tree,
            )
            box = Box(
                temp_dir=scratch,
                workdir=self.tree,
                read_only=(script,),
                network=False,
                limits=Limits(
                    address_space_bytes=_memory_bytes(language, self.limits),
                    file_size_bytes=FILE_BYTES,
                    open_files=OPEN_FILES,
                    cpu_s=self.limits.cpu_s,
                    processes=self.limits.processes if pids is None else None,
                    tmp_bytes=SCRATCH_BYTES,
                ),
                uid=SCRIPT_UID,
                runtime=False,
                temp_in_memory=True,
            )
            try:
                line = self.bwrap.command(
                    box, _argv(language, interpreter, script, self.limits), SYSTEM_PATH
                )
            except SandboxError as error:
                return ScriptRun(outcome="error", reason=str(error), duration_ms=_ms(started))
            if pids is not None:
                line = pids.wrap(line)
            return self._supervise(line, env, started, pids, host)
        raise AssertionError("unreachable")  # pragma: no cover

    def _supervise(
        self,
        line: list[str],
        env: Mapping[str, str],
        started: float,
        pids: PidsCgroup | None,
        cwd: Path,
    ) -> ScriptRun:
        # bwrap (with our argv, never a shell), its stdout and stderr on one pipe.
        proc = subprocess.Popen(  # nosec B603
            line,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
        capture = _Output(cast("IO[bytes]", proc.stdout), self.limits.output_bytes)
        deadline = started + self.limits.wall_s
        stopped: str | None = None
        cpu_s = 0.0
        pause_s = 0.001  # doubled up to 20 ms: a short script is not kept waiting a tick
        while True:
            # wait4, not Popen.poll: its rusage holds the CPU time of the whole sandbox
            # (bwrap waits for its init, which waits for every process of the script).
            pid, wait_status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                proc.returncode = os.waitstatus_to_exitcode(wait_status)
                cpu_s = usage.ru_utime + usage.ru_stime
                break
            if capture.over.wait(pause_s):
                stopped = "output_bytes"
                break
            pause_s = min(pause_s * 2, 0.02)
            if self.cancel.is_set() or time.monotonic() >= deadline:
                stopped = "wall_s"
                break
        if stopped is not None:
            _kill(proc)
        if pids is not None:
            pids.kill_all()
        capture.thread.join(1.0)
        with contextlib.suppress(OSError):
            cast("IO[bytes]", proc.stdout).close()
        status = proc.returncode
        output = bytes(capture.kept).decode("utf-8", errors="replace")
        duration = _ms(started)
        if stopped == "wall_s":
            return ScriptRun(
                outcome="timeout",
                output=output,
                output_capped=capture.capped,
                limit="wall_s",
                duration_ms=duration,
            )
        if stopped == "output_bytes":
            return ScriptRun(
                outcome="failed",
                exit_code=status if status and status > 0 else 128 + 9,
                output=output,
                output_capped=True,
                limit="output_bytes",
                duration_ms=duration,
            )
        if status == 1 and output.startswith("bwrap: "):
            return ScriptRun(outcome="error", reason=output.strip(), duration_ms=duration)
        if _cpu_spent(status, cpu_s, self.limits.cpu_s):
            return ScriptRun(
                outcome="timeout",
                exit_code=status,
                output=output,
                output_capped=capture.capped,
                limit="cpu_s",
                duration_ms=duration,
            )
        limit = None
        if status != 0:
            limit = "processes" if pids is not None and pids.hit() else _limit_in(output)
        return ScriptRun(
            outcome="ok" if status == 0 else "failed",
            exit_code=status,
            output=output,
            output_capped=capture.capped,
            limit=limit,
            duration_ms=duration,
        )


def _cpu_spent(status: int | None, cpu_s: float, limit_s: int) -> bool:
    """Whether a script's end is RLIMIT_CPU's: killed by SIGXCPU (the soft limit), or by
    SIGKILL (the hard one) after using at least ``limit_s`` CPU seconds (``cpu_s``, the
    sandbox's whole CPU time)."""
    return status == 128 + 24 or (status == 128 + 9 and cpu_s >= limit_s)


_MEMORY_SIGNS = ("MemoryError", "Cannot allocate memory", "out of memory", "Allocation failed")
_PROCESS_SIGNS = ("Resource temporarily unavailable", "BlockingIOError", "fork: retry")


def _limit_in(output: str) -> str | None:
    """The limit a failed script's output shows it ran into, or None."""
    if any(sign in output for sign in _MEMORY_SIGNS):
        return "memory_mb"
    if any(sign in output for sign in _PROCESS_SIGNS):
        return "processes"
    return None


class _Output:
    """Reads the script's output pipe on a thread, keeping at most ``cap`` bytes; sets
    :attr:`over` once more was printed."""

    def __init__(self, stream: IO[bytes], cap: int) -> None:
        self.stream, self.cap = stream, cap
        self.kept = bytearray()
        self.capped = False
        self.over = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        read1 = getattr(self.stream, "read1", self.stream.read)
        while True:
            try:
                chunk: bytes = read1(65536)
            except (OSError, ValueError):
                return
            if not chunk:
                return
            room = self.cap - len(self.kept)
            if len(chunk) > room:
                self.kept += chunk[: max(room, 0)]
                self.capped = True
                self.over.set()
                return
            self.kept += chunk


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the script's process group (bwrap's session; bwrap's death takes the
    sandbox's pid namespace with it) and reap bwrap. A script gets no grace: nothing of
    it is worth waiting for."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


# -- the pids cgroup, where the worker is root ----------------------------------------

CGROUP_ROOTS: tuple[Path, ...] = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))
"""Where a pids cgroup is looked for: cgroup v1's pids hierarchy, then cgroup v2's."""


@dataclass
class PidsCgroup:
    """A pids cgroup of one script run: ``pids.max`` holds every task in it.

    Why: RLIMIT_NPROC does not hold for a task whose uid outside every user namespace is
    root (the kernel exempts it), and a root worker's sandbox maps its uid to root
    outside. The script joins the cgroup before bwrap starts (:meth:`wrap`: a shell
    writes its own pid to ``cgroup.procs`` and execs bwrap), so every descendant is in it.
    """

    path: Path
    processes: int
    killed: list[int] = field(default_factory=list)

    def wrap(self, line: list[str]) -> list[str]:
        """``line`` started from inside the cgroup."""
        sh = shutil.which("sh", path=SYSTEM_PATH) or "/bin/sh"
        joins = 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"'
        return [sh, "-c", joins, "sh", str(self.path), *line]

    def hit(self) -> bool:
        """Whether a fork was refused by ``pids.max`` (``pids.events``: ``max N``)."""
        try:
            events = (self.path / "pids.events").read_text()
        except OSError:
            return False
        for line in events.splitlines():
            name, _, count = line.partition(" ")
            if name == "max" and count.strip() not in ("", "0"):
                return True
        return False

    def kill_all(self) -> None:
        """SIGKILL every task left in the cgroup (a script's stray children)."""
        for _ in range(50):
            try:
                pids = [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
            except (OSError, ValueError):
                return
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)


@contextlib.contextmanager
def pids_cgroup(processes: int) -> Iterator[PidsCgroup | str | None]:
    """The pids cgroup a root worker's script runs in; None where RLIMIT_NPROC holds (the
    worker is not root); the refusal sentence where it is root and no pids cgroup can be
    made (the script must then not run: nothing would stop a fork bomb). Removes the
    cgroup afterwards."""
    if os.geteuid() != 0:
        yield None
        return
    made: Path | None = None
    for root in CGROUP_ROOTS:
        if not (root / "cgroup.procs").is_file():
            continue
        if root.name != "pids" and "pids" not in _controllers(root):
            continue
        path = root / f"council-script-{uuid.uuid4().hex[:12]}"
        try:
            path.mkdir()
            (path / "pids.max").write_text(str(processes))
        except OSError:
            with contextlib.suppress(OSError):
                path.rmdir()
            continue
        made = path
        break
    if made is None:
        yield (
            "the worker runs as root, where the processes limit (RLIMIT_NPROC) does not "
            "hold, and no pids cgroup can be made here (/sys/fs/cgroup is read-only); run "
            "the worker as a user other than root, or give it a writable pids cgroup"
        )
        return
    group = PidsCgroup(made, processes)
    try:
        yield group
    finally:
        group.kill_all()
        for _ in range(50):
            try:
                made.rmdir()
                break
            except OSError:
                time.sleep(0.02)


def _controllers(root: Path) -> set[str]:
    """The controllers a cgroup v2 directory enables for its children."""
    try:
        return set((root / "cgroup.subtree_control").read_text().split())
    except OSError:
        return set()
