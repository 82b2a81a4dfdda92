"""Confining a program that reads untrusted files: bubblewrap, and an allowlisted environment.

A pull request comes from anyone, and a reviewer program runs in the change's tree, which
can hand it a config that loads a plugin, a file it runs, a ``bin/`` on a relative PATH
entry. So a program runs in a bubblewrap sandbox (the ``bwrap`` binary) that shows it the
system read-only (:data:`SYSTEM_DIRS`, :data:`ETC_ENTRIES`), its :class:`Box`'s paths, a
private ``HOME`` and ``TMPDIR``, a fresh ``/proc``, a minimal ``/dev`` and an empty
``/tmp``: not the worker's home nor other runs, no network unless the box asks, and only
the environment :func:`program_env` lets through. The flags, and why each (probed on
Debian's bubblewrap 0.8.0): docs/security.md "Sandbox". Where bubblewrap cannot run,
:meth:`Bubblewrap.trouble` says why; the caller decides (:mod:`reviewers.programs.process`).

Source: docs/architecture.md "The shape" (workers run reviewers on the pinned tree), issue
"The change under review is untrusted"; docs/security.md "Sandbox".
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import subprocess  # nosec B404
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

INSTALL_HINT = "apt-get install bubblewrap"
"""How to install bubblewrap on Debian and Ubuntu (the package is ``bubblewrap``)."""

SYSTEM_DIRS: tuple[str, ...] = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
)
"""System directories shown read-only (a symbolic link, as /bin is on merged-/usr
systems, is made again as the same link)."""

ETC_ENTRIES: tuple[str, ...] = (
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "host.conf",
    "resolv.conf",
    "gai.conf",
    "services",
    "protocols",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "pki",
    "crypto-policies",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "alternatives",
    "mime.types",
    "os-release",
    "debian_version",
)
"""The files and directories of ``/etc`` shown read-only, when they exist: what libc, the
dynamic linker, TLS and interpreters read. Nothing else of ``/etc`` is there."""

BUSY_MARK = b"Text file busy"
"""What bwrap prints when the program it execs is still open for writing somewhere."""

SANDBOX_ENV = "COUNCIL_SANDBOX"
"""Set to ``bwrap`` inside a sandbox, ``none`` in an unconfined run (for the program)."""


PROGRAM_STORAGE_BYTES = 64 * 1024 * 1024
"""Everything a reviewer program may hold written at once, in bytes (64 MiB, the worker's
``COUNCIL_PROGRAM_STORAGE_BYTES``): its journal, ``scripts/``, ``HOME``, ``TMPDIR``,
``/tmp`` and ``/dev/shm``, all in memory (:mod:`reviewers.sandbox.storage`)."""


@dataclass(frozen=True)
class SandboxPolicy:
    """How a worker confines the reviewer programs it runs (built at the worker's edge).

    * ``bwrap``: the bubblewrap binary, a name on PATH or a path (``COUNCIL_BWRAP``).
    * ``required``: why a program may NOT run unconfined here when bubblewrap cannot run
      (``"in CI (CI is set)"``, ``"on a distributed worker"``): the reviewer then fails
      naming the package. None: it runs unconfined, with the allowlisted environment and
      a note saying so (embedded mode on a laptop reviewing its own repository). A
      roster's ``[council] sandbox = "required"`` refuses that too.
    * ``storage_bytes``: the cap of what a confined program holds written at once
      (:data:`PROGRAM_STORAGE_BYTES`); reaching it stops the reviewer (``disk``).
    """

    bwrap: str = "bwrap"
    required: str | None = None
    storage_bytes: int = PROGRAM_STORAGE_BYTES


class SandboxError(Exception):
    """The sandbox cannot be set up as asked (a limit needs ``prlimit``, a path is not
    absolute); the message says what and how to fix it."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of a confined program; None leaves a limit as it is.

    ``address_space_bytes`` (RLIMIT_AS; some runtimes reserve far more than they use),
    ``file_size_bytes`` (RLIMIT_FSIZE: the largest file it may write), ``open_files``
    (RLIMIT_NOFILE), ``cpu_s`` (RLIMIT_CPU in seconds, the hard limit a second after the soft
    one, so a program ignoring SIGXCPU still ends; wall time is the caller's clock),
    ``processes`` (RLIMIT_NPROC: per sandbox through its user namespace, but NEVER for a uid
    that is root outside), ``tmp_bytes`` (the in-memory ``/tmp``, and ``temp_dir`` with
    :attr:`Box.temp_in_memory`), ``shm_bytes`` (the in-memory ``/dev/shm``; None:
    ``tmp_bytes``). Set by ``prlimit`` inside the sandbox, not by a ``preexec_fn``:
    docs/security.md "Sandbox".
    """

    address_space_bytes: int | None = None
    file_size_bytes: int | None = None
    open_files: int | None = None
    cpu_s: int | None = None
    processes: int | None = None
    tmp_bytes: int | None = None
    shm_bytes: int | None = None

    def prlimit_flags(self) -> list[str]:
        """The ``prlimit`` flags for the rlimits set (empty: no ``prlimit`` needed)."""
        cpu = None if self.cpu_s is None else f"{self.cpu_s}:{self.cpu_s + 1}"
        pairs = (
            ("--as", self.address_space_bytes),
            ("--fsize", self.file_size_bytes),
            ("--nofile", self.open_files),
            ("--cpu", cpu),
            ("--nproc", self.processes),
        )
        return [f"{flag}={value}" for flag, value in pairs if value is not None]


@dataclass(frozen=True)
class Box:
    """What one confined program may see and do.

    ``temp_dir``: a private directory (the caller creates it, 0700, and removes it) holding
    ``HOME`` and ``TMPDIR``, writable at its own path. ``workdir``: read-only unless writable
    (None: ``temp_dir``). ``read_only``, ``writable``: absolute paths shown at their own paths
    (a link's target at the link's path too; a writable FILE, such as a journal, is a mount
    point, so it cannot be replaced by a link). ``network`` False: a loopback of its own.
    ``uid`` None: the caller's. ``runtime``: also show what a reviewer program needs to start
    (:func:`program_paths`); a script on a system interpreter needs nothing more.
    ``temp_in_memory``: ``temp_dir`` is a sized in-memory file system and the root and ``/dev``
    are read-only, so nothing written reaches the worker's disk and all of it is bounded.
    ``store`` (with ``temp_in_memory``): a directory of the in-memory ``/tmp`` that holds
    ``HOME`` and ``TMPDIR`` (``store/home``, ``store/tmp``, see :func:`program_env`) instead
    of ``temp_dir``, which is then not shown: one size holds all the program writes but
    ``/dev/shm`` (:mod:`reviewers.sandbox.storage`).
    """

    temp_dir: Path
    workdir: Path | None = None
    read_only: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    network: bool = False
    limits: Limits = field(default_factory=Limits)
    uid: int | None = None
    runtime: bool = True
    temp_in_memory: bool = False
    store: Path | None = None


_CORE_FLAGS: tuple[str, ...] = (
    "--unshare-all",
    "--unshare-user",
    "--cap-drop",
    "ALL",
    "--die-with-parent",
    "--new-session",
)
_NO_USERNS = "--disable-userns"


class Bubblewrap:
    """One bubblewrap binary: whether it works here, and the command lines it runs.

    ``binary`` is a name looked up on PATH or a path (the worker's ``COUNCIL_BWRAP``
    setting; default ``bwrap``). The probe runs once per binary per process and its
    success is kept; a failure is probed again next time (namespaces can run out).
    """

    _known: ClassVar[dict[str, tuple[str, bool]]] = {}
    """binary → (its path, whether it takes --disable-userns), once it worked."""
    _guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, binary: str = "bwrap") -> None:
        self.binary = binary

    def trouble(self) -> str | None:
        """Why this machine cannot sandbox a program with bubblewrap, or None when it can.

        Two reasons: the binary is not installed (the message names the Debian package),
        or it is there but cannot create its namespaces (its own words, e.g. a kernel or
        container that refuses unprivileged user namespaces). Never raises.
        """
        return self._probe()[1]

    def _probe(self) -> tuple[str | None, str | None]:
        """``(resolved binary, None)`` when bwrap works; ``(None, reason)`` otherwise."""
        with self._guard:
            known = self._known.get(self.binary)
        if known is not None:
            return known[0], None
        found = shutil.which(self.binary)
        if found is None:
            return None, (
                f"bubblewrap is not installed here ({self.binary!r} is not on PATH); "
                f"install it: {INSTALL_HINT}"
            )
        true = shutil.which("true", path="/usr/bin:/bin") or "/usr/bin/true"
        reason = ""
        for userns in (True, False):
            argv = [found, *_CORE_FLAGS, *((_NO_USERNS,) if userns else ())]
            argv += [*_system_mounts(), "--proc", "/proc", "--dev", "/dev", "--", true]
            try:
                done = subprocess.run(  # nosec B603: our own bwrap, argv, no shell
                    argv, capture_output=True, timeout=10, check=False, stdin=subprocess.DEVNULL
                )
            except (OSError, subprocess.SubprocessError) as error:
                return None, f"bubblewrap ({found}) cannot start: {error}"
            if done.returncode == 0:
                with self._guard:
                    self._known[self.binary] = (found, userns)
                return found, None
            reason = done.stderr.decode("utf-8", errors="replace").strip() or (
                f"exit status {done.returncode}"
            )
            if _NO_USERNS not in reason:
                break
        return None, (
            f"bubblewrap ({found}) cannot create its sandbox here: {reason}; it needs user "
            f"namespaces (a container may have to allow them, see the README's 'Sandbox')"
        )

    def command(
        self,
        box: Box,
        argv: Sequence[str],
        path_env: str = os.defpath,
        *,
        info_fd: int | None = None,
        block_fd: int | None = None,
    ) -> list[str]:
        """The command line that runs ``argv`` in ``box`` (``argv[0]`` an absolute path).

        ``info_fd``: bwrap writes ``{"child-pid": N, ...}`` there once the sandbox exists;
        ``block_fd``: the sandbox, set up, waits to read a byte (or end of file) there before
        it runs ``argv`` (:mod:`reviewers.sandbox.storage` uses both). Besides the box's
        own paths, what the program needs to start is shown read-only
        (:func:`program_paths`: the program, its ``#!`` interpreters, their venvs, this
        Python and council's packages; ``path_env`` is the PATH an ``env`` line searches).
        Raises :class:`SandboxError` when bubblewrap does not work here (see
        :meth:`trouble`), when a path of the box is not absolute, or when limits need
        ``prlimit`` and it is not installed.
        """
        found, reason = self._probe()
        if found is None:
            raise SandboxError(reason or "bubblewrap does not work here")
        with self._guard:
            userns = self._known[self.binary][1]
        store = (box.store,) if box.store is not None else ()
        for path in (box.temp_dir, *store, *(box.read_only), *(box.writable)):
            if not path.is_absolute():
                raise SandboxError(f"a sandbox path must be absolute, not '{path}'")
        if not argv or not os.path.isabs(argv[0]):
            raise SandboxError("the program to run in a sandbox must be an absolute path")
        line = [found, *_CORE_FLAGS, *((_NO_USERNS,) if userns else ())]
        if box.network:
            line.append("--share-net")
        line += _system_mounts()
        line += ["--proc", "/proc", "--dev", "/dev"]
        if box.limits.tmp_bytes is not None:
            line += ["--size", str(box.limits.tmp_bytes)]
        line += ["--tmpfs", "/tmp"]
        if box.uid is not None:
            line += ["--uid", str(box.uid), "--gid", str(box.uid)]
        line += _user_mounts(box, program_paths(argv[0], path_env) if box.runtime else ())
        line += ["--chdir", str(box.workdir or box.store or box.temp_dir)]
        for flag, fd in (("--info-fd", info_fd), ("--block-fd", block_fd)):
            if fd is not None:
                line += [flag, str(fd)]
        line.append("--")
        flags = box.limits.prlimit_flags()
        if flags:
            prlimit = shutil.which("prlimit", path="/usr/bin:/bin")
            if prlimit is None:
                raise SandboxError("resource limits need prlimit: apt-get install util-linux")
            line += [prlimit, *flags, "--"]
        return line + list(argv)

    def start(
        self, box: Box, argv: Sequence[str], env: Mapping[str, str]
    ) -> subprocess.Popen[bytes]:
        """Start ``argv`` in ``box`` with exactly ``env``, piped stdio, in a session of its
        own (so the caller can kill its process group). Raises :class:`SandboxError` (see
        :meth:`command`) and ``OSError`` when bwrap cannot be started."""
        # bwrap is started with argv, never a shell; the program is the caller's.
        return subprocess.Popen(  # nosec B603
            self.command(box, argv, env.get("PATH", os.defpath)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            start_new_session=True,
        )


def busy_start(status: int | None, stderr: bytes) -> bool:
    """Whether a sandboxed start failed only because the program file was busy (bwrap
    exits 1 with "execvp PROGRAM: Text file busy"; with limits, ``prlimit`` exits 126
    with "failed to execute PROGRAM: Text file busy"): the caller may try again."""
    by_bwrap = status == 1 and b"bwrap: execvp" in stderr
    by_prlimit = status == 126 and b"prlimit: failed to execute" in stderr
    return (by_bwrap or by_prlimit) and BUSY_MARK in stderr


def _system_mounts() -> list[str]:
    """The read-only system directories and ``/etc`` entries, as bwrap arguments."""
    out: list[str] = []
    for name in SYSTEM_DIRS:
        if os.path.islink(name):
            out += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            out += ["--ro-bind", name, name]
    for entry in ETC_ENTRIES:
        path = f"/etc/{entry}"
        if os.path.lexists(path):
            out += ["--ro-bind-try", path, path]
    return out


def _depth(path: str) -> int:
    return len(Path(path).parts)


def _under(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def _homes() -> list[Path]:
    """The worker's home directories ($HOME and the account's), resolved."""
    homes = [os.environ.get("HOME", "")]
    with contextlib.suppress(KeyError):
        homes.append(pwd.getpwuid(os.getuid()).pw_dir)
    return [Path(h).resolve() for h in homes if h]


def _too_wide(path: Path) -> bool:
    """Whether showing ``path`` would show the worker's whole home (it is the home, or
    holds it: a Python installed with ``--prefix ~``, say)."""
    real = path.resolve()
    return any(real == home or real in home.parents for home in _homes())


def _user_mounts(box: Box, needed: Sequence[Path] = ()) -> list[str]:
    """The box's own paths (and ``needed``, read-only, unless one would show the whole
    home, see :func:`_too_wide`) as bwrap arguments, parents before children (a later
    mount on a parent would hide a child), each path once."""
    system = [Path(name) for name in SYSTEM_DIRS if os.path.isdir(name)]
    system = [path for path in system if not path.is_symlink()]
    mounts: list[tuple[str, str, str]] = []
    shown: list[Path] = [*system]
    needed = [path for path in needed if not _too_wide(path)]
    for path in (*needed, *box.read_only, *((box.workdir,) if box.workdir else ())):
        if not os.path.lexists(path):
            continue
        real = path.resolve()
        for where in (real, path):
            if not _under(where, shown) and not _under(where, box.writable):
                mounts.append(("--ro-bind", str(real), str(where)))
                shown.append(where)
    for path in (*((box.temp_dir,) if not box.temp_in_memory else ()), *box.writable):
        real = path.resolve()
        mounts.append(("--bind", str(real), str(path)))
    mounts.sort(key=lambda m: _depth(m[2]))
    line = [part for mount in mounts for part in mount]
    if box.temp_in_memory:
        # After the binds: a tmpfs on a parent of a bound path would hide it.
        temp = str(box.store or box.temp_dir)
        if box.store is None:
            if box.limits.tmp_bytes is not None:
                line += ["--size", str(box.limits.tmp_bytes)]
            line += ["--tmpfs", temp]
        line += ["--dir", f"{temp}/home", "--dir", f"{temp}/tmp"]
        # Everything else in memory is sealed: the sandbox's root and /dev are tmpfs
        # mounts of the host's memory with no size (tried: a program could fill them).
        shm = box.limits.shm_bytes if box.limits.shm_bytes is not None else box.limits.tmp_bytes
        if shm is not None:
            line += ["--size", str(shm)]
        line += ["--tmpfs", "/dev/shm", "--remount-ro", "/dev", "--remount-ro", "/"]
    return line


def program_paths(program: str, path_env: str) -> list[Path]:
    """What must be visible for ``program`` (an absolute path) to run: the program, the
    interpreters of its ``#!`` lines (followed through ``/usr/bin/env NAME``, looked up
    on ``path_env``), the virtual environment any of them lives in, and this Python's
    installation with council's own packages (so ``council record`` runs inside).

    Shapes: absolute paths, not resolved (the sandbox resolves them), duplicates kept
    out. Never raises: an unreadable program simply adds nothing more.
    """
    out: list[Path] = []

    def add(path: Path) -> None:
        if path.is_absolute() and path not in out:
            out.append(path)

    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix):
        add(Path(prefix))
    add(Path(sys.executable))
    for package in _council_packages():
        add(package)
    current: str | None = program
    for _ in range(4):  # an interpreter may itself be a script (a venv's shim)
        if current is None:
            break
        path = Path(current)
        add(path)
        for candidate in (path, path.resolve()):
            venv = candidate.parent.parent
            if (venv / "pyvenv.cfg").is_file():
                add(venv)
        current = _interpreter(path, path_env)
    return out


PACKAGES = ("council", "reviewers", "workers")
"""council's top-level packages: each one a sandboxed ``council`` command imports."""


def _council_packages() -> list[Path]:
    """The directories of council's own packages (an editable install keeps them in the
    source checkout, outside any prefix): ``council``, ``reviewers`` and ``workers``."""
    root = Path(__file__).resolve().parents[2]  # the folder holding reviewers/
    return [root / name for name in PACKAGES if (root / name / "__init__.py").is_file()]


_SHEBANG = re.compile(rb"#!\s*(\S+)(?:[ \t]+(\S+))?")


def _interpreter(program: Path, path_env: str) -> str | None:
    """The interpreter a ``#!`` line names (``/usr/bin/env python3`` → python3's path on
    ``path_env``), or None for a binary, an unreadable file or no such interpreter."""
    try:
        with program.open("rb") as handle:
            head = handle.readline(512)
    except OSError:
        return None
    match = _SHEBANG.match(head)
    if match is None:
        return None
    interpreter = match[1].decode("utf-8", errors="replace")
    if os.path.basename(interpreter) == "env" and match[2]:
        name = match[2].decode("utf-8", errors="replace")
        if name.startswith("-"):
            return None
        return shutil.which(name, path=path_env)
    return interpreter


PASSED_THROUGH: tuple[str, ...] = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
"""Variables of the worker's environment every program gets as they are, when set."""

COUNCIL_VARIABLES: tuple[str, ...] = (
    "COUNCIL_RUN",
    "COUNCIL_PARTICIPANT",
    "COUNCIL_ATTEMPT",
    "COUNCIL_JOURNAL",
)
"""Council's own variables for a reviewer program (set by the worker, never passed on)."""

SET_BY_COUNCIL: tuple[str, ...] = ("PATH", "HOME", "TMPDIR", SANDBOX_ENV, *COUNCIL_VARIABLES)
"""Variables council sets itself: a roster cannot pass the worker's value of them."""


def clean_path(path_env: str, tree: Path | None) -> str:
    """``PATH`` without relative entries (empty, ``.``, ``bin``: each would be looked up in
    the working directory, the change's tree) and without entries inside ``tree``."""
    kept: list[str] = []
    for entry in path_env.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        if tree is not None and _under(Path(os.path.normpath(entry)), [tree]):
            continue
        if entry not in kept:
            kept.append(entry)
    return os.pathsep.join(kept)


def program_env(
    host: Mapping[str, str],
    *,
    temp_dir: Path,
    council: Mapping[str, str],
    names: Sequence[str] = (),
    tree: Path | None = None,
    sandbox: str = "bwrap",
    store: Path | None = None,
) -> dict[str, str]:
    """The whole environment of a program: an allowlist, whether it is sandboxed or not.

    ``PATH`` (the worker's, through :func:`clean_path`; else ``os.defpath``), ``HOME`` =
    ``temp_dir/home`` and ``TMPDIR`` = ``temp_dir/tmp`` (created here), :data:`PASSED_THROUGH`
    when set, ``council``'s :data:`COUNCIL_VARIABLES`, the ``names`` the roster entry lists in
    ``env`` with the worker's values (never a ``COUNCIL_`` name; the roster reader refused keys
    and council's settings: :func:`council.roster.backend_options.check_env_names`) and
    ``COUNCIL_SANDBOX`` = ``sandbox``. Nothing else: no provider key, no ``COUNCIL_REDIS_URL``,
    nothing a worker's shell happened to export. ``store``: the :attr:`Box.store` the program
    sees, HOME and TMPDIR then in it, made by the sandbox (nothing is made here).
    """
    home, tmp = (store or temp_dir) / "home", (store or temp_dir) / "tmp"
    if store is None:
        home.mkdir(mode=0o700, exist_ok=True)
        tmp.mkdir(mode=0o700, exist_ok=True)
    env = {"PATH": clean_path(host.get("PATH", os.defpath), tree) or os.defpath}
    for name in (*PASSED_THROUGH, *names):
        if name in host and name not in SET_BY_COUNCIL and not name.startswith("COUNCIL_"):
            env[name] = host[name]
    env.update({k: v for k, v in council.items() if k in COUNCIL_VARIABLES})
    env.update({"HOME": str(home), "TMPDIR": str(tmp), SANDBOX_ENV: sandbox})
    return env
