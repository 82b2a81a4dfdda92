"""A sandboxed reviewer program cannot fill the worker's disk, with the REAL bubblewrap.

Each program plays one the change under review steered into writing without end: a huge
scratch file, a journal that grows past the cap, many files held open in ``scripts/``,
a deleted file held open, ``/dev/shm``. Each is stopped by the storage cap (``disk``),
named; its complete journal entries are kept; the worker's disk (the folder its
temporary directories go to) holds no more than a few directories meanwhile, measured
in bytes at every journal entry the worker forwards; and the storage counted never
passes the cap. Where bubblewrap cannot run, these tests are skipped outside CI and fail
in CI.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

from council.model.backend_result import Stop
from council.model.participant import Clocks, Participant
from reviewers.base import ReviewRequest
from reviewers.programs.command import CommandReviewer
from reviewers.programs.process import run_program
from reviewers.programs.supervision import Ran
from reviewers.sandbox.bubblewrap import SandboxPolicy
from reviewers.sandbox.storage import split
from tests.sandboxing import bwrap_or_skip

CAP = 4 * 1024 * 1024
"""The storage cap these tests give the worker (bytes): small, so filling it is quick."""

HOST_SLACK_BYTES = 64 * 1024
"""What the worker's temporary folder may hold meanwhile: its few empty directories."""

CLOCKS = Clocks(backstop_ms=30_000, idle_ms=20_000, answer_ms=0)
"""Far longer than a poll: a program that is not stopped for its storage hits these."""

FILL = (
    "import errno, os, time\n"
    "def fill(handles):\n"
    "    chunk = b'x' * 65536\n"
    "    for _ in range(4 * {cap} // 65536):\n"
    "        for handle in handles:\n"
    "            try:\n"
    "                os.write(handle, chunk)\n"
    "            except OSError as error:\n"
    "                assert error.errno in (errno.ENOSPC, errno.EFBIG), error\n"
    "                return\n"
    "journal = os.open(os.environ['COUNCIL_JOURNAL'], os.O_WRONLY | os.O_APPEND)\n"
    "os.write(journal, b'{{\"start\": 1}}\\n')\n"
)
"""The programs' common start: a journal entry, and ``fill`` writing 4 caps' worth."""

THEN_WAIT = "os.write(journal, b'{\"filled\": 1}\\n')\ntime.sleep(60)\n"
"""The programs' common end: one more entry (it fits the journal's page), then waiting
to be stopped: only the storage cap ends it before the idle clock."""

PROGRAMS = {
    "a huge scratch file in /tmp": (
        "fill([os.open('/tmp/huge', os.O_WRONLY | os.O_CREAT, 0o600)])\n"
    ),
    "a deleted file held open": (
        "path = os.path.join(os.environ['TMPDIR'], 'held')\n"
        "handle = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)\n"
        "os.unlink(path)\n"
        "fill([handle])\n"
    ),
    "many files held open in scripts/": (
        "desk = os.path.join(os.path.dirname(os.environ['COUNCIL_JOURNAL']), 'scripts')\n"
        "fill([os.open(os.path.join(desk, f'{i}.request.json.part'),\n"
        "              os.O_WRONLY | os.O_CREAT, 0o600) for i in range(2000)])\n"
    ),
    "/dev/shm": ("fill([os.open('/dev/shm/big', os.O_WRONLY | os.O_CREAT, 0o600)])\n"),
}


class MeasuringSink:
    """A journal sink that measures the worker's temporary folder at every entry."""

    def __init__(self, host: Path) -> None:
        self.host = host
        self.entries: list[str] = []
        self.host_bytes: list[int] = []

    def append(self, raw: str) -> str:
        self.entries.append(raw)
        self.host_bytes.append(disk_bytes(self.host))
        return "Recorded."


def disk_bytes(folder: Path) -> int:
    """Bytes ``folder``'s files and directories take on disk (allocated blocks, links
    not followed)."""
    total = 0
    for top, dirs, files in os.walk(folder):
        for name in (*dirs, *files):
            try:
                total += os.lstat(os.path.join(top, name)).st_blocks * 512
            except OSError:
                continue
    return total


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The worker's temporary folder: where the runner makes its directories."""
    folder = tmp_path / "host-tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "app.py").write_text("x = 1\n")
    return root


def request_for(code: str, tree: Path, sink: MeasuringSink) -> ReviewRequest:
    """A request running this Python on ``code`` in the sandbox, under a cap of CAP."""
    bwrap_or_skip()
    participant = Participant(
        id="prog",
        backend="command",
        clocks=CLOCKS,
        options={"program": sys.executable, "args": ["-c", code]},
    )
    return ReviewRequest(
        participant=participant,
        prompt="",
        journal=sink,
        workdir=tree,
        sandbox=SandboxPolicy(storage_bytes=CAP),
    )


def run(code: str, tree: Path, host: Path) -> tuple[Ran, MeasuringSink]:
    sink = MeasuringSink(host)
    ran = run_program(request_for(code, tree, sink), ["-c", code])
    sink.host_bytes.append(disk_bytes(host))
    return ran, sink


@pytest.mark.parametrize("what", sorted(PROGRAMS))
def test_a_program_filling_its_storage_is_stopped_disk_with_its_journal(
    what: str, tree: Path, host: Path
) -> None:
    """Each way of writing without end is the named stop ``disk``; the storage counted
    reached the full size of the file system written and never passed the cap; the
    entries before and after the fill are kept; the worker's disk took none of it."""
    ran, sink = run(FILL.format(cap=CAP) + PROGRAMS[what] + THEN_WAIT, tree, host)
    assert ran.failure is None, ran.failure
    assert ran.stop == Stop(limit="disk", budget_bytes=CAP), (ran.stop, ran.stderr_tail)
    assert [json.loads(e) for e in sink.entries] == [{"start": 1}, {"filled": 1}]
    files_bytes, shm_bytes = split(CAP)
    filled = shm_bytes if what == "/dev/shm" else files_bytes
    assert ran.storage_bytes is not None
    assert filled - 65536 <= ran.storage_bytes <= CAP
    assert max(sink.host_bytes) < HOST_SLACK_BYTES, sink.host_bytes
    assert any("filled its storage" in note for note in ran.notes), ran.notes


def test_a_journal_grown_past_the_cap_keeps_its_complete_entries(tree: Path, host: Path) -> None:
    """A program appending entries until its storage is full: every complete line up to
    the cap is forwarded, in order, none cut; then it is stopped ``disk``."""
    code = (
        "import errno, json, os, time\n"
        "journal = os.open(os.environ['COUNCIL_JOURNAL'], os.O_WRONLY | os.O_APPEND)\n"
        "n = 0\n"
        "while True:\n"
        "    line = json.dumps({'n': n, 'pad': 'x' * 1000}).encode() + b'\\n'\n"
        "    try:\n"
        "        os.write(journal, line)\n"
        "    except OSError as error:\n"
        "        assert error.errno == errno.ENOSPC, error\n"
        "        break\n"
        "    n += 1\n"
        "time.sleep(60)\n"
    )
    ran, sink = run(code, tree, host)
    assert ran.stop == Stop(limit="disk", budget_bytes=CAP), (ran.stop, ran.stderr_tail)
    numbers = [json.loads(entry)["n"] for entry in sink.entries]
    assert numbers == list(range(len(numbers)))
    kept = sum(len(entry) + 1 for entry in sink.entries)
    files_bytes, _ = split(CAP)
    assert files_bytes - 64 * 1024 <= kept <= files_bytes
    assert ran.journal_entries == len(numbers)
    assert max(sink.host_bytes) < HOST_SLACK_BYTES, sink.host_bytes


def test_the_report_names_the_storage_cap(tree: Path, host: Path) -> None:
    """Through the command backend, the stop says which cap stopped the reviewer."""
    code = FILL.format(cap=CAP) + PROGRAMS["a huge scratch file in /tmp"] + THEN_WAIT
    result = CommandReviewer().review(request_for(code, tree, MeasuringSink(host)))
    assert result.stop is not None
    assert result.stop.describe() == (
        f"the storage cap (COUNCIL_PROGRAM_STORAGE_BYTES = {CAP} bytes)"
    )


def test_everything_is_gone_once_the_program_has_ended(tree: Path, host: Path) -> None:
    """A program that leaves a child holding a file open: once the run returns, no
    process of it is alive, the worker holds no descriptor of its storage (so the
    kernel has freed it), and its temporary folder on the worker is removed."""
    marker = "73.25"
    code = (
        "import os, subprocess\n"
        "held = open('/tmp/held', 'w'); held.write('x' * 100000); held.flush()\n"
        f"subprocess.Popen(['sleep', '{marker}'], pass_fds=(held.fileno(),))\n"
        "print('answered')\n"
    )
    before = set(os.listdir("/proc/self/fd"))
    ran, _ = run(code, tree, host)
    assert ran.failure is None and ran.stop is None, (ran.failure, ran.stop)
    assert ran.stdout == b"answered\n"
    assert ran.storage_bytes is not None and ran.storage_bytes >= 100000
    assert _running_with(marker.encode()) == []
    assert set(os.listdir("/proc/self/fd")) == before
    assert list(host.iterdir()) == []


def test_a_journal_turned_into_a_link_is_not_followed(
    tree: Path, host: Path, tmp_path: Path
) -> None:
    """The program owns its storage: it replaces the journal with a link to a worker's
    file and ``scripts/`` with a link to a worker's folder. The worker reads and sweeps
    through what it opened itself, so it forwards nothing of the file and the folder
    keeps its files."""
    secret = tmp_path / "worker-secret.txt"
    secret.write_text('{"secret": "worker-only-7731"}\n')
    victim = tmp_path / "worker-folder"
    victim.mkdir()
    (victim / "keep.txt").write_text("kept")
    code = (
        "import os, time\n"
        "journal = os.environ['COUNCIL_JOURNAL']\n"
        "desk = os.path.join(os.path.dirname(journal), 'scripts')\n"
        "os.unlink(journal)\n"
        f"os.symlink({str(secret)!r}, journal)\n"
        "os.rename(desk, desk + '.old')\n"
        f"os.symlink({str(victim)!r}, desk)\n"
        "time.sleep(0.5)\n"
    )
    ran, sink = run(code, tree, host)
    assert ran.failure is None, ran.failure
    assert sink.entries == []
    assert (victim / "keep.txt").read_text() == "kept"


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
