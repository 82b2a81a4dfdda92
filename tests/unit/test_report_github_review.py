"""The GitHub pull-request review: comments only where anchors landed, the rest in the body."""

from __future__ import annotations

import json
from typing import Any

import pytest

from council.change.diff import landing
from council.model.findings import LineAnchor
from council.model.report import Suppression
from council.rendering.github_review import (
    BODY_UNITS,
    MAX_COMMENTS,
    comment_body,
    render_github_review,
    render_github_review_with_cuts,
)
from tests.forge_cases import (
    CAFE,
    DELETED,
    LANDED_LINES,
    RENAMED_NEW,
    finding,
    many_findings,
    messy_change,
    messy_findings,
    messy_report,
    report,
)


def _review(text: str) -> dict[str, Any]:
    review: dict[str, Any] = json.loads(text)
    assert set(review) <= {"commit_id", "body", "event", "comments"}
    assert isinstance(review["body"], str)
    assert review["event"] in ("COMMENT", "REQUEST_CHANGES")
    for comment in review["comments"]:
        assert set(comment) <= {"path", "line", "side", "start_line", "start_side", "body"}
        assert isinstance(comment["line"], int) and comment["line"] >= 1
        assert comment["side"] in ("LEFT", "RIGHT")
        if "start_line" in comment:
            assert comment["start_line"] < comment["line"]
            assert comment["start_side"] == comment["side"]
    return review


def _messy_review() -> dict[str, Any]:
    """The review of the messy report, with the messy change at hand."""
    return _review(
        render_github_review(messy_report().gated(fail_on="critical"), change=messy_change())
    )


def _units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _posted(review: dict[str, Any]) -> list[int]:
    """Council ids of the comments, read back from each comment's last line."""
    return [int(c["body"].rsplit("council finding ", 1)[1]) for c in review["comments"]]


def test_shape_and_commit() -> None:
    """The review names the head commit, has a body, an event and comments."""
    review = _review(render_github_review(messy_report().gated(fail_on="critical")))
    assert review["commit_id"] == "0123abcd" * 5


def test_commit_is_left_out_without_a_head() -> None:
    """No head in the report: no commit_id (GitHub then uses the pull request's head)."""
    review = _review(render_github_review(messy_report(head="").gated(fail_on="critical")))
    assert "commit_id" not in review


def test_event_follows_the_gate() -> None:
    """REQUEST_CHANGES when the gate trips, COMMENT otherwise or with fail-on never."""
    tripped = report(finding(1, severity="critical"))
    assert (
        _review(render_github_review(tripped.gated(fail_on="critical")))["event"]
        == "REQUEST_CHANGES"
    )
    assert _review(render_github_review(tripped.gated(fail_on="never")))["event"] == "COMMENT"
    calm = report(finding(1, severity="minor"))
    assert _review(render_github_review(calm.gated(fail_on="medium")))["event"] == "COMMENT"


def test_suppressed_finding_does_not_request_changes() -> None:
    """A dismissed critical finding neither trips the gate nor posts."""
    dismissed = {1: Suppression(source="dismissed", reason="false alarm")}
    quiet = report(finding(1, LineAnchor(path=CAFE, line=2), severity="critical"))
    review = _review(
        render_github_review(
            quiet.model_copy(update={"suppressed": dismissed}).gated(fail_on="critical"),
            change=messy_change(),
        )
    )
    assert review["event"] == "COMMENT"
    assert review["comments"] == []
    assert "false alarm" in review["body"]


def test_unknown_fail_on_is_refused() -> None:
    """A typo in fail_on is an error, not 'never'."""
    with pytest.raises(ValueError, match="fail_on"):
        render_github_review(report().gated(fail_on="critcal"))


def test_only_landed_line_anchors_become_comments() -> None:
    """With the change at hand, exactly the landed line anchors are commented."""
    review = _messy_review()
    assert sorted(_posted(review)) == list(LANDED_LINES)


def test_every_comment_lands_on_the_diff() -> None:
    """Each comment's path, side and lines are on the diff GitHub shows."""
    change = messy_change()
    review = _review(render_github_review(messy_report().gated(fail_on="critical"), change=change))
    by_path = {f.path: f for f in change.files}
    for comment in review["comments"]:
        changed = by_path[comment["path"]]
        side = "new" if comment["side"] == "RIGHT" else "old"
        path = changed.side_path(side)
        assert path is not None
        anchor = LineAnchor(
            path=path, side=side, line=comment["line"], start_line=comment.get("start_line")
        )
        assert landing(change, anchor) is None


def test_old_side_of_a_rename_uses_the_pull_request_path() -> None:
    """An old-side comment on a renamed file is addressed by the file's new path, LEFT."""
    review = _messy_review()
    [renamed] = [c for c in review["comments"] if c["body"].endswith("council finding 3")]
    assert renamed["path"] == RENAMED_NEW
    assert renamed["side"] == "LEFT"


def test_deleted_file_range_is_a_left_range() -> None:
    """A range on the old side of a deleted file is a LEFT multi-line comment."""
    review = _messy_review()
    [deleted] = [c for c in review["comments"] if c["body"].endswith("council finding 4")]
    assert deleted["path"] == DELETED
    assert (deleted["start_line"], deleted["line"], deleted["side"]) == (1, 3, "LEFT")


def test_without_the_change_old_side_findings_stay_in_the_body() -> None:
    """Without the change, only new-side landed anchors post; old-side ones go to the body."""
    review = _review(render_github_review(messy_report().gated(fail_on="critical")))
    assert sorted(_posted(review)) == [1, 2, 10, 11]
    assert "subject 3" in review["body"]
    assert "subject 4" in review["body"]


def test_body_holds_everything_not_commented() -> None:
    """Off-diff (with reason), change and file anchors are in the body; comments are not."""
    review = _messy_review()
    body = review["body"]
    assert "### Not on a changed line" in body
    assert "the file is not in the diff on that side" in body
    for ident in (5, 6, 7, 8, 9):
        assert f"subject {ident}" in body
    for ident in LANDED_LINES:
        assert f":** subject {ident}\n" not in body
    assert "6 findings are posted as line comments" in body


def test_seen_findings_are_not_posted_again() -> None:
    """A finding an earlier round reported is in the body, marked, not commented."""
    review = _review(
        render_github_review(
            messy_report(seen=(1,)).gated(fail_on="critical"), change=messy_change()
        )
    )
    assert 1 not in _posted(review)
    assert "subject 1 (seen in an earlier round)" in review["body"]


def test_comment_is_a_conventional_comment() -> None:
    """Label with decoration, subject, quoted discussion, then who raised it."""
    review = _messy_review()
    bodies = {i: c["body"] for i, c in zip(_posted(review), review["comments"], strict=True)}
    assert bodies[1].startswith("**issue (blocking):** subject 1\n\n> Why.\n>\n> More.\n\n")
    assert "raised by hawk" in bodies[1]
    assert "raised by owl, hawk (2 reviewers agree)" in bodies[10]
    assert bodies[11].startswith("**suggestion:** subject 11")


def test_a_comment_says_blocking_only_when_the_finding_gates() -> None:
    """Under ``--fail-on never`` a critical finding's comment is "non-blocking": the
    forge says what the gate said, as the report does."""
    review = _review(
        render_github_review(messy_report().gated(fail_on="never"), change=messy_change())
    )
    bodies = {i: c["body"] for i, c in zip(_posted(review), review["comments"], strict=True)}
    assert bodies[1].startswith("**issue (non-blocking):** subject 1\n")
    assert not any("(blocking)" in body for body in bodies.values())


def test_zero_findings() -> None:
    """No findings: no comments, and the body says so."""
    review = _review(
        render_github_review(report().gated(fail_on="critical"), change=messy_change())
    )
    assert review["comments"] == []
    assert "No findings." in review["body"]


def test_comment_count_is_capped_most_severe_first() -> None:
    """Beyond the cap, the most severe landed findings are commented; the rest go to the body."""
    findings = [
        finding(i, LineAnchor(path=CAFE, line=2), severity="critical" if i > 60 else "minor")
        for i in range(1, 81)
    ]
    review = _review(
        render_github_review(report(*findings).gated(fail_on="critical"), change=messy_change())
    )
    posted = _posted(review)
    assert len(posted) == MAX_COMMENTS
    assert set(range(61, 81)) <= set(posted)
    assert posted == sorted(posted)
    assert "subject 80" not in review["body"]
    assert "subject 79" not in review["body"]
    left = set(range(1, 81)) - set(posted)
    assert all(f"**issue (non-blocking):** subject {i}\n" in review["body"] for i in left)


def test_huge_discussion_is_cut_inside_the_limit() -> None:
    """A discussion longer than GitHub allows is cut with a note; the facts line survives."""
    long = finding(1, LineAnchor(path=CAFE, line=2), discussion="😀 line\n" * 20_000)
    body = comment_body(long)
    assert _units(body) <= BODY_UNITS
    assert "cut: the full discussion is in the council report" in body
    assert body.endswith("council finding 1")


def test_huge_body_is_cut_at_a_block_with_a_note() -> None:
    """A body over the limit is cut between blocks, with a note, under the limit."""
    findings = [finding(i, discussion="ü" * 300) for i in range(1, 2_001)]
    review = _review(render_github_review(report(*findings).gated(fail_on="critical")))
    body = review["body"]
    assert _units(body) <= BODY_UNITS
    assert "GitHub limits a review body" in body
    assert body.startswith("## ")


def test_thirty_thousand_findings() -> None:
    """30,000 findings give a valid review within GitHub's limits."""
    text = render_github_review(
        report(*many_findings(30_000)).gated(fail_on="critical"), change=messy_change()
    )
    review = _review(text)
    assert len(review["comments"]) == MAX_COMMENTS
    assert _units(review["body"]) <= BODY_UNITS
    assert all(_units(c["body"]) <= BODY_UNITS for c in review["comments"])


def test_messy_findings_fixture_is_whole() -> None:
    """The shared messy fixture holds one finding per id 1..11 (guards the other tests)."""
    assert [f.id for f in messy_findings()] == list(range(1, 12))


def test_a_huge_subject_cannot_push_a_comment_past_the_limit() -> None:
    """A 100,000-character subject is cut in the line comment, which stays under 65,536."""
    from council.model.findings import FileAnchor, Finding
    from council.rendering.github_review import BODY_UNITS, comment_body

    finding = Finding(id=1, anchor=FileAnchor(path="a.py"), label="issue", subject="x" * 100_000)
    body = comment_body(finding)
    assert len(body.encode("utf-16-le")) // 2 <= BODY_UNITS
    assert "subject cut" in body


def test_cuts_are_said_for_stderr() -> None:
    """Each cut to GitHub's limits comes back as a sentence (the CLI prints it on stderr,
    as it does SARIF's); a review that fits says nothing."""
    landed = [finding(i, LineAnchor(path=CAFE, line=2)) for i in range(1, 61)]
    _, cuts = render_github_review_with_cuts(
        report(*landed).gated(fail_on="critical"), change=messy_change()
    )
    assert cuts == [
        f"github-review: {MAX_COMMENTS} of the 60 findings on the diff are line comments "
        f"(GitHub reviews take at most {MAX_COMMENTS}); the other 10, least severe first, "
        "are listed in the body"
    ]
    big = [finding(i, discussion="ü" * 300) for i in range(1, 2_001)]
    _, cuts = render_github_review_with_cuts(report(*big).gated(fail_on="critical"))
    assert [c.split(";")[0] for c in cuts] == [
        "github-review: the review body was cut to GitHub's limit of 65,536 characters"
    ]
    _, cuts = render_github_review_with_cuts(report(*landed[:3]).gated(fail_on="critical"))
    assert cuts == []
