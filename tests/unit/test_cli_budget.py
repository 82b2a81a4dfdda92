"""``council review`` under a cost budget refuses up front what it could not bound (exit 2,
nothing sent), and the report and the gate line say what the budget did. The budget at
work over a whole council: tests/integration/test_cost_budget.py."""

from __future__ import annotations

from pathlib import Path

import fakeredis
import pytest
from click.testing import CliRunner, Result

from council.model.backend_result import Stop
from council.model.report import BudgetSpend, CouncilReport, ParticipantSummary
from council.rendering.markdown import render_markdown
from council.round.gate import EXIT_INCOMPLETE, exit_code, gate_summary
from tests.console_runs import waiting_run
from tests.gitrepo import commit, new_repo
from workers.app.services import build_runtime
from workers.app.settings import Settings
from workers.cli import main
from workers.cli.check import BUDGET_OUTPUT_TOKENS
from workers.console.views import run_view

HEAD = "[council]\nbackstop_ms = 60000\nidle_ms = 60000\n"
PRICE = '[prices."openai:gpt-a"]\ninput = 1.0\noutput = 2.0\n'
NOWHERE = "http://127.0.0.1:9/v1"
"""A base_url nothing listens on: a refused round must not reach it anyway."""


def _model(pid: str, model: str = "gpt-a", cap: int | None = 100, table: str = "reviewers") -> str:
    head = "[[reviewers]]" if table == "reviewers" else "[judge]"
    text = f'{head}\nid = "{pid}"\nbackend = "openai"\nmodel = "{model}"\nbase_url = "{NOWHERE}"\n'
    return text + (f"max_output_tokens = {cap}\n" if cap is not None else "")


def _review(tmp_path: Path, roster: str, *args: str) -> Result:
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(repo, {"app.py": "x = 1\ny = 2\n"}, "change")
    path = tmp_path / "roster.toml"
    path.write_text(roster)
    argv = ["review", "--repo", str(repo), "--base", "HEAD~1", "--no-progress"]
    argv += ["--state", str(tmp_path / "state.json"), "--roster", str(path), *args]
    return CliRunner().invoke(main, argv, env={"OPENAI_API_KEY": "sk-test-0000"})


@pytest.mark.parametrize(
    ("roster", "named"),
    [
        (HEAD + "max_cost_usd = 1.0\n" + PRICE + _model("a") + _model("b", "gpt-b"), "b has none"),
        (
            HEAD
            + "max_cost_usd = 1.0\n"
            + PRICE
            + _model("a")
            + _model("j", "gpt-j", table="judge"),
            "j has none",
        ),
    ],
    ids=["unpriced-reviewer", "unpriced-judge"],
)
def test_a_budget_refuses_what_it_could_not_estimate(
    tmp_path: Path, roster: str, named: str
) -> None:
    done = _review(tmp_path, roster)
    assert done.exit_code == 2, done.output
    assert named in done.output


def test_a_reviewer_without_an_output_cap_is_given_one_under_a_budget(tmp_path: Path) -> None:
    """Not refused: its requests get ``BUDGET_OUTPUT_TOKENS`` as their bound, so they can
    be estimated, and a note says so (the round then runs; nothing listens here, exit 3)."""
    done = _review(tmp_path, HEAD + "max_cost_usd = 1.0\n" + PRICE + _model("a", cap=None))
    assert done.exit_code == 3, done.output
    assert "a set no max_output_tokens, so each of their requests is capped at " in done.output
    assert str(BUDGET_OUTPUT_TOKENS) in done.output


def test_the_command_line_budget_needs_prices_too(tmp_path: Path) -> None:
    """``--max-cost-usd`` puts a budget on a roster that has none: the same refusal."""
    done = _review(tmp_path, HEAD + _model("a", "gpt-z"), "--max-cost-usd", "2")
    assert done.exit_code == 2, done.output
    assert "a has none" in done.output and "max_cost_usd = 2.0" in done.output


@pytest.mark.parametrize("value", ["0", "-1"])
def test_a_zero_or_negative_budget_on_the_command_line_is_refused(
    tmp_path: Path, value: str
) -> None:
    done = _review(tmp_path, HEAD + PRICE + _model("a"), "--max-cost-usd", value)
    assert done.exit_code == 2, done.output
    assert "--max-cost-usd" in done.output


def _stopped_report() -> CouncilReport:
    return CouncilReport(
        run_id="r",
        session="s",
        status="partial",
        participants=(
            ParticipantSummary(id="ant", backend="openai", model="m", state="answered"),
            ParticipantSummary(
                id="cat", backend="openai", model="m", state="stopped", stop=Stop(limit="budget")
            ),
        ),
        budget=BudgetSpend(max_cost_usd=2.5, spent_usd=2.404, stopped=("cat",)),
    )


def test_a_budget_stop_makes_the_round_incomplete_and_the_gate_line_says_why() -> None:
    report = _stopped_report()
    assert exit_code(report) == EXIT_INCOMPLETE
    line = gate_summary(report)
    assert "cat stopped by the round's cost budget (max_cost_usd)" in line, line


def test_the_markdown_report_states_spent_against_budget() -> None:
    text = render_markdown(_stopped_report())
    assert "**Budget:** spent $2.40 of the $2.50 budget (max_cost_usd); stopped by it: cat" in text


def test_the_console_shows_spent_against_budget() -> None:
    """The run page's cost line carries the budget once the run has a report."""
    rt = build_runtime(Settings(), fakeredis.FakeRedis(server=fakeredis.FakeServer()))
    record, _ = waiting_run(rt, participants=("ant", "cat"))
    stored = rt.runs.report(record.run_id)
    assert stored is not None
    report = stored.model_copy(update={"budget": _stopped_report().budget})
    rt.client.hset(rt.keys.run(record.run_id), "report", report.model_dump_json())
    view = run_view(rt, record.run_id)
    assert view is not None
    assert "spent $2.40 of the $2.50 budget (max_cost_usd); stopped by it: cat" in view.cost
