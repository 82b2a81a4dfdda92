"""A fake GitLab REST API (v4): real HTTP on 127.0.0.1, the calls ``council publish
gitlab`` makes, every request recorded (without its credentials).

It holds merge requests of one project (``diff_refs``, ``sha``, versions, discussions,
notes), checks the token (``PRIVATE-TOKEN``; a ``JOB-TOKEN`` is refused with 401 on
the endpoints council uses, as GitLab refuses a job token there), pages lists with
``X-Next-Page`` and ``Link``, and plays scripted failures first.

Like GitLab, it answers **400** with GitLab's message to a payload missing what the
API requires (GitLab says 400 where GitHub says 422): a note or thread without
``body`` ("body is missing"); a position without ``position_type``, ``base_sha``,
``start_sha`` or ``head_sha``, or with no ``new_line``/``old_line``, or without
``new_path``/``old_path``; a position whose ``head_sha`` is no version of the merge
request; and a line in :attr:`MergeRequest.unplaceable` ("line_code can't be blank").

Usage::

    with FakeGitLab(token="glpat-x", project="42", mrs=(3,)) as gitlab:
        gitlab.mrs[3].head = sha
        ...  # council publish gitlab --api-url gitlab.url --project 42 --mr 3 ...
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from tests.fakes.forge_http import Answer, FakeForge

__all__ = ["FakeGitLab", "MergeRequest"]

BASE = "ba5e" * 10
START = "57a7" * 10


@dataclass
class MergeRequest:
    """One merge request: its head, older versions' heads, threads and notes."""

    head: str = "feed" * 10
    older_heads: list[str] = field(default_factory=list)
    discussions: list[dict[str, Any]] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    unplaceable: set[tuple[str, int]] = field(default_factory=set)
    """(path, line) positions GitLab refuses with 400 (the line is not in its diff)."""

    def versions(self) -> list[dict[str, Any]]:
        """The diff versions, newest first."""
        heads = [self.head, *reversed(self.older_heads)]
        return [
            {
                "id": index + 1,
                "head_commit_sha": sha,
                "base_commit_sha": BASE,
                "start_commit_sha": START,
            }
            for index, sha in enumerate(heads)
        ]


def _missing(what: str) -> Answer:
    return 400, {}, {"error": f"{what} is missing"}


class FakeGitLab(FakeForge):
    """The fake GitLab; ``url`` is its API base (``http://127.0.0.1:PORT/api/v4``)."""

    def __init__(
        self,
        *,
        token: str,
        project: str = "42",
        mrs: tuple[int, ...] = (1,),
        user_id: int = 77,
        username: str = "council-bot",
    ) -> None:
        super().__init__()
        self.url += "/api/v4"
        self.token, self.project = token, project
        self.user = {"id": user_id, "username": username}
        self.mrs: dict[int, MergeRequest] = {n: MergeRequest() for n in mrs}

    def authorized(self, headers: Mapping[str, str]) -> bool:
        return headers.get("private-token", "") == self.token

    def route(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        body: dict[str, Any],
        headers: Mapping[str, str],
    ) -> Answer:
        rest = path.removeprefix("/api/v4")
        if rest == "/user" and method == "GET":
            return 200, {}, self.user
        m = re.fullmatch(r"/projects/([^/]+)/merge_requests/(\d+)(/.*)?", rest)
        if m is None or unquote(m[1]) != self.project:
            return 404, {}, {"message": "404 Project Not Found"}
        request = self.mrs.get(int(m[2]))
        if request is None:
            return 404, {}, {"message": "404 Not found"}
        tail = m[3] or ""
        if tail == "" and method == "GET":
            return 200, {}, self._mr(int(m[2]), request)
        if tail == "/versions" and method == "GET":
            return self._paged(request.versions(), query, path)
        if tail == "/discussions":
            if method == "GET":
                return self._paged(request.discussions, query, path)
            if method == "POST":
                return self._discuss(request, body)
        if tail == "/notes":
            if method == "GET":
                return self._paged(request.notes, query, path)
            if method == "POST":
                if not isinstance(body.get("body"), str) or not body["body"]:
                    return _missing("body")
                note = self._note(body["body"])
                request.notes.append(note)
                return 201, {}, note
        if (n := re.fullmatch(r"/notes/(\d+)", tail)) and method == "PUT":
            if not isinstance(body.get("body"), str):
                return _missing("body")
            for note in request.notes:
                if note["id"] == int(n[1]):  # GitLab lets a maintainer edit anyone's
                    note["body"] = body["body"]
                    return 200, {}, note
        return 404, {}, {"message": "404 Not Found"}

    def _mr(self, iid: int, request: MergeRequest) -> dict[str, Any]:
        return {
            "iid": iid,
            "sha": request.head,
            "diff_refs": {"base_sha": BASE, "start_sha": START, "head_sha": request.head},
        }

    def _paged(self, items: list[Any], query: dict[str, str], path: str) -> Answer:
        chunk, links = self.page(items, query, path)
        page = int(query.get("page", "1"))
        headers = dict(links)
        headers["X-Next-Page"] = str(page + 1) if links else ""
        return 200, headers, chunk

    def _note(self, body: str, position: dict[str, Any] | None = None) -> dict[str, Any]:
        note: dict[str, Any] = {
            "id": self.next_id(),
            "body": body,
            "author": dict(self.user),
            "system": False,
        }
        if position is not None:
            note["position"] = position
            note["type"] = "DiffNote"
        return note

    def _discuss(self, request: MergeRequest, body: dict[str, Any]) -> Answer:
        if not isinstance(body.get("body"), str) or not body["body"]:
            return _missing("body")
        position = body.get("position")
        if position is not None:
            if not isinstance(position, dict):
                return 400, {}, {"error": "position is invalid"}
            for key in ("position_type", "base_sha", "start_sha", "head_sha"):
                if not position.get(key):
                    return _missing(f"position[{key}]")
            if position["position_type"] != "text":
                return 400, {}, {"error": "position[position_type] does not have a valid value"}
            if not position.get("new_path") or not position.get("old_path"):
                return 400, {}, {"message": {"base": ["new_path or old_path is missing"]}}
            if "new_line" not in position and "old_line" not in position:
                return 400, {}, {"message": {"line_code": ["can't be blank"]}}
            heads = {v["head_commit_sha"] for v in request.versions()}
            if position["head_sha"] not in heads:
                return 400, {}, {"message": {"base": ["head_sha is not a version of the MR"]}}
            line = position.get("new_line") or position.get("old_line")
            path = position["new_path"] if "new_line" in position else position["old_path"]
            if (path, line) in request.unplaceable:
                return (
                    400,
                    {},
                    {"message": {"line_code": ["can't be blank", "must be a valid line code"]}},
                )
        note = self._note(body["body"], position)
        discussion = {"id": f"d{self.next_id()}", "individual_note": False, "notes": [note]}
        request.discussions.append(discussion)
        return 201, {}, discussion
