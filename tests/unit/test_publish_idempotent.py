"""Publishing the same run again changes nothing, and only what the token's own user
posted is ever edited: against the fake GitHub over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from council.model.findings import LineAnchor
from tests.fakes.github_api import FakeGitHub
from tests.forge_cases import finding
from tests.forge_outputs import HEAD, PR, REPO, TOKEN, outputs, publish, quick_pacing
from workers.forge.github import GitHubClient, Identity
from workers.forge.github_publish import REFUSED_HEADING
from workers.forge.markers import marked_run, marker

CRITICAL = finding(1, LineAnchor(path="app.py", line=2), severity="critical", subject="div0")
MINOR = finding(2, LineAnchor(path="app.py", line=3), severity="minor", subject="nit")
MALLORY = {"login": "mallory", "type": "User"}


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """A fake GitHub holding pull request 7 of octo/app at HEAD, for an App token."""
    with FakeGitHub(token=TOKEN, repo=REPO, pulls=(PR,)) as fake:
        fake.pulls[PR].head = HEAD
        yield fake


@pytest.fixture(autouse=True)
def paced_quickly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pace mutations 20 ms apart."""
    quick_pacing(monkeypatch)


def test_the_same_run_twice_posts_once(github: FakeGitHub, tmp_path: Path) -> None:
    """A retried step with the same outputs: no second review, no edit, nothing posted."""
    out = outputs(tmp_path, CRITICAL, MINOR)
    first = publish(github, "--from", str(out))
    assert first.exit_code == 0, first.output
    before = len(github.mutations())
    again = publish(github, "--from", str(out))
    assert again.exit_code == 0, again.output
    assert len(github.mutations()) == before == 2
    pull = github.pulls[PR]
    assert len(pull.reviews) == 1 and len(pull.comments) == 1
    assert "already posted (2 line comment(s)); nothing to change" in again.output
    assert "is up to date" in again.output


def test_a_retry_after_a_failure_completes_what_is_missing(
    github: FakeGitHub, tmp_path: Path
) -> None:
    """The review posted, then GitHub failed on the summary (exit 3): the retry adds
    the summary and posts no second review."""
    out = outputs(tmp_path, CRITICAL)
    github.fail(502, method="POST", path_contains="/issues/", body={"message": "Bad Gateway"})
    broken = publish(github, "--from", str(out))
    assert broken.exit_code == 3, broken.output
    assert len(github.pulls[PR].reviews) == 1 and github.pulls[PR].comments == []
    retried = publish(github, "--from", str(out))
    assert retried.exit_code == 0, retried.output
    assert len(github.pulls[PR].reviews) == 1 and len(github.pulls[PR].comments) == 1


def test_someone_elses_marked_comment_is_never_edited(github: FakeGitHub, tmp_path: Path) -> None:
    """A comment by another user that starts with the summary marker (anyone can type
    it) is left alone; council adds its own."""
    forged = {"id": 5, "body": marker("summary", "r1", HEAD) + "\nowned", "user": MALLORY}
    github.pulls[PR].comments.append(forged)
    done = publish(github, "--from", str(outputs(tmp_path, CRITICAL)))
    assert done.exit_code == 0, done.output
    assert forged["body"].endswith("\nowned")
    assert [c["user"]["login"] for c in github.pulls[PR].comments] == [
        "mallory",
        "github-actions[bot]",
    ]
    assert not [r for r in github.mutations() if r.method == "PATCH"]


def test_someone_elses_review_with_our_marker_is_not_ours(
    github: FakeGitHub, tmp_path: Path
) -> None:
    """A review by another user carrying this run's marker: council still posts its
    review (and never dismisses theirs)."""
    github.pulls[PR].reviews.append(
        {
            "id": 6,
            "state": "CHANGES_REQUESTED",
            "body": marker("review", "r1", HEAD) + "\nfake",
            "user": MALLORY,
        }
    )
    done = publish(github, "--from", str(outputs(tmp_path)))
    assert done.exit_code == 0, done.output
    states = {r["id"]: r["state"] for r in github.pulls[PR].reviews}
    assert states[6] == "CHANGES_REQUESTED" and len(states) == 2


def test_a_personal_token_is_matched_by_its_login(tmp_path: Path) -> None:
    """A personal token: GET /user names it, GraphQL is not asked, and a re-run finds
    the review and summary of that login again."""
    with FakeGitHub(token=TOKEN, repo=REPO, pulls=(PR,), login="octocat", app=False) as fake:
        fake.pulls[PR].head = HEAD
        out = outputs(tmp_path, CRITICAL)
        assert publish(fake, "--from", str(out)).exit_code == 0
        again = publish(fake, "--from", str(out))
        assert again.exit_code == 0, again.output
        assert len(fake.pulls[PR].reviews) == 1 and len(fake.pulls[PR].comments) == 1
        assert not [r for r in fake.requests if r.path == "/graphql"]
        assert "as octocat" in again.output


def test_an_app_token_is_asked_through_graphql(github: FakeGitHub, tmp_path: Path) -> None:
    """GITHUB_TOKEN (an App's): GET /user is 403, GraphQL's viewer names the bot."""
    done = publish(github, "--from", str(outputs(tmp_path)))
    assert done.exit_code == 0, done.output
    paths = [r.path for r in github.requests[:2]]
    assert paths == ["/user", "/graphql"] and "as github-actions[bot]" in done.output


def test_identity_owns_by_login_and_bot_suffix() -> None:
    """A login owns its own items (any case); a GraphQL bot login without [bot] owns
    what its [bot] user posted; no person is matched by a bot's name."""
    bot = Identity("github-actions", app=True)
    assert bot.owns({"user": {"login": "github-actions[bot]", "type": "Bot"}})
    assert not bot.owns({"user": {"login": "github-actions[bot]", "type": "User"}})
    assert not bot.owns({"user": {"login": "mallory", "type": "User"}})
    assert Identity("OctoCat").owns({"user": {"login": "octocat", "type": "User"}})
    assert not Identity("octocat").owns({"user": None})
    assert Identity("app-x[bot]", app=True).app_slug == "app-x"


def test_a_review_missing_comments_gets_them_in_its_body(
    github: FakeGitHub, tmp_path: Path
) -> None:
    """Our review of this run exists but holds fewer line comments than the run's (or
    an older body): its body is updated with the missing ones, no review is created."""
    github.pulls[PR].reviews.append(
        {
            "id": 9,
            "state": "CHANGES_REQUESTED",
            "body": marker("review", "r1", HEAD) + "\nold body",
            "user": github.me,
        }
    )
    done = publish(github, "--from", str(outputs(tmp_path, CRITICAL)))
    assert done.exit_code == 0, done.output
    calls = [(r.method, r.path.rsplit("/", 1)[-1]) for r in github.mutations()]
    assert ("POST", "reviews") not in calls and ("PUT", "9") in calls
    body = github.pulls[PR].reviews[0]["body"]
    assert REFUSED_HEADING in body and "`app.py:2`" in body
    assert marked_run(body) == ("r1", HEAD)
    again = publish(github, "--from", str(outputs(tmp_path, CRITICAL, name="same")))
    assert again.exit_code == 0 and "nothing to change" in again.output


def test_a_review_posted_with_its_comments_in_the_body_is_left(
    github: FakeGitHub, tmp_path: Path
) -> None:
    """GitHub refused the line comments (422), so they went into the body: a retry
    finds that review complete and changes nothing."""
    far = finding(3, LineAnchor(path="app.py", line=999_999), severity="minor", subject="far")
    out = outputs(tmp_path, far)
    assert publish(github, "--from", str(out)).exit_code == 0
    before = len(github.mutations())
    again = publish(github, "--from", str(out))
    assert again.exit_code == 0, again.output
    assert len(github.mutations()) == before and len(github.pulls[PR].reviews) == 1


def test_a_moved_on_pull_request_keeps_the_newer_summary(
    github: FakeGitHub, tmp_path: Path
) -> None:
    """An older run published late (the pull request's head moved on): its review goes
    on its own commit, a later run's summary is not overwritten, and nothing is
    dismissed."""
    newer = "9" * 40
    github.pulls[PR].head = newer
    summary = {"id": 4, "body": marker("summary", "r9", newer) + "\nnewer", "user": github.me}
    stale = {
        "id": 3,
        "state": "CHANGES_REQUESTED",
        "body": marker("review", "r9", newer) + "\nx",
        "user": github.me,
    }
    github.pulls[PR].comments.append(summary)
    github.pulls[PR].reviews.append(stale)
    done = publish(github, "--from", str(outputs(tmp_path)))
    assert done.exit_code == 0, done.output
    assert summary["body"].endswith("\nnewer") and stale["state"] == "CHANGES_REQUESTED"
    (posted,) = [r.body for r in github.mutations() if r.path.endswith("/reviews")]
    assert posted["commit_id"] == HEAD
    assert "head is now 999999999999" in done.output and "left as it is" in done.output


def test_legacy_marked_summary_of_ours_is_adopted(github: FakeGitHub, tmp_path: Path) -> None:
    """A summary an earlier council posted with the old bare marker is edited in place."""
    github.pulls[PR].comments.append(
        {"id": 8, "body": "<!-- council:summary -->\nold", "user": github.me}
    )
    done = publish(github, "--from", str(outputs(tmp_path)))
    assert done.exit_code == 0, done.output
    (comment,) = github.pulls[PR].comments
    assert marked_run(comment["body"]) == ("r1", HEAD)


def test_mentions_are_neutralized_everywhere_posted(github: FakeGitHub, tmp_path: Path) -> None:
    """@org/team and @user in findings: no mention in the review body, the line
    comment or the summary; the text still reads the same (an ``&#64;`` entity as typed,
    an e-mail address unlinked)."""
    loud = finding(
        4,
        LineAnchor(path="app.py", line=2),
        severity="critical",
        subject="ping @octo-org/security",
        discussion="cc @alice and &#64;bob; mail a@b.io; `@in-code` stays",
    )
    whole = finding(5, severity="minor", subject="tell @octo-org/security")  # in the body
    done = publish(github, "--from", str(outputs(tmp_path, loud, whole)))
    assert done.exit_code == 0, done.output
    review = next(r.body for r in github.mutations() if r.path.endswith("/reviews"))
    summary = github.pulls[PR].comments[0]["body"]
    comment = review["comments"][0]["body"]
    for text in (review["body"], summary, comment):
        assert "@octo-org" not in text and "@\u200docto-org/security" in text
    assert "@alice" not in comment and "@\u200dalice" in comment
    assert "\\&#\u200d64;bob" in comment and "@bob" not in comment
    assert "a@\u200db.io" in comment and "`@in-code`" in comment


def test_graphql_is_found_on_enterprise_servers() -> None:
    """GitHub Enterprise Server: REST at /api/v3, GraphQL at /api/graphql."""
    with GitHubClient(TOKEN, repo=REPO, pr=PR, api_url="https://ghe.example/api/v3") as ghe:
        assert ghe.graphql_url == "https://ghe.example/api/graphql"
    with GitHubClient(TOKEN, repo=REPO, pr=PR) as dotcom:
        assert dotcom.graphql_url == "https://api.github.com/graphql"
