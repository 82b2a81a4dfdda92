"""Ctrl-C while ``council`` starts: exit 130 and one line, never a traceback.

The subprocess tests run the console script as ``pyproject.toml`` declares it, and
``python -m workers.cli``, with ``PYTHONPROFILEIMPORTTIME=1``: Python then writes a line
on stderr as each import finishes, so the test can send SIGINT once ``click`` is imported
(the start-up handler is installed by then) and tell from the lines that follow whether
the signal landed while the review command's modules were still loading. A signal that
arrived too late on a busy machine (start-up already over) is tried again, not counted.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from tests.gitrepo import ROOT
from workers import entry
from workers.cli import main

TRIGGER = "click"
"""Imported inside the guarded start-up, before any of the review command's modules."""

LATE = "workers.cli.review.running"
"""Finished importing only when the review command's start-up imports are done."""

ATTEMPTS = 6


def console_script() -> list[str]:
    """The ``council`` script as pip writes it, from pyproject.toml's [project.scripts]."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, function = scripts["council"].partition(":")
    code = f"import sys\nfrom {module} import {function}\nsys.exit({function}())\n"
    return [sys.executable, "-c", code]


def imported(line: str) -> str | None:
    """The module an ``-X importtime`` line reports, or None for any other line."""
    if not line.startswith("import time:") or line.count("|") != 2:
        return None
    name = line.rsplit("|", 1)[1].strip()
    return None if name == "imported package" else name


def interrupt_at_start(command: list[str], tmp_path: Path) -> tuple[int, str, bool]:
    """Start ``command review`` and send SIGINT once TRIGGER is imported.

    Returns the exit code, stderr, and whether the signal landed during start-up (the
    review command's modules were not all imported yet).
    """
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1", "PYTHONPATH": str(ROOT)}
    env.pop("COUNCIL_REDIS_URL", None)
    argv = [*command, "review", "--repo", str(tmp_path), "--base", "HEAD", "--no-progress"]
    seen: list[bytes] = []
    with subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    ) as proc:
        assert proc.stderr is not None
        for raw in proc.stderr:
            seen.append(raw)
            if imported(raw.decode("utf-8", "replace")) == TRIGGER:
                proc.send_signal(signal.SIGINT)
                break
        seen.append(proc.stderr.read())
        code = proc.wait(timeout=120)
    stderr = b"".join(seen).decode("utf-8", "replace")
    modules = {imported(line) for line in stderr.splitlines()}
    return code, stderr, TRIGGER in modules and LATE not in modules


def said(stderr: str) -> list[str]:
    """The stderr lines that are not Python's import timings."""
    return [
        line for line in stderr.splitlines() if line.strip() and not line.startswith("import time:")
    ]


@pytest.fixture
def sigint_default() -> Iterator[None]:
    """Restore this process's SIGINT handler after a test that changes it."""
    before = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.mark.parametrize(
    "command",
    [console_script(), [sys.executable, "-m", "workers.cli"]],
    ids=["console-script", "python-m"],
)
def test_ctrl_c_while_importing_exits_130_quietly(command: list[str], tmp_path: Path) -> None:
    """SIGINT while the review command's modules (pydantic, redis, ...) load: exit 130,
    one line on stderr, no traceback."""
    for _ in range(ATTEMPTS):
        code, stderr, during_start_up = interrupt_at_start(command, tmp_path)
        assert "Traceback" not in stderr, stderr
        if during_start_up:
            assert code == entry.INTERRUPTED_EXIT, stderr
            assert said(stderr) == [entry.INTERRUPTED_LINE]
            return
    pytest.fail(f"SIGINT never landed during start-up in {ATTEMPTS} attempts")


def test_interrupt_a_command_did_not_handle_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    """A KeyboardInterrupt out of a command (Ctrl-C before a review installs its own
    handling): exit 130 with one line, not click's "Aborted!" and exit 1 (the gate's)."""

    @click.command("sleepy")
    def sleepy() -> None:
        raise KeyboardInterrupt

    monkeypatch.setitem(main.commands, "sleepy", sleepy)
    done = CliRunner().invoke(main, ["sleepy"])
    assert done.exit_code == entry.INTERRUPTED_EXIT
    assert done.output.strip() == entry.INTERRUPTED_LINE
    assert "Aborted!" not in done.output


@pytest.mark.usefixtures("sigint_default")
def test_started_hands_ctrl_c_back_to_python() -> None:
    """Once a command is about to run, Ctrl-C is a KeyboardInterrupt again (the review
    turns it into a cancellation), not the start-up's immediate exit."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    entry._quiet_start()
    assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    entry.started()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.usefixtures("sigint_default")
def test_an_ignored_sigint_stays_ignored() -> None:
    """A parent that ignores SIGINT (nohup) keeps it ignored through start-up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    entry._quiet_start()
    entry.started()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


HEAVY = ("pydantic", "redis", "celery", "kombu", "structlog", "fakeredis", "rich")
"""What the run of a command needs and its ``--help`` does not."""


def test_review_help_loads_none_of_the_run() -> None:
    """``council review --help`` in a fresh interpreter: the help, and none of pydantic,
    redis, celery, ... nor the run's module (the group parses the command's arguments
    before it builds the context)."""
    code = (
        "import sys\nfrom workers.cli import main\n"
        "try:\n    main(['review', '--help'])\nexcept SystemExit:\n    pass\n"
        "print('MODULES', ' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert "--fail-on [critical|medium|minor|never]" in done.stdout
    loaded = set(done.stdout.rsplit("MODULES ", 1)[1].split())
    assert sorted(m for m in loaded if m.split(".")[0] in HEAVY) == []
    assert "workers.cli.review.running" not in loaded


def test_council_help_lists_every_command_whole_importing_none() -> None:
    """``council --help`` lists each command with its whole summary (click cut the
    docstrings' sentences at the terminal's width) and imports no command's module."""
    from workers.cli.group import COMMANDS, SUMMARIES

    assert set(SUMMARIES) == set(COMMANDS)
    code = (
        "import sys\nfrom workers.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('MODULES', ' '.join(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "COLUMNS": "80"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    listed = done.stdout.split("Commands:", 1)[1].split("MODULES", 1)[0]
    for name, summary in SUMMARIES.items():
        assert f"  {name}  " in listed and summary in listed, name
        assert len(f"  {name:<13}{summary}") <= 80, name
    loaded = set(done.stdout.rsplit("MODULES ", 1)[1].split())
    assert sorted(m for m in loaded if m.split(".")[0] in HEAVY) == []
    assert sorted(module for module, _ in COMMANDS.values() if module in loaded) == []


def test_review_loads_its_run_before_handing_ctrl_c_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The run's module is imported before :func:`entry.started`: an interrupt while it
    loads is start-up's quiet exit, not a KeyboardInterrupt inside an import."""
    import importlib

    body = "workers.cli.review.running"
    seen: list[str] = []
    real = importlib.import_module

    def recorded(name: str, package: str | None = None) -> Any:
        seen.append(name)
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", recorded)
    monkeypatch.setattr("workers.cli.group.started", lambda: seen.append("started"))
    CliRunner().invoke(main, ["review", "--repo", "/nonexistent", "--base", "HEAD"])
    assert body in seen and "started" in seen
    assert seen.index(body) < seen.index("started")


def test_the_process_ends_with_its_exit_code_and_output(tmp_path: Path) -> None:
    """The console script ends without tearing the interpreter down, and still exits
    with the command's code, its piped output written out."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("COUNCIL_REDIS_URL", None)
    version = subprocess.run(
        [*console_script(), "--version"], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert version.returncode == 0 and "version" in version.stdout
    refused = subprocess.run(
        [*console_script(), "review", "--repo", str(tmp_path), "--base", "HEAD"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 2, refused.stderr
    assert "not a git repository" in refused.stderr
