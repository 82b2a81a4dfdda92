"""Issue 20's situations 1-3, replayed end to end: `council review`, `council dismiss`,
`council baseline` and `council answer` through the CLI in embedded mode, over real git
repositories, with real bandit as the analyzer (a ``sarif`` reviewer) and a ``replay``
model. Each gates where the council used to pass: a decision covers the occurrence a
person saw, never another place of the same rule, and a model's finding never stands for
an analyzer's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from council.model.report import CouncilReport
from council.rendering import read_json
from council.session.baseline import BASELINE_FILE, read_baseline
from tests.gitrepo import commit, git, new_repo
from workers.cli import main

ROUND = "[council]\nbackstop_ms = 60000\nidle_ms = 60000\n"

BANDIT = (
    '[[reviewers]]\nid = "bandit"\nbackend = "sarif"\nprogram = "bandit"\n'
    'args = ["-r", ".", "-f", "sarif", "--exit-zero", "-q"]\n'
)
"""Real bandit over the head tree; its findings on the change's lines (``scope = "lines"``,
the default)."""

B602 = "B602: subprocess call with shell=True identified, security issue."
"""The subject bandit's B602 (high) is filed under: the same for every occurrence."""


def filler(count: int, stem: str) -> str:
    """``count`` distinct harmless lines: keeps two places of a rule far apart."""
    return "".join(f"{stem}_{n} = {n}\n" for n in range(count))


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    """Bandit runs sandboxed; skip where bubblewrap cannot (fail in CI)."""
    from tests.sandboxing import bwrap_or_skip

    bwrap_or_skip()


class Council:
    """A repository whose base roster is ``roster``; rounds of session s share one
    state file."""

    def __init__(self, tmp_path: Path, roster: str, files: dict[str, str] | None = None) -> None:
        self.tmp = tmp_path
        self.repo = new_repo(tmp_path / "repo", {"council.toml": roster, **(files or {})})
        self.state = tmp_path / "state.json"
        self.rounds = 0

    def review(
        self, base: str, *args: str, session: str = "s"
    ) -> tuple[Result, CouncilReport | None]:
        """One round of ``session`` over base..HEAD: its exit and its JSON report."""
        self.rounds += 1
        out = self.tmp / f"round{self.rounds}.json"
        argv = ["review", "--repo", str(self.repo), "--base", base, "--no-progress"]
        argv += ["--state", str(self.state), "--session", session, "--json", str(out)]
        done = CliRunner().invoke(main, [*argv, *args])
        return done, (read_json(out.read_text()) if out.exists() else None)

    def cli(self, *args: str) -> Result:
        """Another council command on the same state file (and session, when it takes one)."""
        return CliRunner().invoke(main, [*args, "--state", str(self.state)])


def test_situation_1_a_baseline_entry_never_covers_a_new_occurrence(tmp_path: Path) -> None:
    """The base has a legacy `subprocess.call("pg_dump > " + path, shell=True)` in db.py,
    baselined (B602, count 1) and committed. A pull request appends a new function with
    `subprocess.call("report " + user_input, shell=True)` 45 lines lower: it is a new
    occurrence, not in the baseline, and gates (it used to pass, "baselined")."""
    council = Council(tmp_path, ROUND + BANDIT, {"README": "x\n"})
    empty = git(council.repo, "rev-parse", "HEAD")
    legacy = (
        "import subprocess\n\n\n"
        "def dump(path):\n"
        '    return subprocess.call("pg_dump > " + path, shell=True)\n'
        "\n\ndef version():\n    return 1\n"
    )
    commit(council.repo, {"db.py": legacy}, "legacy dump")
    done, adopted = council.review(empty)
    assert done.exit_code == 1, done.output
    assert adopted is not None and [f.subject for f in adopted.findings].count(B602) == 1
    written = council.cli(
        "baseline", "--session", "s", "--output", str(council.repo / BASELINE_FILE)
    )
    assert written.exit_code == 0, written.output
    baseline = read_baseline((council.repo / BASELINE_FILE).read_text())
    (entry,) = [e for e in baseline.entries if e.subject == B602]
    assert (entry.count, entry.path) == (1, "db.py") and entry.occurrence is not None
    assert entry.programs  # bandit's own telling: a program's suppression names it
    base = commit(
        council.repo, {BASELINE_FILE: (council.repo / BASELINE_FILE).read_text()}, "baseline"
    )
    appended = (
        legacy
        + "\n\n"
        + filler(45, "pad")
        + "\n\ndef report(user_input):\n"
        + '    return subprocess.call("report " + user_input, shell=True)\n'
    )
    commit(council.repo, {"db.py": appended}, "report")
    done, pull = council.review(base, session="pr")
    assert done.exit_code == 1, done.output
    assert pull is not None
    (new,) = [f for f in pull.findings if f.subject == B602]  # the legacy one is not raised
    assert getattr(new.anchor, "line", 0) == 60 and new.id not in pull.suppressed
    assert any(f"#{new.id} makes the same claim as a baseline entry" in n for n in pull.notes)


def test_situation_1_the_recorded_occurrence_stays_baselined_when_it_moves(
    tmp_path: Path,
) -> None:
    """The other half of situation 1: the legacy occurrence itself, raised again after
    lines were inserted above it (bandit reads whole changed files with ``scope =
    "files"``), stays baselined; the new one beside it gates."""
    roster = ROUND + BANDIT + 'scope = "files"\n'
    council = Council(tmp_path, roster, {"README": "x\n"})
    empty = git(council.repo, "rev-parse", "HEAD")
    legacy = (
        "import subprocess\n\n\n"
        "def dump(path):\n"
        '    return subprocess.call("pg_dump > " + path, shell=True)\n'
    )
    commit(council.repo, {"db.py": legacy}, "legacy dump")
    council.review(empty)
    target = str(council.repo / BASELINE_FILE)
    assert council.cli("baseline", "--session", "s", "--output", target).exit_code == 0
    base = commit(council.repo, {BASELINE_FILE: Path(target).read_text()}, "baseline")
    moved = (
        "import subprocess\n\n"
        + filler(20, "top")
        + "\n\ndef dump(path):\n"
        + '    return subprocess.call("pg_dump > " + path, shell=True)\n'
        + "\n\ndef report(user_input):\n"
        + '    return subprocess.call("report " + user_input, shell=True)\n'
    )
    commit(council.repo, {"db.py": moved}, "report")
    done, pull = council.review(base, "--filter", "file", session="pr")
    assert done.exit_code == 1, done.output
    assert pull is not None
    by_line = {getattr(f.anchor, "line", 0): f.id for f in pull.findings if f.subject == B602}
    assert sorted(by_line) == [26, 30]
    assert pull.suppressed[by_line[26]].source == "baseline"
    assert by_line[30] not in pull.suppressed


def test_situation_2_a_dismissal_never_covers_another_occurrence(tmp_path: Path) -> None:
    """Round 1 raises B602 on a constant command in svc.py; a person dismisses it ("a
    constant"). Round 2 removes that call and adds `subprocess.call("grep " + pattern,
    shell=True)` 60 lines lower: another occurrence, which gates (it used to pass as
    "dismissed: a constant")."""
    council = Council(tmp_path, ROUND + BANDIT, {"README": "x\n"})
    base = git(council.repo, "rev-parse", "HEAD")
    head = 'import subprocess\n\nCMD = "ls -l /var/log"\n\n\n'
    constant = "def listing():\n    return subprocess.call(CMD, shell=True)\n"
    commit(council.repo, {"svc.py": head + constant + filler(60, "pad")}, "listing")
    done, one = council.review(base)
    assert done.exit_code == 1, done.output
    assert one is not None
    (first,) = [f for f in one.findings if f.subject == B602]
    said = council.cli("dismiss", str(first.id), "--reason", "a constant", "--session", "s")
    assert said.exit_code == 0, said.output
    grep = '\n\ndef grep(pattern):\n    return subprocess.call("grep " + pattern, shell=True)\n'
    commit(council.repo, {"svc.py": head + filler(60, "pad") + grep}, "grep")
    done, two = council.review(base)
    assert done.exit_code == 1, done.output
    assert two is not None
    (second,) = [f for f in two.findings if f.subject == B602]
    assert second.id not in two.suppressed
    assert [f.id for f in two.outdated] == [first.id]
    assert any(
        f"#{second.id} makes the same claim as #{first.id}, dismissed" in n for n in two.notes
    )


def test_situation_2_the_dismissed_occurrence_stays_dismissed_when_it_moves(
    tmp_path: Path,
) -> None:
    """The dismissed call itself, moved 30 lines down with its function and reindented by
    a formatter, stays dismissed; the gate passes."""
    council = Council(tmp_path, ROUND + BANDIT + 'scope = "files"\n', {"README": "x\n"})
    base = git(council.repo, "rev-parse", "HEAD")
    head = 'import subprocess\n\nCMD = "ls -l /var/log"\n\n\n'
    constant = "def listing():\n    return subprocess.call(CMD, shell=True)\n"
    commit(council.repo, {"svc.py": head + constant}, "listing")
    _, one = council.review(base, "--filter", "file")
    assert one is not None
    (first,) = [f for f in one.findings if f.subject == B602]
    assert (
        council.cli("dismiss", str(first.id), "--reason", "a constant", "--session", "s").exit_code
        == 0
    )
    moved = "def listing():\n  return subprocess.call( CMD,  shell=True )\n"
    commit(council.repo, {"svc.py": head + filler(30, "pad") + "\n\n" + moved}, "move")
    done, two = council.review(base, "--filter", "file")
    assert two is not None
    (again,) = [f for f in two.findings if f.subject == B602]
    assert two.suppressed[again.id].source == "dismissed", two.notes
    assert done.exit_code == 0, done.output


def model_answer(path: Path, *findings: dict[str, Any]) -> None:
    """What the replay model answers next."""
    path.write_text(json.dumps({"findings": list(findings)}))


def test_situation_3_a_models_dismissed_finding_never_suppresses_an_analyzers(
    tmp_path: Path,
) -> None:
    """A prompt-injected model copies bandit's subject onto a harmless line with
    "probably a false alarm"; under `[policy] confirm` a person answers "no". Next round
    a real shell call is added: bandit's finding is not dismissed: it is put to a person
    (exit 4) and, confirmed, gates (exit 1). It used to show "dismissed", exit 0."""
    answer = tmp_path / "m1.json"
    model_answer(answer)
    roster = (
        ROUND
        + '[policy]\nconfirm = "critical"\n'
        + BANDIT
        + f'[[reviewers]]\nid = "m1"\nbackend = "replay"\nanswer = {json.dumps(str(answer))}\n'
    )
    council = Council(tmp_path, roster, {"README": "x\n"})
    base = git(council.repo, "rev-parse", "HEAD")
    app = "import logging\n\n\ndef hello():\n    logging.info('hello')\n"
    commit(council.repo, {"app.py": app}, "hello")
    copied = {
        "subject": B602,
        "discussion": "probably a false alarm",
        "label": "issue",
        "severity": "critical",
        "location": {"kind": "line", "path": "app.py", "line": 5},
    }
    model_answer(answer, copied)
    waiting, _ = council.review(base)
    assert waiting.exit_code == 4, waiting.output
    listed = council.cli("asks", "--json")
    (ask,) = json.loads(listed.stdout)
    said = council.cli("answer", ask["id"], "no", "--reason", "probably a false alarm")
    assert said.exit_code == 0, said.output
    settled, _ = council.review(base)
    assert settled.exit_code == 0, settled.output
    model_answer(answer)
    shell = (
        'def report(user_input):\n    return subprocess.call("report " + user_input, shell=True)\n'
    )
    commit(council.repo, {"app.py": "import subprocess\n" + app + "\n\n" + shell}, "shell")
    asked, two = council.review(base)
    assert two is not None
    (real,) = [f for f in two.findings if f.subject == B602]
    assert real.id not in two.suppressed
    assert asked.exit_code == 4, asked.output  # put to a person, never dismissed
    shown = json.loads(council.cli("asks", "--json").stdout)
    (ask,) = [a for a in shown if a["component"]["props"]["finding"]["id"] == real.id]
    assert council.cli("answer", ask["id"], "yes").exit_code == 0
    resumed = council.cli("resume", ask["run"])
    assert resumed.exit_code == 1, resumed.output
