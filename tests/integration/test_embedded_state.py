"""Two real ``council review`` processes in embedded mode on one state file: reviews of
different sessions run at once and both are saved; two of one session take turns, the
second saying so on stderr. No clock is read: a model reviewer of the first review is
held by the fake server until the test lets it answer."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeOpenAI, Scenario
from tests.fakes.review import KEY
from tests.gitrepo import commit, git, new_repo
from tests.services import ROOT, review_argv
from workers.stores.state_file import read_sessions

pytestmark = pytest.mark.integration


def _answer(subject: str) -> str:
    """An answer of one finding on app.py, titled ``subject``."""
    at = {"kind": "line", "file": "app.py", "start": 2}
    return json.dumps({"findings": [{"subject": subject, "label": "issue", "location": at}]})


@dataclass
class Review:
    """One ``council review`` child process; its stderr kept in a file."""

    proc: subprocess.Popen[bytes]
    report: Path
    stderr: Path

    def said(self) -> str:
        return self.stderr.read_text(errors="replace")

    def finish(self) -> dict[str, Any]:
        assert self.proc.wait(timeout=180) == 0, self.said()
        data: dict[str, Any] = json.loads(self.report.read_text())
        return data


class Held:
    """The fake server's answer to the held model reviewer: it waits for :meth:`release`."""

    def __init__(self) -> None:
        self.released = threading.Event()

    def __call__(self, body: Mapping[str, Any]) -> Scenario:
        self.released.wait(120)
        return Scenario(text=_answer("held reviewer's finding"))

    def release(self) -> None:
        self.released.set()


@dataclass
class Scene:
    """The test's fake server, its held answer, the shared state file and every review
    started (ended at teardown)."""

    server: FakeOpenAI
    held: Held
    state: Path
    tmp: Path
    started: list[Review]

    def start(self, repo: tuple[Path, str], name: str, *, held: bool) -> Review:
        """A review of ``repo`` whose replay answers ``name``; with ``held``, also the
        held model reviewer, and the call returns once the server was asked."""
        url = self.server.base_url if held else None
        roster = _roster(self.tmp / f"roster-{name}", held_url=url, subject=name)
        review = _review(repo, roster, self.state, name)
        self.started.append(review)
        if held:
            _until("the model reviewer to be asked", lambda: self.server.in_flight == 1, review)
        return review


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[Scene]:
    with FakeOpenAI(api_key=KEY) as server:
        held = Held()
        server.script(held, model="gpt-held")
        made = Scene(server, held, tmp_path / "state" / "state.json", tmp_path, [])
        yield made
        held.release()
        for review in made.started:
            if review.proc.poll() is None:
                review.proc.kill()
                review.proc.wait()


def _repo(path: Path) -> tuple[Path, str]:
    repo = new_repo(path, {"app.py": "x = 1\n"})
    base = git(repo, "rev-parse", "HEAD")
    commit(repo, {"app.py": "x = 1\nprint(x)\n"}, "change")
    return repo, base


def _roster(path: Path, *, held_url: str | None, subject: str) -> Path:
    """A replay reviewer answering ``subject``; with ``held_url``, also a model reviewer
    on the fake server there (the one the test holds)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "answer.json").write_text(_answer(subject))
    text = (
        "[council]\nbackstop_ms = 120000\nidle_ms = 120000\nanswer_ms = 0\n\n"
        '[[reviewers]]\nid = "owl"\nbackend = "replay"\nanswer = "answer.json"\n'
    )
    if held_url is not None:
        text += (
            f'\n[[reviewers]]\nid = "hawk"\nbackend = "openai"\nmodel = "gpt-held"\n'
            f'base_url = "{held_url}"\napi_key_env = "TEST_KEY"\n'
        )
    roster = path / "council.toml"
    roster.write_text(text)
    return roster


def _review(repo: tuple[Path, str], roster: Path, state: Path, name: str) -> Review:
    out, err = roster.parent / f"{name}.json", roster.parent / f"{name}.err"
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    env["TEST_KEY"] = KEY
    argv = review_argv(repo[0], repo[1], roster, out, "--fail-on", "never", "--state", str(state))
    with err.open("wb") as stderr:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    return Review(proc, out, err)


def _until(what: str, check: Any, review: Review) -> None:
    """Wait for ``check()`` (the first review must still be running meanwhile)."""
    deadline = time.monotonic() + 120
    while not check():
        assert review.proc.poll() is None, review.said()
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {review.said()}"
        time.sleep(0.05)


def test_reviews_of_two_sessions_run_at_once_and_both_are_kept(scene: Scene) -> None:
    """Repository A's review is held mid-run (its model reviewer waits on the test);
    repository B's review, another session on the same state file, runs to the end
    meanwhile without waiting; then A finishes, and the file holds both sessions."""
    a = scene.start(_repo(scene.tmp / "a"), "a", held=True)
    b = scene.start(_repo(scene.tmp / "b"), "b", held=False)
    b_report = b.finish()
    assert a.proc.poll() is None, "A was held: B finished while it ran"
    assert "waiting" not in b.said(), b.said()
    scene.held.release()
    a_report = a.finish()
    assert a_report["session"] != b_report["session"]
    sessions = read_sessions(scene.state)
    assert {a_report["session"], b_report["session"]} <= set(sessions)
    assert sessions[a_report["session"]]["issued"] == 2  # owl's and hawk's findings
    assert sessions[b_report["session"]]["issued"] == 1


def test_two_reviews_of_one_session_take_turns_and_say_so(scene: Scene) -> None:
    """A second review of the session A's review holds waits, says so on stderr, and
    runs once A saved: the session's finding ids go on from A's (no id given twice)."""
    repo = _repo(scene.tmp / "a")
    a = scene.start(repo, "a", held=True)
    again = scene.start(repo, "b", held=False)
    _until("the second review to say it waits", lambda: "waiting" in again.said(), a)
    assert again.proc.poll() is None, again.said()
    assert "waiting for another embedded run of session" in again.said()
    scene.held.release()
    first, second = a.finish(), again.finish()
    assert first["session"] == second["session"]
    ids = {f["subject"]: f["id"] for f in [*first["findings"], *second["findings"]]}
    assert sorted(ids.values()) == sorted(set(ids.values())), ids
    assert ids["b"] > max(ids["a"], ids["held reviewer's finding"]), ids
