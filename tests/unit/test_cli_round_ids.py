"""Finding ids across the rounds of one session, end to end: `council review` (embedded
mode, two replay reviewers, a real git repository, one state file) over three rounds
in which the reviewers reword what they found. A reworded finding keeps its id and is
seen, a dismissed one stays dismissed, and the JSON and Markdown reports say which
matches were made by agreement; a reworded baselined finding stays baselined."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from council.model.fingerprint import fingerprint
from council.model.report import CouncilReport
from council.rendering import read_json
from council.session.baseline import BASELINE_FILE, read_baseline
from tests.gitrepo import commit, git, new_repo
from workers.cli import main

ROUND = "[council]\nbackstop_ms = 60000\nidle_ms = 60000\n"

APP = "".join(f"line{n} = {n}\n" for n in range(1, 9)) + "ratio = total / page_size\n"
"""app.py at the head: the division is line 9."""

AUTH = "def check(token, secret):\n    return token == secret\n"


def told(subject: str, discussion: str, path: str, line: int) -> dict[str, Any]:
    """One finding as a reviewer writes it."""
    return {
        "subject": subject,
        "discussion": discussion,
        "label": "issue",
        "severity": "critical",
        "location": {"kind": "line", "path": path, "line": line},
    }


DIV0 = [
    told(
        "`parse_limit` divides by zero when `page_size` is 0",
        "The division in parse_limit has no guard; page_size=0 raises ZeroDivisionError.",
        "app.py",
        9,
    ),
    told(
        "ZeroDivisionError in parse_limit for an empty page_size",
        "A request with page_size 0 crashes parse_limit (ZeroDivisionError).",
        "app.py",
        9,
    ),
    told(
        "parse_limit crashes on page_size == 0",
        "Nothing stops page_size from being 0 before parse_limit divides by it: a "
        "ZeroDivisionError on every such request.",
        "app.py",
        9,
    ),
]
"""The division bug, told three ways."""

TIMING = [
    told(
        "Token compared with == leaks timing",
        "check compares the secret token with ==; use hmac.compare_digest.",
        "auth.py",
        2,
    ),
    told(
        "Secret comparison is not constant-time",
        "`token == secret` in check returns early on the first differing byte; "
        "hmac.compare_digest compares the token in constant time.",
        "auth.py",
        2,
    ),
    told(
        "check() leaks the secret through timing",
        "The == between token and secret in check is timing-dependent; use hmac.compare_digest.",
        "auth.py",
        2,
    ),
]
"""The timing bug, told three ways."""

UNRELATED = told(
    "Magic number 8 for the line count",
    "line8 hard-codes the count; name the constant.",
    "app.py",
    8,
)
"""A bug no earlier round raised."""


class TwoReviewers:
    """A repository whose base roster runs hawk and owl, replay reviewers each reading
    its answer file outside the repository; the rounds of session s share one state
    file."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.answers = {who: tmp_path / f"{who}.json" for who in ("hawk", "owl")}
        roster = ROUND
        for who, path in self.answers.items():
            path.write_text('{"findings": []}')
            roster += (
                f'[[reviewers]]\nid = "{who}"\nbackend = "replay"\n'
                f"answer = {json.dumps(str(path))}\n"
            )
        self.repo = new_repo(tmp_path / "repo", {"council.toml": roster, "README": "x\n"})
        self.base = git(self.repo, "rev-parse", "HEAD")
        self.state = tmp_path / "state.json"
        self.rounds = 0

    def push(self, hawk: list[dict[str, Any]], owl: list[dict[str, Any]]) -> None:
        """Commit a change to app.py and auth.py; the reviewers then answer ``hawk`` and
        ``owl``."""
        self.rounds += 1
        files = {"app.py": APP + f"# push {self.rounds}\n", "auth.py": AUTH}
        commit(self.repo, files, f"push {self.rounds}")
        for who, found in (("hawk", hawk), ("owl", owl)):
            self.answers[who].write_text(json.dumps({"findings": found}))

    def review(self, *args: str) -> tuple[Result, CouncilReport, str]:
        """One round of session s over base..HEAD (``args`` added to the command line):
        its exit, JSON report and Markdown."""
        out = self.tmp / f"round{self.rounds}"
        argv = ["review", "--repo", str(self.repo), "--base", self.base, "--no-progress"]
        argv += ["--state", str(self.state), "--session", "s"]
        argv += ["--format", "json", "--format", "markdown", "--output", str(out)]
        done = CliRunner().invoke(main, [*argv, *args])
        assert (out / "council.json").exists(), done.output
        report = read_json((out / "council.json").read_text())
        return done, report, (out / "council.md").read_text()

    def cli(self, *args: str) -> Result:
        """Another council command on the same state file and session."""
        return CliRunner().invoke(main, [*args, "--state", str(self.state), "--session", "s"])


@pytest.fixture
def council(tmp_path: Path) -> TwoReviewers:
    """A fresh session's repository with two replay reviewers."""
    return TwoReviewers(tmp_path)


def ids(report: CouncilReport) -> dict[str, int | None]:
    """Subject → id of the round's findings."""
    return {f.subject: f.id for f in report.findings}


def test_reworded_findings_keep_their_ids_over_three_rounds(council: TwoReviewers) -> None:
    """Round 1 files the division bug as 1 and the timing bug as 2; 2 is dismissed.
    Round 2 (both reworded by the same reviewers) and round 3 (reworded by the OTHER
    reviewer, beside a new bug) keep ids 1 and 2, mark them seen, keep 2 dismissed,
    and say in JSON and Markdown that the matches were made by agreement; the new bug
    takes id 3, the only id the counter gave after round 1."""
    council.push(hawk=[DIV0[0]], owl=[TIMING[0]])
    done, first, _ = council.review()
    assert done.exit_code == 1, done.output
    assert ids(first) == {DIV0[0]["subject"]: 1, TIMING[0]["subject"]: 2}
    assert first.seen == () and first.seen_by_agreement == {}
    dismissed = council.cli("dismiss", "2", "--reason", "tokens are hashed first")
    assert dismissed.exit_code == 0, dismissed.output

    council.push(hawk=[DIV0[1]], owl=[TIMING[1]])
    done, second, markdown = council.review()
    assert done.exit_code == 1, done.output  # 1 still gates: the code still has it
    assert ids(second) == {DIV0[1]["subject"]: 1, TIMING[1]["subject"]: 2}
    assert second.seen == (1, 2) and second.seen_by_agreement == {1: 1, 2: 2}
    held = second.suppressed[2]
    assert (held.source, held.reason) == ("dismissed", "tokens are hashed first")
    assert held.by_agreement is not None and held.by_agreement.id == 2
    assert held.by_agreement.fingerprint == first.fingerprints[2]
    assert second.fingerprints[2] != first.fingerprints[2]
    assert "stays dismissed: matches #2 by agreement (reworded), not by fingerprint" in markdown
    assert "#1 of an earlier round, reworded: recognised by agreement, not by fingerprint" in (
        markdown
    )

    council.push(hawk=[UNRELATED], owl=[DIV0[2], TIMING[2]])
    done, third, markdown = council.review()
    assert done.exit_code == 1, done.output
    assert ids(third) == {DIV0[2]["subject"]: 1, TIMING[2]["subject"]: 2, UNRELATED["subject"]: 3}
    assert third.seen == (1, 2) and third.seen_by_agreement == {1: 1, 2: 2}
    assert third.suppressed[2].by_agreement is not None
    assert 3 not in third.suppressed and 1 not in third.suppressed
    assert {i: fingerprint(f) for f in third.findings if (i := f.id)} == third.fingerprints
    assert "stays dismissed: matches #2 by agreement (reworded), not by fingerprint" in markdown
    state = json.loads(council.state.read_text())["sessions"]["s"]
    assert state["issued"] == 3
    assert [f["id"] for f in json.loads(state["recall"])] == [3, 1, 2]


def test_a_reworded_baselined_finding_stays_baselined(council: TwoReviewers) -> None:
    """`council baseline` keeps the finding's text; committed to the base, the next
    round's rewording of it is baselined by agreement, and the Markdown says so."""
    council.push(hawk=[TIMING[0]], owl=[])
    council.review()
    target = council.tmp / BASELINE_FILE
    done = council.cli("baseline", "--output", str(target), "--reason", "legacy")
    assert done.exit_code == 0, done.output
    (entry,) = read_baseline(target.read_text()).entries
    assert entry.discussion == TIMING[0]["discussion"]
    council.base = commit(council.repo, {BASELINE_FILE: target.read_text()}, "baseline")
    council.push(hawk=[], owl=[TIMING[1]])
    done, report, markdown = council.review()
    assert done.exit_code == 0, done.output
    (held,) = report.suppressed.values()
    assert (held.source, held.reason) == ("baseline", "legacy")
    assert held.by_agreement is not None and held.by_agreement.fingerprint == entry.fingerprint
    assert "stays baselined: matches the baseline entry" in markdown
    assert "by agreement (reworded), not by fingerprint" in markdown


def test_dismissing_an_older_tellings_fingerprint_names_the_finding(
    council: TwoReviewers,
) -> None:
    """After a rewording replaced finding 1's telling, `council dismiss` with the first
    round's fingerprint (from its SARIF, say) still names finding 1, and the next
    rewording stays dismissed by agreement."""
    council.push(hawk=[DIV0[0]], owl=[])
    _, first, _ = council.review()
    council.push(hawk=[DIV0[1]], owl=[])
    _, second, _ = council.review()
    assert ids(second) == {DIV0[1]["subject"]: 1}
    done = council.cli("dismiss", first.fingerprints[1], "--reason", "page_size is validated")
    assert done.exit_code == 0, done.output
    assert "dismissed finding 1" in done.output and "warning" not in done.output
    council.push(hawk=[], owl=[DIV0[2]])
    done, third, markdown = council.review()
    assert done.exit_code == 0, done.output
    held = third.suppressed[1]
    assert held.by_agreement is not None and held.by_agreement.id == 1
    assert "stays dismissed: matches #1 by agreement (reworded), not by fingerprint" in markdown


def test_a_finding_dismissed_by_agreement_is_not_carried_back_into_the_gate(
    council: TwoReviewers,
) -> None:
    """--since-last after a round whose rewording stayed dismissed by agreement: the new
    commits leave its code alone, so it is carried, and it stays dismissed (exit 0);
    again with nothing new to review (no round runs, the open findings are carried)."""
    council.push(hawk=[], owl=[TIMING[0]])
    council.review()
    assert council.cli("dismiss", "1", "--reason", "tokens are hashed").exit_code == 0
    council.push(hawk=[], owl=[TIMING[1]])
    done, second, _ = council.review()
    assert done.exit_code == 0, done.output
    assert second.suppressed[1].by_agreement is not None
    council.push(hawk=[], owl=[])
    done, third, markdown = council.review("--since-last")
    assert done.exit_code == 0, done.output
    assert [f.id for f in third.carried] == [1]
    assert third.suppressed[1].source == "dismissed"
    assert "stays dismissed: matches #1 by agreement (reworded), not by fingerprint" in markdown
    done, fourth, markdown = council.review("--since-last")  # nothing new: no round runs
    assert done.exit_code == 0, done.output
    assert "no change after" in done.output
    assert [f.id for f in fourth.carried] == [1] and fourth.suppressed[1].source == "dismissed"
    assert fourth.fingerprints == {1: fingerprint(fourth.carried[0])}
    assert "stays dismissed: matches #1 by agreement (reworded), not by fingerprint" in markdown


def test_the_baseline_keeps_the_reason_of_a_dismissal_matched_by_agreement(
    council: TwoReviewers,
) -> None:
    """`council baseline` after a round whose rewording stayed dismissed by agreement:
    its entry keeps the person's reason, not the generic --reason."""
    council.push(hawk=[], owl=[TIMING[0]])
    council.review()
    assert council.cli("dismiss", "1", "--reason", "tokens are hashed").exit_code == 0
    council.push(hawk=[], owl=[TIMING[1]])
    council.review()
    target = council.tmp / BASELINE_FILE
    done = council.cli("baseline", "--output", str(target), "--reason", "legacy")
    assert done.exit_code == 0, done.output
    (entry,) = read_baseline(target.read_text()).entries
    assert (entry.subject, entry.reason) == (TIMING[1]["subject"], "tokens are hashed")


B602 = "B602: subprocess call with shell=True identified, security issue."


def test_a_second_occurrence_of_a_dismissed_claim_is_new_and_gates(
    council: TwoReviewers,
) -> None:
    """An analyzer files every ``shell=True`` of a file under one subject (one
    fingerprint). Round 1: one occurrence, #1, dismissed. Round 2 adds a second one:
    #1 keeps its id, is seen and stays dismissed; the other is new (#2), NOT seen (so
    it is posted), and gates, with a note saying why the dismissal does not cover it."""
    first_hit = told(B602, "shell=True", "app.py", 9)
    council.push(hawk=[first_hit], owl=[])
    done, first, _ = council.review()
    assert done.exit_code == 1, done.output
    assert ids(first) == {B602: 1}
    assert council.cli("dismiss", "1", "--reason", "trusted input").exit_code == 0

    council.push(hawk=[first_hit, told(B602, "shell=True", "app.py", 3)], owl=[])
    done, second, markdown = council.review()
    assert done.exit_code == 1, done.output
    by_line = {f.anchor.line: f.id for f in second.findings if hasattr(f.anchor, "line")}
    assert by_line == {9: 1, 3: 2}
    assert second.seen == (1,)
    assert 1 in second.suppressed and 2 not in second.suppressed
    assert any(
        n.startswith("#2 makes the same claim as #1, dismissed") for n in second.notes
    )
    # the note is shown as text: "#2" (a finding, no issue of the forge's) is no reference
    assert "\\#\u200d2 makes the same claim" in markdown


def hawk_rounds(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """A repository whose base roster runs one replay reviewer, hawk, answering what
    ``answer`` (outside the repository) holds: (repository, answer, the arguments of a
    review of session s from that base, the state file in ``tmp_path``)."""
    answer = tmp_path / "hawk.json"
    roster = (
        ROUND
        + f'[[reviewers]]\nid = "hawk"\nbackend = "replay"\nanswer = {json.dumps(str(answer))}\n'
    )
    repo = new_repo(tmp_path / "repo", {"council.toml": roster, "README": "x\n"})
    base = git(repo, "rev-parse", "HEAD")
    argv = ["review", "--repo", str(repo), "--base", base, "--no-progress", "--session", "s"]
    return repo, answer, [*argv, "--state", str(tmp_path / "state.json")]


def test_a_pure_rename_under_since_last_does_not_turn_the_gate_green(tmp_path: Path) -> None:
    """Round 1 files a critical on src/b.py (exit 1). Round 2 only renames the file
    (`git mv src/b.py src/c.py`) and is reviewed with --since-last: the finding is not
    outdated (no line of it was edited) but carried at src/c.py, and still gates."""
    repo, answer, argv = hawk_rounds(tmp_path)
    commit(repo, {"src/b.py": "import subprocess\nsubprocess.call(x, shell=True)\n"}, "add b")
    answer.write_text(json.dumps({"findings": [told(B602, "shell=True", "src/b.py", 2)]}))
    first = CliRunner().invoke(main, [*argv, "--json", str(tmp_path / "one.json")])
    assert first.exit_code == 1, first.output
    git(repo, "mv", "src/b.py", "src/c.py")
    git(repo, "commit", "-qm", "rename")
    answer.write_text('{"findings": []}')
    second = CliRunner().invoke(main, [*argv, "--since-last", "--json", str(tmp_path / "two.json")])
    assert second.exit_code == 1, second.output
    report = read_json((tmp_path / "two.json").read_text())
    assert report.outdated == ()
    assert [(f.id, f.anchor.path) for f in report.carried] == [(1, "src/c.py")]


def test_an_analyzers_new_rule_never_takes_a_fixed_rules_id(tmp_path: Path) -> None:
    """Real bandit, --since-last. Round 1: shell=True on a.py (B602, critical, exit 1).
    Round 2 adds pickle code below it: B301/B403 are new findings with new ids, not
    seen (an analyzer's findings are recognized by fingerprint only), and B602 keeps its
    id and still gates. Before, the new rules took the ids of B602 and B404 by agreement
    (the same file's words), were marked seen, and B602 could vanish: exit 0."""
    from tests.sandboxing import bwrap_or_skip

    bwrap_or_skip()
    roster = ROUND + (
        '[[reviewers]]\nid = "bandit"\nbackend = "sarif"\nprogram = "bandit"\n'
        'args = ["-r", ".", "-f", "sarif", "--exit-zero", "-q"]\n'
    )
    repo = new_repo(tmp_path / "repo", {"council.toml": roster, "README": "x\n"})
    base = git(repo, "rev-parse", "HEAD")
    code = "import subprocess\n\n\ndef run(cmd):\n    return subprocess.call(cmd, shell=True)\n"
    commit(repo, {"a.py": code}, "shell")
    argv = ["review", "--repo", str(repo), "--base", base, "--no-progress", "--session", "s"]
    argv += ["--state", str(tmp_path / "state.json")]
    first = CliRunner().invoke(main, [*argv, "--json", str(tmp_path / "one.json")])
    assert first.exit_code == 1, first.output
    one = read_json((tmp_path / "one.json").read_text())
    (b602,) = [f for f in one.findings if f.subject.startswith("B602")]
    more = code + "\n\ndef load(p):\n    import pickle\n    return pickle.loads(p)\n"
    commit(repo, {"a.py": more}, "pickle")
    second = CliRunner().invoke(main, [*argv, "--since-last", "--json", str(tmp_path / "two.json")])
    two = read_json((tmp_path / "two.json").read_text())
    assert second.exit_code == 1, second.output
    by_subject = {f.subject[:4]: f.id for f in two.findings}
    assert by_subject["B602"] == b602.id and b602.id in two.seen
    fresh = [by_subject["B301"], by_subject["B403"]]
    assert all(i is not None and i > 2 and i not in two.seen for i in fresh)
    assert two.seen_by_agreement == {}
