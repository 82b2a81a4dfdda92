"""examples/reviewer.py: the example command reviewer, run as the council runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from council.harvest import harvest
from council.model.participant import Clocks, Participant
from reviewers.base import ReviewRequest
from reviewers.programs.command import CommandReviewer

REVIEWER = Path(__file__).resolve().parents[2] / "examples" / "reviewer.py"

LONG = "x = " + "1 + " * 40 + "1"

PROMPT = f"""You are reviewing a change. Prose with +++ b/not-a-header.py in it.

```diff
diff --git a/src/app.py b/src/app.py
--- a/src/app.py
+++ b/src/app.py
@@ -10,3 +10,7 @@ def run():
     start()
-    old()
+    print("debug")
+    try:
+        go()
+    except:
+        pass
     stop()
@@ -40,2 +43,3 @@ def later():
     a = 1
++++ counter  # TODO: drop this
 end = 2
\\ No newline at end of file
diff --git a/gone.py b/gone.py
--- a/gone.py
+++ /dev/null
@@ -1,1 +0,0 @@
-print("old")
diff --git "a/caf\\303\\251.py" "b/caf\\303\\251.py"
--- "a/caf\\303\\251.py"
+++ "b/caf\\303\\251.py"
@@ -0,0 +1 @@
+{LONG}
diff --git a/README.md b/README.md
--- a/README.md
+++ b/README.md
@@ -1 +1,2 @@
 # Title
+Call print("hi") here. FIXME
```

Answer with {{"findings": [...]}}.
"""


def run(
    prompt: str, journal: Path | None
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """Run the example with ``prompt`` on stdin; return its parsed answer and the process."""
    env = {k: v for k, v in os.environ.items() if k != "COUNCIL_JOURNAL"}
    if journal is not None:
        env["COUNCIL_JOURNAL"] = str(journal)
    done = subprocess.run(
        [sys.executable, str(REVIEWER)],
        input=prompt,
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=30,
    )
    return json.loads(done.stdout), done


def anchors(answer: dict[str, Any]) -> list[tuple[str, int, str]]:
    """(file, line, label) of every finding, in answer order."""
    return [(f["location"]["file"], f["location"]["start"], f["label"]) for f in answer["findings"]]


def test_example_is_an_executable_script() -> None:
    """The example has a python3 shebang and the execute bit."""
    assert REVIEWER.read_text().startswith("#!/usr/bin/env python3\n")
    assert os.access(REVIEWER, os.X_OK)


def test_finds_smells_on_added_lines_with_new_side_numbers(tmp_path: Path) -> None:
    """Smells on added lines only, anchored at new-side lines from the hunk headers."""
    answer, done = run(PROMPT, None)
    assert done.returncode == 0
    assert anchors(answer) == [
        ("src/app.py", 11, "nitpick"),
        ("src/app.py", 14, "issue"),
        ("src/app.py", 44, "todo"),
        ("café.py", 1, "nitpick"),
        ("README.md", 2, "todo"),
    ]
    first = answer["findings"][0]
    assert first["subject"] == "print() call left in (line 11)"
    assert first["severity"] == "minor"
    assert first["location"] == {"kind": "line", "file": "src/app.py", "start": 11, "side": "new"}
    assert answer["findings"][3]["subject"] == f"line is {len(LONG)} characters long (line 1)"


def test_records_each_finding_in_the_journal(tmp_path: Path) -> None:
    """Every finding is appended to $COUNCIL_JOURNAL as one JSON line, in answer order."""
    journal = tmp_path / "journal.jsonl"
    answer, _ = run(PROMPT, journal)
    lines = journal.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == answer["findings"]


def test_nothing_to_say_is_an_empty_findings_list() -> None:
    """A prompt with a clean diff (or none) answers {"findings": []}."""
    answer, done = run("no diff here\n@@ not a hunk\n", None)
    assert answer == {"findings": []} and done.stderr == ""


def test_runs_under_the_command_backend(tmp_path: Path) -> None:
    """Through the command backend, the journal is forwarded and the answer returned."""

    class Sink:
        def __init__(self) -> None:
            self.entries: list[str] = []

        def append(self, raw: str) -> str:
            self.entries.append(raw)
            return "Recorded."

    participant = Participant(
        id="smells",
        backend="command",
        clocks=Clocks(backstop_ms=2000, idle_ms=2000, answer_ms=0),
        options={"program": str(REVIEWER)},
    )
    sink = Sink()
    request = ReviewRequest(participant=participant, prompt=PROMPT, journal=sink, workdir=tmp_path)
    result = CommandReviewer().review(request)
    assert result.failure is None and result.stop is None
    findings = json.loads(result.answer)["findings"]
    assert len(findings) == 5 and result.journal_entries == 5
    assert [json.loads(entry) for entry in sink.entries] == findings


def test_the_harvest_reads_the_answer_without_warnings() -> None:
    """The example's answer is read by the ordinary harvest with no warning."""
    _, done = run(PROMPT, None)
    read = harvest(done.stdout)
    assert read.warnings == () and len(read.findings) == 5
