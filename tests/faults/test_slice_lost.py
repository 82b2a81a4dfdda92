"""A worker SIGKILLed in the middle of one slice of a sliced reviewer loses nothing.

One command reviewer whose ``context_tokens`` cuts a change of 12 files into 4 slices
(one task each, ``alpha@k``), two real workers of one thread each. Each attempt of a slice
records with ``council record`` that it began, then one finding per file its slice shows,
a second apart, and answers the files' findings again. Once the slice w1 is reviewing has
recorded a file, w1 (and its program) is killed with SIGKILL: the slice's lease lapses, a
sweep on w2 sends that slice again, and its second attempt records the same files again.
Proved: the review exits 0 with the run settled and the reviewer answered in 4 slices,
no warning; every file was shown to it (the coverage table says so); every subject any
attempt of any slice recorded is filed exactly once, counted over each finding and its
``members``: what only the dead attempt recorded is filed, and what both attempts
recorded and the answer restated is filed once (docs/harvest.md section 5: every
attempt's journal is folded, oldest first, into the answer's harvest); w2 stays alive.
Source: docs/architecture.md "Slices".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from typing import Any, cast

import pytest

from tests.faults.lab import Lab
from tests.sandboxing import bwrap_or_skip
from tests.services import ROOT, review_argv
from tests.unit.test_untrusted_sandbox import two_commits

pytestmark = pytest.mark.integration

FILES = {
    f"pkg{d}/mod{i}.py": "".join(f"value_{i}_{n} = {n}\n" for n in range(40))
    for d in range(4)
    for i in range(3)
}
"""12 Python files in 4 directories: at 3,000 tokens one directory fits a slice, two do
not, so the change is cut into 4 slices of 3 files."""

CONTEXT_TOKENS = 3000
SLICES = 4

RECORDER = f"""#!{sys.executable}
import json, os, re, subprocess, sys, time
prompt = sys.stdin.read()
who, attempt = os.environ["COUNCIL_PARTICIPANT"], os.environ["COUNCIL_ATTEMPT"]
# The worker's council packages are bound into the sandbox where they lie on the host; a
# checkout that is not the one the virtual environment was installed from (a git
# worktree) is found through PYTHONPATH, not the editable install's finder.
env = {{**os.environ, "PYTHONPATH": {str(ROOT)!r}}}
def record(entry):
    subprocess.run([sys.executable, "-m", "workers.cli", "record", "--json",
                    json.dumps(entry)], check=True, env=env)
record({{"location": {{"kind": "global"}}, "label": "note", "severity": "minor",
         "subject": f"{{who}} attempt {{attempt}} began"}})
found = []
for path in re.findall(r"^diff --git a/(\\S+) b/", prompt, re.MULTILINE):
    entry = {{"location": {{"kind": "file", "file": path}}, "label": "note",
              "severity": "minor", "subject": f"shown {{path}} to {{who}}",
              "discussion": "coverage probe"}}
    record(entry)
    found.append(entry)
    time.sleep(1.0)
print(json.dumps({{"findings": found}}))
"""
"""A reviewer program that records that its attempt began (a finding only that attempt
makes), then one finding per file its slice shows, named with the file and the slice's
unit id (``shown pkg0/mod1.py to alpha@1``), a second apart; it answers the files'
findings again."""


def _events(lab: Lab, worker: str) -> list[dict[str, Any]]:
    """The JSON lines of a worker's log (a line cut short by the kill is left out)."""
    out = []
    for line in lab.log(worker).splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def _started(lab: Lab, worker: str) -> list[str]:
    """The slices (unit ids) a worker has started a task for, in order."""
    return [
        e["participant"]
        for e in _events(lab, worker)
        if e.get("event") == "task_started" and str(e.get("participant", "")).startswith("alpha@")
    ]


def _recorded(lab: Lab) -> dict[str, list[str]]:
    """Every journal key of the run in Redis (one per attempt of a slice) → the subjects
    its entries hold, in order."""
    client = lab.client()
    try:
        return {
            key.decode(): [
                json.loads(raw)["subject"] for raw in cast(list[bytes], client.lrange(key, 0, -1))
            ]
            for key in client.scan_iter(match="council:run:*:journal:alpha@*")
        }
    finally:
        client.close()


def _journal(lab: Lab, unit: str, attempt: int) -> list[str]:
    """The subjects one attempt of one slice recorded so far."""
    return next(
        (v for k, v in _recorded(lab).items() if k.endswith(f":journal:{unit}:{attempt}")), []
    )


def test_a_worker_killed_mid_slice_loses_nothing_and_files_nothing_twice(lab: Lab) -> None:
    bwrap_or_skip()
    program = lab.tmp / "recorder.py"
    program.write_text(RECORDER)
    program.chmod(0o755)
    roster = lab.tmp / "council.toml"
    roster.write_text(
        "[council]\nbackstop_ms = 60000\nidle_ms = 60000\nanswer_ms = 0\n\n"
        '[[reviewers]]\nid = "alpha"\nbackend = "command"\n'
        f'program = "{program}"\ncontext_tokens = {CONTEXT_TOKENS}\n'
    )
    repo = lab.tmp / "repo"
    base = two_commits(repo, {"README": "x\n"}, FILES)
    w1 = lab.start_worker("w1", threads=1)
    w2 = lab.start_worker("w2", threads=1)
    review = subprocess.Popen(
        review_argv(repo, base, roster, lab.tmp / "report.json", "--fail-on", "never"),
        cwd=ROOT,
        env={**os.environ, "COUNCIL_REDIS_URL": lab.url, **lab.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lab.children.append(review)
    lab.wait_for("w1 to start a slice", lambda: bool(_started(lab, "w1")), timeout_s=90)
    unit = _started(lab, "w1")[-1]  # one thread, prefetch 1: one slice at a time
    lab.wait_for(
        f"{unit}'s first recorded file",
        lambda: len(_journal(lab, unit, 1)) >= 2,
        timeout_s=60,
    )
    lab.kill_worker("w1")
    assert w1.poll() is not None
    finished = [e for e in _events(lab, "w1") if e.get("event") == "review_finished"]
    assert unit not in {e.get("participant") for e in finished}, f"w1 finished {unit} first"
    dead = _journal(lab, unit, 1)
    assert 2 <= len(dead) < 4, dead  # the dead attempt recorded part of its slice

    _, stderr = review.communicate(timeout=150)
    assert review.returncode == 0, stderr
    assert w2.poll() is None, "w2 died"
    report = lab.report()
    assert report["status"] == "settled", report["participants"]
    (alpha,) = report["participants"]
    assert (alpha["id"], alpha["state"], alpha["slices"]) == ("alpha", "answered", SLICES), alpha
    assert alpha["attempts"] == 2, alpha  # the killed slice ran twice, the others once
    assert alpha["warnings"] == 0, report

    # Every file was shown to the reviewer, each in one slice.
    (line,) = report["coverage"]["reviewers"]
    assert sorted(line["seen"]) == sorted(FILES) and not line["failed"], line

    # What was recorded: the dead attempt's entries, its files again by the slice's
    # second attempt on w2, every other slice's once; each file in one slice.
    journals = _recorded(lab)
    assert set(dead[1:]) < set(_journal(lab, unit, 2)), journals
    recorded = {subject for subjects in journals.values() for subject in subjects}
    began = {f"alpha@{k} attempt 1 began" for k in range(1, SLICES + 1)}
    assert {s for s in recorded if " began" in s} == {*began, f"{unit} attempt 2 began"}
    paths = Counter(s.split(" ")[1] for s in recorded if s.startswith("shown "))
    assert paths == Counter(dict.fromkeys(FILES, 1)), journals

    # Filed exactly once: no subject twice across findings and their members.
    filed = Counter(
        member["subject"]
        for finding in report["findings"]
        for member in finding.get("members") or [finding]
    )
    assert f"{unit} attempt 1 began" in filed  # what only the dead attempt recorded
    assert filed == Counter(dict.fromkeys(recorded, 1)), filed

    sent = [e for e in _events(lab, "w2") if e.get("event") == "participant_redispatched"]
    assert [e["participant"] for e in sent] == [unit], sent
