"""``council publish github|gitlab``: post a run's outputs on its pull (merge) request.

It posts idempotently, and only outputs the run provably wrote. What was posted before is
found by a hidden marker (run id, head) AND the token's own user, so a retried CI step
updates instead of duplicating and no one else's comment is ever edited
(:mod:`workers.forge.github_publish`, :mod:`workers.forge.gitlab_publish`). Before any
request the directory's manifest (:mod:`workers.forge.manifest`) must name the head CI names
and list every file posted, byte for byte, or the command exits 2. Tokens come from the
environment, never from an option (options end up in shell history and process lists), and
are never printed. A review that wrote no report (exit 2, or 3 before it had one) is said
with ``--note FILE``: the summary alone, in Markdown the CI recipe wrote from the review's
stderr. Source: issue "CI outputs that forges accept"; docs/ci-and-forges.md;
GitHub and GitLab REST (see :mod:`workers.forge.github`, :mod:`workers.forge.gitlab`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from council.model.gate_choices import FAIL_ON
from council.model.report import CouncilReport
from council.rendering import read_json, render_markdown
from council.rendering.github_checks import render_github_checks
from council.rendering.github_review import POSTS, Post, render_github_review
from council.rendering.jsonreport import UnreadableReport
from council.round.gate import exit_code
from workers.cli.context import Incomplete, UsageProblem
from workers.cli.options import FILE_NAMES
from workers.forge import gitlab as gitlab_api
from workers.forge.github import DEFAULT_API_URL, GitHubClient, PublishError, check_repo
from workers.forge.github_publish import GitHubPost, publish_github
from workers.forge.gitlab import GitLabClient, TokenKind
from workers.forge.gitlab_publish import GitLabPost, publish_gitlab
from workers.forge.manifest import (
    MANIFEST_NAME,
    OutputsRefused,
    RunOutputs,
    check_head,
    read_outputs,
)


@click.group("publish")
def publish_group() -> None:
    """Post a review's outputs on a pull request (GitHub) or merge request (GitLab).

    \b
    council publish github   ONE review per run, ONE summary comment per pull
                             request, with --checks ONE check run with annotations
    council publish gitlab   a thread per line finding on the merge request's diff,
                             ONE summary note per merge request

    Both post only what `council review --output DIR` wrote for the head CI names
    (DIR/council-run.json: run id, head, each file's SHA-256), and are idempotent:
    publishing the same run again updates what it posted, never duplicates it, and
    never edits what another user posted. Mentions (@user, @org/team) in findings
    are neutralized.
    """


_github_head_option = click.option(
    "--head",
    metavar="SHA",
    help="The commit the review ran on; only outputs of it are posted (default: the "
    "pull request's head in GitHub Actions' event file, else GITHUB_SHA).",
)
_gitlab_head_option = click.option(
    "--head",
    metavar="SHA",
    help="The commit the review ran on; only outputs of it are posted (default: CI_COMMIT_SHA).",
)
_from_option = click.option(
    "--from",
    "from_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="The --output DIR of `council review` (with its council-run.json).",
)
_note_option = click.option(
    "--note",
    "note",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Instead of a run's outputs, post this file's Markdown as the summary for --head "
    "(nothing else): why a review that wrote no report (exit 2 or 3) could not gate. The "
    "CI recipes write it from council review's stderr, never from the output directory. "
    "The next run's summary replaces it.",
)

NOTE_RUN = "none"
"""The run id a --note summary is marked with: it is of no run."""

NOTE_MAX_BYTES = 65_536
"""Largest --note file read, in bytes; a longer one is cut there, saying so."""


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
@_from_option
@_note_option
@click.option(
    "--report",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A JSON report (council.json) to render the review and summary from; its head "
    "must be --head.",
)
@_github_head_option
@click.option(
    "--checks",
    is_flag=True,
    help="Also create or update the check run `council` on the head (annotations in "
    "the diff, also on private repositories without code scanning; from "
    "github-checks.json, or rendered from council.json). Needs `permissions: checks: "
    "write` (an App token: GITHUB_TOKEN in Actions).",
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
    help="With --report: the gate the review's verdict is rendered with (default: the "
    "report's own, the --fail-on its round was reviewed with).",
)
@click.option(
    "--quorum",
    type=click.IntRange(min=0),
    help="With --report: the quorum the verdict is rendered with (default: the report's "
    "own, the quorum its round was reviewed with).",
)
@click.option(
    "--post",
    "comment_on",
    type=click.Choice(POSTS),
    help="Which findings get a line comment: leading (those that gate and those at or "
    "above likely_at) or all; the rest are listed in the review's body. Renders the "
    "review from the report (--report, or DIR's council.json); default: as DIR's "
    "github-review.json holds it, else leading.",
)
def publish_github_command(
    repo_name: str,
    pr: int,
    from_dir: Path | None,
    note: Path | None,
    report: Path | None,
    head: str | None,
    checks: bool,
    api_url: str,
    fail_on: str | None,
    quorum: int | None,
    comment_on: Post | None,
) -> None:
    """Post ONE review and update ONE summary comment on a GitHub pull request.

    The review has a line comment per finding on a changed line, the rest in its body;
    the summary comment (council.md) is edited in place on every round. A re-run of
    the same run (a retried CI step) posts no second review: it brings the body of the
    one it posted up to date, and only the summary comment posted by the token's own
    user is ever edited. When a round passes (by council.json), council's earlier
    reviews that still request changes are dismissed; a run waiting on a person posts
    no review until it settles (its summary lists the findings and questions). With
    --checks, also ONE check run `council` on the head (idempotent by the run id),
    annotations batched 50 a request.

    Reads the token from GITHUB_TOKEN (`permissions: pull-requests: write`; with
    --checks also `checks: write`). Exit 2 when the outputs are not this head's run's
    (no council-run.json, another head, a changed or unlisted file), or the token or
    its permissions are wrong (nothing posted, or GitHub refused it); 3 when GitHub
    cannot be reached or rate-limits past a minute.

    With --note FILE instead, only the summary comment is made to say FILE's Markdown
    (why a review that wrote no report could not gate).

    \b
    Example (in a workflow, after `council review ... --output council-out`):
      council publish github --repo "$GITHUB_REPOSITORY" --pr 42 \\
        --head "${{ github.event.pull_request.head.sha }}" --from council-out --checks
    """
    try:
        check_repo(repo_name)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    sha = _checked_head(head if head is not None else _github_head())
    if note is not None:
        if from_dir is not None or report is not None or checks:
            raise UsageProblem(
                "--note posts the summary alone: leave out --from, --report and --checks"
            )
        post = GitHubPost(run_id=NOTE_RUN, head=sha, summary=_note(note))
    else:
        post = _github_inputs(from_dir, report, sha, checks, fail_on, quorum, comment_on)
    token = os.environ.get("GITHUB_TOKEN", "").strip()
    if not token:
        raise UsageProblem(
            "GITHUB_TOKEN is not set: export a token that may write pull requests (in a "
            "workflow: `env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}` and "
            "`permissions: pull-requests: write`)"
        )
    try:
        with GitHubClient(token, repo=repo_name, pr=pr, api_url=api_url) as github:
            publish_github(github, post, click.echo, _warn)
    except PublishError as exc:
        _raise(exc)


@publish_group.command("gitlab")
@click.option(
    "--project",
    envvar="CI_PROJECT_ID",
    required=True,
    metavar="ID",
    help="The project's id or path (env CI_PROJECT_ID, set in GitLab CI).",
)
@click.option(
    "--mr",
    envvar="CI_MERGE_REQUEST_IID",
    type=click.IntRange(min=1),
    required=True,
    metavar="IID",
    help="The merge request's IID (env CI_MERGE_REQUEST_IID).",
)
@_from_option
@_note_option
@_gitlab_head_option
@click.option(
    "--api-url",
    envvar="CI_API_V4_URL",
    default=gitlab_api.DEFAULT_API_URL,
    show_default=True,
    help="GitLab's API (env CI_API_V4_URL, set in GitLab CI).",
)
def publish_gitlab_command(
    project: str, mr: int, from_dir: Path | None, note: Path | None, head: str | None, api_url: str
) -> None:
    """Post threads on a GitLab merge request's diff lines and ONE summary note.

    A thread per finding on a changed line (gitlab-discussions.json, placed with the
    merge request's diff_refs: base_sha, start_sha, head_sha), and the summary note
    (council.md), edited in place on every round. A re-run of the same run posts only
    the threads it has not posted yet; only the note posted by the token's own user is
    ever edited. The Code Quality widget reads gl-code-quality-report.json as an
    artifact (`artifacts: reports: codequality`), not through this command.

    Reads the token from GITLAB_TOKEN (a project access token with the `api` scope and
    the Reporter role), else CI_JOB_TOKEN (which GitLab may not let write notes). Exit
    2 when the outputs are not this head's run's, or the token or its permissions are
    wrong; 3 when GitLab cannot be reached or rate-limits past a minute.

    With --note FILE instead, only the summary note is made to say FILE's Markdown (why
    a review that wrote no report could not gate).

    \b
    Example (in a merge request pipeline, after `council review ... --output council-out`):
      council publish gitlab --from council-out
    """
    sha = _checked_head(head if head is not None else os.environ.get("CI_COMMIT_SHA", ""))
    if note is not None:
        if from_dir is not None:
            raise UsageProblem("--note posts the summary note alone: leave out --from")
        post = GitLabPost(run_id=NOTE_RUN, head=sha, summary=_note(note))
    else:
        post = _gitlab_inputs(from_dir, sha)
    token, kind = _gitlab_token()
    try:
        client = GitLabClient(token, token_kind=kind, project=project, mr=mr, api_url=api_url)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    try:
        with client as gitlab:
            publish_gitlab(gitlab, post, click.echo, _warn)
    except PublishError as exc:
        _raise(exc)


# -- inputs ------------------------------------------------------------------------------
def _github_head() -> str:
    """The pull request's head from GitHub Actions' event file, else ``GITHUB_SHA`` (on
    ``pull_request`` events that is GitHub's merge commit, which the review's outputs
    are not of: the refusal then says so)."""
    event_path = os.environ.get("GITHUB_EVENT_PATH", "")
    if event_path:
        try:
            event = json.loads(Path(event_path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            event = None
        pull = event.get("pull_request") if isinstance(event, dict) else None
        head = pull.get("head") if isinstance(pull, dict) else None
        sha = head.get("sha") if isinstance(head, dict) else None
        if isinstance(sha, str) and sha:
            return sha
    return os.environ.get("GITHUB_SHA", "")


def _checked_head(head: str) -> str:
    if not head.strip():
        raise UsageProblem(
            "pass --head SHA, the commit the review ran on (GitHub: "
            "${{ github.event.pull_request.head.sha }}; GitLab: $CI_COMMIT_SHA): only "
            "outputs of that head are published"
        )
    try:
        return check_head(head)
    except OutputsRefused as exc:
        raise UsageProblem(str(exc)) from None


def _github_inputs(
    from_dir: Path | None,
    report: Path | None,
    head: str,
    checks: bool,
    fail_on: str | None,
    quorum: int | None,
    comment_on: Post | None = None,
) -> GitHubPost:
    """What to post, from a checked --from DIR or a --report of this head, rendered under
    the report's gate policy with ``fail_on`` and ``quorum`` over it when given; with
    ``comment_on``, the review is rendered from the report with it (``--post``)."""
    policy = {
        key: value for key, value in (("fail_on", fail_on), ("quorum", quorum)) if value is not None
    }
    if (from_dir is None) == (report is None):
        raise UsageProblem(
            "pass exactly one of --from DIR (council review's --output) or --report FILE"
        )
    if report is not None:
        parsed = _parse_report(_read(report), str(report), head).gated(**policy)
        return GitHubPost(
            run_id=parsed.run_id,
            head=head,
            review=_object(render_github_review(parsed, post=comment_on or "leading"), report),
            summary=render_markdown(parsed),
            checks=(
                _object(render_github_checks(parsed), report)
                if checks
                else None
            ),
            verdict=exit_code(parsed),
        )
    assert from_dir is not None
    outputs = _outputs(from_dir, head)
    review_text = _output(outputs, "github-review")
    markdown = _output(outputs, "markdown")
    checks_text = _output(outputs, "github-checks") if checks else None
    found = _report_of(outputs)
    found = found.gated(**policy) if found is not None else None
    if comment_on is not None and found is not None:
        review_text = render_github_review(found, post=comment_on)
    if review_text is None or markdown is None or (checks and checks_text is None):
        if found is None:
            wanted = "github-review, markdown" + (", github-checks" if checks else "")
            raise UsageProblem(
                f"{from_dir} holds neither github-review.json and council.md"
                + (" and github-checks.json" if checks else "")
                + " nor council.json: run `council review --format "
                + " --format ".join(wanted.split(", "))
                + f" --output {from_dir}` first"
            )
        if review_text is None:
            review_text = render_github_review(found)
        if markdown is None:
            markdown = render_markdown(found)
        if checks and checks_text is None:
            checks_text = render_github_checks(found)
    path = from_dir / FILE_NAMES["github-review"]
    return GitHubPost(
        run_id=outputs.run_id,
        head=head,
        review=_object(review_text, path),
        summary=markdown,
        checks=_object(checks_text, from_dir / FILE_NAMES["github-checks"])
        if checks_text is not None
        else None,
        verdict=exit_code(found) if found is not None else None,
    )


def _gitlab_inputs(from_dir: Path | None, head: str) -> GitLabPost:
    if from_dir is None:
        raise UsageProblem("pass --from DIR, the --output DIR of `council review`")
    outputs = _outputs(from_dir, head)
    threads = _output(outputs, "gitlab-discussions")
    markdown = _output(outputs, "markdown")
    if markdown is None:
        parsed = _report_of(outputs)
        if parsed is not None:
            markdown = render_markdown(parsed)
    if threads is None or markdown is None:
        raise UsageProblem(
            f"{from_dir} lacks gitlab-discussions.json or council.md: run `council review "
            f"--format gitlab-discussions --format markdown --output {from_dir}` first"
        )
    document = _object(threads, from_dir / FILE_NAMES["gitlab-discussions"])
    discussions = document.get("discussions")
    if not isinstance(discussions, list) or not all(isinstance(d, dict) for d in discussions):
        raise UsageProblem(f"{from_dir / FILE_NAMES['gitlab-discussions']}: no discussions list")
    return GitLabPost(
        run_id=outputs.run_id, head=head, discussions=list(discussions), summary=markdown
    )


def _note(path: Path) -> str:
    """The Markdown of a --note file, at most :data:`NOTE_MAX_BYTES` of it (a longer
    one is cut, saying so); exit 2 when it cannot be read or is blank. It is posted as
    any summary is: through the forge's escaping, marked as of no run."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(NOTE_MAX_BYTES + 1)
    except OSError as exc:
        raise UsageProblem(f"--note {path} cannot be read ({exc.strerror})") from None
    text = raw[:NOTE_MAX_BYTES].decode("utf-8", errors="replace")
    if not text.strip():
        raise UsageProblem(f"--note {path} is empty: write why the review could not gate")
    if len(raw) > NOTE_MAX_BYTES:
        text += f"\n\n(cut at {NOTE_MAX_BYTES} bytes)\n"
    return text


def _gitlab_token() -> tuple[str, TokenKind]:
    token = os.environ.get("GITLAB_TOKEN", "").strip()
    if token:
        return token, "GITLAB_TOKEN"
    job = os.environ.get("CI_JOB_TOKEN", "").strip()
    if job:
        return job, "CI_JOB_TOKEN"
    raise UsageProblem(
        "neither GITLAB_TOKEN nor CI_JOB_TOKEN is set: add a masked CI/CD variable "
        "GITLAB_TOKEN holding a project access token with the `api` scope and the "
        "Reporter role"
    )


def _outputs(directory: Path, head: str) -> RunOutputs:
    try:
        return read_outputs(directory, head)
    except OutputsRefused as exc:
        raise UsageProblem(str(exc)) from None


def _output(outputs: RunOutputs, name: str) -> str | None:
    try:
        return outputs.read(FILE_NAMES[name])
    except OutputsRefused as exc:
        raise UsageProblem(str(exc)) from None


def _report_of(outputs: RunOutputs) -> CouncilReport | None:
    """The run's council.json, which must be of the manifest's run and head."""
    text = _output(outputs, "json")
    if text is None:
        return None
    where = str(outputs.directory / FILE_NAMES["json"])
    parsed = _parse_report(text, where, outputs.head)
    if parsed.run_id != outputs.run_id:
        raise UsageProblem(
            f"{where} is of run {parsed.run_id}, but {MANIFEST_NAME} names run "
            f"{outputs.run_id}: publish the directory one run wrote"
        )
    return parsed


def _parse_report(text: str, where: str, head: str) -> CouncilReport:
    try:
        parsed = read_json(text)
    except UnreadableReport as exc:
        raise UsageProblem(f"{where}: {exc}") from None
    if parsed.head.lower() != head:
        raise UsageProblem(
            f"{where} is a report of head {parsed.head[:12] or '(none)'}, not of "
            f"{head[:12]} (--head): publish the report of the head CI names"
        )
    return parsed


def _object(text: str, where: Path) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageProblem(f"{where} is not JSON ({exc})") from None
    if not isinstance(value, dict) or not isinstance(value.get("body", ""), str):
        raise UsageProblem(f"{where} must be a JSON object (with a string body)")
    return value


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageProblem(f"{path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageProblem(f"{path} cannot be read ({exc})") from None


def _warn(text: str) -> None:
    click.echo(f"council: {text}", err=True)


def _raise(exc: PublishError) -> None:
    if exc.exit_code == 3:
        raise Incomplete(str(exc)) from None
    raise UsageProblem(str(exc)) from None
