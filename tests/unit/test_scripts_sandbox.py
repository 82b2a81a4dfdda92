"""A submitted script runs in its own sandbox and ends with an outcome that names the limit.

The real bubblewrap (skipped where it cannot run, failed in CI): the script sees the tree
read-only at its working directory, a private in-memory temp dir, no network, an
allowlisted environment, and each of its limits ends it with a clear outcome while the
worker (this test process) is unharmed. Source: docs/evidence-and-asks.md §1.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from council.errors import RosterError
from council.roster.script_limits import ScriptLimits, read_limits
from reviewers.sandbox.scripts import (
    ScriptRun,
    ScriptRunner,
    check_submission,
    reply_text,
)
from tests.sandboxing import bwrap_or_skip, tcp_listener

SECRET = "sk-test-DO-NOT-LEAK-0123456789"

LIMITS = ScriptLimits(cpu_s=2, wall_s=4, memory_mb=256, processes=32, output_bytes=4096)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A pinned tree (0700 parents, as the worker's run directories are)."""
    root = tmp_path / "run"
    root.mkdir(mode=0o700)
    tree = root / "tree"
    tree.mkdir()
    (tree / "app.py").write_text("x = 1\n")
    return tree


@pytest.fixture
def runner(tree: Path, monkeypatch: pytest.MonkeyPatch) -> ScriptRunner:
    bwrap_or_skip()
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("COUNCIL_REDIS_URL", "redis://:hunter2@localhost:6379/0")
    return ScriptRunner(tree, LIMITS)


def _worker_unharmed() -> None:
    """This process still forks and runs a program, and left no script process behind."""
    assert subprocess.run(["true"], check=False).returncode == 0
    mine = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "council-script-" not in mine


def test_a_script_reads_the_tree_and_exits(runner: ScriptRunner) -> None:
    run = runner.run("python", "import os\nprint(open('app.py').read().strip(), os.getuid())")
    assert (run.outcome, run.exit_code, run.limit) == ("ok", 0, None)
    assert run.output == "x = 1 65534\n"
    failed = runner.run("python", "import sys; print('no'); sys.exit(1)")
    assert (failed.outcome, failed.exit_code, failed.output) == ("failed", 1, "no\n")


@pytest.mark.parametrize(
    ("language", "program", "out"),
    [
        ("bash", 'echo "$((6 * 7))"', "42\n"),
        ("sh", "echo hi; exit 3", "hi\n"),
        ("node", "console.log(2 + 2); process.exit(3)", "4\n"),
    ],
)
def test_each_language_runs(runner: ScriptRunner, language: str, program: str, out: str) -> None:
    run = runner.run(language, program)
    assert run.output == out, run
    assert run.outcome == ("ok" if "exit 3" not in program else "failed") or run.exit_code == 3


def test_no_network(runner: ScriptRunner) -> None:
    """Not even this machine's loopback: the sandbox has its own, with nothing on it."""
    with tcp_listener() as (port, received):
        program = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        run = runner.run("python", program)
        outside = runner.run(
            "python", "import socket\nsocket.create_connection(('1.1.1.1', 80), 2)"
        )
    assert run.outcome == "failed" and "ConnectionRefusedError" in run.output
    assert outside.outcome == "failed" and outside.exit_code == 1
    assert received == []


def test_writes_only_its_temp_dir(runner: ScriptRunner, tree: Path) -> None:
    run = runner.run(
        "sh",
        'echo ok > "$HOME/x" && cat "$HOME/x"; echo ok > "$TMPDIR/x" && cat "$TMPDIR/x"; '
        f"for f in app.py /usr/x /x /dev/x; do echo no > $f; done; echo ok > {tree.parent}/x; "
        "for n in 1 2 3; do head -c 30000000 /dev/zero > /dev/shm/big$n; done",
    )
    assert run.outcome == "failed", run
    assert run.output.startswith("ok\nok\n")
    assert run.output.count("Read-only file system") == 4
    assert "No space left on device" in run.output  # /dev/shm is sized
    assert (tree / "app.py").read_text() == "x = 1\n"
    assert not (tree.parent / "x").exists()


def test_no_secrets_to_read(runner: ScriptRunner) -> None:
    """Not the worker's ~/.ssh nor its environment through /proc/1/environ."""
    home = Path.home()
    run = runner.run(
        "sh",
        f"cat {home}/.ssh/id_rsa ~/.ssh/id_rsa; tr '\\0' '\\n' < /proc/1/environ; "
        "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'",
    )
    assert SECRET not in run.output and "hunter2" not in run.output
    assert "No such file or directory" in run.output
    assert "OPENAI_API_KEY" not in run.output and "COUNCIL_REDIS_URL" not in run.output


def test_ten_thousand_forks_end_at_the_process_limit(runner: ScriptRunner) -> None:
    program = (
        "import os, time\n"
        "for i in range(10000):\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(30); os._exit(0)\n"
        "print('forked them all')\n"
    )
    run = runner.run("python", program)
    assert (run.outcome, run.limit) == ("failed", "processes"), run
    assert "forked them all" not in run.output
    _worker_unharmed()


def test_four_gigabytes_end_at_the_memory_limit(runner: ScriptRunner) -> None:
    run = runner.run("python", "x = bytearray(4 * 1024 ** 3)\nprint('allocated')")
    assert (run.outcome, run.exit_code, run.limit) == ("failed", 1, "memory_mb"), run
    assert "MemoryError" in run.output
    _worker_unharmed()


def test_running_forever_ends_at_a_time_limit(runner: ScriptRunner, tree: Path) -> None:
    # A wall far above the CPU limit: on a loaded machine CPU seconds come slower.
    cpu_bound = ScriptRunner(tree, ScriptLimits(cpu_s=1, wall_s=60))
    busy = cpu_bound.run("python", "while True: pass")
    assert (busy.outcome, busy.limit) == ("timeout", "cpu_s"), busy
    assert busy.exit_code == 128 + 24  # SIGXCPU, as the shell reports it
    idle = runner.run("sh", "sleep 1000")
    assert (idle.outcome, idle.exit_code, idle.limit) == ("timeout", None, "wall_s"), idle
    assert 4000 <= idle.duration_ms < 8000
    _worker_unharmed()


def test_endless_output_is_cut_and_stopped(runner: ScriptRunner) -> None:
    run = runner.run("sh", "yes")
    assert (run.outcome, run.limit, run.output_capped) == ("failed", "output_bytes", True)
    assert len(run.output) == LIMITS.output_bytes
    reply = reply_text(run, LIMITS)
    assert "Limit output_bytes = 4096 bytes stopped it." in reply
    assert reply.endswith("[output cut at 4096 bytes]")
    _worker_unharmed()


def test_a_stray_child_is_killed_with_the_script(runner: ScriptRunner) -> None:
    run = runner.run("sh", "(sleep 300 &) ; echo started")
    assert run.outcome == "ok" and run.output == "started\n"
    _worker_unharmed()


def test_refusals_before_running() -> None:
    assert check_submission({"language": "python", "program": "print(1)"}) == ("python", "print(1)")
    assert "language must be one of" in str(check_submission({"language": "ruby", "program": ""}))
    assert "string" in str(check_submission({"language": "sh", "program": 3}))
    assert "longer than" in str(check_submission({"language": "sh", "program": "x" * 70000}))
    run = ScriptRunner(None, LIMITS, bwrap="no-such-bwrap").run("sh", "true")
    assert run.outcome == "not-run" and "bubblewrap is not installed" in run.reason
    assert reply_text(run, LIMITS).startswith("The script was not run: no sandbox here")


def test_roster_limits_are_checked() -> None:
    base = read_limits({"cpu_s": 5}, "council.script_limits")
    assert base == ScriptLimits(cpu_s=5)
    assert read_limits({"wall_s": 9}, "reviewers[0].script_limits", base) == ScriptLimits(
        cpu_s=5, wall_s=9
    )
    for bad, field in (
        ({"cpu": 1}, "cpu"),
        ({"wall_s": 0}, "wall_s"),
        ({"memory_mb": "1"}, "memory_mb"),
    ):
        with pytest.raises(RosterError) as caught:
            read_limits(bad, "council.script_limits")
        assert caught.value.path == f"council.script_limits.{field}"


def test_the_row_of_a_run() -> None:
    row = ScriptRun(outcome="failed", exit_code=1).row("call_1", "run_script", 2, "exit 1")
    assert row.model_dump(exclude_none=True) == {
        "tool_call_id": "call_1",
        "tool": "run_script",
        "dispatch": 2,
        "outcome": "failed",
        "exit_code": 1,
        "text": "exit 1",
    }


@pytest.mark.skipif(os.geteuid() != 0, reason="the root worker's path")
def test_as_root_the_process_limit_is_a_pids_cgroup(runner: ScriptRunner) -> None:
    """As root RLIMIT_NPROC does not hold (tried: 300 forks pass under --nproc=50 with
    bwrap --uid 65534), so the runner puts the sandbox in a pids cgroup; none is left."""
    run = runner.run("sh", "cat /proc/self/cgroup")
    assert run.outcome == "ok"
    leftovers = [p for p in Path("/sys/fs/cgroup/pids").glob("council-script-*")]
    assert leftovers == []
