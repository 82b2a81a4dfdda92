"""A save of the embedded state file that cannot be written (a file size limit standing
in for a full disk, RLIMIT_FSIZE in a child process) names the file and what it still
holds (exit 3, no traceback), leaves no temporary file, and keeps the file as it was; a
temporary file left by a save killed mid-write is removed by the next save."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.services import ROOT

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
