"""A fake GitHub REST API: real HTTP on 127.0.0.1, the calls ``council publish`` makes,
every request recorded (without its credentials).

It holds pull requests of one repository (head, reviews with their line comments, issue
comments) and check runs with their annotations; checks the bearer token; pages lists
(``per_page``, ``Link: rel="next"``); and plays scripted failures first
(:meth:`FakeGitHub.fail`), so tests see rate limits, refusals and GitHub's error bodies
arrive over a real socket.

Like GitHub, it answers **422** to a payload that lacks a field the real API requires
(a review comment without ``path``, ``body`` or ``line``; a review update or comment
without ``body``; a dismissal without ``message``; a check run without ``name`` or
``head_sha``, a completed one without ``conclusion``, an ``output`` without ``title``
or ``summary``, an annotation without ``path``, ``start_line``, ``end_line``,
``annotation_level`` or ``message``, more than 50 annotations in one request), so a
payload the fake takes is one GitHub would take.

Who the token is: with ``app=True`` (the default, like ``GITHUB_TOKEN``) ``GET /user``
is 403 "Resource not accessible by integration" and GraphQL's ``viewer`` answers the
bot ``login``; with ``app=False`` (a personal token) ``GET /user`` answers ``login``
and check runs are refused (403), as GitHub refuses them to anything but an App.

Usage::

    with FakeGitHub(token="t0k", repo="octo/app", pulls=(7,)) as github:
        github.fail(429, headers={"Retry-After": "1"})
        ...  # council publish github --api-url github.url ...
        assert [r.method for r in github.mutations()] == ["POST", "POST"]
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.forge_http import Answer, Failure, FakeForge, Received

__all__ = ["Failure", "FakeGitHub", "Pull", "Received"]

DEFAULT_HEAD = "feed" * 10
"""The head of every fake pull request unless a test says otherwise."""

LEVELS = ("notice", "warning", "failure")
CONCLUSIONS = (
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "stale",
    "timed_out",
)


@dataclass
class Pull:
    """One pull request: its head, its reviews (with their line comments, by review id)
    and its issue comments, as GitHub would list them."""

    head: str = DEFAULT_HEAD
    reviews: list[dict[str, Any]] = field(default_factory=list)
    comments: list[dict[str, Any]] = field(default_factory=list)
    review_comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)


def _invalid(*missing: str) -> Answer:
    """GitHub's 422 for a payload that does not match the endpoint's schema."""
    errors = [f'"{name}" wasn\'t supplied.' for name in missing]
    return 422, {}, {"message": "Invalid request.\n\n" + "\n".join(errors), "errors": errors}


class FakeGitHub(FakeForge):
    """The fake GitHub; ``url`` is its base URL (``http://127.0.0.1:PORT``)."""

    def __init__(
        self,
        *,
        token: str,
        repo: str,
        pulls: tuple[int, ...] = (1,),
        login: str = "github-actions[bot]",
        app: bool = True,
    ) -> None:
        super().__init__()
        self.token, self.repo, self.login, self.app = token, repo, login, app
        self.pulls: dict[int, Pull] = {n: Pull() for n in pulls}
        self.check_runs: list[dict[str, Any]] = []
        self.annotations: dict[int, list[dict[str, Any]]] = {}

    @property
    def me(self) -> dict[str, Any]:
        """The ``user`` of what the token posts."""
        return {"login": self.login, "type": "Bot" if self.app else "User"}

    def authorized(self, headers: Mapping[str, str]) -> bool:
        return headers.get("authorization", "") == f"Bearer {self.token}"

    def unauthorized(self) -> Answer:
        return 401, {}, {"message": "Bad credentials"}

    def is_query(self, received: Received) -> bool:
        return received.path == "/graphql"

    def route(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        body: dict[str, Any],
        headers: Mapping[str, str],
    ) -> Answer:
        if path == "/user" and method == "GET":
            if self.app:
                return 403, {}, {"message": "Resource not accessible by integration"}
            return 200, {}, {"login": self.login, "id": 1, "type": "User"}
        if path == "/graphql" and method == "POST":
            if "viewer" not in str(body.get("query", "")):
                return 200, {}, {"errors": [{"message": "unknown query"}]}
            return 200, {}, {"data": {"viewer": {"login": self.login}}}
        prefix = f"/repos/{self.repo}/"
        if not path.startswith(prefix):
            return 404, {}, {"message": "Not Found"}
        rest = path[len(prefix) :]
        if rest.startswith("check-runs") or "/check-runs" in rest:
            return self._checks(method, rest, query, body, path)
        if m := re.fullmatch(r"pulls/(\d+)", rest):
            pull = self.pulls.get(int(m[1]))
            if pull is None or method != "GET":
                return 404, {}, {"message": "Not Found"}
            return 200, {}, {"number": int(m[1]), "head": {"sha": pull.head}}
        if m := re.fullmatch(r"pulls/(\d+)/reviews", rest):
            pull = self.pulls.get(int(m[1]))
            if pull is None:
                return 404, {}, {"message": "Not Found"}
            if method == "GET":
                chunk, links = self.page(pull.reviews, query, path)
                return 200, links, chunk
            return self._create_review(pull, body)
        if m := re.fullmatch(r"pulls/(\d+)/reviews/(\d+)", rest):
            pull = self.pulls.get(int(m[1]))
            found = [r for r in (pull.reviews if pull else []) if r["id"] == int(m[2])]
            if not found or method != "PUT":
                return 404, {}, {"message": "Not Found"}
            if not isinstance(body.get("body"), str):
                return _invalid("body")
            if found[0]["user"] != self.me:
                return 403, {}, {"message": "You can only update your own reviews"}
            found[0]["body"] = body["body"]
            return 200, {}, found[0]
        if m := re.fullmatch(r"pulls/(\d+)/reviews/(\d+)/comments", rest):
            pull = self.pulls.get(int(m[1]))
            if pull is None or method != "GET":
                return 404, {}, {"message": "Not Found"}
            chunk, links = self.page(pull.review_comments.get(int(m[2]), []), query, path)
            return 200, links, chunk
        if m := re.fullmatch(r"pulls/(\d+)/reviews/(\d+)/dismissals", rest):
            pull = self.pulls.get(int(m[1]))
            found = [r for r in (pull.reviews if pull else []) if r["id"] == int(m[2])]
            if not found or method != "PUT":
                return 404, {}, {"message": "Not Found"}
            if not isinstance(body.get("message"), str):
                return _invalid("message")
            found[0]["state"] = "DISMISSED"
            return 200, {}, found[0]
        if m := re.fullmatch(r"issues/(\d+)/comments", rest):
            pull = self.pulls.get(int(m[1]))
            if pull is None:
                return 404, {}, {"message": "Not Found"}
            if method == "GET":
                chunk, links = self.page(pull.comments, query, path)
                return 200, links, chunk
            if not isinstance(body.get("body"), str):
                return _invalid("body")
            comment = {"id": self.next_id(), "body": body["body"], "user": self.me}
            pull.comments.append(comment)
            return 201, {}, comment
        if (m := re.fullmatch(r"issues/comments/(\d+)", rest)) and method == "PATCH":
            if not isinstance(body.get("body"), str):
                return _invalid("body")
            for pull in self.pulls.values():
                for comment in pull.comments:
                    if comment["id"] == int(m[1]):  # GitHub lets a writer edit anyone's
                        comment["body"] = body["body"]
                        return 200, {}, comment
        return 404, {}, {"message": "Not Found"}

    # -- reviews ---------------------------------------------------------------------------
    def _create_review(self, pull: Pull, body: dict[str, Any]) -> Answer:
        event = body.get("event")
        if event is not None and event not in ("COMMENT", "REQUEST_CHANGES", "APPROVE"):
            return 422, {}, {"message": "Unprocessable Entity", "errors": ["bad event"]}
        comments = body.get("comments") or []
        for comment in comments:
            missing = [k for k in ("path", "body") if not isinstance(comment.get(k), str)]
            if not isinstance(comment.get("line"), int) and "position" not in comment:
                missing.append("line")
            if missing:
                return _invalid(*missing)
            if comment.get("side", "RIGHT") not in ("LEFT", "RIGHT"):
                return 422, {}, {"message": "Unprocessable Entity", "errors": ["bad side"]}
            start = comment.get("start_line")
            if start is not None and not start < comment["line"]:
                return 422, {}, {"message": "Unprocessable Entity", "errors": ["bad start_line"]}
            if comment.get("line") == 999_999:
                return (
                    422,
                    {},
                    {"message": "Unprocessable Entity", "errors": ["Line could not be resolved"]},
                )
        state = {"REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}.get(
            str(event), "PENDING"
        )
        review = {
            "id": self.next_id(),
            "state": state,
            "body": body.get("body", ""),
            "commit_id": body.get("commit_id", pull.head),
            "user": self.me,
        }
        pull.reviews.append(review)
        pull.review_comments[review["id"]] = [
            {
                "id": self.next_id(),
                "pull_request_review_id": review["id"],
                "path": c["path"],
                "line": c["line"],
                "original_line": c["line"],
                "side": c.get("side", "RIGHT"),
                "start_line": c.get("start_line"),
                "body": c["body"],
                "user": self.me,
            }
            for c in comments
        ]
        return 200, {}, review

    # -- check runs ------------------------------------------------------------------------
    def _checks(
        self, method: str, rest: str, query: dict[str, str], body: dict[str, Any], path: str
    ) -> Answer:
        if not self.app:
            return 403, {}, {"message": "Resource not accessible by personal access token"}
        if (m := re.fullmatch(r"commits/([0-9a-f]+)/check-runs", rest)) and method == "GET":
            runs = [r for r in self.check_runs if r["head_sha"] == m[1]]
            if "check_name" in query:
                runs = [r for r in runs if r["name"] == query["check_name"]]
            if query.get("filter", "latest") == "latest":
                latest: dict[str, dict[str, Any]] = {}
                for run in runs:
                    latest[run["name"]] = run
                runs = list(latest.values())
            chunk, links = self.page(runs, query, path)
            return 200, links, {"total_count": len(runs), "check_runs": chunk}
        if rest == "check-runs" and method == "POST":
            missing = [k for k in ("name", "head_sha") if not isinstance(body.get(k), str)]
            if missing:
                return _invalid(*missing)
            refused = self._check_fields(body)
            if refused is not None:
                return refused
            ident = self.next_id()
            run: dict[str, Any] = {
                "id": ident,
                "name": body["name"],
                "head_sha": body["head_sha"],
                "external_id": body.get("external_id", ""),
                "status": body.get("status", "queued"),
                "conclusion": body.get("conclusion"),
                "output": {"title": None, "summary": None, "text": None, "annotations_count": 0},
                "app": {"slug": self.login.removesuffix("[bot]")},
            }
            self.check_runs.append(run)
            self.annotations[ident] = []
            self._apply_output(run, body)
            return 201, {}, run
        if (m := re.fullmatch(r"check-runs/(\d+)", rest)) and method == "PATCH":
            found = [r for r in self.check_runs if r["id"] == int(m[1])]
            if not found:
                return 404, {}, {"message": "Not Found"}
            merged = {"status": found[0]["status"], "conclusion": found[0]["conclusion"], **body}
            refused = self._check_fields(merged)
            if refused is not None:
                return refused
            for key in ("status", "conclusion", "external_id"):
                if key in body:
                    found[0][key] = body[key]
            self._apply_output(found[0], body)
            return 200, {}, found[0]
        return 404, {}, {"message": "Not Found"}

    @staticmethod
    def _check_fields(body: Mapping[str, Any]) -> Answer | None:
        if body.get("status") == "completed" and body.get("conclusion") not in CONCLUSIONS:
            return _invalid("conclusion")
        output = body.get("output")
        if output is None:
            return None
        if not isinstance(output, dict):
            return _invalid("output")
        missing = [k for k in ("title", "summary") if not isinstance(output.get(k), str)]
        if missing:
            return _invalid(*(f"output.{k}" for k in missing))
        annotations = output.get("annotations") or []
        if len(annotations) > 50:
            return (
                422,
                {},
                {"message": "Only 50 annotations are allowed per request", "errors": []},
            )
        for note in annotations:
            need = ("path", "start_line", "end_line", "annotation_level", "message")
            missing = [k for k in need if k not in note]
            if missing:
                return _invalid(*(f"annotations.{k}" for k in missing))
            if note["annotation_level"] not in LEVELS:
                return _invalid("annotations.annotation_level")
            if not note["start_line"] <= note["end_line"]:
                return 422, {}, {"message": "start_line must be <= end_line", "errors": []}
        return None

    def _apply_output(self, run: dict[str, Any], body: Mapping[str, Any]) -> None:
        output = body.get("output")
        if not isinstance(output, dict):
            return
        for key in ("title", "summary", "text"):
            if key in output:
                run["output"][key] = output[key]
        added = list(output.get("annotations") or [])
        self.annotations[run["id"]].extend(added)
        run["output"]["annotations_count"] = len(self.annotations[run["id"]])
