"""The README's first run (examples/first-run): a council of two analyzers and three
recorded model answers reviews a sample change, with no key, and the report shows
agreement ("k of 5"), what was reviewed and a verdict; the live-model roster is the same
council."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from council.roster import parse_roster
from tests.gitrepo import ROOT, commit, new_repo
from tests.sandboxing import bwrap_or_skip
from tests.unit.test_cli_review import ROUND, report_of, review, reviewer, roster

FIRST_RUN = ROOT / "examples" / "first-run"
SCRIPT = FIRST_RUN / "review.py"


def run_first(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The script as the README runs it, with this checkout's code and no key in the
    environment (HOME a fresh folder: nothing of the developer's is read or written)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.endswith("_API_KEY") and not key.startswith(("COUNCIL_", "GIT_"))
    }
    home = tmp_path / "home"
    home.mkdir()
    env.update(PYTHONPATH=str(ROOT), HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.mark.timeout(300)
def test_the_first_run_shows_a_council_agreeing_and_a_verdict(tmp_path: Path) -> None:
    """Five reviewers, embedded, no key: the shell injection is one finding raised by
    bandit, hawk and owl (3 of 5), the unused import by ruff and owl and the empty-list
    division by hawk and lynx (2 of 5 each); the header states the sample's size; the
    gate trips on the critical finding (exit 1); nothing is left in HOME."""
    bwrap_or_skip()
    report = tmp_path / "report.json"
    done = run_first(tmp_path, "--", "--json", str(report))
    assert done.returncode == 1, done.stderr[-3000:]
    out = done.stdout
    assert out.startswith("## ❌ Council review: gate tripped (1 finding at or above critical)")
    assert "· 2 files, +36/−1 ·" in out.splitlines()[2]
    assert "raised by bandit, hawk, owl (3 of 5)" in out
    assert "raised by ruff, owl (2 of 5)" in out
    assert "raised by hawk, lynx (2 of 5)" in out
    assert "first-run: council review --repo" in done.stderr
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["mode"] == "embedded" and data["status"] == "settled"
    assert data["reviewed"] == {"files": 2, "added": 36, "removed": 1}
    assert [(p["id"], p["state"]) for p in data["participants"]] == [
        ("ruff", "answered"),
        ("bandit", "answered"),
        ("hawk", "answered"),
        ("owl", "answered"),
        ("lynx", "answered"),
    ]
    raisers = sorted(sorted(f.get("raised_by", [])) for f in data["findings"])
    assert ["bandit", "hawk", "owl"] in raisers
    assert list((tmp_path / "home").iterdir()) == []


def test_the_sample_commits_are_the_same_everywhere(tmp_path: Path) -> None:
    """The sample repository is built with fixed authors and dates: its head commit has
    one sha on every machine, so the recorded answers' lines always match its files."""
    first = run_first(tmp_path, "--keep", "--", "--help")
    kept = Path(first.stderr.rsplit("kept in ", 1)[1].strip())
    try:
        head = subprocess.run(
            ["git", "-C", str(kept), "rev-parse", "feature"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    finally:
        shutil.rmtree(kept.parent)
    assert first.returncode == 0, first.stderr[-2000:]
    assert head == "eeb7885dfc299569c7f0261343ce9c578a119b32"


def test_the_live_roster_is_the_same_council_with_models() -> None:
    """council-models.toml keeps the analyzers as they are and puts an openai or
    anthropic model under each recorded reviewer's id, reading its key from the
    environment (the roster names no key)."""
    recorded = parse_roster((FIRST_RUN / "council.toml").read_text(), "council.toml")
    live_text = (FIRST_RUN / "council-models.toml").read_text()
    live = parse_roster(live_text, "council-models.toml")
    assert [p.id for p in live.reviewers] == [p.id for p in recorded.reviewers]
    for was, now in zip(recorded.reviewers, live.reviewers, strict=True):
        if was.backend == "sarif":
            assert now.options == was.options
        else:
            assert (was.backend, now.backend in ("openai", "anthropic")) == ("replay", True)
            assert now.model and now.persona == was.persona
    assert "sk-" not in live_text and "api_key =" not in live_text


def test_the_report_counts_what_the_reviewers_were_shown(tmp_path: Path) -> None:
    """``reviewed`` counts the files of the change after ``[paths]`` and their added and
    removed lines: an excluded file is not in it."""
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\ny = 2\n", "uv.lock": "a\n"})
    commit(repo, {"app.py": "x = 1\nz = 3\nw = 4\n", "uv.lock": "b\nc\n", "new.py": "n = 0\n"}, "c")
    (tmp_path / "a.json").write_text('{"findings": []}', encoding="utf-8")
    rp = roster(
        tmp_path,
        reviewer("rep", "replay", answer="a.json"),
        head=ROUND + '[paths]\nexclude = ["*.lock"]\n',
    )
    done = review(repo, tmp_path / "s.json", "--json", str(tmp_path / "r.json"), roster_path=rp)
    assert done.exit_code == 0, done.output
    assert report_of(tmp_path / "r.json")["reviewed"] == {"files": 2, "added": 3, "removed": 1}
    assert "2 files, +3/−1 ·" in done.stdout


def test_the_readme_first_command_is_one_line_that_runs_this_script() -> None:
    """README's "Two commands": the first is ONE line in a ```sh block that installs
    council into .venv (leaving .venv/bin/council) and runs `council review` on the sample
    that examples/first-run/sample.py builds; the switch to live models is three lines."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    blocks = [b.split("```", 1)[0] for b in section.split("```sh\n")[1:]]
    first = blocks[0].splitlines()
    assert len(first) == 1
    install = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[analyzers]' && "
    assert first[0].startswith(install)
    review = (
        '&& .venv/bin/council review --repo "$(.venv/bin/python examples/first-run/sample.py)"'
        " --base main --head feature --roster examples/first-run/council.toml"
        " --state .first-run/state.json"
    )
    assert first[0].endswith(review)
    switch = blocks[1].splitlines()
    assert len(switch) == 3 and "--models" in switch[1]
    assert "council-models.toml" in switch[2]


def test_the_sample_builder_never_removes_a_tree_that_is_not_its_own(tmp_path: Path) -> None:
    """sample.py removes its folder before building it again, but never through a link
    (a hostile review made ``.first-run`` a link to the checkout, marker and all, and
    the whole clone went), nor a folder holding the current one: it refuses, and the
    files stay."""
    builder = [sys.executable, str(FIRST_RUN / "sample.py")]
    (tmp_path / ".council-first-run").write_text("")
    (tmp_path / "mywork.txt").write_text("keep\n")
    (tmp_path / ".first-run").symlink_to(".")
    linked = subprocess.run(builder, cwd=tmp_path, capture_output=True, text=True)
    assert linked.returncode != 0 and "symbolic link" in linked.stderr
    (tmp_path / "sub").mkdir()
    above = subprocess.run([*builder, ".."], cwd=tmp_path / "sub", capture_output=True, text=True)
    assert above.returncode != 0 and "name a folder of its own" in above.stderr
    assert (tmp_path / "mywork.txt").read_text() == "keep\n"


def test_the_script_answers_help_and_a_wrong_option_is_a_usage_error(tmp_path: Path) -> None:
    """--help prints what the script does; a wrong option exits 2, never 1 (the gate's)."""
    helped = run_first(tmp_path, "--help")
    assert helped.returncode == 0 and "--models" in helped.stdout
    (tmp_path / "again").mkdir()
    wrong = run_first(tmp_path / "again", "--bogus")
    assert wrong.returncode == 2 and "unknown option '--bogus'" in wrong.stderr
