"""What the previous version wrote still reads (issue 20, "Bad input"): a committed
baseline keyed by claims, and a session state file whose dismissals and memory are keyed
by claims and whose findings hold no code. An old decision covers only what it can be
shown to cover, says so in a note, and never a new occurrence. End to end through the CLI
in embedded mode, a replay reviewer, a real git repository."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from council.model.findings import FINDING, Finding, LineAnchor
from council.model.fingerprint import claim
from council.model.report import CouncilReport
from council.rendering import read_json
from council.session.baseline import BASELINE_FILE
from tests.gitrepo import commit, git, new_repo
from workers.cli import main

ROUND = "[council]\nbackstop_ms = 60000\nidle_ms = 60000\n"

EVAL = "eval of untrusted data"


def hit(line: int) -> dict[str, Any]:
    """The replay model's finding on app.py's line."""
    return {
        "subject": EVAL,
        "label": "issue",
        "severity": "critical",
        "location": {"kind": "line", "path": "app.py", "line": line},
    }


class Replay:
    """A repository whose base roster runs one replay model reading ``answer.json``
    outside the repository; rounds of session s share one state file."""

    def __init__(self, tmp_path: Path, files: dict[str, str]) -> None:
        tmp_path.mkdir(parents=True, exist_ok=True)
        self.tmp = tmp_path
        self.answer = tmp_path / "answer.json"
        self.answer.write_text('{"findings": []}')
        roster = f'{ROUND}[[reviewers]]\nid = "m1"\nbackend = "replay"\n'
        roster += f"answer = {json.dumps(str(self.answer))}\n"
        self.repo = new_repo(tmp_path / "repo", {"council.toml": roster, **files})
        self.base = git(self.repo, "rev-parse", "HEAD")
        self.state = tmp_path / "state.json"
        self.rounds = 0

    def push(self, files: dict[str, str], *findings: dict[str, Any]) -> None:
        self.answer.write_text(json.dumps({"findings": list(findings)}))
        commit(self.repo, files, f"push {self.rounds}")

    def review(self) -> tuple[Result, CouncilReport]:
        self.rounds += 1
        out = self.tmp / f"round{self.rounds}.json"
        argv = ["review", "--repo", str(self.repo), "--base", self.base, "--no-progress"]
        argv += ["--state", str(self.state), "--session", "s", "--json", str(out)]
        done = CliRunner().invoke(main, argv)
        assert out.exists(), done.output
        return done, read_json(out.read_text())

    def cli(self, *args: str) -> Result:
        return CliRunner().invoke(main, [*args, "--state", str(self.state), "--session", "s"])


def test_a_baseline_written_by_the_previous_version_covers_only_the_bases_code(
    tmp_path: Path,
) -> None:
    """The base commits a baseline the previous version wrote (keyed by the claim: path,
    label, subject; no occurrence) for the legacy eval on line 2. The pull request adds
    another eval of the same claim: the legacy one stays baselined (its code is as the
    base has it; a note says how), the new one gates (a note says why)."""
    legacy = Finding(anchor=LineAnchor(path="app.py", line=2), label="issue", subject=EVAL)
    old = {
        "version": 1,
        "entries": [
            {
                "fingerprint": claim(legacy),
                "reason": "legacy, see #12",
                "subject": EVAL,
                "path": "app.py",
                "severity": "critical",
                "count": 1,
            }
        ],
    }
    app = "import sys\nvalue = eval(sys.argv[1])\n"
    council = Replay(tmp_path, {"app.py": app, BASELINE_FILE: json.dumps(old, indent=2)})
    council.push(
        {"app.py": app + "\n\ndef run(user_input):\n    return eval(user_input)\n"}, hit(2), hit(6)
    )
    done, report = council.review()
    assert done.exit_code == 1, done.output
    by_line = {getattr(f.anchor, "line", 0): f.id for f in report.findings}
    assert report.suppressed[by_line[2]].source == "baseline"
    assert by_line[6] not in report.suppressed
    notes = " ".join(report.notes)
    assert f"#{by_line[2]} is covered by a baseline entry written before" in notes
    assert f"#{by_line[6]} makes the claim of a baseline entry written before" in notes


def _aged(finding: dict[str, Any]) -> dict[str, Any]:
    """A finding as the previous version stored it: no code, no program in origins."""
    out = json.loads(json.dumps(finding))
    for told in (out, *out.get("members", ())):
        told.get("anchor", {}).pop("code", None)
        if "origin" in told:
            told["origin"].pop("program", None)
    return out


def age(state: Path) -> None:
    """Rewrite the state file as the previous version would have written it: findings
    without code, and the session's fingerprints and dismissals keyed by claims."""
    data = json.loads(state.read_text())
    for session in data["sessions"].values():
        findings = {k: json.dumps(_aged(json.loads(v))) for k, v in session["findings"].items()}
        session["findings"] = findings
        by_id = {k: FINDING.validate_json(v) for k, v in findings.items()}
        prints: dict[str, str] = {}
        for ids in session.get("fingerprints", {}).values():
            first = by_id[ids.split(",")[0]]
            prints[claim(first)] = ids
        session["fingerprints"] = prints
        if session.get("recall"):
            session["recall"] = json.dumps([_aged(f) for f in json.loads(session["recall"])])
        if session.get("reviewed", {}).get("open"):
            opened = [_aged(f) for f in json.loads(session["reviewed"]["open"])]
            session["reviewed"]["open"] = json.dumps(opened)
        dismissed: dict[str, str] = {}
        for raw in session.get("dismissed", {}).values():
            held = json.loads(raw)
            held["finding"] = _aged(held["finding"])
            dismissed[claim(FINDING.validate_python(held["finding"]))] = json.dumps(held)
        session["dismissed"] = dismissed
    state.write_text(json.dumps(data))


def test_a_session_of_the_previous_version_keeps_its_ids_and_asks_again(tmp_path: Path) -> None:
    """A session the previous version kept (claims, no code): its finding is seen again
    (not posted twice) under its id; its dismissal, of code this change added, cannot be
    shown to cover it: the finding gates with a note until the person dismisses it again,
    which then holds."""
    council = Replay(tmp_path, {"app.py": "import sys\n"})
    council.push({"app.py": "import sys\nvalue = eval(sys.argv[1])\n"}, hit(2))
    done, one = council.review()
    assert done.exit_code == 1, done.output
    (first,) = one.findings
    assert council.cli("dismiss", str(first.id), "--reason", "argv is ours").exit_code == 0
    age(council.state)
    council.push({"README": "more\n"}, hit(2))
    done, two = council.review()
    assert done.exit_code == 1, done.output
    (again,) = two.findings
    assert again.id == first.id and again.id in two.seen
    assert any(
        n.startswith(f"#{again.id} makes the claim of a dismissal written before")
        for n in two.notes
    )
    assert council.cli("dismiss", str(again.id), "--reason", "argv is ours").exit_code == 0
    council.push({"README": "again\n"}, hit(2))
    done, three = council.review()
    assert done.exit_code == 0, done.output
    assert three.suppressed[first.id].source == "dismissed"


def test_dismissing_by_an_earlier_councils_fingerprint_names_one_occurrence(
    tmp_path: Path,
) -> None:
    """`council dismiss` given the fingerprint an earlier council printed (the claim's):
    refused while it names two findings of the session (pass the id), and keyed by the
    finding's own fingerprint once it names one."""
    council = Replay(tmp_path, {"app.py": "import sys\n"})
    body = "import sys\nvalue = eval(sys.argv[1])\nother = eval(sys.argv[2])\n"
    council.push({"app.py": body}, hit(2), hit(3))
    done, one = council.review()
    assert done.exit_code == 1, done.output
    old = claim(one.findings[0])
    refused = council.cli("dismiss", old, "--reason", "ours")
    assert refused.exit_code == 2 and "pass the id" in refused.output
    other = Replay(tmp_path / "single", {"app.py": "import sys\n"})
    other.push({"app.py": "import sys\nvalue = eval(sys.argv[1])\n"}, hit(2))
    _, single = other.review()
    (only,) = single.findings
    said = other.cli("dismiss", claim(only), "--reason", "ours")
    assert said.exit_code == 0 and f"finding {only.id}" in said.output
    other.push({"README": "more\n"}, hit(2))
    done, again = other.review()
    assert done.exit_code == 0, done.output
    assert again.suppressed[only.id].source == "dismissed"
