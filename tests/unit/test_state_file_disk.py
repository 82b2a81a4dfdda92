"""A save of the embedded state file that cannot be written (a file size limit standing
in for a full disk, RLIMIT_FSIZE in a child process) names the file and what it still
holds (exit 3, no traceback), leaves no temporary file, and keeps the file as it was; a
temporary file left by a save killed mid-write is removed by the next save; a review
whose save fails still writes its report, and so does a waiting run settled (by `council
review` or `council resume`) when its save fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from tests.gitrepo import commit, new_repo
from tests.services import ROOT
from workers.cli import main
from workers.stores import state_file

CRITICAL = {"subject": "divides by zero", "label": "issue", "severity": "critical"}

SAVE = """
import resource, sys
from pathlib import Path
import fakeredis
from workers.stores.keys import Keys
from workers.stores.state_file import StateNotSaved, save_state

keys = Keys("council:")
client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
client.set(keys.session_issued("s1"), 3)
client.hset(keys.session_dismissed("s1"), mapping={str(i): "x" * 1000 for i in range(64)})
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    save_state(client, keys, Path(sys.argv[1]))
except StateNotSaved as exc:
    print(exc, file=sys.stderr)
    sys.exit(exc.exit_code)
"""


def _scene(tmp_path: Path, policy: str = "") -> tuple[Path, Path]:
    """A repository whose last commit adds a division, and a roster (with ``policy``) of
    one replay reviewer that finds it critical: (repo, roster)."""
    repo = new_repo(tmp_path / "repo", {"README.md": "hi\n"})
    commit(repo, {"app.py": "def div(a, b):\n    return a / b\n"}, "divide")
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"findings": [CRITICAL]}))
    roster = tmp_path / "roster.toml"
    roster.write_text(
        f"[council]\nbackstop_ms = 60000\nidle_ms = 60000\n{policy}"
        f'[[reviewers]]\nid = "rep"\nbackend = "replay"\nanswer = "{answer}"\n'
    )
    return repo, roster


def full_disk(dir: str, prefix: str, suffix: str) -> tuple[int, str]:
    """``mkstemp`` on a full disk: the file every save writes is /dev/full (ENOSPC)."""
    return os.open("/dev/full", os.O_WRONLY), str(Path(dir) / f"{prefix}gone{suffix}")


def test_a_save_that_cannot_be_written_names_the_file_and_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text('{"version": 1, "sessions": {}}')
    stale = tmp_path / ".state-killed.json"
    stale.write_text('{"version": 1, "sess')  # a save killed mid-write, long ago
    old = time.time() - 3600
    os.utime(stale, (old, old))
    done = subprocess.run(
        [sys.executable, "-c", SAVE, str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    assert str(path) in done.stderr and "could not be saved" in done.stderr
    assert "Traceback" not in done.stderr
    assert path.read_text() == '{"version": 1, "sessions": {}}'
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".state-")] == []


def test_a_review_whose_save_fails_still_writes_its_report_and_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The round settles, then the disk is full (every save's temporary file is
    /dev/full, so the kernel answers ENOSPC): the report is written all the same, notes
    that the round is not kept, the exit is 3 naming the state file, and the state file
    keeps what it held."""
    repo, roster = _scene(tmp_path)
    state = tmp_path / "state.json"
    state.write_text('{"version": 1, "sessions": {}}')

    monkeypatch.setattr(state_file, "tempfile", SimpleNamespace(mkstemp=full_disk))
    out = tmp_path / "report.json"
    argv = ["review", "--repo", str(repo), "--base", "HEAD~1", "--no-progress"]
    argv += ["--state", str(state), "--roster", str(roster), "--json", str(out)]
    done = CliRunner().invoke(main, argv)
    assert done.exit_code == 3, done.output
    assert str(state) in done.output and "could not be saved" in done.output
    report = json.loads(out.read_text())
    assert [f["subject"] for f in report["findings"]] == ["divides by zero"]
    assert any("not kept" in note and str(state) in note for note in report["notes"])
    assert state.read_text() == '{"version": 1, "sessions": {}}'


def _waiting_run(tmp_path: Path) -> tuple[Path, Path, Path, str]:
    """A review whose critical finding waits for a person ([policy] confirm), answered
    "yes": (repo, roster, state file, run id), the next step settling it."""
    repo, roster = _scene(tmp_path, '[policy]\nconfirm = "critical"\n')
    state = tmp_path / "state.json"
    argv = ["review", "--repo", str(repo), "--base", "HEAD~1", "--no-progress"]
    first = CliRunner().invoke(main, [*argv, "--state", str(state), "--roster", str(roster)])
    assert first.exit_code == 4, first.output
    listed = CliRunner().invoke(main, ["asks", "--json", "--state", str(state)])
    (ask,) = json.loads(listed.stdout)
    said = CliRunner().invoke(main, ["answer", ask["id"], "yes", "--state", str(state)])
    assert said.exit_code == 0, said.output
    return repo, roster, state, str(ask["run"])


@pytest.mark.parametrize("how", ["review", "resume"])
def test_a_waiting_run_settled_on_a_full_disk_still_shows_its_report_and_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The answered run settles (its confirmed critical finding gates), then the save
    fails: the report is shown all the same with the note that the round is not kept,
    and the exit is 3 (it was the error alone, the report lost)."""
    repo, roster, state, run = _waiting_run(tmp_path)
    kept = state.read_text()

    monkeypatch.setattr(state_file, "tempfile", SimpleNamespace(mkstemp=full_disk))
    if how == "review":
        out = tmp_path / "report.json"
        argv = ["review", "--repo", str(repo), "--base", "HEAD~1", "--no-progress"]
        argv += ["--state", str(state), "--roster", str(roster), "--json", str(out)]
        done = CliRunner().invoke(main, argv)
        report = json.loads(out.read_text())
        assert [f["subject"] for f in report["findings"]] == ["divides by zero"]
        assert any("not kept" in note and str(state) in note for note in report["notes"])
    else:
        done = CliRunner().invoke(main, ["resume", run, "--state", str(state)])
        assert "divides by zero" in done.stdout and "not kept" in done.stdout
    assert done.exit_code == 3, done.output
    assert str(state) in done.output and "could not be saved" in done.output
    assert state.read_text() == kept
