"""Posting one run's outputs on a GitLab merge request so that doing it twice changes nothing.

One thread per finding on its diff line, ONE summary note per merge request. As on GitHub
(:mod:`workers.forge.github_publish`), what council posted is found by a hidden marker AND
the token's user id: GitLab lets a maintainer edit others' notes. Threads are separate
notes, so a re-run posts only those this run lacks. A thread is placed with the
``diff_refs`` of the merge request's version at the run's head (its own, or one of
``/versions`` once it moved on); with no such version, or a position GitLab refuses (400),
the finding goes into the summary note, never away. Bodies go through
:func:`~council.rendering.gitlab.gitlab_safe`: no mention notifies, no line runs as a quick
action. Source: docs/ci-and-forges.md "Publishing is idempotent".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from council.rendering.escape import code
from council.rendering.github_review import fit_body
from council.rendering.gitlab import gitlab_safe
from workers.forge.gitlab import GitLabClient, GitLabInvalid
from workers.forge.markers import Say, is_summary, marker, upsert_summary

NOTE_CHARS = 1_000_000
"""GitLab's limit on a note's body, in characters."""

REFUSED_HEADING = "### Findings not placed on the diff"
"""The summary section for threads GitLab did not take (or that had no version)."""

_THREAD = re.compile(r"<!-- council:finding run=(\S+) head=(\S+) id=(\S+) -->")


@dataclass(frozen=True)
class GitLabPost:
    """What one run publishes: its threads and its summary Markdown."""

    run_id: str
    head: str
    discussions: list[dict[str, Any]] = field(default_factory=list)
    summary: str | None = None


def publish_gitlab(gitlab: GitLabClient, post: GitLabPost, say: Say, warn: Say) -> None:
    """Post (or bring up to date) ``post`` on the client's merge request."""
    me = gitlab.whoami()
    my_id = me.get("id")
    if not isinstance(my_id, int):
        raise GitLabInvalid(
            "GitLab did not say who the token is (GET /user has no id); nothing was posted"
        )
    request = gitlab.merge_request()
    head_now = str(request.get("sha") or "").lower()
    current = head_now == post.head
    say(f"publishing run {post.run_id} at {post.head[:12]} as {me.get('username', my_id)}")
    if not current:
        warn(
            f"the merge request's head is now {head_now[:12] or '?'}, not {post.head[:12]}: "
            "threads go on that version's diff; another run's summary is left as it is"
        )
    refused = _publish_threads(gitlab, my_id, post, _refs(gitlab, request, post.head), say, warn)
    if post.summary is not None:
        _publish_summary(gitlab, my_id, post, refused, current, say)


def _refs(gitlab: GitLabClient, request: Mapping[str, Any], head: str) -> dict[str, str] | None:
    """The base, start and head sha of the merge request's version at ``head``."""
    refs = request.get("diff_refs")
    if isinstance(refs, dict) and str(refs.get("head_sha", "")).lower() == head:
        return {k: str(refs.get(k, "")) for k in ("base_sha", "start_sha", "head_sha")}
    for version in gitlab.versions():
        if str(version.get("head_commit_sha", "")).lower() == head:
            return {
                "base_sha": str(version.get("base_commit_sha", "")),
                "start_sha": str(version.get("start_commit_sha", "")),
                "head_sha": str(version.get("head_commit_sha", "")),
            }
    return None


def _publish_threads(
    gitlab: GitLabClient,
    my_id: int,
    post: GitLabPost,
    refs: dict[str, str] | None,
    say: Say,
    warn: Say,
) -> list[dict[str, Any]]:
    """Post the threads this run has not posted yet; those that could not be placed."""
    if not post.discussions:
        return []
    if refs is None:
        warn(
            f"the merge request has no diff version at {post.head[:12]}: its "
            f"{len(post.discussions)} line finding(s) go into the summary note"
        )
        return list(post.discussions)
    posted: set[str] = set()
    for discussion in gitlab.discussions():
        notes = discussion.get("notes")
        first = notes[0] if isinstance(notes, list) and notes else None
        if not isinstance(first, dict) or _author(first) != my_id:
            continue
        found = _THREAD.fullmatch(str(first.get("body", "")).split("\n", 1)[0].strip())
        if found and (found.group(1), found.group(2)) == (post.run_id, post.head):
            posted.add(found.group(3))
    refused: list[dict[str, Any]] = []
    created = 0
    for thread in post.discussions:
        key = str(thread.get("finding"))
        if key in posted:
            continue
        head = f"<!-- council:finding run={post.run_id} head={post.head} id={key} -->"
        body = f"{head}\n{gitlab_safe(str(thread.get('body', '')))}"
        position = {"position_type": "text", **refs, **dict(thread.get("position") or {})}
        try:
            gitlab.create_discussion(body, position)
        except GitLabInvalid as exc:
            warn(f"{exc}; finding {key} goes into the summary note")
            refused.append(thread)
            continue
        created += 1
    kept = len(posted & {str(t.get("finding")) for t in post.discussions})
    say(
        f"started {created} thread(s) on the diff"
        + (f"; {kept} of this run were already there" if kept else "")
    )
    return refused


def _publish_summary(
    gitlab: GitLabClient,
    my_id: int,
    post: GitLabPost,
    refused: list[dict[str, Any]],
    current: bool,
    say: Say,
) -> None:
    assert post.summary is not None
    text = post.summary
    if refused:
        parts = [text.rstrip("\n"), REFUSED_HEADING]
        for thread in refused:
            where = thread.get("position") or {}
            line = where.get("new_line") or where.get("old_line")
            path = where.get("new_path") if where.get("new_line") else where.get("old_path")
            parts.append(f"{code(f'{path}:{line}')}\n\n{thread.get('body', '')}")
        text = "\n\n".join(parts) + "\n"
    body = fit_body(f"{marker('summary', post.run_id, post.head)}\n{gitlab_safe(text)}", NOTE_CHARS)
    ours = [
        (int(n["id"]), str(n.get("body", "")))
        for n in gitlab.notes()
        if not n.get("system")
        and _author(n) == my_id
        and is_summary(str(n.get("body", "")))
        and isinstance(n.get("id"), int)
    ]
    upsert_summary(
        ours,
        body,
        run=(post.run_id, post.head),
        current=current,
        create=gitlab.create_note,
        update=gitlab.update_note,
        noun="summary note",
        say=say,
    )


def _author(note: Mapping[str, Any]) -> int | None:
    author = note.get("author")
    ident = author.get("id") if isinstance(author, dict) else None
    return ident if isinstance(ident, int) else None
