"""The coordinator's chord header (workers.coordinator.dispatch.chord_header): model participants
in ``council.review_batch`` tasks of at most ``COUNCIL_BATCH_SIZE`` per provider queue,
every other participant one ``council.review_participant`` task; and an embedded council
of model participants, settled through those batches."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from council.model.participant import Participant
from tests.fakes import FakeOpenAI, Scenario
from tests.fakes.review import KEY
from tests.gitrepo import commit, git, new_repo
from workers.app import tasks
from workers.app.celery_config import create_app
from workers.app.settings import Settings
from workers.cli import main
from workers.coordinator.dispatch import chord_header
from workers.stores.run_record import PROTOCOL


@pytest.fixture
def app() -> Iterator[Any]:
    """An embedded Celery app: signatures are built, nothing is sent."""
    made = create_app(Settings(), embedded=True)
    yield made
    made.close()


def _p(pid: str, backend: str) -> Participant:
    options: dict[str, Any] = {"answer": "a.json"} if backend == "replay" else {}
    if backend == "command":
        options = {"program": "true"}
    model = "m" if backend in ("openai", "anthropic") else None
    return Participant(id=pid, backend=backend, model=model, options=options)  # type: ignore[arg-type]


def _shape(header: list[Any]) -> list[tuple[str, str, Any]]:
    """(task name, queue, participant id or ids) of each signature."""
    return [
        (
            s.task,
            s.options["queue"],
            s.kwargs.get("participant", s.kwargs.get("participants")),
        )
        for s in header
    ]


ROSTER = [
    _p("o1", "openai"),
    _p("rep", "replay"),
    _p("a1", "anthropic"),
    _p("o2", "openai"),
    _p("o3", "openai"),
    _p("cmd", "command"),
    _p("a2", "anthropic"),
]


def test_models_batched_per_queue_others_single(app: Any) -> None:
    """openai and anthropic participants go in batches of at most batch_size per queue
    (roster order kept); replay and command participants stay single tasks."""
    header = chord_header(app, "r1", ROSTER, batch_size=2)
    assert _shape(header) == [
        ("council.review_participant", "council.default", "rep"),
        ("council.review_participant", "council.default", "cmd"),
        ("council.review_batch", "council.openai", ["o1", "o2"]),
        ("council.review_batch", "council.openai", ["o3"]),
        ("council.review_batch", "council.anthropic", ["a1", "a2"]),
    ]
    for s in header:
        assert s.immutable
        assert s.kwargs["run_id"] == "r1" and s.kwargs["protocol"] == PROTOCOL
        assert json.loads(json.dumps(s.kwargs)) == s.kwargs
    named = chord_header(app, "r1", ROSTER, batch_size=2, session="s1")
    assert all(s.kwargs["session"] == "s1" for s in named)  # for the tasks' log lines


def test_batch_size_one_and_large(app: Any) -> None:
    """batch_size 1 sends each model participant alone in a batch; a large size sends
    one batch per queue; every participant is in exactly one task."""
    ones = chord_header(app, "r1", ROSTER, batch_size=1)
    assert [ids for _, _, ids in _shape(ones) if isinstance(ids, list)] == [
        ["o1"],
        ["o2"],
        ["o3"],
        ["a1"],
        ["a2"],
    ]
    large = chord_header(app, "r1", ROSTER, batch_size=64)
    assert [(q, ids) for task, q, ids in _shape(large) if task == "council.review_batch"] == [
        ("council.openai", ["o1", "o2", "o3"]),
        ("council.anthropic", ["a1", "a2"]),
    ]
    named: list[str] = []
    for _, _, ids in _shape(large):
        named += ids if isinstance(ids, list) else [ids]
    assert sorted(named) == sorted(p.id for p in ROSTER)


def test_no_model_participants_no_batches(app: Any) -> None:
    """A roster without model participants is one review_participant task each, as before."""
    header = chord_header(app, "r1", [_p("rep", "replay"), _p("cmd", "command")], 64)
    assert [s.task for s in header] == ["council.review_participant"] * 2


def test_batch_size_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """COUNCIL_BATCH_SIZE: 64 by default, read from the environment, at least 1."""
    assert Settings().batch_size == 64
    monkeypatch.setenv("COUNCIL_BATCH_SIZE", "8")
    assert Settings().batch_size == 8
    monkeypatch.setenv("COUNCIL_BATCH_SIZE", "0")
    with pytest.raises(ValidationError):
        Settings()


def test_embedded_council_of_openai_participants_settles_through_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Embedded mode (memory broker, in-process worker): five openai participants in
    batches of two (three review_batch tasks) are all answered, one request each at the
    fake."""
    batches: list[list[str]] = []
    run_batch = tasks.run_batch

    def spy(rt: Any, run_id: str, participants: list[str], protocol: int) -> Any:
        batches.append(list(participants))
        return run_batch(rt, run_id, participants, protocol)

    monkeypatch.setattr(tasks, "run_batch", spy)
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    base = git(repo, "rev-parse", "HEAD")
    commit(repo, {"app.py": "x = 1\nprint(x)\n"}, "change")
    finding = {
        "subject": "debug print left in",
        "label": "issue",
        "severity": "minor",
        "location": {"kind": "line", "file": "app.py", "start": 2},
    }
    with FakeOpenAI(
        api_key=KEY, default=Scenario(text=json.dumps({"findings": [finding]}))
    ) as fake:
        tables = "".join(
            f'[[reviewers]]\nid = "m{i}"\nbackend = "openai"\nmodel = "gpt-fake"\n'
            f'base_url = "{fake.base_url}"\n\n'
            for i in range(5)
        )
        roster = tmp_path / "council.toml"
        roster.write_text("[council]\nbackstop_ms = 30000\nidle_ms = 10000\n\n" + tables)
        out = tmp_path / "report.json"
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        done = CliRunner().invoke(
            main,
            [
                "review",
                "--repo",
                str(repo),
                "--base",
                base,
                "--roster",
                str(roster),
                "--state",
                str(tmp_path / "state.json"),
                "--json",
                str(out),
                "--fail-on",
                "never",
                "--no-progress",
            ],
            env={"COUNCIL_BATCH_SIZE": "2"},
        )
        assert done.exit_code == 0, done.output
        report = json.loads(out.read_text())
        assert {p["id"]: p["state"] for p in report["participants"]} == {
            f"m{i}": "answered" for i in range(5)
        }
        assert len(fake.requests) == 5 and all(r.credential_ok for r in fake.requests)
        assert report["status"] == "settled"
        assert sorted(batches) == [["m0", "m1"], ["m2", "m3"], ["m4"]]
