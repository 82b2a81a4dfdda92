"""``council publish github``: post a round's outputs on its pull request.

One round, one review: the ``github-review.json`` that ``council review --format
github-review`` wrote (line comments where lines landed, the rest in its body). And one
summary comment for the pull request's whole life, found again on every round by a
hidden marker and edited in place, so the conversation does not grow a comment per push.
When the round passes, council's earlier reviews that still request changes are
dismissed, or they would keep blocking the merge after the code was fixed.

The token is read from ``GITHUB_TOKEN`` (never an option: options end up in shell
history and process lists) and never printed. Source: issue "CI outputs that forges
accept"; GitHub REST (see :mod:`workers.forge.github`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from council.gate import DEFAULT_FAIL_ON, FAIL_ON
from council.report import read_json, render_markdown
from council.report.github_review import fit_body, render_github_review
from council.report.jsonreport import UnreadableReport
from workers.cli.context import Incomplete, UsageProblem
from workers.cli.outputs import FILE_NAMES
from workers.forge.github import (
    DEFAULT_API_URL,
    GitHubClient,
    GitHubInvalid,
    PublishError,
    check_repo,
)

SUMMARY_MARKER = "<!-- council:summary -->"
"""The first line of the summary comment: how the next round finds it again."""

REVIEW_MARKER = "<!-- council:review -->"
"""The first line of every review council posts: how a later round finds its own."""


@click.group("publish")
def publish_group() -> None:
    """Post a review's outputs to a code host (GitHub)."""


@publish_group.command("github")
@click.option(
    "--repo",
    "repo_name",
    envvar="GITHUB_REPOSITORY",
    required=True,
    metavar="OWNER/NAME",
    help="The repository (env GITHUB_REPOSITORY, set in GitHub Actions).",
)
@click.option("--pr", type=click.IntRange(min=1), required=True, help="The pull request number.")
@click.option(
    "--from",
    "from_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="The --output DIR of `council review` (github-review.json, council.md, council.json).",
)
@click.option(
    "--report",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A JSON report (council.json) to render the review and summary from.",
)
@click.option(
    "--api-url",
    envvar="GITHUB_API_URL",
    default=DEFAULT_API_URL,
    show_default=True,
    help="GitHub's API (env GITHUB_API_URL; GitHub Enterprise: https://HOST/api/v3).",
)
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_ON),
    default=DEFAULT_FAIL_ON,
    show_default=True,
    help="With --report: the gate the review's verdict is rendered with.",
)
@click.option(
    "--quorum",
    type=click.IntRange(min=0),
    help="With --report: the quorum the verdict is rendered with (default: every reviewer "
    "not marked optional must have been heard in full).",
)
def publish_github_command(
    repo_name: str,
    pr: int,
    from_dir: Path | None,
    report: Path | None,
    api_url: str,
    fail_on: str,
    quorum: int | None,
) -> None:
    """Post ONE review and update ONE summary comment on a GitHub pull request.

    Reads the token from GITHUB_TOKEN. Exit 2 when the inputs, the token or its
    permissions are wrong (nothing posted, or GitHub refused it), 3 when GitHub cannot
    be reached or rate-limits past a minute.

    \b
    Example (in a workflow, after `council review ... --output council-out`):
      council publish github --repo "$GITHUB_REPOSITORY" --pr 42 --from council-out
    """
    try:
        check_repo(repo_name)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    review, summary = _inputs(from_dir, report, fail_on, quorum)
    token = os.environ.get("GITHUB_TOKEN", "").strip()
    if not token:
        raise UsageProblem(
            "GITHUB_TOKEN is not set: export a token that may write pull requests (in a "
            "workflow: `env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}` and "
            "`permissions: pull-requests: write`)"
        )
    try:
        with GitHubClient(token, repo=repo_name, pr=pr, api_url=api_url) as github:
            _publish(github, review, summary)
    except PublishError as exc:
        if exc.exit_code == 3:
            raise Incomplete(str(exc)) from None
        raise UsageProblem(str(exc)) from None


def _publish(github: GitHubClient, review: dict[str, Any], summary: str) -> None:
    review = {**review, "body": fit_body(f"{REVIEW_MARKER}\n{review.get('body', '')}")}
    comments = review.get("comments") or []
    try:
        review_id = github.create_review(review)
    except GitHubInvalid as exc:
        if not comments:
            raise
        click.echo(
            f"council: {exc}; posting the review again with its line comments in the body",
            err=True,
        )
        review_id = github.create_review(_comments_in_body(review, str(exc)))
        comments = []
    event = review.get("event", "COMMENT")
    click.echo(
        f"posted review {review_id} on {github.repo}#{github.pr} ({event}, "
        f"{len(comments)} line comment(s))"
    )
    if event != "REQUEST_CHANGES":
        _dismiss_stale(github, review_id)
    body = fit_body(f"{SUMMARY_MARKER}\n{summary}")
    found = _summary_comment(github.comments())
    if found is None:
        click.echo(f"added summary comment {github.create_comment(body)}")
    else:
        github.update_comment(found, body)
        click.echo(f"updated summary comment {found}")


def _dismiss_stale(github: GitHubClient, latest: int) -> None:
    """Dismiss council's earlier reviews that still request changes (warn on failure:
    the round's review is posted, that is what matters)."""
    try:
        for old in github.reviews():
            ident = old.get("id")
            if (
                old.get("state") == "CHANGES_REQUESTED"
                and str(old.get("body", "")).startswith(REVIEW_MARKER)
                and isinstance(ident, int)
                and ident != latest
            ):
                github.dismiss_review(
                    ident, f"council: superseded by review {latest}, which requests no changes"
                )
                click.echo(f"dismissed review {ident} (it requested changes)")
    except PublishError as exc:
        click.echo(f"council: warning: earlier reviews were not dismissed: {exc}", err=True)


def _summary_comment(comments: list[dict[str, Any]]) -> int | None:
    """The id of the summary comment: one whose body starts with the marker, a bot's
    first (the token's own comments are a bot's in a workflow), else the earliest."""
    marked = [
        c
        for c in comments
        if str(c.get("body", "")).startswith(SUMMARY_MARKER) and isinstance(c.get("id"), int)
    ]
    bots = [c for c in marked if isinstance(c.get("user"), dict) and c["user"].get("type") == "Bot"]
    chosen = bots or marked
    return int(chosen[0]["id"]) if chosen else None


def _comments_in_body(review: dict[str, Any], why: str) -> dict[str, Any]:
    """The review without line comments, each of them written into its body instead."""
    parts = [str(review.get("body", "")), "### Line comments GitHub refused", why]
    for comment in review.get("comments") or []:
        line = comment.get("line")
        start = comment.get("start_line")
        where = f"{comment.get('path')}:{f'{start}-{line}' if start else line}"
        side = " (old side)" if comment.get("side") == "LEFT" else ""
        parts.append(f"`{where}`{side}\n\n{comment.get('body', '')}")
    return {**review, "body": fit_body("\n\n".join(parts)), "comments": []}


def _inputs(
    from_dir: Path | None, report: Path | None, fail_on: str, quorum: int | None
) -> tuple[dict[str, Any], str]:
    """The review body (JSON object) and the summary Markdown, from --from or --report."""
    if (from_dir is None) == (report is None):
        raise UsageProblem(
            "pass exactly one of --from DIR (council review's --output) or --report FILE"
        )
    review_text = markdown = None
    json_path = report
    if from_dir is not None:
        review_text = _read(from_dir / FILE_NAMES["github-review"], missing_ok=True)
        markdown = _read(from_dir / FILE_NAMES["markdown"], missing_ok=True)
        json_path = from_dir / FILE_NAMES["json"]
    if review_text is None or markdown is None:
        text = _read(json_path, missing_ok=from_dir is not None) if json_path else None
        if text is None:
            raise UsageProblem(
                f"{from_dir} holds neither github-review.json and council.md nor "
                "council.json: run `council review --format github-review --format "
                f"markdown --output {from_dir}` first"
            )
        try:
            parsed = read_json(text)
        except UnreadableReport as exc:
            raise UsageProblem(f"{json_path}: {exc}") from None
        if review_text is None:
            review_text = render_github_review(parsed, fail_on=fail_on, quorum=quorum)
        if markdown is None:
            markdown = render_markdown(parsed, fail_on=fail_on, quorum=quorum)
    try:
        review = json.loads(review_text)
    except ValueError as exc:
        raise UsageProblem(f"the GitHub review is not JSON ({exc})") from None
    if not isinstance(review, dict) or not isinstance(review.get("body", ""), str):
        raise UsageProblem("the GitHub review must be a JSON object with a string body")
    return review, markdown


def _read(path: Path, *, missing_ok: bool) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if missing_ok:
            return None
        raise UsageProblem(f"{path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageProblem(f"{path} cannot be read ({exc})") from None
