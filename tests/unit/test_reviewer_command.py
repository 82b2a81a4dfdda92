"""The command backend: a program reads the prompt, prints its answer, journals as it goes."""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from council.model.backend_result import ReviewResult
from council.model.participant import Clocks, Participant
from reviewers.base import ReviewRequest
from reviewers.programs import process_group, supervision
from reviewers.programs.command import CommandReviewer

SHORT = Clocks(backstop_ms=2000, idle_ms=1000, answer_ms=0)


class MemorySink:
    """An in-memory journal sink that remembers what arrived, and when."""

    def __init__(self) -> None:
        self.entries: list[str] = []
        self.arrived: list[float] = []

    def append(self, raw: str) -> str:
        self.entries.append(raw)
        self.arrived.append(time.monotonic())
        return "Recorded."


def python(
    code: str,
    tmp_path: Path,
    *,
    clocks: Clocks = SHORT,
    prompt: str = "the prompt",
    sink: MemorySink | None = None,
    **extra: Any,
) -> ReviewRequest:
    """A request whose program is this Python interpreter running ``code``."""
    participant = Participant(
        id="prog",
        backend="command",
        clocks=clocks,
        options={"program": sys.executable, "args": ["-c", code]},
    )
    return ReviewRequest(
        participant=participant,
        prompt=prompt,
        journal=sink or MemorySink(),
        workdir=tmp_path,
        **extra,
    )


def shell(script: str, tmp_path: Path, clocks: Clocks = SHORT) -> ReviewRequest:
    """A request whose program is /bin/sh running ``script``."""
    participant = Participant(
        id="sh",
        backend="command",
        clocks=clocks,
        options={"program": "/bin/sh", "args": ["-c", script]},
    )
    return ReviewRequest(participant=participant, prompt="", journal=MemorySink(), workdir=tmp_path)


def review(request: ReviewRequest) -> ReviewResult:
    """Run the command backend once."""
    return CommandReviewer().review(request)


def sink_of(request: ReviewRequest) -> MemorySink:
    """The request's sink, typed."""
    assert isinstance(request.journal, MemorySink)
    return request.journal


def running(pid: int) -> bool:
    """Whether a process exists and is not a zombie (an unreaped orphan is dead)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    except FileNotFoundError:
        return False
    return fields[0] not in ("Z", "X")


def test_answer_is_stdout_of_prompt_on_stdin(tmp_path: Path) -> None:
    """The prompt arrives on stdin and stdout is the answer, with a clean result."""
    request = python("import sys; print(sys.stdin.read().upper())", tmp_path, prompt="héllo")
    result = review(request)
    assert result.answer == "HÉLLO\n"
    assert result.stop is None and result.failure is None and result.notes == ()


def test_cwd_env_and_journal_variable(tmp_path: Path) -> None:
    """The program runs in the workdir with request.env and COUNCIL_JOURNAL set."""
    code = (
        "import os, json; print(json.dumps([os.getcwd(), os.environ['COUNCIL_RUN'], "
        "os.path.isfile(os.environ['COUNCIL_JOURNAL'])]))"
    )
    result = review(python(code, tmp_path, env={"COUNCIL_RUN": "run-7"}))
    assert result.answer.strip() == f'["{tmp_path}", "run-7", true]'


def test_undecodable_stdout_is_replaced(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 become replacement characters, not an error."""
    result = review(python("import sys; sys.stdout.buffer.write(b'ok \\xff')", tmp_path))
    assert result.answer == "ok \ufffd"


def test_nonzero_exit_with_stdout_is_an_answer(tmp_path: Path) -> None:
    """A program that printed its answer then exited 1 still answered (with a note)."""
    result = review(python("import sys; print('{\"findings\": []}'); sys.exit(1)", tmp_path))
    assert result.failure is None
    assert result.answer == '{"findings": []}\n'
    assert "status 1" in result.notes[0]


def test_nonzero_exit_without_stdout_fails_with_stderr_tail(tmp_path: Path) -> None:
    """A non-zero exit with empty stdout is a failure quoting the end of stderr."""
    code = "import sys; sys.stderr.write('x' * 100000 + '\\nlast words\\n'); sys.exit(3)"
    result = review(python(code, tmp_path))
    assert result.failure is not None
    assert result.failure.startswith("exited with status 3: ")
    assert result.failure.endswith("last words")
    assert len(result.failure) < supervision.STDERR_TAIL_BYTES + 100


def test_program_not_on_path_fails_naming_it(tmp_path: Path) -> None:
    """A bare name not on PATH is a failure naming the program and the fix."""
    participant = Participant(
        id="p", backend="command", options={"program": "no-such-reviewer-xyz"}
    )
    request = ReviewRequest(participant=participant, prompt="", journal=MemorySink())
    result = review(request)
    assert result.failure is not None
    assert "'no-such-reviewer-xyz' not found beside council's interpreter" in result.failure
    assert "absolute path" in result.failure


def test_program_not_executable_fails(tmp_path: Path) -> None:
    """A file without the execute bit is a failure saying to chmod it."""
    script = tmp_path / "reviewer.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    participant = Participant(id="p", backend="command", options={"program": str(script)})
    result = review(ReviewRequest(participant=participant, prompt="", journal=MemorySink()))
    assert result.failure is not None
    assert "not executable" in result.failure and str(script) in result.failure


def test_materialized_program_wins_over_option(tmp_path: Path) -> None:
    """request.program (materialized from the base tree) is what runs."""
    script = tmp_path / "reviewer.sh"
    script.write_text('#!/bin/sh\necho "materialized $1"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    participant = Participant(
        id="p", backend="command", options={"program": "tools/reviewer.sh", "args": ["a1"]}
    )
    request = ReviewRequest(
        participant=participant, prompt="", journal=MemorySink(), program=script
    )
    assert review(request).answer == "materialized a1\n"


def test_relative_program_resolves_against_base_dir(tmp_path: Path) -> None:
    """A relative program path in the options resolves against base_dir."""
    (tmp_path / "tools").mkdir()
    script = tmp_path / "tools" / "r.sh"
    script.write_text("#!/bin/sh\necho relative\n")
    script.chmod(0o755)
    options = {"program": "tools/r.sh", "base_dir": str(tmp_path)}
    participant = Participant(id="p", backend="command", options=options)
    result = review(ReviewRequest(participant=participant, prompt="", journal=MemorySink()))
    assert result.answer == "relative\n"


def test_bad_options_are_a_failure_not_an_exception(tmp_path: Path) -> None:
    """Options the roster should have refused still end as a failure naming the field."""
    participant = Participant(id="p", backend="command", options={"program": "x", "args": 3})
    result = review(ReviewRequest(participant=participant, prompt="", journal=MemorySink()))
    assert result.failure is not None and "reviewers[p].args" in result.failure


def test_missing_workdir_is_a_failure(tmp_path: Path) -> None:
    """A workdir that does not exist is a failure, not a misleading 'not found'."""
    request = python("print(1)", tmp_path / "gone")
    result = review(request)
    assert result.failure is not None and "working directory" in result.failure


def test_idle_stop_keeps_partial_answer(tmp_path: Path) -> None:
    """A program silent for idle_ms is stopped as idle, keeping what it printed."""
    started = time.monotonic()
    result = review(python("import time; print('partial', flush=True); time.sleep(30)", tmp_path))
    assert result.stop is not None
    assert (result.stop.limit, result.stop.budget_ms) == ("idle", 1000)
    assert result.answer == "partial\n" and result.failure is None
    assert time.monotonic() - started < 4


def test_backstop_stop_on_a_slow_printer(tmp_path: Path) -> None:
    """Printing keeps the idle clock quiet; the backstop still stops it as wall-clock."""
    code = "import time\nfor i in range(100):\n    print(i, flush=True)\n    time.sleep(0.3)"
    started = time.monotonic()
    result = review(python(code, tmp_path))
    assert result.stop is not None
    assert (result.stop.limit, result.stop.budget_ms) == ("wall-clock", 2000)
    assert result.answer.startswith("0\n1\n2\n")
    assert 1.9 < time.monotonic() - started < 4.5


def test_cancel_stops_the_program(tmp_path: Path) -> None:
    """Setting request.cancel stops the program as cancelled, with no budget."""
    request = python("import time; time.sleep(30)", tmp_path)
    threading.Timer(0.3, request.cancel.set).start()
    started = time.monotonic()
    result = review(request)
    assert result.stop is not None and result.stop.limit == "cancelled"
    assert result.stop.budget_ms is None
    assert time.monotonic() - started < 1.9


def test_journal_lines_forwarded_while_the_program_runs(tmp_path: Path) -> None:
    """A complete journal line reaches the sink before the program ends."""

    class MarkingSink(MemorySink):
        def append(self, raw: str) -> str:
            (tmp_path / "seen").write_text(raw)
            return super().append(raw)

    code = (
        "import os, time\n"
        "with open(os.environ['COUNCIL_JOURNAL'], 'a') as j:\n"
        '    j.write(\'{"subject": "one"}\\n\'); j.flush()\n'
        "for _ in range(40):\n"
        "    if os.path.exists('seen'):\n"
        "        print('saw it'); break\n"
        "    time.sleep(0.05)\n"
        "else:\n"
        "    print('never forwarded')\n"
    )
    sink = MarkingSink()
    result = review(python(code, tmp_path, sink=sink))
    assert result.answer == "saw it\n"
    assert sink.entries == ['{"subject": "one"}']
    assert result.journal_entries == 1


def test_journal_remainder_and_unterminated_line_after_exit(tmp_path: Path) -> None:
    """After exit, remaining lines and a final unterminated line are forwarded; blanks not."""
    code = (
        "import os\n"
        "with open(os.environ['COUNCIL_JOURNAL'], 'a') as j:\n"
        '    j.write(\'{"n": 1}\\r\\n\\n   \\n{"n": 2}\\n{"n": 3}\')\n'
        "print('done')\n"
    )
    request = python(code, tmp_path)
    result = review(request)
    assert sink_of(request).entries == ['{"n": 1}', '{"n": 2}', '{"n": 3}']
    assert result.journal_entries == 3


def test_journal_line_written_before_a_stop_is_kept(tmp_path: Path) -> None:
    """A reviewer stopped by a clock keeps the journal entries it wrote before."""
    code = (
        "import os, time\n"
        "with open(os.environ['COUNCIL_JOURNAL'], 'a') as j:\n"
        '    j.write(\'{"n": 1}\\n{"n": 2}\')\n'
        "time.sleep(30)\n"
    )
    request = python(code, tmp_path)
    result = review(request)
    assert result.stop is not None and result.stop.limit == "idle"
    assert sink_of(request).entries == ['{"n": 1}', '{"n": 2}']


def test_journal_lines_keep_the_idle_clock_quiet(tmp_path: Path) -> None:
    """New journal lines count as activity: a silent-on-stdout journaller is not idle."""
    code = (
        "import os, time\n"
        "for i in range(5):\n"
        "    with open(os.environ['COUNCIL_JOURNAL'], 'a') as j:\n"
        "        j.write('{\"n\": %d}\\n' % i)\n"
        "    time.sleep(0.6)\n"
        "print('answer')\n"
    )
    clocks = Clocks(backstop_ms=6000, idle_ms=1000, answer_ms=0)
    result = review(python(code, tmp_path, clocks=clocks))
    assert result.stop is None and result.answer == "answer\n"
    assert result.journal_entries == 5


def test_stop_kills_the_whole_process_group(tmp_path: Path) -> None:
    """On a stop the grandchild a program started is killed too."""
    result = review(shell("sleep 30 & echo $! > grandchild.pid; wait", tmp_path))
    assert result.stop is not None and result.stop.limit == "idle"
    pid = int((tmp_path / "grandchild.pid").read_text())
    assert not running(pid)


def test_leftover_children_are_stopped_after_exit(tmp_path: Path) -> None:
    """A child left running (holding stdout) after the program exits is stopped."""
    started = time.monotonic()
    result = review(shell("sleep 30 & echo $! > grandchild.pid; echo done", tmp_path))
    assert result.stop is None and result.answer == "done\n"
    assert not running(int((tmp_path / "grandchild.pid").read_text()))
    assert time.monotonic() - started < 1.9


def test_stdout_is_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the cap the first and last halves are kept (the final answer survives), noted."""
    monkeypatch.setattr(supervision, "STDOUT_CAP_BYTES", 1000)
    script = "import sys\nsys.stdout.write('a' * 700 + 'y' * 5000 + '{\"findings\": []}')"
    result = review(python(script, tmp_path))
    assert len(result.answer) == 1000
    assert result.answer.startswith("a" * 500)
    assert result.answer.endswith('{"findings": []}')
    assert any("middle was dropped" in note for note in result.notes)


def test_prompt_not_read_is_not_a_fault(tmp_path: Path) -> None:
    """A program that ignores a large prompt and exits answers normally (broken pipe)."""
    result = review(python("print('ignored')", tmp_path, prompt="p" * 1_000_000))
    assert result.answer == "ignored\n" and result.failure is None


def test_script_without_shebang_fails_with_hint(tmp_path: Path) -> None:
    """An executable without #! cannot start; the failure says why."""
    script = tmp_path / "noshebang"
    script.write_text("echo hi\n")
    script.chmod(0o755)
    participant = Participant(id="p", backend="command", options={"program": str(script)})
    result = review(ReviewRequest(participant=participant, prompt="", journal=MemorySink()))
    assert result.failure is not None and "#!" in result.failure


def test_environment_is_not_leaked_into_the_result(tmp_path: Path) -> None:
    """The child sees this process's environment (copied, not modified here)."""
    before = dict(os.environ)
    review(python("print(1)", tmp_path, env={"EXTRA_FOR_CHILD": "1"}))
    assert dict(os.environ) == before


def test_program_busy_for_a_moment_starts_once_its_writer_closes(tmp_path: Path) -> None:
    """A program file still open for writing (another thread's fork held the writer's
    descriptor) is "Text file busy" to exec: the start is tried again, and succeeds."""
    script = tmp_path / "reviewer.sh"
    script.write_text("#!/bin/sh\necho started\n")
    script.chmod(0o755)
    writer = os.open(script, os.O_WRONLY)
    closer = threading.Timer(0.15, os.close, args=(writer,))
    closer.start()
    participant = Participant(id="p", backend="command", options={"program": str(script)})
    result = review(ReviewRequest(participant=participant, prompt="", journal=MemorySink()))
    closer.join()
    assert result.failure is None, result.failure
    assert result.answer == "started\n"


def test_program_busy_for_good_fails_naming_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A program that stays busy past every retry fails with the system's reason."""
    monkeypatch.setattr(process_group, "BUSY_RETRY_MS", (1, 1))
    script = tmp_path / "reviewer.sh"
    script.write_text("#!/bin/sh\necho started\n")
    script.chmod(0o755)
    writer = os.open(script, os.O_WRONLY)
    try:
        participant = Participant(id="p", backend="command", options={"program": str(script)})
        result = review(ReviewRequest(participant=participant, prompt="", journal=MemorySink()))
    finally:
        os.close(writer)
    assert result.failure is not None
    assert "Text file busy" in result.failure and str(script) in result.failure


class FullSink(MemorySink):
    """A journal sink that records ``room`` entries, then refuses, as a full store does."""

    def __init__(self, room: int) -> None:
        super().__init__()
        self.room = room

    def append(self, raw: str) -> str:
        if len(self.entries) >= self.room:
            return "Not recorded (the journal is full); keep it for your final answer."
        return super().append(raw)


def test_journal_lines_the_store_refused_are_noted(tmp_path: Path) -> None:
    """A program cannot read the sink's replies: lines refused by a full journal are
    counted in the notes with the first reply, never dropped silently."""
    code = (
        "import json, os\n"
        "with open(os.environ['COUNCIL_JOURNAL'], 'a') as j:\n"
        "    for i in range(5):\n"
        "        j.write(json.dumps({'subject': f's{i}'}) + '\\n')\n"
        "print('{\"findings\": []}')\n"
    )
    sink = FullSink(room=2)
    result = review(python(code, tmp_path, sink=sink))
    assert len(sink.entries) == 2
    assert result.journal_entries == 5
    refused = [n for n in result.notes if "not recorded" in n]
    assert refused == [
        "3 journal line(s) were not recorded; the first reply: Not recorded (the journal "
        "is full); keep it for your final answer."
    ]


@pytest.mark.parametrize(
    ("stderr", "hinted"),
    [
        (b"error: Failed to initialize cache at .ruff_cache: Read-only file system", True),
        (b"Traceback ...\nValueError: bad", False),
    ],
)
def test_a_program_that_wrote_the_read_only_tree_is_told_how_to_fix_it(
    stderr: bytes, hinted: bool
) -> None:
    """The sandbox mounts the code read-only: a tool failing to write its cache there
    gets the way out in its failure (the README's ruff lacked --no-cache)."""
    reason = supervision.Ran(status=2, stderr_tail=stderr).exit_reason()
    assert reason.startswith("exited with status 2: ")
    assert ("ruff --no-cache" in reason) is hinted
