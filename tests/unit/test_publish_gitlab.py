"""``council publish gitlab``: diff threads placed by the merge request's diff_refs and ONE
summary note, idempotent by marker and the token's user, against a fake GitLab."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from click.testing import CliRunner, Result

from council.model.findings import LineAnchor
from tests.fakes.gitlab_api import BASE, START, FakeGitLab
from tests.forge_cases import (
    CAFE,
    ESCAPED,
    HOSTILE,
    RAW,
    RENAMED_NEW,
    RENAMED_OLD,
    finding,
    messy_change,
)
from tests.forge_outputs import CI_ENV, HEAD, outputs, quick_pacing, rewrite
from workers.cli import main
from workers.forge.markers import marked_run, marker

GL_TOKEN = "glpat-s3cr3t-value"
MR = 3


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    """A fake GitLab holding merge request !3 of project 42 at HEAD."""
    with FakeGitLab(token=GL_TOKEN, project="42", mrs=(MR,)) as fake:
        fake.mrs[MR].head = HEAD
        yield fake


@pytest.fixture(autouse=True)
def paced_quickly(monkeypatch: pytest.MonkeyPatch) -> None:
    """No pacing between mutations."""
    quick_pacing(monkeypatch)


FINDINGS = (
    finding(1, LineAnchor(path=CAFE, line=2), severity="critical", subject="added line"),
    finding(2, LineAnchor(path=CAFE, line=3), severity="medium", subject="context line"),
    finding(3, LineAnchor(path=RENAMED_OLD, side="old", line=4), subject="removed line"),
    finding(4, subject="the change as a whole"),
)


def messy_out(tmp_path: Path, name: str = "out", run_id: str = "r1") -> Path:
    """Outputs of a run over the messy diff."""
    return outputs(tmp_path, *FINDINGS, name=name, run_id=run_id, change=messy_change())


def publish(
    gitlab: FakeGitLab, out: Path, *args: str, env: dict[str, str | None] | None = None
) -> Result:
    """Run ``council publish gitlab`` against the fake, with GITLAB_TOKEN."""
    environ: dict[str, str | None] = {**CI_ENV, "GITLAB_TOKEN": GL_TOKEN, **(env or {})}
    argv = ["publish", "gitlab", "--project", "42", "--mr", str(MR), "--api-url", gitlab.url]
    argv += ["--from", str(out), "--head", HEAD]
    return CliRunner().invoke(main, [*argv, *args], env=environ)


def test_threads_on_the_diff_and_one_summary_note(gitlab: FakeGitLab, tmp_path: Path) -> None:
    """An added line by new_line, a context line by both, a removed line by old_line, all
    with the merge request's diff_refs; the change-level finding in the summary note."""
    done = publish(gitlab, messy_out(tmp_path))
    assert done.exit_code == 0, done.output
    request = gitlab.mrs[MR]
    positions = {
        d["notes"][0]["body"].split("\n", 2)[1]: d["notes"][0]["position"]
        for d in request.discussions
    }
    refs = {"position_type": "text", "base_sha": BASE, "start_sha": START, "head_sha": HEAD}
    added = positions["**issue (blocking):** added line"]
    assert added == {**refs, "old_path": CAFE, "new_path": CAFE, "new_line": 2}
    context = positions["**issue:** context line"]
    assert (context["old_line"], context["new_line"]) == (3, 3)
    removed = positions["**issue:** removed line"]
    assert removed == {**refs, "old_path": RENAMED_OLD, "new_path": RENAMED_NEW, "old_line": 4}
    (note,) = request.notes
    assert marked_run(note["body"]) == ("r1", HEAD)
    assert "the change as a whole" in note["body"]
    assert "started 3 thread(s)" in done.output
    assert GL_TOKEN not in done.output


def test_the_same_run_again_posts_nothing(gitlab: FakeGitLab, tmp_path: Path) -> None:
    """A retried job: no thread twice, the note untouched."""
    out = messy_out(tmp_path)
    assert publish(gitlab, out).exit_code == 0
    before = len(gitlab.mutations())
    again = publish(gitlab, out)
    assert again.exit_code == 0, again.output
    assert len(gitlab.mutations()) == before
    assert "3 of this run were already there" in again.output and "up to date" in again.output


def test_a_retry_posts_only_the_missing_threads(gitlab: FakeGitLab, tmp_path: Path) -> None:
    """GitLab failed on the first thread (exit 3), then a retry: every thread once. A
    thread missing later (one of three) is the only one posted again."""
    out = messy_out(tmp_path)
    gitlab.fail(502, method="POST", path_contains="/discussions")
    assert publish(gitlab, out).exit_code == 3
    assert publish(gitlab, out).exit_code == 0
    assert len(gitlab.mrs[MR].discussions) == 3 and len(gitlab.mrs[MR].notes) == 1
    del gitlab.mrs[MR].discussions[1]
    posts = len([r for r in gitlab.mutations() if r.path.endswith("/discussions")])
    done = publish(gitlab, out)
    assert done.exit_code == 0, done.output
    assert len([r for r in gitlab.mutations() if r.path.endswith("/discussions")]) == posts + 1
    assert len(gitlab.mrs[MR].discussions) == 3


def test_a_new_round_edits_our_note_and_leaves_anothers(gitlab: FakeGitLab, tmp_path: Path) -> None:
    """Another user's note starting with the marker is left alone; ours is edited by
    the next run."""
    forged = {
        "id": 5,
        "body": marker("summary", "r1", HEAD) + "\nowned",
        "author": {"id": 666, "username": "mallory"},
        "system": False,
    }
    gitlab.mrs[MR].notes.append(forged)
    assert publish(gitlab, messy_out(tmp_path)).exit_code == 0
    later = publish(gitlab, messy_out(tmp_path, name="later", run_id="r2"))
    assert later.exit_code == 0, later.output
    notes = gitlab.mrs[MR].notes
    assert forged["body"].endswith("\nowned") and len(notes) == 2
    assert marked_run(notes[1]["body"]) == ("r2", HEAD)
    assert "updated summary note" in later.output


def test_an_older_head_uses_its_version(gitlab: FakeGitLab, tmp_path: Path) -> None:
    """The merge request moved on: threads use the diff_refs of the version at the run's
    head (from /versions)."""
    newer = "9" * 40
    gitlab.mrs[MR].older_heads = [HEAD]
    gitlab.mrs[MR].head = newer
    done = publish(gitlab, messy_out(tmp_path))
    assert done.exit_code == 0, done.output
    heads = {d["notes"][0]["position"]["head_sha"] for d in gitlab.mrs[MR].discussions}
    assert heads == {HEAD}


def test_no_version_at_the_head_puts_threads_in_the_note(
    gitlab: FakeGitLab, tmp_path: Path
) -> None:
    """No diff version has the run's head: no thread, the line findings are in the note."""
    gitlab.mrs[MR].head = "9" * 40
    done = publish(gitlab, messy_out(tmp_path))
    assert done.exit_code == 0, done.output
    assert gitlab.mrs[MR].discussions == []
    (note,) = gitlab.mrs[MR].notes
    assert "Findings not placed on the diff" in note["body"] and "added line" in note["body"]


def test_a_refused_position_goes_into_the_note(gitlab: FakeGitLab, tmp_path: Path) -> None:
    """GitLab refuses one position (400 line_code): that finding is in the note, the
    others are threads; GitLab's words are shown."""
    gitlab.mrs[MR].unplaceable = {(CAFE, 2)}
    done = publish(gitlab, messy_out(tmp_path))
    assert done.exit_code == 0, done.output
    assert len(gitlab.mrs[MR].discussions) == 2
    assert "line_code: can't be blank" in done.output
    assert f"`{CAFE}:2`" in gitlab.mrs[MR].notes[0]["body"]


def test_mentions_and_quick_actions_are_neutralized(gitlab: FakeGitLab, tmp_path: Path) -> None:
    """A finding quoting @group/team and a line /merge: no mention, no quick action."""
    loud = finding(
        9,
        LineAnchor(path=CAFE, line=2),
        severity="critical",
        subject="ping @grp/security",
        discussion="/merge\n/approve\ncc @root",
    )
    whole = finding(10, subject="tell @grp/security", discussion="/close\nnow")
    out = outputs(tmp_path, loud, whole, change=messy_change())
    done = publish(gitlab, out)
    assert done.exit_code == 0, done.output
    bodies = [d["notes"][0]["body"] for d in gitlab.mrs[MR].discussions]
    bodies += [n["body"] for n in gitlab.mrs[MR].notes]
    for body in bodies:
        assert "@grp" not in body and "@root" not in body
        for line in body.splitlines():
            assert not line.lstrip("> ").startswith(("/merge", "/approve", "/close")), line


def test_a_job_token_that_cannot_write_says_what_to_set(gitlab: FakeGitLab, tmp_path: Path) -> None:
    """Only CI_JOB_TOKEN: GitLab's 401, and the fix: GITLAB_TOKEN with the api scope."""
    done = publish(
        gitlab, messy_out(tmp_path), env={"GITLAB_TOKEN": None, "CI_JOB_TOKEN": "job-s3cr3t"}
    )
    assert done.exit_code == 2, done.output
    assert "401" in done.output and "GITLAB_TOKEN" in done.output and "`api`" in done.output
    assert "job-s3cr3t" not in done.output
    assert gitlab.requests and not gitlab.requests[0].authorized


def test_no_token_sends_nothing(gitlab: FakeGitLab, tmp_path: Path) -> None:
    """Neither variable: exit 2 before any request."""
    done = publish(gitlab, messy_out(tmp_path), env={"GITLAB_TOKEN": None})
    assert done.exit_code == 2 and "GITLAB_TOKEN" in done.output
    assert gitlab.requests == []


def test_forged_outputs_are_refused(gitlab: FakeGitLab, tmp_path: Path) -> None:
    """Outputs of another head: exit 2, nothing sent."""
    out = outputs(tmp_path, head="0badc0de" * 5, change=messy_change())
    done = publish(gitlab, out)
    assert done.exit_code == 2 and "not of 0123abcd0123" in done.output
    assert gitlab.requests == []


def test_the_fake_refuses_what_gitlab_would(gitlab: FakeGitLab) -> None:
    """GitLab answers 400 to a note or thread without body, or a position lacking its
    refs or lines; so does the fake."""
    headers = {"PRIVATE-TOKEN": GL_TOKEN}
    base = f"{gitlab.url}/projects/42/merge_requests/{MR}"
    refs = {"position_type": "text", "base_sha": BASE, "start_sha": START, "head_sha": HEAD}
    cases = [
        (f"{base}/notes", {}, "body is missing"),
        (f"{base}/discussions", {"body": ""}, "body is missing"),
        (
            f"{base}/discussions",
            {"body": "x", "position": {**refs, "base_sha": ""}},
            "position[base_sha]",
        ),
        (
            f"{base}/discussions",
            {"body": "x", "position": {**refs, "new_path": "a.py", "old_path": "a.py"}},
            "line_code",
        ),
    ]
    for url, body, word in cases:
        answer = httpx2.post(url, json=body, headers=headers)
        assert answer.status_code == 400, (body, answer.text)
        assert word in answer.text


def test_what_is_posted_holds_no_raw_control(gitlab: FakeGitLab, tmp_path: Path) -> None:
    """A thread and the summary holding raw escape, override, isolate, NUL and CSI (as an
    older council wrote them) are posted with them escaped."""
    out = messy_out(tmp_path)
    threads = json.loads((out / "gitlab-discussions.json").read_text())
    threads["discussions"][0]["body"] = f"thread {HOSTILE}\n/approve"
    rewrite(out, "gitlab-discussions.json", json.dumps(threads, ensure_ascii=False))
    rewrite(out, "council.md", f"## summary {HOSTILE}\n")
    done = publish(gitlab, out)
    assert done.exit_code == 0, done.output
    request = gitlab.mrs[MR]
    bodies = [n["body"] for d in request.discussions for n in d["notes"]]
    bodies += [n["body"] for n in request.notes]
    assert len(bodies) == len(FINDINGS)
    for body in bodies:
        assert [c for c in RAW if c in body] == [], body
    assert all(e in bodies[0] and e in bodies[-1] for e in ESCAPED)
