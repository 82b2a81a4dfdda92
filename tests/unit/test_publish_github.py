"""``council publish github`` and its client, against a fake GitHub API over real HTTP."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from council.findings import LineAnchor
from council.report import render_json, render_markdown
from council.report.github_review import render_github_review
from tests.fakes.github_api import FakeGitHub
from tests.forge_cases import finding, report
from workers.cli import main
from workers.cli import publish as publish_module
from workers.forge.github import GitHubClient, GitHubUnavailable, Pacer

TOKEN = "ghs_s3cr3t-token-value"
REPO = "octo/app"
PR = 7

CRITICAL = finding(1, LineAnchor(path="app.py", line=2), severity="critical", subject="div0")


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """A fake GitHub holding pull request 7 of octo/app."""
    with FakeGitHub(token=TOKEN, repo=REPO, pulls=(PR,)) as fake:
        yield fake


@pytest.fixture(autouse=True)
def quick_pacing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pace mutations 50 ms apart in these tests (the 1 s default has its own test)."""
    monkeypatch.setattr(
        publish_module, "GitHubClient", functools.partial(GitHubClient, min_interval_s=0.05)
    )


def outputs(tmp_path: Path, *findings: Any, name: str = "out") -> Path:
    """A --output directory as `council review` writes it, for a report of ``findings``."""
    out = tmp_path / name
    out.mkdir()
    rep = report(*findings)
    (out / "github-review.json").write_text(render_github_review(rep, fail_on="critical"))
    (out / "council.md").write_text(render_markdown(rep))
    (out / "council.json").write_text(render_json(rep))
    return out


def publish(github: FakeGitHub, *args: str, token: str | None = TOKEN) -> Result:
    """Run ``council publish github`` against the fake."""
    env = {"GITHUB_TOKEN": token} if token is not None else {"GITHUB_TOKEN": ""}
    argv = ["publish", "github", "--repo", REPO, "--pr", str(PR), "--api-url", github.url]
    return CliRunner().invoke(main, [*argv, *args], env=env)


def test_one_review_and_one_summary_then_patched(github: FakeGitHub, tmp_path: Path) -> None:
    """First publish: a review and a new summary comment; the second edits that comment."""
    out = outputs(tmp_path, CRITICAL)
    first = publish(github, "--from", str(out))
    assert first.exit_code == 0, first.output
    second = publish(github, "--from", str(out))
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
    assert pull.comments[0]["body"].startswith("<!-- council:summary -->\n## ")
    review = github.mutations()[0].body
    assert review["event"] == "REQUEST_CHANGES"
    assert review["comments"][0]["path"] == "app.py" and review["comments"][0]["line"] == 2
    assert TOKEN not in first.output + second.output


def test_passing_round_dismisses_councils_stale_request(github: FakeGitHub, tmp_path: Path) -> None:
    """A passing round dismisses council's earlier REQUEST_CHANGES review, not others'."""
    github.pulls[PR].reviews.append(
        {"id": 5, "state": "CHANGES_REQUESTED", "body": "a person's review", "user": {}}
    )
    assert publish(github, "--from", str(outputs(tmp_path, CRITICAL))).exit_code == 0
    done = publish(github, "--from", str(outputs(tmp_path, name="clean")))
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
    pull.comments.append({"id": 900, "body": "<!-- council:summary -->\nold", "user": {}})
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
        (403, ["403", "pull-requests: write"]),
        (404, ["404", "octo/app", "#7", "token"]),
    ],
)
def test_refusals_are_explained(
    github: FakeGitHub, tmp_path: Path, status: int, words: list[str]
) -> None:
    """401, 403 and 404: exit 2 with what to fix; the token is never printed."""
    github.fail(status, body={"message": "nope"})
    done = publish(github, "--from", str(outputs(tmp_path)))
    assert done.exit_code == 2, done.output
    for word in words:
        assert word in done.output
    assert TOKEN not in done.output


def test_unknown_pull_request_is_404(github: FakeGitHub, tmp_path: Path) -> None:
    """A PR the repository does not have: exit 2 naming it."""
    argv = ["publish", "github", "--repo", REPO, "--pr", "8", "--api-url", github.url]
    done = CliRunner().invoke(
        main, [*argv, "--from", str(outputs(tmp_path))], env={"GITHUB_TOKEN": TOKEN}
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
    review = json.loads((out / "github-review.json").read_text())
    review["comments"] = [{"path": "app.py", "line": 999_999, "side": "RIGHT", "body": "far"}]
    (out / "github-review.json").write_text(json.dumps(review))
    done = publish(github, "--from", str(out))
    assert done.exit_code == 0, done.output
    assert "Line could not be resolved" in done.output
    assert len(github.pulls[PR].reviews) == 1
    posted = [r.body for r in github.mutations() if r.path.endswith("/reviews")]
    assert posted[-1]["comments"] == [] and "`app.py:999999`" in posted[-1]["body"]


def test_invalid_event_is_422_with_githubs_message(github: FakeGitHub, tmp_path: Path) -> None:
    """A review GitHub refuses whole (no comments to move): exit 2 quoting GitHub."""
    out = outputs(tmp_path)
    (out / "github-review.json").write_text(json.dumps({"body": "x", "event": "SHOUT"}))
    done = publish(github, "--from", str(out))
    assert done.exit_code == 2 and "422" in done.output and "bad event" in done.output


def test_inputs_are_checked_first(github: FakeGitHub, tmp_path: Path) -> None:
    """Neither --from nor --report, a bad --repo, an empty directory: exit 2, nothing sent."""
    assert publish(github).exit_code == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    done = publish(github, "--from", str(empty))
    assert done.exit_code == 2 and "council review" in done.output
    bad = CliRunner().invoke(
        main,
        ["publish", "github", "--repo", "not a repo", "--pr", "1", "--from", str(empty)],
        env={"GITHUB_TOKEN": TOKEN},
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
    done = CliRunner().invoke(
        main, [*argv, "--from", str(outputs(tmp_path))], env={"GITHUB_TOKEN": TOKEN}
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
