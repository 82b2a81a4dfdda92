"""``council review --without-keys``: a pull request from a fork is reviewed without API
keys. The reviewers and the judge that need one are left out, the report says so under
its title, the others review and gate; a roster left with no reviewer is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from council.model.report import WITHOUT_KEYS
from council.roster import parse_roster
from council.roster.round_roster import line_up, without_keys
from tests.unit import test_cli_review
from tests.unit.test_cli_review import (
    CRITICAL,
    ROUND,
    answer,
    report_of,
    review,
    reviewer,
    roster,
)
from workers.cli import main

MODEL = reviewer("hawk", "openai", model="gpt-4.1")
repo = test_cli_review.repo
"""A repository whose last commit adds one line to app.py (a fixture)."""
JUDGE = '[judge]\nid = "arbiter"\nbackend = "anthropic"\nmodel = "claude-opus-4-1"\n'


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No API key in the environment, as in a fork's CI job."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def test_without_the_flag_a_missing_key_refuses_the_review(repo: Path, tmp_path: Path) -> None:
    """The default fails closed: a model reviewer whose key is unset is exit 2, nothing
    sent."""
    rp = roster(tmp_path, reviewer("rep", "replay", answer=answer(tmp_path, "a.json")), MODEL)
    done = review(repo, tmp_path / "s.json", roster_path=rp)
    assert done.exit_code == 2
    assert "OPENAI_API_KEY is not set" in done.output


def test_keyed_reviewers_are_left_out_and_the_others_gate(repo: Path, tmp_path: Path) -> None:
    """With --without-keys the model reviewer is left out, named under the report's
    title; the replay reviewer's critical finding still trips the gate."""
    rp = roster(
        tmp_path, reviewer("rep", "replay", answer=answer(tmp_path, "a.json", CRITICAL)), MODEL
    )
    out = tmp_path / "r.json"
    done = review(repo, tmp_path / "s.json", "--without-keys", "--json", str(out), roster_path=rp)
    assert done.exit_code == 1, done.output
    data = report_of(out)
    assert [p["id"] for p in data["participants"]] == ["rep"]
    (note,) = [n for n in data["notes"] if n.startswith(WITHOUT_KEYS)]
    assert "hawk (openai gpt-4.1)" in note
    title = done.stdout.split("### Findings", 1)[0]
    assert "**Without keys:** " + WITHOUT_KEYS in title
    assert "### Notes" not in done.stdout  # said once, under the title


def test_a_roster_of_models_only_is_refused(repo: Path, tmp_path: Path) -> None:
    """Nothing left to review: exit 2, saying why and the way out."""
    only_models = roster(tmp_path, MODEL)
    done = review(repo, tmp_path / "s.json", "--without-keys", roster_path=only_models)
    assert done.exit_code == 2
    assert "--without-keys leaves none to review" in done.output


def test_a_judge_that_needs_a_key_is_left_out_too(tmp_path: Path) -> None:
    """The lineup keeps keyless reviewers in order, drops a keyed judge, and says so;
    a lineup with nothing keyed is returned as it is, with no note."""
    text = ROUND + reviewer("a", "replay", answer="a.json") + MODEL
    text += reviewer("b", "command", program="./b.sh") + JUDGE
    lineup = line_up(parse_roster(text, "council.toml"), tmp_path)
    kept, notes = without_keys(lineup)
    assert [p.id for p in kept.reviewers] == ["a", "b"] and kept.judge is None
    assert notes[0].startswith(WITHOUT_KEYS) and "hawk (openai gpt-4.1)" in notes[0]
    assert "arbiter (anthropic claude-opus-4-1)" in notes[0]
    assert "no judge this round" in notes[1]
    keyless = line_up(parse_roster(ROUND + reviewer("a", "replay", answer="a.json"), "r"), tmp_path)
    assert without_keys(keyless) == (keyless, ())


def test_council_check_takes_without_keys_too(repo: Path, tmp_path: Path) -> None:
    """A lint job has no keys: council check refuses a keyed reviewer it cannot run here
    (exit 2, naming the key and the flag), and with --without-keys checks the rest, saying
    who was left out."""
    rp = roster(tmp_path, reviewer("rep", "replay", answer=answer(tmp_path, "a.json")), MODEL)
    argv = ["check", "--repo", str(repo), "--roster", str(rp), "--state", str(tmp_path / "s")]
    refused = CliRunner().invoke(main, argv)
    assert refused.exit_code == 2
    assert "OPENAI_API_KEY is not set" in refused.output and "--without-keys" in refused.output
    checked = CliRunner().invoke(main, [*argv, "--without-keys"])
    assert checked.exit_code == 0, checked.output
    assert "roster OK: 1 reviewer(s)" in checked.output
    assert "hawk (openai gpt-4.1)" in checked.output
