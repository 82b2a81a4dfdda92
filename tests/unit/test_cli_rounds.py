"""Rounds of one session through the CLI (embedded mode): seen, outdated, --since-last
(earlier findings still open are carried and gate), dismissals and the baseline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fakeredis
import pytest
from click.testing import CliRunner, Result

from council.model.findings import LineAnchor
from council.model.report import CouncilReport
from council.rendering import read_json
from council.session.baseline import BASELINE_FILE, read_baseline
from tests.gitrepo import commit, git, new_repo
from workers.cli import main
from workers.stores.keys import Keys
from workers.stores.sessions import SessionStore
from workers.stores.state_file import load_state

ROUND = "[council]\nbackstop_ms = 60000\nidle_ms = 60000\n"


def div0(line: int = 2, severity: str = "critical") -> dict[str, Any]:
    """The finding the replay reviewer raises: a division by zero on app.py."""
    return {
        "subject": "divides by zero",
        "label": "issue",
        "severity": severity,
        "location": {"kind": "line", "path": "app.py", "line": line},
    }


class Session:
    """A repository whose council.toml (base tree) runs one replay reviewer reading
    answer.json outside the repository, by its absolute path (a relative one is read from
    the base tree, never from the change); rounds share one state file."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.answer = tmp_path / "answer.json"
        self.answer.write_text('{"findings": []}')
        roster = (
            f'{ROUND}[[reviewers]]\nid = "rep"\nbackend = "replay"\n'
            f"answer = {json.dumps(str(self.answer))}\n"
        )
        self.repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n", "council.toml": roster})
        self.base = git(self.repo, "rev-parse", "HEAD")
        self.state = tmp_path / "state.json"
        self.rounds = 0

    def push(self, files: dict[str, str | None], *findings: dict[str, Any]) -> str:
        """Commit ``files``; the replayed answer then holds ``findings``."""
        self.answer.write_text(json.dumps({"findings": list(findings)}))
        return commit(self.repo, files, f"push {self.rounds}")

    def review(self, *args: str) -> tuple[Result, CouncilReport | None]:
        """One round of session s over base..HEAD; its exit and JSON report."""
        self.rounds += 1
        out = self.tmp / f"round{self.rounds}.json"
        argv = ["review", "--repo", str(self.repo), "--base", self.base, "--no-progress"]
        argv += ["--state", str(self.state), "--session", "s", "--json", str(out)]
        done = CliRunner().invoke(main, [*argv, *args])
        report = read_json(out.read_text()) if out.exists() else None
        return done, report

    def cli(self, *args: str) -> Result:
        """Another council command on the same state file and session."""
        argv = [*args, "--state", str(self.state), "--session", "s"]
        return CliRunner().invoke(main, argv)


@pytest.fixture
def session(tmp_path: Path) -> Session:
    """A fresh session's repository."""
    return Session(tmp_path)


def test_repeat_is_seen_and_not_commented(session: Session) -> None:
    """The second round raises the same finding: seen, still gating, not a line comment."""
    session.push({"app.py": "x = 1\ny = 1 / 0\n"}, div0())
    first, one = session.review()
    assert first.exit_code == 1 and one is not None and one.seen == ()
    session.push({"app.py": "x = 1\ny = 1 / 0\nz = 3\n"}, div0())
    out = session.tmp / "out"
    second, two = session.review("--format", "github-review", "--output", str(out))
    assert second.exit_code == 1, second.output
    assert two is not None and two.seen == (two.findings[0].id,)
    assert json.loads((out / "github-review.json").read_text())["comments"] == []


def test_one_claim_at_two_places_is_seen_at_both(session: Session) -> None:
    """The same claim twice in one file (one fingerprint): both keep their ids and are
    seen in every later round, never posted again; a third place of it is new."""
    body = "x = 1\n" + "".join(f"v{k} = {k}\n" for k in range(70))
    twice = (div0(1), div0(60))
    session.push({"app.py": body}, *twice)
    _, one = session.review()
    assert one is not None and one.seen == () and len(one.findings) == 2
    ids = tuple(f.id for f in one.findings)
    for again in range(2):
        out = session.tmp / f"out{again}"
        session.push({"app.py": body + f"w{again} = 0\n"}, *twice)
        done, report = session.review("--format", "github-review", "--output", str(out))
        assert report is not None, done.output
        assert tuple(f.id for f in report.findings) == ids
        assert report.seen == ids
        assert json.loads((out / "github-review.json").read_text())["comments"] == []
    session.push({"app.py": body + "w = 0\n"}, *twice, div0(30))
    _, third = session.review()
    assert third is not None and len(third.findings) == 3
    assert set(third.seen) == set(ids)


def test_edited_line_lists_the_earlier_finding_as_outdated(session: Session) -> None:
    """The next push rewrites the flagged line: the earlier finding is listed outdated."""
    session.push({"app.py": "x = 1\ny = 1 / 0\n"}, div0())
    session.review()
    session.push({"app.py": "x = 1\ny = 1 / 2\n"})
    done, report = session.review()
    assert done.exit_code == 0, done.output
    assert report is not None and [f.subject for f in report.outdated] == ["divides by zero"]
    assert "### Outdated" in done.stdout


def test_untouched_earlier_finding_is_not_outdated(session: Session) -> None:
    """A push that edits another file leaves the earlier finding alone."""
    session.push({"app.py": "x = 1\ny = 1 / 0\n"}, div0())
    session.review()
    session.push({"other.py": "z = 1\n"})
    _, report = session.review()
    assert report is not None and report.outdated == ()


def test_since_last_reviews_only_new_commits(session: Session) -> None:
    """--since-last: the diff starts at the last reviewed head, the note says so, and the
    earlier finding the new commits left alone is carried and still gates."""
    first_head = session.push({"app.py": "x = 1\ny = 1 / 0\n"}, div0())
    session.review()
    session.push({"other.py": "z = 1\n"})
    done, report = session.review("--since-last")
    assert done.exit_code == 1, done.output
    assert report is not None and report.base == first_head and report.findings == ()
    assert any("only the commits after" in n for n in report.notes)
    assert [f.subject for f in report.carried] == ["divides by zero"]


PYPROJECT = (
    '[project]\nname = "app"\n\n[tool.ruff]\nline-length = 100\n\n[tool.mypy]\nstrict = true\n'
)


def _config_notes(report: CouncilReport | None) -> list[str]:
    assert report is not None
    return [n for n in report.notes if n.startswith("the change edits analyzer configuration")]


def test_the_config_note_names_the_tables_changed_and_not_again_on_later_rounds(
    session: Session,
) -> None:
    """A change to ``[tool.ruff]`` alone is named as such (not every [tool.*] table);
    a --since-last round whose commits touch no analyzer configuration says nothing of
    it; one that edits ``[tool.mypy]`` names that table only."""
    session.base = session.push({"pyproject.toml": PYPROJECT})  # the base has it
    session.push({"pyproject.toml": PYPROJECT.replace("100", "120")})
    _, first = session.review()
    (note,) = _config_notes(first)
    assert '"pyproject.toml" (edited: [tool.ruff])' in note
    assert "mypy" not in note
    session.push({"app.py": "x = 2\n"})
    _, second = session.review("--since-last")
    assert _config_notes(second) == []
    session.push({"pyproject.toml": PYPROJECT.replace("100", "120").replace("true", "false")})
    _, third = session.review("--since-last")
    (note,) = _config_notes(third)
    assert '"pyproject.toml" (edited: [tool.mypy])' in note and "ruff" not in note


def test_since_last_without_earlier_round_reviews_everything(session: Session) -> None:
    """--since-last in a new session: the whole change, noted."""
    session.push({"app.py": "x = 2\n"})
    done, report = session.review("--since-last")
    assert done.exit_code == 0, done.output
    assert report is not None and report.base == session.base
    assert any("no earlier round" in n for n in report.notes)


def test_since_last_after_a_force_push_falls_back(session: Session) -> None:
    """The last reviewed head was rewritten away: the whole change, with the reason."""
    session.push({"app.py": "x = 2\n"})
    session.review()
    git(session.repo, "reset", "-q", "--hard", session.base)
    session.push({"app.py": "x = 3\n"})
    done, report = session.review("--since-last")
    assert done.exit_code == 0, done.output
    assert report is not None and report.base == session.base
    assert any("no longer an ancestor" in n for n in report.notes)


def test_since_last_with_nothing_new(session: Session) -> None:
    """--since-last on the head already reviewed: exit 0, nothing to review."""
    session.push({"app.py": "x = 2\n"})
    session.review()
    done, _ = session.review("--since-last")
    assert done.exit_code == 0
    assert "no change after" in done.output


def test_since_last_rerun_on_the_same_head_still_fails(session: Session) -> None:
    """The same --since-last command twice: the second asks no reviewer, carries the open
    finding, writes every output, and exits 1 like the first."""
    session.push({"app.py": "x = 1\ny = 1 / 0\n"}, div0(severity="minor"))
    first, _ = session.review("--since-last", "--fail-on", "minor")
    assert first.exit_code == 1, first.output
    out = session.tmp / "out"
    formats = [f"--format={f}" for f in ("markdown", "sarif", "gitlab-codequality")]
    again, report = session.review(
        "--since-last",
        "--fail-on",
        "minor",
        *formats,
        "--format=github-review",
        "--output",
        str(out),
    )
    assert again.exit_code == 1, again.output
    assert "no change after" in again.output and "gate: 1 finding(s)" in again.output
    assert report is not None and report.participants == () and report.findings == ()
    assert [(f.subject, f.severity) for f in report.carried] == [("divides by zero", "minor")]
    markdown = (out / "council.md").read_text()
    assert "gate tripped" in markdown and "### Still open from earlier rounds" in markdown
    (run,) = json.loads((out / "council.sarif").read_text())["runs"]
    assert [r["properties"]["carried"] for r in run["results"]] == [True]
    assert len(json.loads((out / "gl-code-quality-report.json").read_text())) == 1
    review = json.loads((out / "github-review.json").read_text())
    assert review["comments"] == [] and review["event"] == "REQUEST_CHANGES"


def test_since_last_after_an_unrelated_commit_still_gates(session: Session) -> None:
    """A new commit touching only README: --since-last carries the open finding, lists it
    instead of saying "No findings", and exits 1."""
    session.push({"app.py": "x = 1\ny = 1 / 0\n"}, div0(severity="minor"))
    session.review("--since-last", "--fail-on", "minor")
    session.push({"README": "hello\n"})
    done, report = session.review("--since-last", "--fail-on", "minor")
    assert done.exit_code == 1, done.output
    assert report is not None and [f.id for f in report.carried] == [1]
    assert "No findings." not in done.stdout and "Still open from earlier rounds" in done.stdout


def test_carried_findings_follow_the_code_and_keep_being_carried(session: Session) -> None:
    """Round 3 still carries what round 2 carried; lines inserted above move its anchor."""
    session.push({"app.py": "x = 1\ny = 1 / 0\n"}, div0())
    session.review()
    session.push({"other.py": "z = 1\n"})
    second, two = session.review("--since-last")
    assert second.exit_code == 1 and two is not None and len(two.carried) == 1
    session.push({"app.py": "import os\nimport sys\nx = 1\ny = 1 / 0\n"})
    third, three = session.review("--since-last")
    assert third.exit_code == 1, third.output
    assert three is not None and three.outdated == ()
    (carried,) = three.carried
    assert isinstance(carried.anchor, LineAnchor) and carried.anchor.line == 4


def test_since_last_edit_of_the_flagged_line_clears_it(session: Session) -> None:
    """The new commit rewrites the flagged line: outdated, not carried, the gate passes."""
    session.push({"app.py": "x = 1\ny = 1 / 0\n"}, div0())
    session.review()
    session.push({"app.py": "x = 1\ny = 1 / 2\n"})
    done, report = session.review("--since-last")
    assert done.exit_code == 0, done.output
    assert report is not None and report.carried == ()
    assert [f.subject for f in report.outdated] == ["divides by zero"]


def test_edit_next_to_the_flagged_line_does_not_outdate_it(session: Session) -> None:
    """The new commit edits the line below the flagged one (context in its diff): the
    earlier finding is neither outdated nor dropped; it is carried."""
    session.push({"app.py": "x = 1\ny = 1 / 0\nz = 3\n"}, div0())
    session.review()
    session.push({"app.py": "x = 1\ny = 1 / 0\nz = 4\n"})
    done, report = session.review("--since-last")
    assert done.exit_code == 1, done.output
    assert report is not None and report.outdated == ()
    assert [f.subject for f in report.carried] == ["divides by zero"]


def test_dismissed_finding_is_carried_suppressed(session: Session) -> None:
    """A finding dismissed after its round: --since-last on the same head carries it,
    suppressed (listed with the reason, not gating); raised graver than dismissed, it
    would gate (the suppression decides, not the carrying)."""
    session.push({"app.py": "x = 1\ny = 1 / 0\n"}, div0())
    _, first = session.review()
    assert first is not None
    ident = first.findings[0].id
    dismissed = session.cli("dismiss", str(ident), "--reason", "guarded")
    assert dismissed.exit_code == 0, dismissed.output
    done, report = session.review("--since-last")
    assert done.exit_code == 0, done.output
    assert report is not None and [f.id for f in report.carried] == [ident]
    assert ident is not None and report.suppressed[ident].source == "dismissed"
    assert "guarded" in done.stdout


def test_dismissed_finding_is_listed_and_never_gates(session: Session) -> None:
    """Dismiss by id: the next round lists it with the reason, exits 0, posts nothing."""
    session.push({"app.py": "x = 1\ny = 1 / 0\n"}, div0())
    _, first = session.review()
    assert first is not None
    dismissed = session.cli("dismiss", str(first.findings[0].id), "--reason", "guarded upstream")
    assert dismissed.exit_code == 0, dismissed.output
    out = session.tmp / "out"
    formats = ["--format", "gitlab-codequality", "--format", "github-review"]
    done, report = session.review(*formats, "--format", "markdown", "--output", str(out))
    assert done.exit_code == 0, done.output
    assert report is not None
    (entry,) = report.suppressed.values()
    assert (entry.source, entry.reason) == ("dismissed", "guarded upstream")
    markdown = (out / "council.md").read_text()
    assert "Dismissed and baselined" in markdown and "guarded upstream" in markdown
    assert json.loads((out / "gl-code-quality-report.json").read_text()) == []
    assert json.loads((out / "github-review.json").read_text())["comments"] == []


def test_dismiss_refuses_what_it_cannot_name(session: Session) -> None:
    """An unknown id, or text that is no fingerprint: exit 2; an id in a session that
    holds no finding at all says so (a mistyped --session), not "no finding 41"."""
    unknown = session.cli("dismiss", "41", "--reason", "x")
    assert unknown.exit_code == 2 and "has no findings at all" in unknown.output
    session.push({"app.py": "x = 1\ny = 1 / 0\n"}, div0())
    session.review()
    known = session.cli("dismiss", "41", "--reason", "x")
    assert known.exit_code == 2 and "has no finding 41" in known.output
    assert session.cli("dismiss", "not-a-print", "--reason", "x").exit_code == 2
    assert session.cli("dismiss", "41", "--reason", "  ").exit_code == 2


def test_dismiss_before_any_round_is_kept(session: Session) -> None:
    """A fingerprint dismissed before the session's first round survives in the state file."""
    value = "ab" * 32
    done = session.cli("dismiss", value, "--reason", "known")
    assert done.exit_code == 0 and "warning" in done.output
    saved = json.loads(session.state.read_text())["sessions"]["s"]
    assert json.loads(saved["dismissed"][value])["reason"] == "known"


def test_baseline_from_the_session_then_read_from_base(session: Session) -> None:
    """`council baseline` writes the latest run's findings; committed to the base, the
    next review lists them as baselined and exits 0."""
    session.push({"app.py": "x = 1\ny = 1 / 0\n"}, div0())
    session.review()
    target = session.tmp / BASELINE_FILE
    done = session.cli("baseline", "--output", str(target), "--reason", "legacy")
    assert done.exit_code == 0, done.output
    (entry,) = read_baseline(target.read_text()).entries
    assert (entry.subject, entry.reason, entry.path) == ("divides by zero", "legacy", "app.py")
    session.base = commit(session.repo, {BASELINE_FILE: target.read_text()}, "baseline")
    session.push({"app.py": "x = 1\ny = 1 / 0\nw = 0\n"}, div0())
    result, report = session.review()
    assert result.exit_code == 0, result.output
    assert report is not None
    assert [s.source for s in report.suppressed.values()] == ["baseline"]


def test_a_baseline_committed_to_the_base_branch_after_the_branch_left_holds(
    session: Session,
) -> None:
    """The pull request branched off before the team committed the baseline to the base
    branch: the review (from the merge base) reads the baseline at the base branch's
    tip, so the accepted finding is baselined, and no note says the change edited it."""
    trunk = git(session.repo, "rev-parse", "--abbrev-ref", "HEAD")
    git(session.repo, "checkout", "-q", "-b", "feature")
    session.push({"app.py": "x = 1\ny = 1 / 0\n"}, div0())
    session.review()
    target = session.tmp / BASELINE_FILE
    assert session.cli("baseline", "--output", str(target)).exit_code == 0
    git(session.repo, "checkout", "-q", trunk)
    commit(session.repo, {BASELINE_FILE: target.read_text()}, "accept the legacy finding")
    git(session.repo, "checkout", "-q", "feature")
    session.push({"app.py": "x = 1\ny = 1 / 0\nw = 0\n"}, div0())
    session.base = trunk
    result, report = session.review()
    assert result.exit_code == 0, result.output
    assert report is not None
    assert [s.source for s in report.suppressed.values()] == ["baseline"]
    assert not any("edits" in n and BASELINE_FILE in n for n in report.notes)


def test_baseline_edited_by_the_change_is_not_trusted(session: Session) -> None:
    """A change adding its own baseline: ignored (base version), noted, the gate trips."""
    finding = div0()
    session.push({"app.py": "x = 1\ny = 1 / 0\n"}, finding)
    _, first = session.review()
    assert first is not None
    (session.tmp / "b.json").write_text(json.dumps(first.model_dump(mode="json")))
    target = session.tmp / BASELINE_FILE
    made = session.cli(
        "baseline", "--from-json", str(session.tmp / "b.json"), "--output", str(target)
    )
    assert made.exit_code == 0, made.output
    session.push({BASELINE_FILE: target.read_text()}, finding)
    done, report = session.review()
    assert done.exit_code == 1, done.output
    assert report is not None and report.suppressed == {}
    assert any(BASELINE_FILE in n and "base version" in n for n in report.notes)


def test_explicit_baseline_and_an_unreadable_one(session: Session) -> None:
    """--baseline PATH is used; a broken file is exit 2 before anything runs."""
    session.push({"app.py": "x = 1\ny = 1 / 0\n"}, div0())
    broken = session.tmp / "broken.json"
    broken.write_text("{nope")
    done, report = session.review("--baseline", str(broken))
    assert done.exit_code == 2 and "not JSON" in done.output and report is None
    assert not session.state.exists()


def test_state_file_without_the_new_keys_still_loads(tmp_path: Path) -> None:
    """A state file written before fingerprints, reviewed and dismissed existed loads."""
    path = tmp_path / "state.json"
    session = {"issued": 2, "ledger": "", "findings": {}, "attributed": []}
    path.write_text(json.dumps({"version": 1, "sessions": {"old": session}}))
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    load_state(client, Keys(), path)
    assert client.get(Keys().session_issued("old")) == b"2"


def test_session_without_open_findings_falls_back_to_the_runs_own(tmp_path: Path) -> None:
    """A session saved before the open findings were kept: the last run's own findings."""
    mine = {"id": 1, "anchor": {"kind": "change"}, "label": "issue", "subject": "a"}
    other = {**mine, "id": 2, "subject": "b", "origin": {"kind": "reviewer", "run_id": "r0"}}
    mine["origin"] = {"kind": "reviewer", "run_id": "r1"}
    session = {
        "issued": 2,
        "ledger": "",
        "findings": {"1": json.dumps(mine), "2": json.dumps(other)},
        "attributed": [],
        "reviewed": {"run": "r1", "head": "a" * 40, "settled_ms": "1"},
    }
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"version": 1, "sessions": {"old": session}}))
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    load_state(client, Keys(), path)
    store = SessionStore(client, Keys(), session_retention_s=60, run_retention_s=60)
    assert [f.subject for f in store.open_findings("old")] == ["a"]


BROKEN = '{"findings": [{"label": "issue", "subject": "divides by zero" "severity": "critical"}]}'
"""An answer that breaks off at its first finding (a missing comma): heard in part."""


def test_since_last_after_an_incomplete_round_reviews_it_again(session: Session) -> None:
    """A round the gate called incomplete (exit 3) did not review its head: the same
    --since-last again asks the reviewer and exits 3 again, never "nothing to review"
    and exit 0; once the reviewer is heard, the whole change since the last complete
    round is reviewed (the commit of the incomplete round included)."""
    session.answer.write_text(BROKEN)
    commit(session.repo, {"app.py": "x = 1\ny = 1 / 0\n"}, "broken")
    first, _ = session.review("--since-last")
    assert first.exit_code == 3, first.output
    again, report = session.review("--since-last")
    assert again.exit_code == 3, again.output
    assert "no change after" not in again.output
    assert report is not None and [p.id for p in report.participants] == ["rep"]
    session.push({"README": "docs\n"}, div0())
    heard, report = session.review("--since-last")
    assert heard.exit_code == 1, heard.output
    assert report is not None and report.base == session.base
    assert [f.subject for f in report.findings] == ["divides by zero"]


def two(tmp: Path) -> str:
    """A roster of two replay reviewers whose answers are files outside the repository
    (``rep.json``, ``flaky.json`` in ``tmp``), by their absolute paths; quorum 1."""
    (tmp / "rep.json").write_text('{"findings": []}')
    return (
        ROUND
        + "quorum = 1\n"
        + f'[[reviewers]]\nid = "rep"\nbackend = "replay"\nanswer = "{tmp / "rep.json"}"\n'
        + f'[[reviewers]]\nid = "flaky"\nbackend = "replay"\nanswer = "{tmp / "flaky.json"}"\n'
    )


def test_since_last_asks_again_a_reviewer_the_last_round_did_not_hear(tmp_path: Path) -> None:
    """A round that met its quorum with one reviewer broken still leaves that reviewer's
    share unreviewed: the next --since-last reviews from the last head IT was heard in
    (here: never, so the whole change), and says so; once both were heard, only the new
    commits."""
    session = Session(tmp_path)
    session.repo = new_repo(tmp_path / "two", {"app.py": "x = 1\n", "council.toml": two(tmp_path)})
    session.base = git(session.repo, "rev-parse", "HEAD")
    flaky = tmp_path / "flaky.json"
    flaky.write_text(BROKEN)
    commit(session.repo, {"app.py": "x = 1\ny = 2\n"}, "flaky breaks")
    first, _ = session.review("--since-last")
    assert first.exit_code == 0, first.output
    flaky.write_text('{"findings": []}')
    commit(session.repo, {"b.py": "b = 1\n"}, "flaky mends")
    second, report = session.review("--since-last")
    assert second.exit_code == 0, second.output
    assert report is not None and report.base == session.base
    assert any("flaky was not heard in full" in n for n in report.notes), report.notes
    commit(session.repo, {"c.py": "c = 1\n"}, "more")
    third, report = session.review("--since-last")
    assert third.exit_code == 0, third.output
    assert report is not None and report.base != session.base
    assert any("only the commits after" in n for n in report.notes), report.notes


def test_since_last_a_repeated_open_finding_keeps_gating(session: Session) -> None:
    """The fresh-user case: a finding on the pull request's code that a reviewer raises
    again in a --since-last round whose new commits touch another file is judged against
    the pull request's change, not the new commits alone: it still gates (exit 1), as it
    would have if it had been carried."""
    session.push({"app.py": "x = 1\ny = 1 / 0\n"}, div0(severity="medium"))
    first, _ = session.review("--fail-on", "medium")
    assert first.exit_code == 1, first.output
    session.push({"README.txt": "docs\n"}, div0(severity="medium"))
    again, report = session.review("--since-last", "--fail-on", "medium")
    assert again.exit_code == 1, again.output
    assert report is not None and not report.filtered


def test_ledger_without_a_session_reads_the_default_session_of_the_repository(
    session: Session,
) -> None:
    """A review of the default session (no --session), then ``council ledger --repo``
    with no SESSION: the same session's identities, as ``council dismiss`` names it."""
    session.push({"app.py": "x = 1\ny = 1 / 0\n"}, div0())
    argv = ["review", "--repo", str(session.repo), "--base", session.base, "--no-progress"]
    done = CliRunner().invoke(main, [*argv, "--state", str(session.state)])
    assert done.exit_code in (0, 1), done.output
    state = ["--state", str(session.state)]
    listed = CliRunner().invoke(main, ["ledger", "--repo", str(session.repo), *state])
    assert listed.exit_code == 0, listed.output
    assert listed.output.startswith("rep: ")
    key = CliRunner().invoke(main, ["ledger", "s", *state])  # another session: empty
    assert key.exit_code == 0 and "holds no identities" in key.output
