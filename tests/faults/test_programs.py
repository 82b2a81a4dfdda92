"""Reviewer programs on real workers: ``council record`` keeps the idle clock awake in
distributed mode, and a program dies with the worker that started it."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.faults.lab import Lab, assert_filed_once, finding

pytestmark = pytest.mark.integration


def _program(lab: Lab, body: str) -> Path:
    """An executable Python reviewer program beside the roster."""
    path = lab.tmp / "reviewer.py"
    path.write_text(
        f"#!{sys.executable}\n"
        "import json, os, subprocess, sys, time\n"
        "def record(entry):\n"
        "    subprocess.run([sys.executable, '-m', 'workers.cli', 'record', '--json',\n"
        "                    json.dumps(entry)], check=True)\n"
        "sys.stdin.read()\n" + body
    )
    path.chmod(0o755)
    return path


def _roster(lab: Lab, backstop_ms: int, idle_ms: int) -> Path:
    roster = lab.tmp / "council.toml"
    roster.write_text(
        f"[council]\nbackstop_ms = {backstop_ms}\nidle_ms = {idle_ms}\nanswer_ms = 0\n\n"
        '[[reviewers]]\nid = "prog"\nbackend = "command"\n'
        f'program = "{lab.tmp / "reviewer.py"}"\n'
    )
    return roster


def test_council_record_counts_as_activity_in_distributed_mode(lab: Lab) -> None:
    """A program that records with `council record` every 2.6 s and prints nothing until
    it answers, with idle_ms 8 s: it is not stopped as idle, and all 6 entries are filed."""
    rows = [finding(i) for i in range(6)]
    _program(
        lab,
        f"for row in json.loads({json.dumps(json.dumps(rows))}):\n"
        "    record(row)\n"
        "    time.sleep(2.6)\n"
        "print(json.dumps({'findings': []}))\n",
    )
    roster = _roster(lab, backstop_ms=60_000, idle_ms=8_000)
    lab.start_worker("w1")
    report = lab.settled(lab.review(roster))
    assert report["participants"][0]["state"] == "answered", report["participants"]
    assert_filed_once(report, {row["subject"] for row in rows})


def _programs_running(program: Path) -> list[int]:
    """The pids, seen from outside any sandbox, of this test's reviewer program running
    now (a python whose command line names ``program``, so another test run on the same
    machine is not counted)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ours = bytes(program) in argv and b"bwrap" not in argv[0]
        if ours and _alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_program_dies_with_its_worker(lab: Lab) -> None:
    """SIGKILL the worker (only it: the program runs in its own session): the program is
    killed at once instead of running on, reparented to PID 1. The participant is sent
    again to the other worker and the run settles with every entry filed once."""
    rows = [finding(i) for i in range(3)]
    # The program runs in bubblewrap's sandbox: it cannot write beside the test, so the
    # test finds it from outside (its command line names the program) and the attempt
    # it is in comes from COUNCIL_ATTEMPT (only the first one sleeps).
    _program(
        lab,
        f"for row in json.loads({json.dumps(json.dumps(rows))}):\n"
        "    record(row)\n"
        "if os.environ.get('COUNCIL_ATTEMPT', '1') == '1':\n"
        "    time.sleep(300)\n"
        "print(json.dumps({'findings': []}))\n",
    )
    roster = _roster(lab, backstop_ms=30_000, idle_ms=30_000)
    w1 = lab.start_worker("w1")
    review = lab.review(roster)
    lab.wait_for("the program's entries", lambda: lab.journal_entries() >= 3, timeout_s=60)
    (first,) = _programs_running(lab.tmp / "reviewer.py")
    assert _alive(first)
    lab.start_worker("w2")
    os.kill(w1.pid, signal.SIGKILL)  # the worker alone, not its programs' sessions
    w1.wait(timeout=10)
    deadline = time.monotonic() + 3
    while _alive(first):
        assert time.monotonic() < deadline, "the program outlived its worker"
        time.sleep(0.05)
    _, stderr = review.communicate(timeout=120)
    assert review.returncode == 0, stderr
    report = lab.report()
    assert report["status"] == "settled", report["participants"]
    assert_filed_once(report, {row["subject"] for row in rows})
