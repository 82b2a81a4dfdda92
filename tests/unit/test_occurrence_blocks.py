"""Two holes a hostile review found in what a decision covers, replayed end to end
through `council review`, `council dismiss` and `council baseline` (embedded mode, real
git, real bandit), as tests/unit/test_occurrence_situations.py does:

* a guard deleted in the block of a dismissed or baselined call kept the decision (the
  call's code and its block's header were unchanged): the call gates, with a note;
* a copy of baselined code added above it took the original's index, and so its entry:
  the copy gates, the original stays baselined.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from council.change.diff import parse_diff
from council.model.findings import Finding, LineAnchor, Severity
from council.model.occurrence import FileCode
from council.session.baseline import BASELINE_FILE
from council.session.stale import stale
from tests.gitrepo import commit, git
from tests.unit.test_occurrence_situations import B602, BANDIT, ROUND, Council, filler

GUARDED = (
    "import subprocess\n\n\n"
    "def run(cmd):\n"
    '    if ";" in cmd:\n'
    "        raise ValueError(cmd)\n"
    "    return subprocess.call(cmd, shell=True)\n"
)
"""A shell call behind a guard; bandit's B602 (critical) on line 7."""

UNGUARDED = "import subprocess\n\n\ndef run(cmd):\n    return subprocess.call(cmd, shell=True)\n"
"""The same function with its guard deleted: the call's line and header are unchanged."""


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    from tests.sandboxing import bwrap_or_skip

    bwrap_or_skip()


def test_a_dismissal_does_not_carry_once_a_guard_in_its_block_is_deleted(tmp_path: Path) -> None:
    """Round 1 raises B602 on the guarded call; a person dismisses it. Round 2 deletes
    the guard: the call gates (it passed, "dismissed"), the note asks for a fresh
    decision; dismissed again, it passes."""
    council = Council(tmp_path, ROUND + BANDIT, {"README": "x\n"})
    base = git(council.repo, "rev-parse", "HEAD")
    commit(council.repo, {"app.py": GUARDED}, "guarded")
    _, one = council.review(base)
    assert one is not None
    (first,) = [f for f in one.findings if f.subject == B602]
    said = council.cli("dismiss", str(first.id), "--reason", "guarded", "--session", "s")
    assert said.exit_code == 0, said.output
    commit(council.repo, {"app.py": UNGUARDED}, "drop the guard")
    done, two = council.review(base)
    assert two is not None
    (again,) = [f for f in two.findings if f.subject == B602]
    assert again.id == first.id and again.id not in two.suppressed
    assert done.exit_code == 1, done.output
    assert any(
        f"#{again.id} is the occurrence of #{first.id}, dismissed" in n
        and "decides on it afresh" in n
        for n in two.notes
    ), two.notes
    said = council.cli("dismiss", str(again.id), "--reason", "callers check", "--session", "s")
    assert said.exit_code == 0, said.output
    done, three = council.review(base)
    assert three is not None and three.suppressed[again.id].source == "dismissed"
    assert done.exit_code == 0, done.output


def test_a_fresh_dismissal_carries_in_since_last_rounds_after_the_guard_went(
    tmp_path: Path,
) -> None:
    """As above, each round ``--since-last``: the round that deletes the guard gates on
    the carried call; dismissed afresh by the id it reported, the next round (after a
    commit to another file) keeps it out of the gate."""
    council = Council(tmp_path, ROUND + BANDIT, {"README": "x\n"})
    base = git(council.repo, "rev-parse", "HEAD")
    commit(council.repo, {"app.py": GUARDED}, "guarded")
    _, one = council.review(base, "--since-last")
    assert one is not None
    (first,) = [f for f in one.findings if f.subject == B602]
    said = council.cli("dismiss", str(first.id), "--reason", "guarded", "--session", "s")
    assert said.exit_code == 0, said.output
    commit(council.repo, {"app.py": UNGUARDED}, "drop the guard")
    done, two = council.review(base, "--since-last")
    assert two is not None
    (again,) = [f for f in two.carried if f.subject == B602]  # app.py's call, carried
    assert again.id not in two.suppressed and done.exit_code == 1, done.output
    said = council.cli("dismiss", str(again.id), "--reason", "callers check", "--session", "s")
    assert said.exit_code == 0, said.output
    commit(council.repo, {"README": "y\n"}, "another file")
    done, three = council.review(base, "--since-last")
    assert three is not None, done.output
    assert done.exit_code == 0, (done.output, three.notes)


def test_a_baseline_entry_does_not_carry_once_a_guard_in_its_block_is_deleted(
    tmp_path: Path,
) -> None:
    """The guarded call is baselined and committed; a pull request deletes the guard
    (and edits nothing else): the call gates with a note; an edit in another function
    leaves the entry carrying."""
    council = Council(tmp_path, ROUND + BANDIT + 'scope = "files"\n', {"README": "x\n"})
    empty = git(council.repo, "rev-parse", "HEAD")
    other = "\n\ndef version():\n    return 1\n"
    commit(council.repo, {"app.py": GUARDED + other}, "guarded")
    council.review(empty, "--filter", "file")
    target = str(council.repo / BASELINE_FILE)
    assert council.cli("baseline", "--session", "s", "--output", target).exit_code == 0
    base = commit(council.repo, {BASELINE_FILE: Path(target).read_text()}, "baseline")
    commit(council.repo, {"app.py": GUARDED + other.replace("1", "2")}, "elsewhere")
    done, kept = council.review(base, "--filter", "file", session="pr1")
    assert kept is not None
    (call,) = [f for f in kept.findings if f.subject == B602]
    assert kept.suppressed[call.id].source == "baseline", kept.notes
    assert done.exit_code == 0, done.output
    commit(council.repo, {"app.py": UNGUARDED + other}, "drop the guard")
    done, pull = council.review(base, "--filter", "file", session="pr2")
    assert pull is not None
    (call,) = [f for f in pull.findings if f.subject == B602]
    assert call.id not in pull.suppressed
    assert done.exit_code == 1, done.output
    assert any(f"#{call.id} is the occurrence of a baseline entry" in n for n in pull.notes)


def test_a_copy_added_above_baselined_code_never_takes_its_entry(tmp_path: Path) -> None:
    """The base's `run` is baselined; a pull request adds an identical `run` above it
    (the same header, the same block). The original keeps its entry; the copy, added
    by the change, gates (it took index 1 and the entry, and the original gated)."""
    council = Council(tmp_path, ROUND + BANDIT + 'scope = "files"\n', {"README": "x\n"})
    empty = git(council.repo, "rev-parse", "HEAD")
    tail = "\n\n" + filler(3, "pad")
    commit(council.repo, {"app.py": UNGUARDED + tail}, "run")
    council.review(empty, "--filter", "file")
    target = str(council.repo / BASELINE_FILE)
    assert council.cli("baseline", "--session", "s", "--output", target).exit_code == 0
    base = commit(council.repo, {BASELINE_FILE: Path(target).read_text()}, "baseline")
    copy = "def run(cmd):\n    return subprocess.call(cmd, shell=True)\n\n\n"
    head = "import subprocess\n\n\n"
    commit(council.repo, {"app.py": head + copy + UNGUARDED.removeprefix(head) + tail}, "copy")
    done, pull = council.review(base, "--filter", "file", session="pr")
    assert pull is not None
    by_line = {getattr(f.anchor, "line", 0): f.id for f in pull.findings if f.subject == B602}
    assert sorted(by_line) == [5, 9], pull.findings
    assert pull.suppressed[by_line[9]].source == "baseline", pull.notes
    assert by_line[5] not in pull.suppressed
    assert done.exit_code == 1, done.output


# The pure rules under them: council.model.occurrence and council.session.stale.

FUNC = [
    "def run(path):",
    "    if '..' in path:",
    "        raise ValueError(path)",
    "    open(path)",
]


def test_a_guard_deleted_in_the_block_changes_its_hash_and_not_the_code() -> None:
    """Deleting the guard keeps the call's code hash and changes its block's; an edit in
    another function changes neither."""
    other = ["", "def version():", "    return 1"]
    before = FileCode([*FUNC, *other])
    after = FileCode([FUNC[0], FUNC[3], *other])
    elsewhere = FileCode([*FUNC, *other[:2], "    return 2"])
    assert before.code(4, 4) == after.code(2, 2) == elsewhere.code(4, 4)
    assert before.block(4, 4) != after.block(2, 2)
    assert before.block(4, 4) == elsewhere.block(4, 4)


def test_top_level_code_keeps_its_block_but_for_the_lines_just_above_it() -> None:
    """Module-level code has no block: its hash reads the anchored line and the 20 lines
    above it. A top-level guard deleted right above changes it; a line appended at the
    end of the file, or an edit 30 lines above, does not."""
    lines = [f"step_{n}()" for n in range(40)] + ["check(path)", "open(path)", "done()"]
    at = lines.index("open(path)") + 1
    base = FileCode(lines)
    guard_gone = FileCode([line for line in lines if line != "check(path)"])
    appended = FileCode([*lines, "# a comment appended at the end"])
    far_edit = FileCode(["step_0(x)", *lines[1:]])
    assert base.block(at, at) != guard_gone.block(at - 1, at - 1)
    assert base.block(at, at) == appended.block(at, at) == far_edit.block(at, at)


def test_untouched_identical_code_counts_before_added_code() -> None:
    """A copy added above takes the index after the untouched original's; with nothing
    added, the order is the file's."""
    lines = [*FUNC, "", *FUNC]
    assert FileCode(lines, added=range(1, 6)).code(9, 9) == FileCode(FUNC).code(4, 4)
    assert FileCode(lines).code(4, 4) == FileCode(FUNC).code(4, 4)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["a()", "b()", "  a()", ""]), min_size=1, max_size=30),
    st.sets(st.integers(min_value=1, max_value=30)),
)
def test_an_added_window_never_takes_an_untouched_ones_index(
    lines: list[str], added: set[int]
) -> None:
    """Among identical windows, every untouched one's index is below every added one's,
    and the indexes of each kind keep the file's order."""
    code = FileCode(lines, added=added)
    seen: dict[str, list[tuple[bool, int, int]]] = {}
    for n in range(1, len(lines) + 1):
        value = code.code(n, n)
        if value is None or not lines[n - 1].strip():
            continue
        digest, index = value.split(":")
        seen.setdefault(digest, []).append((n in added, n, int(index)))
    for windows in seen.values():
        ranked = [index for _, _, index in sorted(windows)]
        assert ranked == list(range(1, len(windows) + 1))


def _at(block: str | None, severity: Severity = "critical") -> Finding:
    anchor = LineAnchor(path="app.py", line=4, code="c" * 32 + ":1", block=block)
    return Finding(id=1, anchor=anchor, label="issue", subject="x", severity=severity)


def test_a_decision_is_stale_only_for_a_gating_finding_whose_block_changed() -> None:
    change = parse_diff(ADDS_APP)
    assert stale(_at("new"), "old", None, "critical")
    assert not stale(_at("old"), "old", change, "critical")
    assert not stale(_at("new", "medium"), "old", change, "critical")  # below the gate
    assert not stale(_at("new"), "old", change, "never")
    assert stale(_at(None), "old", None, "critical")  # block unknown: fail closed
    assert stale(_at("new"), None, change, "critical")  # no block kept, file edited
    assert not stale(_at("new"), None, parse_diff(ADDS_OTHER), "critical")


ADDS_APP = (
    "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1,1 +1,2 @@\n x = 1\n+y = 2\n"
)
ADDS_OTHER = ADDS_APP.replace("app.py", "other.py")


ESCAPED = (
    "def g(y):\n"
    "    if trusted(y):\n"
    "        log(y)\n"
    "    y = escape(y)\n"
    "    return eval(y)\n"
)
"""A dismissed ``eval(y)`` (line 5) whose input is escaped on every path."""

MOVED = ESCAPED.replace("    y = escape(y)\n", "        y = escape(y)\n")
"""The escape moved into the ``if``: untrusted input now reaches ``eval`` unescaped, and
no line was added or removed."""


def test_a_guard_moved_into_an_if_changes_a_python_block_and_a_formatter_does_not() -> None:
    """In a Python file the block hashes nesting levels: the escape indented into the
    ``if`` changes the block of the ``eval`` line (its decision no longer carries); a
    formatter's 4 spaces made 2 does not; in a file where indentation is no meaning,
    re-indenting changes nothing."""

    def block(text: str, indented: bool = True) -> str | None:
        return FileCode(text.splitlines(), indented=indented).block(5, 5)

    assert block(ESCAPED) is not None
    assert block(MOVED) != block(ESCAPED)
    assert block(ESCAPED.replace("    ", "  ")) == block(ESCAPED)
    assert block(MOVED, indented=False) == block(ESCAPED, indented=False)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 8))
def test_a_python_blocks_hash_does_not_depend_on_its_indent_width(width: int) -> None:
    spaced = ESCAPED.replace("    ", " " * width)
    assert FileCode(spaced.splitlines(), indented=True).block(5, 5) == FileCode(
        ESCAPED.splitlines(), indented=True
    ).block(5, 5)


def test_an_if_far_above_a_top_level_window_still_counts_its_nesting() -> None:
    """A top-level eval (line 31) whose guard's ``if`` is 25 lines above: the window holds
    the 20 lines above only, yet moving the escape into the ``if`` changes the block (a
    line's level counts every line enclosing it, wherever it is)."""
    checks = "".join(f"    check{n}()\n" for n in range(25))
    flat = 'import sys\ny = sys.argv[1]\nif "--strict" in sys.argv:\n' + checks
    escaped = flat + "y = escape(y)\neval(y)\n"
    moved = flat + "    y = escape(y)\neval(y)\n"
    line = escaped.count("\n")
    assert FileCode(escaped.splitlines(), indented=True).block(line, line) != FileCode(
        moved.splitlines(), indented=True
    ).block(line, line)


def test_a_python_script_without_a_suffix_is_read_as_python() -> None:
    """An extensionless ``#!/usr/bin/env python3`` script: its blocks read nesting levels
    (stamp decides by the suffix or the first line)."""
    from council.model.findings import Finding, LineAnchor
    from council.model.occurrence import python_script, stamp

    script = "#!/usr/bin/env python3\n" + ESCAPED
    moved = "#!/usr/bin/env python3\n" + MOVED
    assert python_script(script.splitlines()) and not python_script(["#!/bin/sh"])

    def block_of(text: str) -> str | None:
        finding = Finding(anchor=LineAnchor(path="run", line=6), label="issue", subject="eval")
        (stamped,) = stamp([finding], lambda _path: text.splitlines())
        assert isinstance(stamped.anchor, LineAnchor)
        return stamped.anchor.block

    assert block_of(script) != block_of(moved)


def test_a_top_level_calls_arguments_below_its_first_lines_are_in_its_block() -> None:
    """An analyzer marks the first two lines of a top-level call; the change rewrites an
    argument below them (``shell=False`` made ``shell=True``): the block changes, so a
    decision on the call no longer carries."""
    call = 'import subprocess\nsubprocess.call(\n    ["ls",\n    "-l"],\n    shell=False,\n)\n'
    worse = call.replace("shell=False", "shell=True")
    assert FileCode(call.splitlines()).block(2, 3) != FileCode(worse.splitlines()).block(2, 3)
