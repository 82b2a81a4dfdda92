"""Posting one run's outputs on a GitHub pull request so that doing it twice changes nothing.

ONE review per run, ONE summary comment per pull request, ONE check run. What council posted
is found by a hidden marker on the body's first line AND the token's own user
(:meth:`~workers.forge.github.GitHubClient.whoami`): anyone can type a marker, and a
maintainer's token may edit anyone's comment. GitHub creates a review whole and then lets
REST change only its body, so a retried publish brings the body up to date (listing any line
comment it lacks) rather than posting a second review. The check run (``external_id`` = the
run id) gets only the annotations past its ``annotations_count``, since GitHub appends each
update's. A run waiting on a person (exit 4) posts no review: its run's review is posted
once it settles, and GitHub never changes a submitted review's verdict. Council's earlier
reviews that request changes are dismissed only by a round that passed (exit 0).
Every body goes through :func:`~council.rendering.escape.for_forge`, every
annotation's texts through :func:`~council.rendering.escape.no_controls`. Source:
docs/ci-and-forges.md "Publishing is idempotent".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from council.rendering.escape import code, for_forge, no_controls
from council.rendering.github_checks import ANNOTATIONS_PER_REQUEST, CHECK_NAME
from council.rendering.github_review import fit_body
from council.round.gate import EXIT_PASSED, EXIT_WAITING
from workers.forge.github import GitHubClient, GitHubInvalid, Identity, PublishError
from workers.forge.markers import Say, is_summary, marked_run, marker, upsert_summary

REVIEW_PREFIX = "<!-- council:review"
"""How every review council posts starts (earlier versions: ``<!-- council:review -->``)."""

REFUSED_HEADING = "### Line comments GitHub refused"
"""The body section holding line comments GitHub would not take as comments."""


@dataclass(frozen=True)
class GitHubPost:
    """What one run publishes: its review, its summary Markdown, its check run."""

    run_id: str
    head: str
    review: dict[str, Any] | None = None
    summary: str | None = None
    checks: dict[str, Any] | None = None
    verdict: int | None = None
    """The run's exit code by its report (0 passed, 1 tripped, 3 incomplete, 4 waiting on
    a person); None when no report came with the outputs: nothing is then dismissed."""


def publish_github(github: GitHubClient, post: GitHubPost, say: Say, warn: Say) -> None:
    """Post (or bring up to date) ``post`` on the client's pull request."""
    me = github.whoami()
    head_now = _head_of(github.pull())
    current = head_now == post.head
    say(f"publishing run {post.run_id} at {post.head[:12]} as {me.login}")
    if not current:
        warn(
            f"the pull request's head is now {head_now[:12] or '?'}, not {post.head[:12]}: "
            "the review goes on its own commit; earlier reviews and another run's "
            "summary are left as they are"
        )
    if post.review is not None and post.verdict == EXIT_WAITING:
        say(
            f"run {post.run_id} waits on a person: its review is posted once it settles "
            "(GitHub never changes a submitted review's verdict); earlier reviews stand"
        )
    elif post.review is not None:
        _publish_review(github, me, post, current, say, warn)
    if post.summary is not None:
        _publish_summary(github, me, post, current, say)
    if post.checks is not None:
        _publish_checks(github, me, post, say)


# -- the review --------------------------------------------------------------------------
def _publish_review(
    github: GitHubClient, me: Identity, post: GitHubPost, current: bool, say: Say, warn: Say
) -> None:
    assert post.review is not None
    review = dict(post.review)
    review["commit_id"] = post.head
    comments = [
        {**c, "body": for_forge(str(c.get("body", "")))} for c in review.get("comments") or []
    ]
    review["comments"] = comments
    review["body"] = _body("review", post, str(review.get("body", "")))
    ours = [
        r
        for r in github.reviews()
        if me.owns(r)
        and str(r.get("body", "")).startswith(REVIEW_PREFIX)
        and isinstance(r.get("id"), int)
    ]
    this_run = [r for r in ours if marked_run(str(r.get("body", ""))) == (post.run_id, post.head)]
    event = review.get("event", "COMMENT")
    if this_run:
        review_id = int(this_run[0]["id"])
        _bring_up_to_date(github, this_run[0], review, say)
    else:
        review_id = _create_review(github, review, say, warn)
    if post.verdict == EXIT_PASSED and current:
        _dismiss_stale(github, ours, review_id, say, warn)
    elif post.verdict is None and event != "REQUEST_CHANGES":
        warn(
            "no council.json came with the outputs, so whether the round passed is not "
            "known: council's earlier reviews that request changes are kept (write "
            "--format json too)"
        )


def _create_review(github: GitHubClient, review: dict[str, Any], say: Say, warn: Say) -> int:
    comments = review["comments"]
    try:
        created = github.create_review(review)
    except GitHubInvalid as exc:
        if not comments:
            raise
        warn(f"{exc}; posting the review again with its line comments in the body")
        created = github.create_review(comments_in_body(review, str(exc)))
        comments = []
    review_id = int(created.get("id", 0))
    say(
        f"posted review {review_id} on {github.repo}#{github.pr} "
        f"({review.get('event', 'COMMENT')}, {len(comments)} line comment(s))"
    )
    return review_id


def _bring_up_to_date(
    github: GitHubClient, existing: Mapping[str, Any], review: dict[str, Any], say: Say
) -> None:
    """Our review of this run exists: make its body right; never a second review."""
    review_id = int(existing["id"])
    have = {_place(c) for c in github.review_comments(review_id)}
    missing = [c for c in review["comments"] if _place(c) not in have]
    old_body = str(existing.get("body", ""))
    body = review["body"]
    if missing:
        body = comments_in_body(
            {**review, "comments": missing},
            "GitHub did not keep these as line comments of this review.",
        )["body"]
    posted = len(review["comments"]) - len(missing)
    if old_body == body or (missing and REFUSED_HEADING in old_body):
        say(
            f"review {review_id} of this run is already posted ({posted} line comment(s)); "
            "nothing to change"
        )
        return
    github.update_review(review_id, body)
    say(
        f"review {review_id} of this run was already posted ({posted} line comment(s)); "
        "updated its body"
        + (f", listing the {len(missing)} missing line comment(s) in it" if missing else "")
    )


def _place(comment: Mapping[str, Any]) -> tuple[str, int, str]:
    """Where a line comment sits: path, line (its original line once outdated), side."""
    line = comment.get("line") or comment.get("original_line") or 0
    return str(comment.get("path", "")), int(line), str(comment.get("side") or "RIGHT")


def _dismiss_stale(
    github: GitHubClient, ours: list[dict[str, Any]], latest: int, say: Say, warn: Say
) -> None:
    """Dismiss council's earlier reviews that still request changes (warn on failure:
    the round's review is posted, that is what matters)."""
    try:
        for old in ours:
            ident = old["id"]
            if old.get("state") == "CHANGES_REQUESTED" and ident != latest:
                github.dismiss_review(
                    ident, f"council: superseded by review {latest}, of a round that passed"
                )
                say(f"dismissed review {ident} (it requested changes)")
    except PublishError as exc:
        warn(f"warning: earlier reviews were not dismissed: {exc}")


def comments_in_body(review: dict[str, Any], why: str) -> dict[str, Any]:
    """The review without line comments, each of them written into its body instead."""
    parts = [str(review.get("body", "")), REFUSED_HEADING, why]
    for comment in review.get("comments") or []:
        line = comment.get("line")
        start = comment.get("start_line")
        where = f"{comment.get('path')}:{f'{start}-{line}' if start else line}"
        side = " (old side)" if comment.get("side") == "LEFT" else ""
        parts.append(f"{code(where)}{side}\n\n{comment.get('body', '')}")
    return {**review, "body": fit_body(for_forge("\n\n".join(parts))), "comments": []}


# -- the summary -------------------------------------------------------------------------
def _publish_summary(
    github: GitHubClient, me: Identity, post: GitHubPost, current: bool, say: Say
) -> None:
    assert post.summary is not None
    ours = [
        (int(c["id"]), str(c.get("body", "")))
        for c in github.comments()
        if me.owns(c) and is_summary(str(c.get("body", ""))) and isinstance(c.get("id"), int)
    ]
    upsert_summary(
        ours,
        _body("summary", post, post.summary),
        run=(post.run_id, post.head),
        current=current,
        create=github.create_comment,
        update=github.update_comment,
        noun="summary comment",
        say=say,
    )


# -- the check run -----------------------------------------------------------------------
def _publish_checks(github: GitHubClient, me: Identity, post: GitHubPost, say: Say) -> None:
    assert post.checks is not None
    run = {**post.checks, "name": CHECK_NAME, "head_sha": post.head, "external_id": post.run_id}
    output = dict(run.pop("output", None) or {})
    annotations = [_shown_annotation(a) for a in output.pop("annotations", None) or []]
    output["summary"] = for_forge(str(output.get("summary", "")))
    output["text"] = for_forge(str(output.get("text", "")))
    slug = me.app_slug
    existing = [
        r
        for r in github.check_runs(post.head, CHECK_NAME)
        if r.get("external_id") == post.run_id
        and isinstance(r.get("id"), int)
        and (slug is None or _app_slug(r) in (None, slug))
    ]
    if existing:
        found = existing[0]
        ident = int(found["id"])
        have = _annotations_count(found)
        remaining = annotations[have:]
        if not remaining and _same(found, run, output):
            say(f"check run {ident} of this run is up to date ({have} annotation(s))")
            return
        say(f"check run {ident} of this run exists with {have} annotation(s); updating it")
    else:
        first = annotations[:ANNOTATIONS_PER_REQUEST]
        created = github.create_check_run({**run, "output": {**output, "annotations": first}})
        ident = int(created.get("id", 0))
        remaining = annotations[len(first) :]
        say(f"created check run {ident} ({run.get('conclusion')}, {len(first)} annotation(s))")
        if not remaining:
            return
    batches = [
        remaining[i : i + ANNOTATIONS_PER_REQUEST]
        for i in range(0, len(remaining), ANNOTATIONS_PER_REQUEST)
    ] or [[]]
    for batch in batches:
        update = {k: v for k, v in run.items() if k not in ("name", "head_sha", "external_id")}
        github.update_check_run(ident, {**update, "output": {**output, "annotations": batch}})
    say(f"check run {ident}: {len(annotations)} annotation(s) in all")


def _shown_annotation(annotation: Mapping[str, Any]) -> dict[str, Any]:
    """An annotation as posted: its title (one line), message and raw details (council
    writes none, GitHub takes them) without a raw control or bidirectional character;
    its path, lines and level as they were."""
    shown = dict(annotation)
    for key in ("title", "message", "raw_details"):
        if isinstance(shown.get(key), str):
            shown[key] = no_controls(shown[key], one_line=key == "title")
    return shown


def _app_slug(run: Mapping[str, Any]) -> str | None:
    app = run.get("app")
    slug = app.get("slug") if isinstance(app, dict) else None
    return slug if isinstance(slug, str) else None


def _annotations_count(run: Mapping[str, Any]) -> int:
    output = run.get("output")
    count = output.get("annotations_count") if isinstance(output, dict) else None
    return count if isinstance(count, int) and count >= 0 else 0


def _same(found: Mapping[str, Any], run: Mapping[str, Any], output: Mapping[str, Any]) -> bool:
    """Whether a check run already says what ``run`` and ``output`` say."""
    shown = found.get("output") if isinstance(found.get("output"), dict) else {}
    assert isinstance(shown, dict)
    return (
        found.get("status") == run.get("status")
        and found.get("conclusion") == run.get("conclusion")
        and all(shown.get(k) == output.get(k) for k in ("title", "summary", "text"))
    )


# -- helpers -----------------------------------------------------------------------------
def _body(kind: str, post: GitHubPost, text: str) -> str:
    """A body as posted: the run's marker, then the text :func:`for_forge` made safe,
    fitted."""
    return fit_body(f"{marker(kind, post.run_id, post.head)}\n{for_forge(text)}")


def _head_of(pull: Mapping[str, Any]) -> str:
    head = pull.get("head")
    sha = head.get("sha") if isinstance(head, dict) else None
    return sha.lower() if isinstance(sha, str) else ""
