"""The reviewer sandbox, with the REAL bubblewrap: what a confined program cannot reach.

Each test runs a program through the command backend with a sandbox policy, as a worker
does, and plays the program the change under review controls: it tries to read a
provider's key from its environment, a file of the worker's home, to write into the
tree, to open a TCP connection to a listener of this machine. Where bubblewrap cannot
run, these tests are skipped outside CI and fail in CI (``.ci/run`` installs it).
"""

from __future__ import annotations

import json
import os
import pwd
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from council.model.backend_result import ReviewResult
from council.model.participant import Clocks, Participant
from reviewers.base import ReviewRequest
from reviewers.programs.command import CommandReviewer
from reviewers.programs.process import PROGRAM_LIMITS
from reviewers.sandbox.bubblewrap import (
    INSTALL_HINT,
    Box,
    Bubblewrap,
    Limits,
    SandboxPolicy,
    clean_path,
    program_env,
)
from tests.sandboxing import bwrap_or_skip, tcp_listener

CLOCKS = Clocks(backstop_ms=20_000, idle_ms=10_000, answer_ms=0)
SECRET = "council-test-provider-value-0042"
"""What the worker's OPENAI_API_KEY holds in these tests (no secret shape: a leak would
not be masked in a report, so it would show)."""


@pytest.fixture
def bwrap_works() -> None:
    """Skip (outside CI) where bubblewrap cannot run; fail in CI."""
    bwrap_or_skip()


needs_bwrap = pytest.mark.usefixtures("bwrap_works")


class Sink:
    """An in-memory journal sink."""

    def __init__(self) -> None:
        self.entries: list[str] = []

    def append(self, raw: str) -> str:
        self.entries.append(raw)
        return "Recorded."


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A pinned tree as a worker unpacks it: a directory holding the change's files."""
    root = tmp_path / "run" / "tree"
    root.mkdir(parents=True)
    (root / "app.py").write_text("x = 1\n")
    return root


def python(
    code: str,
    tree: Path,
    *,
    policy: SandboxPolicy | None = None,
    sink: Sink | None = None,
    **options: Any,
) -> ReviewRequest:
    """A request whose program is this Python running ``code`` in ``tree``, sandboxed."""
    participant = Participant(
        id="prog",
        backend="command",
        clocks=CLOCKS,
        options={"program": sys.executable, "args": ["-c", code], **options},
    )
    return ReviewRequest(
        participant=participant,
        prompt="the prompt",
        journal=sink or Sink(),
        workdir=tree,
        env={"COUNCIL_RUN": "run-1", "COUNCIL_PARTICIPANT": "prog", "COUNCIL_ATTEMPT": "1"},
        sandbox=policy or SandboxPolicy(),
    )


def review(request: ReviewRequest) -> ReviewResult:
    return CommandReviewer().review(request)


def observed(result: ReviewResult) -> dict[str, Any]:
    """The JSON the probe program printed as its answer."""
    assert result.failure is None, result.failure
    value: dict[str, Any] = json.loads(result.answer)
    return value


@needs_bwrap
def test_a_providers_key_in_the_workers_environment_is_not_there(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OPENAI_API_KEY, COUNCIL_REDIS_URL and anything else the worker exported stay out;
    nor can the program read them from another process's /proc entry."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("COUNCIL_REDIS_URL", "redis://:hunter2@127.0.0.1:1/0")
    monkeypatch.setenv("SOME_TOOL_SETTING", "worker-only")
    code = (
        "import json, os\n"
        "procs = []\n"
        "for pid in os.listdir('/proc'):\n"
        "    try: procs.append(open(f'/proc/{pid}/environ', 'rb').read().decode())\n"
        "    except OSError: pass\n"
        "print(json.dumps({'env': dict(os.environ), 'procs': procs}))\n"
    )
    seen = observed(review(python(code, tree)))
    assert SECRET not in json.dumps(seen) and "hunter2" not in json.dumps(seen)
    assert set(seen["env"]) <= {
        "PATH",
        "HOME",
        "TMPDIR",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TZ",
        "PWD",
        "COUNCIL_RUN",
        "COUNCIL_PARTICIPANT",
        "COUNCIL_ATTEMPT",
        "COUNCIL_JOURNAL",
        "COUNCIL_SANDBOX",
    }
    assert seen["env"]["COUNCIL_SANDBOX"] == "bwrap"


@needs_bwrap
def test_the_workers_home_is_not_there(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake home with ~/.ssh and ~/.aws: neither by $HOME nor by its path; HOME points
    into the sandbox's own temp dir, which is writable."""
    home = tree.parent.parent / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY OF THE WORKER\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("[default]\nkey = worker\n")
    real_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    monkeypatch.setenv("HOME", str(home))
    code = (
        "import json, os, sys\n"
        f"paths = [os.path.expanduser('~/.ssh/id_ed25519'), {str(home)!r} + '/.ssh/id_ed25519',\n"
        f"         {str(home)!r} + '/.aws/credentials']\n"
        "got = {}\n"
        "for p in paths:\n"
        "    try: got[p] = open(p).read()\n"
        "    except OSError as e: got[p] = None\n"
        "open(os.path.join(os.environ['HOME'], 'cache'), 'w').write('ok')\n"
        "print(json.dumps({'got': got, 'home': os.environ['HOME'],\n"
        f"  'state': os.path.exists({str(real_home / '.cache')!r})}}))\n"
    )
    seen = observed(review(python(code, tree)))
    assert all(v is None for v in seen["got"].values()), seen
    assert not seen["home"].startswith(str(home))
    assert not seen["state"]  # council's state file lives under ~/.cache: not there


@needs_bwrap
def test_the_tree_is_read_only(tree: Path) -> None:
    """Neither a new file nor an edit of a tree file: the read-only bind refuses both
    (and the capabilities that could remount it writable are dropped)."""
    code = (
        "import json, subprocess\n"
        "out = {}\n"
        "for name, mode in (('new.txt', 'w'), ('app.py', 'a')):\n"
        "    try: open(name, mode).write('changed'); out[name] = 'written'\n"
        "    except OSError as e: out[name] = e.strerror\n"
        "r = subprocess.run(['mount', '-o', 'remount,rw,bind', '.'], capture_output=True)\n"
        "out['remount'] = r.returncode\n"
        "print(json.dumps(out))\n"
    )
    seen = observed(review(python(code, tree)))
    assert seen["new.txt"] == seen["app.py"] == "Read-only file system"
    assert seen["remount"] != 0
    assert (tree / "app.py").read_text() == "x = 1\n" and not (tree / "new.txt").exists()


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP listener on 127.0.0.1 of this machine: its port and what it received."""
    with tcp_listener() as found:
        yield found


CONNECT = (
    "import json, socket\n"
    "s = socket.socket(); s.settimeout(3)\n"
    "try:\n"
    "    s.connect(('127.0.0.1', {port})); s.sendall(b'stolen'); out = 'connected'\n"
    "except OSError as e: out = type(e).__name__\n"
    "print(json.dumps({{'net': out}}))\n"
)


@needs_bwrap
def test_no_network_unless_the_roster_says_so(
    tree: Path, listener: tuple[int, list[bytes]]
) -> None:
    """The sandbox's loopback is its own: this machine's listener is out of reach."""
    port, received = listener
    seen = observed(review(python(CONNECT.format(port=port), tree)))
    assert seen["net"] == "ConnectionRefusedError"
    time.sleep(0.3)
    assert received == []


@needs_bwrap
def test_network_true_keeps_the_network(tree: Path, listener: tuple[int, list[bytes]]) -> None:
    """``network = true`` in the roster entry: the program reaches the listener."""
    port, received = listener
    seen = observed(review(python(CONNECT.format(port=port), tree, network=True)))
    assert seen["net"] == "connected"
    deadline = time.monotonic() + 3
    while not received and time.monotonic() < deadline:
        time.sleep(0.05)
    assert received == [b"stolen"]


@needs_bwrap
def test_council_record_inside_lands_in_the_journal(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``council`` console script runs inside (its venv is bound read-only) and, with
    no Redis URL in its environment even though the worker has one, appends to the
    journal file the worker follows."""
    council = Path(sys.executable).parent / "council"
    if not council.is_file():
        pytest.skip("council is not installed beside this Python")
    monkeypatch.setenv("COUNCIL_REDIS_URL", "redis://127.0.0.1:1/0")  # unreachable
    script = tmp_path / "recorder.sh"
    entry = {"subject": "Token is logged", "label": "issue"}
    script.write_text(
        f"#!/bin/sh\n{council} record --json '{json.dumps(entry)}' || exit 9\n"
        "echo '{\"findings\": []}'\n"
    )
    script.chmod(0o755)
    participant = Participant(
        id="rec", backend="command", clocks=CLOCKS, options={"program": str(script)}
    )
    sink = Sink()
    request = ReviewRequest(
        participant=participant,
        prompt="",
        journal=sink,
        workdir=tree,
        env={"COUNCIL_RUN": "run-1", "COUNCIL_PARTICIPANT": "rec", "COUNCIL_ATTEMPT": "1"},
        sandbox=SandboxPolicy(),
    )
    result = review(request)
    assert result.failure is None, result.failure
    assert [json.loads(e) for e in sink.entries] == [entry]
    assert result.journal_entries == 1


def _running_with(marker: bytes) -> list[int]:
    """Host pids of live processes whose command line holds ``marker``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state not in ("Z", "X"):
            found.append(int(pid))
    return found


@needs_bwrap
def test_a_stop_kills_everything_the_program_started(tree: Path) -> None:
    """Stopped on its idle clock, the program and the children it started (one of them
    in a session of its own) are all gone: bwrap's group is killed, and with bwrap the
    sandbox's pid namespace."""
    participant = Participant(
        id="sh",
        backend="command",
        clocks=Clocks(backstop_ms=5000, idle_ms=800, answer_ms=0),
        options={"program": "/bin/sh", "args": ["-c", "sleep 41.7 & setsid sleep 41.7 & wait"]},
    )
    request = ReviewRequest(
        participant=participant, prompt="", journal=Sink(), workdir=tree, sandbox=SandboxPolicy()
    )
    result = review(request)
    assert result.stop is not None and result.stop.limit == "idle"
    assert _running_with(b"41.7") == []


# -- where bubblewrap cannot run ------------------------------------------------------------

PROBE = (
    "import json, os, pathlib\n"
    "pathlib.Path({marker!r}).write_text('ran')\n"
    "print(json.dumps({{'key': os.environ.get('OPENAI_API_KEY'),\n"
    "                   'sandbox': os.environ.get('COUNCIL_SANDBOX')}}))\n"
)


def test_without_bubblewrap_in_ci_the_reviewer_fails_naming_the_package(
    tree: Path, tmp_path: Path
) -> None:
    """CI (or a distributed worker): the program is not run; the failure names the
    Debian package to install."""
    marker = tmp_path / "ran"
    policy = SandboxPolicy(bwrap=str(tmp_path / "nonexistent"), required="in CI (CI is set)")
    result = review(python(PROBE.format(marker=str(marker)), tree, policy=policy))
    assert result.failure is not None
    assert INSTALL_HINT in result.failure and "in CI" in result.failure
    assert not marker.exists()


def test_without_bubblewrap_on_a_laptop_it_runs_unsandboxed_with_a_note(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Embedded mode outside CI: the program runs, with the allowlisted environment
    still, and its result says it ran without a sandbox."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    marker = tmp_path / "ran"
    policy = SandboxPolicy(bwrap=str(tmp_path / "nonexistent"))
    result = review(python(PROBE.format(marker=str(marker)), tree, policy=policy))
    assert observed(result) == {"key": None, "sandbox": "none"}
    assert marker.exists()
    assert any("WITHOUT a sandbox" in n and INSTALL_HINT in n for n in result.notes)


def test_roster_sandbox_required_refuses_to_run_unsandboxed(tree: Path, tmp_path: Path) -> None:
    """``[council] sandbox = "required"`` (carried in the options): a failure there too."""
    marker = tmp_path / "ran"
    policy = SandboxPolicy(bwrap=str(tmp_path / "nonexistent"))
    request = python(PROBE.format(marker=str(marker)), tree, policy=policy, sandbox="required")
    result = review(request)
    assert result.failure is not None and 'sandbox = "required"' in result.failure
    assert not marker.exists()


def test_a_bwrap_that_cannot_create_namespaces_is_reported_in_its_own_words(
    tmp_path: Path,
) -> None:
    """A kernel or container that refuses user namespaces: bwrap's own message."""
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    trouble = Bubblewrap(str(fake)).trouble()
    assert trouble is not None and "No permissions to create new namespace" in trouble


# -- the API's other knobs, and the environment ---------------------------------------------


@needs_bwrap
def test_limits_and_writable_paths(tmp_path: Path) -> None:
    """A file-size limit stops a big write; a writable path is writable, the rest not."""
    out = tmp_path / "out"
    out.mkdir()
    temp = tmp_path / "temp"
    temp.mkdir(mode=0o700)
    box = Box(
        temp_dir=temp,
        workdir=out,
        writable=(out,),
        limits=Limits(file_size_bytes=1000, tmp_bytes=1 << 20),
    )
    code = (
        "import os, signal\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "open('small', 'w').write('x' * 10)\n"
        "big = open('big', 'w')\n"
        "try: big.write('x' * 5000); big.flush(); print('big written')\n"
        "except OSError as e: print('big', e.strerror)\n"
    )
    env = program_env(os.environ, temp_dir=temp, council={})
    proc = Bubblewrap().start(box, [sys.executable, "-c", code], env)
    stdout, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 0, stderr
    assert stdout.decode().strip() == "big File too large"
    assert (out / "small").read_text() == "x" * 10


def test_program_env_is_an_allowlist(tmp_path: Path) -> None:
    """Only PATH (cleaned), HOME/TMPDIR in the temp dir, LANG/LC_ALL/TZ, council's own
    variables and the names listed; never COUNCIL_REDIS_URL, even when listed."""
    host = {
        "PATH": f"bin::.:/usr/bin:{tmp_path}/tree/bin:/usr/local/bin",
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "OPENAI_API_KEY": SECRET,
        "COUNCIL_REDIS_URL": "redis://x",
        "SSL_CERT_FILE": "/etc/ssl/cert.pem",
        "HOME": "/root",
    }
    env = program_env(
        host,
        temp_dir=tmp_path,
        council={"COUNCIL_RUN": "r", "COUNCIL_JOURNAL": "/j", "OTHER": "x"},
        names=["SSL_CERT_FILE", "COUNCIL_REDIS_URL", "HOME", "UNSET_ONE"],
        tree=tmp_path / "tree",
    )
    assert env == {
        "PATH": "/usr/bin:/usr/local/bin",
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "SSL_CERT_FILE": "/etc/ssl/cert.pem",
        "COUNCIL_RUN": "r",
        "COUNCIL_JOURNAL": "/j",
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path / "tmp"),
        "COUNCIL_SANDBOX": "bwrap",
    }


def test_clean_path_drops_relative_entries_and_the_tree(tmp_path: Path) -> None:
    """Relative entries (each looked up in the working directory) and tree entries go."""
    tree = tmp_path / "tree"
    assert clean_path(f":bin:./x:/usr/bin:{tree}:{tree}/bin:/usr/bin:/opt/t", tree) == (
        "/usr/bin:/opt/t"
    )


@needs_bwrap
def test_a_program_busy_for_a_moment_starts_once_its_writer_closes(tree: Path) -> None:
    """bwrap's own exec of a program still open for writing fails "Text file busy" (as
    after another thread's fork); the runner tries again, as it does unsandboxed."""
    script = tree.parent / "reviewer.sh"
    script.write_text("#!/bin/sh\necho started\n")
    script.chmod(0o755)
    writer = os.open(script, os.O_WRONLY)
    closer = threading.Timer(0.15, os.close, args=(writer,))
    closer.start()
    participant = Participant(
        id="p", backend="command", clocks=CLOCKS, options={"program": str(script)}
    )
    request = ReviewRequest(
        participant=participant, prompt="", journal=Sink(), workdir=tree, sandbox=SandboxPolicy()
    )
    result = review(request)
    closer.join()
    assert result.failure is None, result.failure
    assert result.answer == "started\n"


@needs_bwrap
def test_a_reviewer_program_writes_in_bounded_memory_only(tree: Path) -> None:
    """A reviewer program's HOME, TMPDIR and /tmp are one in-memory file system, 7/8 of
    the default 64 MiB cap (PROGRAM_LIMITS): writing 300 MiB there fails with "no space"
    past 56 MiB, and that is the reviewer's stop ``disk``, its answer kept; it may hold
    4096 descriptors open and write files up to the cap."""
    code = (
        "import errno, json, os, resource\n"
        "chunk = b'0' * (1 << 20)\n"
        "written, error = 0, None\n"
        "try:\n"
        "    with open('/tmp/big', 'wb') as out:\n"
        "        for _ in range(300):\n"
        "            out.write(chunk); out.flush(); written += 1\n"
        "except OSError as exc:\n"
        "    error = errno.errorcode.get(exc.errno)\n"
        "print(json.dumps({'same': os.stat('/tmp').st_dev == os.stat(os.environ['HOME']).st_dev\n"
        "    == os.stat(os.environ['TMPDIR']).st_dev, 'written_mb': written, 'error': error,\n"
        "    'nofile': resource.getrlimit(resource.RLIMIT_NOFILE)[1],\n"
        "    'fsize': resource.getrlimit(resource.RLIMIT_FSIZE)[1]}))\n"
    )
    result = review(python(code, tree))
    seen = observed(result)
    assert seen["error"] == "ENOSPC" and seen["written_mb"] == 56, seen
    assert seen["same"] is True
    assert result.stop is not None and result.stop.limit == "disk"
    assert seen["nofile"] == PROGRAM_LIMITS.open_files == 4096
    assert seen["fsize"] == PROGRAM_LIMITS.file_size_bytes == 64 * 1024 * 1024
