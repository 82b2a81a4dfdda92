"""``council publish github`` and its client, against a fake GitHub API over real HTTP.

The outputs are written as ``council review --output`` writes them (with their
``council-run.json``); idempotency, forged outputs and check runs have their own
files (``test_publish_idempotent.py``, ``test_publish_forged.py``,
``test_publish_checks.py``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from council.model.findings import LineAnchor
from council.rendering import render_json
from tests.fakes.github_api import FakeGitHub
from tests.forge_cases import ESCAPED, HOSTILE, RAW, finding, forge_strings, report
from tests.forge_outputs import (
    CI_ENV,
    HEAD,
    PR,
    REPO,
    TOKEN,
    outputs,
    publish,
    quick_pacing,
    rewrite,
)
from workers.cli import main
from workers.cli import publish as publish_module
from workers.forge.github import GitHubClient, GitHubUnavailable, Pacer
from workers.forge.manifest import MANIFEST_NAME

CRITICAL = finding(1, LineAnchor(path="app.py", line=2), severity="critical", subject="div0")


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """A fake GitHub holding pull request 7 of octo/app."""
    with FakeGitHub(token=TOKEN, repo=REPO, pulls=(PR,)) as fake:
        fake.pulls[PR].head = HEAD
        yield fake


@pytest.fixture(autouse=True)
def paced_quickly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pace mutations 20 ms apart in these tests (the 1 s default has its own test)."""
    quick_pacing(monkeypatch)


def test_one_review_and_one_summary_then_patched(github: FakeGitHub, tmp_path: Path) -> None:
    """First round: a review and a new summary comment; the next round (another run) a
    new review, and the same comment edited."""
    first = publish(github, "--from", str(outputs(tmp_path, CRITICAL)))
    assert first.exit_code == 0, first.output
    later = outputs(tmp_path, CRITICAL, name="later", run_id="r2")
    second = publish(github, "--from", str(later))
    assert second.exit_code == 0, second.output
    calls = [(r.method, r.path.split(f"/{PR}/")[-1]) for r in github.mutations()]
    assert calls == [
        ("POST", "reviews"),
        ("POST", "comments"),
        ("POST", "reviews"),
        ("PATCH", f"/repos/{REPO}/issues/comments/{github.pulls[PR].comments[0]['id']}"),
    ]
    pull = github.pulls[PR]
    assert len(pull.reviews) == 2 and len(pull.comments) == 1
    assert pull.comments[0]["body"].startswith(f"<!-- council:summary run=r2 head={HEAD} -->\n## ")
    review = github.mutations()[0].body
    assert review["body"].startswith(f"<!-- council:review run=r1 head={HEAD} -->\n")
    assert review["event"] == "REQUEST_CHANGES" and review["commit_id"] == HEAD
    assert review["comments"][0]["path"] == "app.py" and review["comments"][0]["line"] == 2
    assert TOKEN not in first.output + second.output


def test_passing_round_dismisses_councils_stale_request(github: FakeGitHub, tmp_path: Path) -> None:
    """A passing round dismisses council's earlier REQUEST_CHANGES review, not others'."""
    github.pulls[PR].reviews.append(
        {"id": 5, "state": "CHANGES_REQUESTED", "body": "a person's review", "user": {}}
    )
    assert publish(github, "--from", str(outputs(tmp_path, CRITICAL))).exit_code == 0
    done = publish(github, "--from", str(outputs(tmp_path, name="clean", run_id="r2")))
    assert done.exit_code == 0, done.output
    states = {r["id"]: r["state"] for r in github.pulls[PR].reviews}
    assert states[5] == "CHANGES_REQUESTED"
    assert sorted(states.values()) == ["CHANGES_REQUESTED", "COMMENTED", "DISMISSED"]
    assert "dismissed review" in done.output


def test_from_report_renders_review_and_summary(github: FakeGitHub, tmp_path: Path) -> None:
    """--report council.json: the review and the summary are rendered from it."""
    path = tmp_path / "council.json"
    path.write_text(render_json(report(CRITICAL)))
    done = publish(github, "--report", str(path))
    assert done.exit_code == 0, done.output
    assert github.mutations()[0].body["event"] == "REQUEST_CHANGES"


def test_summary_found_on_a_later_page(github: FakeGitHub, tmp_path: Path) -> None:
    """The marked comment sits on page 3 of the comments: it is found and edited."""
    pull = github.pulls[PR]
    pull.comments += [{"id": i, "body": f"chatter {i}", "user": {}} for i in range(250)]
    pull.comments.append({"id": 900, "body": "<!-- council:summary -->\nold", "user": github.me})
    done = publish(github, "--from", str(outputs(tmp_path)))
    assert done.exit_code == 0, done.output
    assert pull.comments[-1]["body"] != "<!-- council:summary -->\nold"
    assert len(pull.comments) == 251
    pages = [r.query.get("page", "1") for r in github.requests if r.path.endswith("/comments")]
    assert pages == ["1", "2", "3"]


@pytest.mark.parametrize(
    ("status", "words"),
    [
        (401, ["401", "GITHUB_TOKEN", "missing, expired or wrong"]),
        (403, ["403", "GITHUB_TOKEN", "pull-requests: write"]),
        (404, ["404", "octo/app", "#7", "token"]),
    ],
)
def test_refusals_are_explained(
    github: FakeGitHub, tmp_path: Path, status: int, words: list[str]
) -> None:
    """401, 403 and 404: exit 2 with what to fix (the token's variable, the permission
    the call needs); the token is never printed."""
    path = "/reviews" if status == 403 else None
    github.fail(status, body={"message": "nope"}, path_contains=path)
    done = publish(github, "--from", str(outputs(tmp_path)))
    assert done.exit_code == 2, done.output
    for word in words:
        assert word in done.output
    assert TOKEN not in done.output


def test_unknown_pull_request_is_404(github: FakeGitHub, tmp_path: Path) -> None:
    """A PR the repository does not have: exit 2 naming it."""
    argv = ["publish", "github", "--repo", REPO, "--pr", "8", "--api-url", github.url]
    argv += ["--head", HEAD]
    done = CliRunner().invoke(
        main, [*argv, "--from", str(outputs(tmp_path))], env={**CI_ENV, "GITHUB_TOKEN": TOKEN}
    )
    assert done.exit_code == 2 and "#8 was not found (404)" in done.output


def test_wrong_token_is_401(github: FakeGitHub, tmp_path: Path) -> None:
    """A token GitHub does not know: exit 2, neither token printed."""
    done = publish(github, "--from", str(outputs(tmp_path)), token="ghs_wrong-one")
    assert done.exit_code == 2 and "401" in done.output
    assert "ghs_wrong-one" not in done.output


def test_missing_token_sends_nothing(github: FakeGitHub, tmp_path: Path) -> None:
    """No GITHUB_TOKEN: exit 2 saying how to set it, before any request."""
    done = publish(github, "--from", str(outputs(tmp_path)), token=None)
    assert done.exit_code == 2 and "GITHUB_TOKEN is not set" in done.output
    assert github.requests == []


def test_422_quotes_github_and_falls_back_to_the_body(github: FakeGitHub, tmp_path: Path) -> None:
    """A comment GitHub cannot place (422): its message is shown, the comments move to the
    body, one review is created."""
    bad = finding(2, LineAnchor(path="app.py", line=999_999), severity="minor", subject="far")
    out = outputs(tmp_path, bad)
    done = publish(github, "--from", str(out))
    assert done.exit_code == 0, done.output
    assert "Line could not be resolved" in done.output
    assert len(github.pulls[PR].reviews) == 1
    posted = [r.body for r in github.mutations() if r.path.endswith("/reviews")]
    assert posted[-1]["comments"] == [] and "`app.py:999999`" in posted[-1]["body"]


def test_invalid_event_is_422_with_githubs_message(github: FakeGitHub, tmp_path: Path) -> None:
    """A review GitHub refuses whole (no comments to move): exit 2 quoting GitHub."""
    out = outputs(tmp_path)
    rewrite(out, "github-review.json", json.dumps({"body": "x", "event": "SHOUT"}))
    done = publish(github, "--from", str(out))
    assert done.exit_code == 2 and "422" in done.output and "bad event" in done.output


def test_inputs_are_checked_first(github: FakeGitHub, tmp_path: Path) -> None:
    """Neither --from nor --report, a bad --repo, an empty directory: exit 2, nothing sent."""
    assert publish(github).exit_code == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    done = publish(github, "--from", str(empty))
    assert done.exit_code == 2 and "council review" in done.output
    assert MANIFEST_NAME in done.output
    bad = CliRunner().invoke(
        main,
        ["publish", "github", "--repo", "not a repo", "--pr", "1", "--from", str(empty)],
        env={**CI_ENV, "GITHUB_TOKEN": TOKEN},
    )
    assert bad.exit_code == 2 and "OWNER/NAME" in bad.output
    assert github.requests == []


def test_retry_after_is_honoured(github: FakeGitHub) -> None:
    """429 with Retry-After: 7 → the client waits 7 s (injected sleep), then succeeds."""
    waits: list[float] = []
    github.fail(429, headers={"Retry-After": "7"})
    client = GitHubClient(TOKEN, repo=REPO, pr=PR, api_url=github.url, sleep=waits.append)
    with client:
        assert client.create_comment("hello") > 0
    assert 7.0 in waits
    assert len(github.pulls[PR].comments) == 1


def test_rate_limit_reset_is_honoured(github: FakeGitHub) -> None:
    """403 with x-ratelimit-remaining 0: wait until x-ratelimit-reset (plus a second)."""
    waits: list[float] = []
    github.fail(
        403,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1030"},
        body={"message": "API rate limit exceeded"},
    )
    client = GitHubClient(
        TOKEN, repo=REPO, pr=PR, api_url=github.url, sleep=waits.append, wall=lambda: 1000.0
    )
    with client:
        client.comments()
    assert waits == [31.0]


def test_secondary_limit_without_header_waits_a_minute(github: FakeGitHub) -> None:
    """403 saying "secondary rate limit" with no header: one minute, then on."""
    waits: list[float] = []
    github.fail(403, body={"message": "You have exceeded a secondary rate limit"})
    with GitHubClient(TOKEN, repo=REPO, pr=PR, api_url=github.url, sleep=waits.append) as c:
        c.comments()
    assert waits == [60.0]


def test_wait_past_the_bound_is_an_error(github: FakeGitHub, tmp_path: Path) -> None:
    """A rate limit asking for an hour: exit 3 saying so, not an hour's wait."""
    github.fail(429, headers={"Retry-After": "3600"})
    done = publish(github, "--from", str(outputs(tmp_path)))
    assert done.exit_code == 3, done.output
    assert "3600 s" in done.output and "nothing was applied" in done.output


def test_unreachable_api_is_exit_3(tmp_path: Path) -> None:
    """Nothing listens at --api-url: exit 3 naming the URL."""
    argv = ["publish", "github", "--repo", REPO, "--pr", "1", "--api-url", "http://127.0.0.1:9"]
    argv += ["--head", HEAD]
    done = CliRunner().invoke(
        main, [*argv, "--from", str(outputs(tmp_path))], env={**CI_ENV, "GITHUB_TOKEN": TOKEN}
    )
    assert done.exit_code == 3 and "127.0.0.1:9" in done.output


def test_pacer_spaces_mutations() -> None:
    """The pacer sleeps what is left of the interval since the previous mutation."""
    now = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    pacer = Pacer(1.0, sleep, lambda: now[0])
    pacer.wait()
    now[0] += 0.25
    pacer.wait()
    pacer.wait()
    assert slept == [0.75, 1.0]


def test_default_pacing_is_a_second_between_mutations(
    github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the default client, the review and the summary arrive at least 1 s apart."""
    monkeypatch.setattr(publish_module, "GitHubClient", GitHubClient)
    assert publish(github, "--from", str(outputs(tmp_path))).exit_code == 0
    first, second = github.mutations()
    assert second.at - first.at >= 0.99


def test_client_repr_hides_the_token(github: FakeGitHub) -> None:
    """The client's repr names the repository, never the token."""
    with GitHubClient(TOKEN, repo=REPO, pr=PR, api_url=github.url) as client:
        assert TOKEN not in repr(client) and REPO in repr(client)


def test_unavailable_is_exit_3_class() -> None:
    """GitHubUnavailable carries exit code 3 (the council's "could not complete")."""
    assert GitHubUnavailable("x").exit_code == 3


def test_what_is_posted_holds_no_raw_control(github: FakeGitHub, tmp_path: Path) -> None:
    """Outputs holding raw escape, override, isolate, NUL and CSI (as an older council
    wrote them): the review, its 422 fallback (a path shown in the body), the summary
    and the check run with its annotation are posted with them escaped."""
    out = outputs(tmp_path, CRITICAL)
    comment = {"path": f"a{HOSTILE}.py", "line": 999_999, "side": "RIGHT", "body": HOSTILE}
    review = {"body": f"review {HOSTILE}", "event": "COMMENT", "comments": [comment]}
    rewrite(out, "github-review.json", json.dumps(review, ensure_ascii=False))
    rewrite(out, "council.md", f"## summary {HOSTILE}\n")
    note = {"path": "app.py", "start_line": 2, "end_line": 2, "annotation_level": "notice"}
    note |= {"title": f"t {HOSTILE}", "message": f"m\n{HOSTILE}", "raw_details": HOSTILE}
    output = {"title": "t", "summary": HOSTILE, "text": HOSTILE, "annotations": [note]}
    checks = {"name": "council", "status": "completed", "conclusion": "success"}
    rewrite(out, "github-checks.json", json.dumps({**checks, "output": output}))
    done = publish(github, "--from", str(out), "--checks")
    assert done.exit_code == 0, done.output
    posted = [r.body for r in github.mutations()]
    for body in posted:
        shown, _ = forge_strings(json.dumps(body))
        assert [t for t in shown if any(c in t for c in RAW)] == [], body
    text = json.dumps(posted, ensure_ascii=False)
    assert all(e in text for e in ESCAPED)
    fallback = [b for b in posted if "comments" in b and not b["comments"]]
    assert "a\\x1b[31m\\u202e" in fallback[-1]["body"]
