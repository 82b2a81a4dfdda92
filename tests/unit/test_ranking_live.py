"""Ranking live: an embedded ``council review`` ranks its report with the track records
of the state file, and what happens to findings is counted once (docs/ranking.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from council.model.report import CouncilReport
from council.ranking.records import ID_ONLY, TrackRecord
from council.rendering import read_json
from council.round.gate import exit_code, gate_summary
from tests.forge_cases import finding, report
from tests.gitrepo import commit, git, new_repo
from workers.cli import main
from workers.stores.track.records import FileRecords

ROUND = "[council]\nbackstop_ms = 60000\nidle_ms = 60000\nlikely_at = 0.4\n"


def flagged(subject: str, line: int, severity: str = "minor") -> dict[str, Any]:
    """A finding on app.py at ``line``."""
    at = {"kind": "line", "path": "app.py", "line": line}
    return {"subject": subject, "label": "issue", "severity": severity, "location": at}


class Council:
    """A repository whose roster runs two replay reviewers, hawk and owl, each reading
    its answer from a file outside the repository; rounds share one state file."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.answers = {who: tmp / f"{who}.json" for who in ("hawk", "owl")}
        roster = ROUND + "".join(
            f'[[reviewers]]\nid = "{who}"\nbackend = "replay"\nanswer = {json.dumps(str(p))}\n'
            for who, p in self.answers.items()
        )
        self.repo = new_repo(tmp / "repo", {"app.py": "x = 1\n", "council.toml": roster})
        self.base = git(self.repo, "rev-parse", "HEAD")
        self.state = tmp / "state.json"
        self.rounds = 0

    def push(self, **said: list[dict[str, Any]]) -> None:
        """Commit a change of app.py; each reviewer then answers what ``said`` gives it."""
        for who, path in self.answers.items():
            path.write_text(json.dumps({"findings": said.get(who, [])}))
        self.rounds += 1
        body = "".join(f"v{n} = {n}\n" for n in range(self.rounds + 3))
        commit(self.repo, {"app.py": body}, f"push {self.rounds}")

    def review(self, *args: str) -> tuple[Result, CouncilReport, str]:
        """One round of session s: its exit, JSON report and Markdown."""
        out, md = self.tmp / f"r{self.rounds}.json", self.tmp / f"r{self.rounds}.md"
        argv = ["review", "--repo", str(self.repo), "--base", self.base, "--no-progress"]
        argv += ["--state", str(self.state), "--session", "s", "--json", str(out)]
        argv += ["--format", "markdown", "--output", str(md)]
        done = CliRunner().invoke(main, [*argv, *args])
        assert out.exists(), done.output
        return done, read_json(out.read_text()), (md / "council.md").read_text()

    def cli(self, *args: str) -> Result:
        return CliRunner().invoke(main, [*args, "--state", str(self.state)])

    def records(self) -> dict[tuple[str, str], TrackRecord]:
        return FileRecords(self.state).all()

    def record(self, who: str) -> TrackRecord:
        """``who``'s live record (the identity of its roster entry, not the id-only one)."""
        live = [r for (p, ident), r in self.records().items() if p == who and ident != ID_ONLY]
        assert len(live) == 1, self.records()
        return live[0]


@pytest.fixture
def council(tmp_path: Path) -> Council:
    return Council(tmp_path)


def _history(council: Council) -> None:
    """hawk is usually right, owl usually wrong (imported outcomes)."""
    lines = [{"participant": "hawk", "verdict": "confirmed"}] * 12
    lines += [{"participant": "owl", "verdict": "dismissed"}] * 12
    lines += [{"participant": "hawk", "verdict": "dismissed"}]
    lines += [{"participant": "owl", "verdict": "confirmed"}]
    path = council.tmp / "outcomes.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    done = council.cli("outcomes", "import", str(path))
    assert done.exit_code == 0, done.output


def test_a_live_review_is_ranked_and_leads_with_the_likely(council: Council) -> None:
    _history(council)
    council.push(hawk=[flagged("hawk says so", 1)], owl=[flagged("owl says so", 3)])
    done, report, text = council.review()
    assert done.exit_code == 0, done.output
    assert report.likely_at == 0.4
    by_subject = {f.subject: f.id for f in report.findings}
    hawk, owl = (report.ranks[by_subject[s]] for s in ("hawk says so", "owl says so"))
    assert hawk.likelihood >= 0.4 > owl.likelihood
    lead, _, folded = text.partition("less likely finding")
    assert "hawk says so" in lead and "owl says so" not in lead
    assert "owl says so" in folded


def test_a_round_counts_its_findings_and_itself_once(council: Council) -> None:
    council.push(hawk=[flagged("one", 1), flagged("two", 2)], owl=[])
    council.review()
    hawk, owl = council.record("hawk"), council.record("owl")
    assert (hawk.findings, hawk.rounds, owl.findings, owl.rounds) == (2, 1, 0, 1)
    assert not hawk.priced  # a replay reviewer has no price
    council.push(hawk=[flagged("three", 3)])
    council.review()
    assert (council.record("hawk").findings, council.record("hawk").rounds) == (3, 2)
    cards = council.cli("outcomes").output
    assert "hawk [" in cards and "3 findings" in cards and "1.5 findings a round" in cards


def test_a_dismissal_counts_against_its_raisers_once(council: Council) -> None:
    council.push(hawk=[flagged("shared", 1)], owl=[flagged("shared", 1)])
    _, report, _ = council.review()
    (shown,) = report.findings
    for _ in range(2):
        done = council.cli("dismiss", str(shown.id), "--reason", "no", "--session", "s")
        assert done.exit_code == 0, done.output
    hawk, owl = council.record("hawk"), council.record("owl")
    assert (hawk.dismissed, owl.dismissed, hawk.confirmed) == (1, 1, 0)
    assert "1 dismissed" in council.cli("outcomes").output


def test_min_likelihood_ungates_the_unlikely_and_says_so(council: Council) -> None:
    _history(council)
    council.push(owl=[flagged("owl says so", 3, "critical")])
    plain, _, _ = council.review()
    assert plain.exit_code == 1
    asked, report, _ = council.review("--min-likelihood", "0.4")
    assert asked.exit_code == 0, asked.output
    assert report.gate.min_likelihood == 0.4
    assert "(1 more at or above critical below likelihood 0.40, --min-likelihood" in asked.output


def test_min_likelihood_leaves_an_unranked_finding_gating() -> None:
    shown = report(finding(1, subject="x", severity="critical")).gated(min_likelihood=0.9)
    assert shown.ranks == {}
    assert exit_code(shown) == 1
    assert "likelihood" not in gate_summary(shown)


@pytest.mark.parametrize(("post", "commented"), [("leading", ["hawk says so"]), ("all", None)])
def test_post_leading_comments_only_on_the_leading(
    council: Council, post: str, commented: list[str] | None
) -> None:
    _history(council)
    council.push(hawk=[flagged("hawk says so", 1)], owl=[flagged("owl says so", 3)])
    argv = ["--format", "github-review", "--format", "gitlab-discussions", "--post", post]
    done, _, _ = council.review(*argv)
    assert done.exit_code == 0, done.output
    out = council.tmp / f"r{council.rounds}.md"
    review = json.loads((out / "github-review.json").read_text())
    threads = json.loads((out / "gitlab-discussions.json").read_text())["discussions"]
    expected = commented or ["hawk says so", "owl says so"]
    for posted in ([c["body"] for c in review["comments"]], [t["body"] for t in threads]):
        assert len(posted) == len(expected)
        assert all(any(e in body for body in posted) for e in expected)
    if post == "leading":  # the rest listed in the summary body, and said
        assert "owl says so" in review["body"]
        assert "1 less likely finding(s) on the diff" in done.output


def test_outcomes_import_counts_bad_lines_and_never_half_imports(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    good = tmp_path / "good.jsonl"
    good.write_text(
        '{"participant": "hawk", "verdict": "confirmed"}\nnot json\n'
        '{"participant": ["hawk", "owl"], "verdict": "dismissed"}\n'
    )
    done = CliRunner().invoke(main, ["outcomes", "import", "--state", str(state), str(good)])
    assert done.exit_code == 0, done.output
    assert "1 line(s) skipped: line 2" in done.output and "imported 2 outcome(s)" in done.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"participant": "hawk", "verdict": "maybe"}\n')
    before = state.read_bytes()
    refused = CliRunner().invoke(main, ["outcomes", "import", "--state", str(state), str(bad)])
    assert refused.exit_code == 2
    assert state.read_bytes() == before
    cards = CliRunner().invoke(main, ["outcomes", "--state", str(state)]).output
    assert "hawk [id]: 2 findings, 1 confirmed, 1 dismissed" in cards
    assert "owl [id]: 1 findings, 0 confirmed, 1 dismissed" in cards


def test_consolidate_ranks_with_the_records_of_its_state_file(tmp_path: Path) -> None:
    answer = tmp_path / "hawk.json"
    answer.write_text(json.dumps({"findings": [flagged("hawk says so", 1)]}))
    state = tmp_path / "state.json"
    FileRecords(state).add([TrackRecord(participant="hawk", identity=ID_ONLY, confirmed=20)])

    def likelihood(*more: str) -> float:
        out = tmp_path / "out.json"
        argv = ["consolidate", f"hawk={answer}", "--json", str(out), "--format", "markdown"]
        done = CliRunner().invoke(main, [*argv, *more])
        assert done.exit_code == 0, done.output
        (rank,) = read_json(out.read_text()).ranks.values()
        return rank.likelihood

    assert likelihood("--state", str(state)) > likelihood()


def test_outcomes_of_a_state_file_that_does_not_exist_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mistyped ``--state`` is said (exit 2, naming the path), not read as "no track
    records yet"."""
    monkeypatch.delenv("COUNCIL_REDIS_URL", raising=False)
    missing = tmp_path / "stat.json"
    done = CliRunner().invoke(main, ["outcomes", "--state", str(missing)])
    assert done.exit_code == 2, done.output
    assert str(missing) in done.output and "no such file" in done.output
    assert not missing.exists()


def test_a_scorecard_with_no_judged_finding_says_its_precision_is_not_measured() -> None:
    """A reviewer that filed findings none of which a person judged shows the prior as a
    prior, never as "0.50 ± 0.29" as if measured; one judged shows its estimate."""
    from council.ranking.scorecard import scorecard_lines

    fresh = TrackRecord(participant="hawk", identity=ID_ONLY, findings=4, rounds=1)
    judged = TrackRecord(participant="owl", identity=ID_ONLY, findings=4, rounds=1, confirmed=3)
    lines = {line.split(" ")[0]: line for line in scorecard_lines([fresh, judged])}
    assert "precision not measured yet (no finding judged; the prior" in lines["hawk"]
    assert "±" not in lines["hawk"]
    assert "precision 0.80 ± " in lines["owl"]
