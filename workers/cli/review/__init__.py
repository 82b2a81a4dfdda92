"""``council review``: the command and its options, light to import.

Its ``--help`` loads click and little else; the run (pydantic, redis, celery, the
stores: :mod:`workers.cli.review.running`) is imported once the arguments are parsed,
while the group still makes an interrupt quiet (:data:`workers.cli.group.BODIES`).
``--timeout`` is in seconds, as click takes it; the waiter counts milliseconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from council.model.gate_choices import DEFAULT_FAIL_ON, DEFAULT_FILTER, FAIL_ON, FILTER_MODES
from workers.cli.options import (
    FORMAT_OPTION,
    REPO_OPTION,
    ROSTER_OPTION,
    STATE_OPTION,
    json_option,
    output_option,
)

if TYPE_CHECKING:
    from workers.cli.context import CliContext


@click.command("review")
@REPO_OPTION
@click.option(
    "--base",
    required=True,
    help="The branch the change goes into (e.g. origin/main, HEAD~3): the change is read "
    "from the merge base of BASE and HEAD, as a pull request shows it.",
)
@click.option(
    "--base-exact",
    is_flag=True,
    help="Diff against BASE itself instead of the merge base (two dots, not three).",
)
@click.option("--head", default="HEAD", show_default=True, help="The ref the change ends at.")
@ROSTER_OPTION
@json_option("Also write the whole report as JSON to this file.")
@click.option(
    "--markdown",
    "markdown_out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the Markdown report to this file instead of stdout.",
)
@FORMAT_OPTION
@output_option(
    "Write each --format into this directory (council.md, council.json, "
    "council.sarif, github-review.json, github-checks.json, gl-code-quality-report.json, "
    "gitlab-discussions.json) and council-run.json (run id, head, SHA-256 of each). It "
    "must be new, empty or an earlier run's outputs (replaced)."
)
@click.option(
    "--since-last",
    is_flag=True,
    help="Review only the commits after the session's last reviewed head (the whole "
    "change when there is none, or a force push rewrote it); earlier findings still "
    "open are carried into the report and gate.",
)
@click.option(
    "--baseline",
    "baseline_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Baseline JSON to use instead of .council-baseline.json in the BASE ref's tree.",
)
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_ON),
    default=DEFAULT_FAIL_ON,
    show_default=True,
    help="Exit 1 when an open finding (this round's, or one carried by --since-last) is at "
    "or above this severity.",
)
@click.option(
    "--quorum",
    type=click.IntRange(min=0),
    help="Exit 3 when fewer reviewers than this were heard in full (answered, and their "
    "whole answer was read); 0 switches the count off. Default: the roster's [council] "
    "quorum, else every reviewer not marked optional = true must be heard in full (a "
    "reviewer that failed, stopped or answered nothing readable fails closed: exit 3).",
)
@click.option(
    "--filter",
    "filter_mode",
    type=click.Choice(FILTER_MODES),
    default=DEFAULT_FILTER,
    show_default=True,
    help="Which findings gate and post inline: added (a line finding touching an added "
    "line, a finding on a changed file, a change-level one), diff_context (any line the "
    "diff shows), file (anywhere in a changed file), nofilter (all). The rest is listed, "
    "marked, never gating; a finding on a path that exists nowhere never gates.",
)
@click.option(
    "--min-agreement",
    type=click.IntRange(min=1),
    metavar="K",
    help="A finding gates only when at least K reviewers raised it (the others are listed "
    "and posted, marked, never gating). Default: the roster's [council] min_agreement, "
    "else 1.",
)
@click.option(
    "--post",
    type=click.Choice(("leading", "all")),
    default="leading",
    show_default=True,
    help="Which findings github-review and gitlab-discussions comment on line by line: "
    "leading (those that gate and those at or above [council] likely_at; the rest are "
    "listed in the summary) or all.",
)
@click.option(
    "--min-likelihood",
    type=click.FloatRange(min=0, max=1),
    metavar="P",
    help="A finding ranked below likelihood P (docs/ranking.md) does not gate: listed, "
    "and counted in the gate line. Default: none, the likelihood never touches the gate.",
)
@click.option(
    "--max-cost-usd",
    type=click.FloatRange(min=0, min_open=True),
    metavar="USD",
    help="The round's hard cost budget in US dollars, over every reviewer, attempt and the "
    "judge (default: the roster's [council] max_cost_usd, else none). A request that "
    "would pass it is not sent: its reviewer stops as budget (exit 3). Every model "
    "participant needs a price (one without max_output_tokens is capped at 16,384).",
)
@click.option(
    "--without-keys",
    is_flag=True,
    help="Leave out the reviewers (and the judge) that need an API key, saying so in the "
    "report; the others review and gate. For a pull request from a fork, whose CI job "
    "gets no secrets. Exit 2 when no reviewer is left.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Bound the whole council; on it the run settles as timeout (exit 3).",
)
@click.option(
    "--session",
    help="Session key (default: in GitHub Actions the repository and pull request number, "
    "in GitLab CI the project and merge request IID, else the repository and the branch).",
)
@STATE_OPTION
@click.option(
    "--progress/--no-progress",
    default=True,
    show_default=True,
    help="Show progress per participant on stderr.",
)
@click.pass_obj
def review_command(cli: CliContext, /, **options: Any) -> None:
    """Review the change of HEAD since it left BASE (their merge base) with the roster's
    council.

    Prints a Markdown report on stdout (or writes each --format into --output DIR) and
    exits 0 (passed), 1 (a finding at or above --fail-on), 2 (usage or configuration
    error; nothing sent), 3 (the council could not complete: Redis unreachable,
    --timeout, a reviewer not heard in full — unless optional or within --quorum) or 4
    (waiting on a person: [policy] confirm; answer with council answer, run again).
    Findings dismissed in the session or in the BASE ref's .council-baseline.json are
    listed but never gate; findings outside --filter are listed but never gate.

    \b
    Examples:
      council review --repo . --base HEAD~1 --roster examples/council.toml --json out.json
      council review --base origin/main --format markdown --format sarif \\
        --format github-review --output out   # then: council publish github --from out
    """
    from workers.cli.review.running import review_round

    review_round(cli, **options)


__all__ = ["review_command"]
