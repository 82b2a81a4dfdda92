"""``council.review_batch`` on fakeredis (workers.execution.batch): many participants of one run
reviewed concurrently in this process, each settled as ``review()`` settles one."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest
import structlog
from structlog.contextvars import merge_contextvars
from structlog.testing import LogCapture

from council.model.backend_result import ReviewResult, Stop
from council.model.participant import Participant
from council.round.outcome import ParticipantOutcome
from reviewers.base import ReviewRequest
from tests.fakes import FakeOpenAI, Scenario
from tests.fakes.review import KEY, held_by_worker
from tests.roundtrips import CountingClient
from workers.app import services as runtime
from workers.app.services import Runtime, build_runtime
from workers.app.settings import Settings
from workers.execution import batch
from workers.execution.batch import review_batch
from workers.execution.participant_attempt import review
from workers.stores.run_record import PROTOCOL, Progress, RunRecord

DIFF = """diff --git a/app.py b/app.py
--- a/app.py
+++ b/app.py
@@ -1 +1,3 @@
 x = 1
+y = eval(input())
+print(y)
"""


def _finding(subject: str, line: int) -> dict[str, Any]:
    return {
        "subject": subject,
        "label": "issue",
        "severity": "minor",
        "location": {"kind": "line", "file": "app.py", "start": line},
    }


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    """A runtime on an in-process fakeredis, installed for the tasks."""
    settings = Settings(work_dir=tmp_path / "work")
    made = build_runtime(settings, fakeredis.FakeRedis(server=fakeredis.FakeServer()))
    runtime.install(made)
    yield made
    runtime.install(None)


def _replay(tmp_path: Path, pid: str, latency_ms: int = 0, journal: int = 2) -> Participant:
    """A replay participant answering one finding and journalling ``journal`` others."""
    answer = tmp_path / f"{pid}.answer.json"
    answer.write_text(json.dumps({"findings": [_finding(f"{pid} answer", 2)]}))
    entries = tmp_path / f"{pid}.journal.jsonl"
    entries.write_text(
        "".join(json.dumps(_finding(f"{pid} journal {i}", 3)) + "\n" for i in range(journal))
    )
    return Participant(
        id=pid,
        backend="replay",
        options={
            "answer": str(answer),
            "journal": str(entries),
            "latency_ms": latency_ms,
        },
    )


def _open(rt: Runtime, run_id: str, people: list[Participant]) -> None:
    """Store a run as the coordinator does: the record, then the inputs."""
    record = RunRecord(run_id=run_id, session="s1", participants=tuple(p.id for p in people))
    rt.client.hset(rt.keys.run(run_id), "record", record.model_dump_json())
    prompts = {p.id: f"review as {p.id}" for p in people}
    rt.runs.put_inputs(run_id, people, prompts, None, {}, change=DIFF)


def _same(outcome: ParticipantOutcome) -> dict[str, Any]:
    """An outcome's fields but its wall time."""
    return outcome.model_dump(exclude={"duration_ms"})


class Scripted:
    """A reviewer whose result (or exception) is chosen per participant; records calls."""

    def __init__(self, answers: dict[str, ReviewResult | Exception]) -> None:
        self.answers = answers
        self.called: list[str] = []
        self.threads: list[str] = []

    def review(self, request: ReviewRequest) -> ReviewResult:
        self.called.append(request.participant.id)
        self.threads.append(threading.current_thread().name)
        answer = self.answers[request.participant.id]
        if isinstance(answer, Exception):
            raise answer
        return answer


class AsyncScripted(Scripted):
    """The same with an ``areview`` coroutine method (as the model backends have)."""

    async def areview(self, request: ReviewRequest) -> ReviewResult:
        self.threads.append(threading.current_thread().name)
        await asyncio.sleep(0)
        answer = self.answers[request.participant.id]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def review(self, request: ReviewRequest) -> ReviewResult:
        raise AssertionError("a batch must await areview, not call review")


def _use(monkeypatch: pytest.MonkeyPatch, reviewer: Scripted) -> None:
    monkeypatch.setattr(batch, "reviewer_for", lambda participant: reviewer)


def test_batch_settles_each_participant_like_review(rt: Runtime, tmp_path: Path) -> None:
    """Replay participants in one batch get the outcome review() gives each alone (same
    fields but wall time), with their answers and outcomes stored."""
    people = [_replay(tmp_path, pid, latency_ms=50) for pid in ("hawk", "owl", "wren")]
    _open(rt, "solo", people)
    _open(rt, "batch", people)
    alone = [review(rt, "solo", p.id, PROTOCOL) for p in people]
    together = review_batch(rt, "batch", [p.id for p in people], PROTOCOL)
    assert [o.participant for o in together] == ["hawk", "owl", "wren"]
    assert [_same(o) for o in together] == [_same(o) for o in alone]
    for o in together:
        assert o.status == "answered" and len(o.harvest.findings) == 3
        assert rt.runs.outcome("batch", o.participant) == o
        assert rt.runs.answer("batch", o.participant) == rt.runs.answer("solo", o.participant)


def test_batch_runs_its_reviews_concurrently(rt: Runtime, tmp_path: Path) -> None:
    """Twenty replays of 400 ms each take far less than twenty times 400 ms."""
    people = [_replay(tmp_path, f"p{i}", latency_ms=400, journal=1) for i in range(20)]
    _open(rt, "r1", people)
    started = time.monotonic()
    outcomes = review_batch(rt, "r1", [p.id for p in people], PROTOCOL)
    assert time.monotonic() - started < 3.0
    assert {o.status for o in outcomes} == {"answered"}


def test_missing_or_raising_participant_fails_alone(
    rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A participant not stored for the run, and one whose backend raises, each fail;
    the others of the batch are answered and stored."""
    people = [_replay(tmp_path, pid) for pid in ("hawk", "boom", "owl")]
    _open(rt, "r1", people)
    reviewer = Scripted(
        {
            "hawk": ReviewResult(answer='{"findings": []}'),
            "boom": RuntimeError("backend exploded"),
            "owl": ReviewResult(answer='{"findings": []}'),
        }
    )
    _use(monkeypatch, reviewer)
    outcomes = review_batch(rt, "r1", ["hawk", "ghost", "boom", "owl"], PROTOCOL)
    by_id = {o.participant: o for o in outcomes}
    assert [o.participant for o in outcomes] == ["hawk", "ghost", "boom", "owl"]
    assert by_id["hawk"].status == by_id["owl"].status == "answered"
    assert by_id["ghost"].status == "failed"
    assert by_id["ghost"].failure is not None and "not in Redis" in by_id["ghost"].failure
    assert by_id["boom"].status == "failed"
    assert by_id["boom"].failure == (
        "the worker could not run this review: RuntimeError: backend exploded"
    )
    assert rt.runs.outcome("r1", "boom") == by_id["boom"]
    assert rt.runs.outcome("r1", "ghost") is None
    assert sorted(reviewer.called) == ["boom", "hawk", "owl"]


def test_unknown_run_fails_every_participant_and_writes_nothing(rt: Runtime) -> None:
    """An expired run: each participant fails saying so; nothing is stored."""
    outcomes = review_batch(rt, "gone", ["hawk", "owl"], PROTOCOL)
    assert [(o.participant, o.status) for o in outcomes] == [
        ("hawk", "failed"),
        ("owl", "failed"),
    ]
    assert list(rt.client.scan_iter()) == []


def test_other_protocol_fails_every_participant(rt: Runtime, tmp_path: Path) -> None:
    """A batch sent by another council version is refused per participant, unread."""
    _open(rt, "r1", [_replay(tmp_path, "hawk")])
    outcomes = review_batch(rt, "r1", ["hawk"], PROTOCOL + 1)
    assert outcomes[0].status == "failed"
    assert outcomes[0].failure is not None and f"protocol {PROTOCOL + 1}" in outcomes[0].failure
    assert rt.runs.outcome("r1", "hawk") is None
    assert rt.journals.attempts("r1", "hawk") == 0


def test_redelivered_batch_reruns_only_unsettled(
    rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outcomes stored before the batch are returned as stored, their backends not run
    and no attempt started; the others run as attempt 2 and fold attempt 1's journal."""
    people = [_replay(tmp_path, pid) for pid in ("hawk", "owl")]
    _open(rt, "r1", people)
    settled = ParticipantOutcome(participant="hawk", status="stopped", attempts=1)
    rt.runs.put_outcome("r1", settled, "")
    rt.journals.next_attempt("r1", "hawk")
    lost = rt.journals.next_attempt("r1", "owl")
    rt.journals.append("r1", "owl", lost, json.dumps(_finding("written before the kill", 2)))
    reviewer = Scripted({"owl": ReviewResult(answer='{"findings": []}')})
    _use(monkeypatch, reviewer)
    outcomes = review_batch(rt, "r1", ["hawk", "owl"], PROTOCOL)
    assert outcomes[0] == settled
    assert reviewer.called == ["owl"]
    assert rt.journals.attempts("r1", "hawk") == 1
    assert outcomes[1].attempts == 2
    assert [f.subject for f in outcomes[1].harvest.findings] == ["written before the kill"]


def test_progress_is_running_during_then_terminal(
    rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While its backend runs a participant shows ``running`` with its attempt;
    afterwards each shows its terminal state and findings."""
    people = [_replay(tmp_path, pid) for pid in ("hawk", "owl")]
    _open(rt, "r1", people)
    seen: list[tuple[str, dict[str, Progress]]] = []
    answer = json.dumps({"findings": [_finding("one", 2)]})

    class Peeking(Scripted):
        def review(self, request: ReviewRequest) -> ReviewResult:
            seen.append((request.participant.id, rt.runs.progress("r1")))
            if request.participant.id == "owl":
                return ReviewResult(failure="owl's program crashed")
            return ReviewResult(answer=answer)

    _use(monkeypatch, Peeking({}))
    started = time.time() * 1000
    review_batch(rt, "r1", ["hawk", "owl"], PROTOCOL)
    assert sorted(pid for pid, _ in seen) == ["hawk", "owl"]
    for pid, during in seen:  # the other one may have finished already: they run at once
        assert during[pid].state == "running" and during[pid].attempt == 1
        assert during[pid].started_ms is not None and during[pid].started_ms >= started - 1
    after = rt.runs.progress("r1")
    assert (after["hawk"].state, after["hawk"].findings, after["hawk"].attempt) == (
        "answered",
        1,
        1,
    )
    assert after["owl"].state == "failed"
    assert after["hawk"].started_ms == dict(seen)["hawk"]["hawk"].started_ms


def test_areview_runs_on_the_stream_loop_sync_review_off_it(
    rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reviewer with ``areview`` is awaited on the stream loop's thread (its sync
    ``review`` never called); one with only ``review`` runs on a batch pool thread."""
    _open(rt, "r1", [_replay(tmp_path, "hawk")])
    coroutine = AsyncScripted({"hawk": ReviewResult(answer='{"findings": []}')})
    _use(monkeypatch, coroutine)
    assert review_batch(rt, "r1", ["hawk"], PROTOCOL)[0].status == "answered"
    assert coroutine.threads == ["council-streams"]
    _open(rt, "r2", [_replay(tmp_path, "hawk")])
    plain = Scripted({"hawk": ReviewResult(answer='{"findings": []}')})
    _use(monkeypatch, plain)
    assert review_batch(rt, "r2", ["hawk"], PROTOCOL)[0].status == "answered"
    assert plain.threads[0].startswith("council-batch")


def test_areview_raising_fails_that_participant(
    rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception out of ``areview`` is a failed outcome, the batch goes on."""
    _open(rt, "r1", [_replay(tmp_path, pid) for pid in ("hawk", "owl")])
    reviewer = AsyncScripted(
        {"hawk": ValueError("bad stream"), "owl": ReviewResult(answer='{"findings": []}')}
    )
    _use(monkeypatch, reviewer)
    hawk, owl = review_batch(rt, "r1", ["hawk", "owl"], PROTOCOL)
    assert hawk.status == "failed" and hawk.failure is not None and "bad stream" in hawk.failure
    assert owl.status == "answered"


def test_one_cancel_event_for_the_batch(
    rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every request of a batch carries the same cancel event, set when the run is
    cancelled: replays waiting on it stop as ``cancelled``."""
    people = [_replay(tmp_path, pid, latency_ms=60_000) for pid in ("hawk", "owl")]
    _open(rt, "r1", people)
    events: list[threading.Event] = []
    original = batch.build_request

    def spy(*args: Any, **kwargs: Any) -> ReviewRequest:
        request = original(*args, **kwargs)
        events.append(request.cancel)
        return request

    monkeypatch.setattr(batch, "build_request", spy)
    threading.Timer(0.3, rt.runs.cancel, args=("r1",)).start()
    outcomes = review_batch(rt, "r1", ["hawk", "owl"], PROTOCOL)
    assert len(events) == 2 and events[0] is events[1]
    assert [(o.status, o.stop.limit if o.stop else None) for o in outcomes] == [
        ("stopped", "cancelled"),
        ("stopped", "cancelled"),
    ]


def test_log_lines_carry_each_participants_context(
    rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each participant's ``review_finished`` (and its journal lines) carry its run,
    session, participant and attempt; one ``review_finished`` per participant."""
    capture = LogCapture()
    structlog.configure(processors=[merge_contextvars, capture])
    people = [_replay(tmp_path, pid) for pid in ("hawk", "owl")]
    _open(rt, "r1", people)
    review_batch(rt, "r1", ["hawk", "owl"], PROTOCOL)
    finished = [e for e in capture.entries if e["event"] == "review_finished"]
    assert sorted(e["participant"] for e in finished) == ["hawk", "owl"]
    for e in finished:
        assert (e["run_id"], e["session"], e["attempt"]) == ("r1", "s1", 1)
        assert e["status"] == "answered" and e["backend"] == "replay"
    appended = [e for e in capture.entries if e["event"] == "journal_appended"]
    assert sorted(e["participant"] for e in appended) == ["hawk", "hawk", "owl", "owl"]
    assert all(e["attempt"] == 1 and e["run_id"] == "r1" for e in appended)


def test_round_trips_two_before_the_reviews_two_per_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of 12 costs two Redis round trips before its first review starts (no tree
    pinned), and two per group of finished reviews after."""
    counting = CountingClient(fakeredis.FakeRedis(server=fakeredis.FakeServer()))
    rt = build_runtime(Settings(work_dir=tmp_path / "work"), counting)
    people = [_replay(tmp_path, f"p{i}") for i in range(12)]
    _open(rt, "r1", people)
    before: list[int] = []

    class Counting(Scripted):
        def review(self, request: ReviewRequest) -> ReviewResult:
            before.append(counting.round_trips)
            return ReviewResult(answer='{"findings": []}')

    _use(monkeypatch, Counting({}))
    groups: list[int] = []
    read_all_many = rt.journals.read_all_many

    def spy(run_id: str, participants: list[str], started: Any = None) -> Any:
        groups.append(len(participants))
        return read_all_many(run_id, participants, started)

    monkeypatch.setattr(rt.journals, "read_all_many", spy)
    counting.round_trips = 0
    review_batch(rt, "r1", [p.id for p in people], PROTOCOL)
    assert min(before) == 2
    assert sum(groups) == 12
    assert counting.round_trips == 2 + 2 * len(groups)


def test_task_result_is_small_json(rt: Runtime, tmp_path: Path) -> None:
    """The task's chord result: a JSON list of (participant, status), a few dozen bytes
    per participant, whatever the answers were."""
    from workers.app.tasks import review_batch as task

    people = [_replay(tmp_path, f"p{i}") for i in range(3)]
    _open(rt, "r1", people)
    result = task(run_id="r1", participants=["p0", "p1", "p2"], protocol=PROTOCOL)
    assert json.loads(json.dumps(result)) == [
        {"participant": f"p{i}", "status": "answered"} for i in range(3)
    ]
    assert len(json.dumps(result)) < 60 * 3


def test_settling_crash_fails_that_participant(
    rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should folding one participant's journal raise, that participant is stored as
    failed and the rest of the batch is settled as usual."""
    _open(rt, "r1", [_replay(tmp_path, pid) for pid in ("hawk", "owl")])
    original = batch.fold_attempt

    def fragile(rt: Runtime, record: RunRecord, p: Participant, *args: Any) -> Any:
        if p.id == "hawk" and args[1]:
            raise KeyError("a journal the fold cannot read")
        return original(rt, record, p, *args)

    monkeypatch.setattr(batch, "fold_attempt", fragile)
    hawk, owl = review_batch(rt, "r1", ["hawk", "owl"], PROTOCOL)
    assert hawk.status == "failed" and hawk.failure is not None and "KeyError" in hawk.failure
    assert rt.runs.outcome("r1", "hawk") == hawk
    assert owl.status == "answered" and len(owl.harvest.findings) == 3


@pytest.mark.parametrize("status", ["settled", "partial", "cancelled", "judging"])
def test_a_task_arriving_after_its_run_ended_sends_nothing(
    rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: str
) -> None:
    """A batch or a single review redelivered after its run moved on (settled by the
    watchdog after a lost worker, say) runs no backend, starts no attempt, stores
    nothing, and says why; a reviewer's task is late once the run is judging, too."""
    people = [_replay(tmp_path, pid) for pid in ("hawk", "owl")]
    _open(rt, "r1", people)
    rt.client.hset(rt.keys.run("r1"), "status", status)
    reviewer = Scripted({"hawk": ReviewResult(answer="{}"), "owl": ReviewResult(answer="{}")})
    _use(monkeypatch, reviewer)
    outcomes = [*review_batch(rt, "r1", ["hawk"], PROTOCOL), review(rt, "r1", "owl", PROTOCOL)]
    assert reviewer.called == []
    for outcome in outcomes:
        assert outcome.status == "failed"
        assert f"the run was already {status} when this task arrived" in (outcome.failure or "")
    assert rt.journals.attempts("r1", "hawk") == rt.journals.attempts("r1", "owl") == 0
    assert rt.runs.outcome("r1", "hawk") is None and rt.runs.outcome("r1", "owl") is None


def test_the_judge_runs_while_the_run_is_judging(rt: Runtime, tmp_path: Path) -> None:
    """The judge's task is the one expected once the reviewers are filed."""
    judge = _replay(tmp_path, "arbiter").model_copy(update={"role": "judge"})
    _open(rt, "r1", [judge])
    rt.client.hset(rt.keys.run("r1"), "status", "judging")
    outcome = review(rt, "r1", "arbiter", PROTOCOL)
    assert outcome.status == "answered" and outcome.attempts == 1


def test_failed_and_stopped_reviews_are_warnings(
    rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``review_finished`` is a warning for a reviewer not heard in full (it failed, was
    cut off by a clock, or answered nothing readable: an operator's "trouble only" filter
    shows it), info for one that answered whole."""
    capture = LogCapture()
    structlog.configure(processors=[merge_contextvars, capture])
    people = [_replay(tmp_path, pid) for pid in ("hawk", "owl", "kite", "wren")]
    _open(rt, "r1", people)
    _use(
        monkeypatch,
        Scripted(
            {
                "hawk": ReviewResult(failure="the provider answered HTTP 503 six times"),
                "owl": ReviewResult(answer="", stop=Stop(limit="wall-clock")),
                "kite": ReviewResult(answer="not JSON at all {"),
                "wren": ReviewResult(answer='{"findings": []}'),
            }
        ),
    )
    review_batch(rt, "r1", ["hawk", "owl", "kite", "wren"], PROTOCOL)
    finished = {e["participant"]: e for e in capture.entries if e["event"] == "review_finished"}
    assert {pid: (e["log_level"], e["heard_in_full"]) for pid, e in finished.items()} == {
        "hawk": ("warning", False),
        "owl": ("warning", False),
        "kite": ("warning", False),
        "wren": ("info", True),
    }
    assert finished["owl"]["stopped"] == "wall-clock"


def test_a_model_retry_is_a_warning_line_of_the_participant(
    rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider's 429 retried in a single review (on the stream loop's thread) is one
    ``model_retry`` warning with the participant's run, session, participant and
    attempt, and the request's attempt, status and delay."""
    capture = LogCapture()
    structlog.configure(processors=[merge_contextvars, capture])
    monkeypatch.setenv("TEST_KEY", KEY)
    with FakeOpenAI(api_key=KEY) as server:
        server.script(
            Scenario.error(429, "slow down", retry_after="0"),
            Scenario(text='{"findings": []}'),
        )
        hawk = Participant(
            id="hawk",
            backend="openai",
            model="fake-model",
            options={"base_url": server.base_url, "api_key_env": "TEST_KEY"},
        )
        rt.providers = held_by_worker(server.base_url, "TEST_KEY")
        _open(rt, "r1", [hawk])
        outcome = review(rt, "r1", "hawk", PROTOCOL)
    assert outcome.status == "answered"
    (retry,) = [e for e in capture.entries if e["event"] == "model_retry"]
    assert retry["log_level"] == "warning"
    assert (retry["run_id"], retry["session"], retry["participant"], retry["attempt"]) == (
        "r1",
        "s1",
        "hawk",
        1,
    )
    assert (retry["request_attempt"], retry["status"], retry["reason"]) == (1, 429, "http-429")
    assert retry["delay_ms"] == 0 and "HTTP 429: slow down" in retry["error"]
    assert KEY not in json.dumps(capture.entries, default=str)


class Splits(Scripted):
    """A :class:`Scripted` that also keeps each request's prompt and shared length."""

    def __init__(self, answers: dict[str, ReviewResult | Exception]) -> None:
        super().__init__(answers)
        self.seen: dict[str, tuple[str, int]] = {}

    def review(self, request: ReviewRequest) -> ReviewResult:
        self.seen[request.participant.id] = (request.prompt, request.shared)
        return super().review(request)


def test_the_reviewer_is_told_where_its_prompts_shared_part_ends(
    rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prompt stored in two parts reaches the backend whole, with the length of its
    shared part (for a cache breakpoint), batched and alone; a plain prompt with 0."""
    from council.roster.prompt import Prompt
    from workers.execution import participant_attempt

    people = [_replay(tmp_path, pid) for pid in ("hawk", "wren", "owl")]
    record = RunRecord(run_id="r1", session="s1", participants=("hawk", "wren", "owl"))
    rt.client.hset(rt.keys.run("r1"), "record", record.model_dump_json())
    shared = "every reviewer's part\n\n"
    prompts: dict[str, str | Prompt] = {
        "hawk": Prompt(shared=shared, own="hawk's"),
        "wren": Prompt(shared=shared, own="wren's"),
        "owl": "plain",
    }
    rt.runs.put_inputs("r1", people, prompts, None, {}, change=DIFF)
    answers: dict[str, ReviewResult | Exception] = {
        p.id: ReviewResult(answer='{"findings": []}') for p in people
    }
    batched, alone = Splits(answers), Splits(answers)
    _use(monkeypatch, batched)
    monkeypatch.setattr(participant_attempt, "reviewer_for", lambda participant: alone)
    review_batch(rt, "r1", ["hawk"], PROTOCOL)
    review(rt, "r1", "wren", PROTOCOL)
    review(rt, "r1", "owl", PROTOCOL)
    assert batched.seen == {"hawk": (shared + "hawk's", len(shared))}
    assert alone.seen == {"wren": (shared + "wren's", len(shared)), "owl": ("plain", 0)}
