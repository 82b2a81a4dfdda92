"""A model reviewer asks a person (``ask_human``), through the real CLI in embedded mode:
the fake OpenAI server plays a reviewer that stores 200 options as an artifact, asks with
a ``choice`` whose props_ref is that artifact, and after the answer goes on and answers.
``council review`` exits 4, ``council answer`` checks the value against the artifact's
options, the next ``council review`` resumes the same conversation (the server receives
the earlier messages plus the answer as the tool reply) and the round settles with
everyone's findings. A refused ask gets its refusal as the tool reply and nothing is
stored. The state file keeps the waiting run between the commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tests.fakes import FakeOpenAI, Scenario, ToolCall
from tests.fakes.review import BACKENDS, KEY, Backend, MemorySink, participant, request
from tests.unit.test_cli_review import ROUND, answer, review, reviewer, roster
from tests.unit.test_fail_closed import repo  # noqa: F401  (the fixture)
from workers.cli import main

OPTIONS = [f"profile-{n:03d}" for n in range(200)]
"""The 200 options the reviewer offers (too many to copy into every saved pause)."""

FINDING = {
    "subject": "divides by zero on the fast profile",
    "label": "issue",
    "severity": "critical",
    "location": {"kind": "line", "file": "app.py", "start": 2},
}
OTHER = {
    "subject": "name is vague",
    "label": "suggestion",
    "severity": "minor",
    "location": {"kind": "line", "file": "app.py", "start": 2},
}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The fake OpenAI server; the embedded worker finds the key in HAWK_KEY."""
    monkeypatch.setenv("HAWK_KEY", KEY)
    with FakeOpenAI(api_key=KEY) as fake:
        yield fake


def _roster(tmp_path: Path, base_url: str) -> Path:
    hawk = reviewer(
        "hawk",
        "openai",
        model="gpt-hawk",
        base_url=base_url,
        api_key_env="HAWK_KEY",
        tools=["read_file", "store_artifact", "ask_human", "record_finding"],
    )
    owl = reviewer("owl", "replay", answer=answer(tmp_path, "owl.json", OTHER))
    return roster(tmp_path, hawk, owl, head=ROUND + "answer_ms = 0\n")


def _cli(state: Path, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--state", str(state)])


def _asks(state: Path) -> list[dict[str, Any]]:
    listed = _cli(state, "asks", "--json")
    assert listed.exit_code == 0, listed.output
    out: list[dict[str, Any]] = json.loads(listed.stdout)
    return out


def _ref_of(body: Any) -> str:
    """The ``art_…`` ref the store_artifact tool replied with (the last tool message)."""
    reply = body["messages"][-1]["content"]
    (word,) = [w.rstrip(".") for w in reply.split() if w.startswith("art_")]
    return str(word)


def _tool_replies(body: Any) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


UNRESOLVED = "art_" + "A" * 22
"""A well-formed ref that no artifact of the run has."""


def script_asking_reviewer(server: FakeOpenAI) -> None:
    """hawk's turns: store 200 options; two refused asks (a bad component, a ref that
    does not resolve); the ask with a choice over the stored options; then (after the
    answer) the findings."""
    store = ToolCall("store_artifact", {"value": {"options": OPTIONS}})

    def refused(body: Any) -> Scenario:
        bad = ToolCall(
            "ask_human",
            {
                "question": "Which?",
                "component": {"component_id": "choice", "props": ["secret-1", "secret-2"]},
            },
        )
        gone = ToolCall(
            "ask_human",
            {
                "question": "Which?",
                "component": {"component_id": "choice", "props_ref": UNRESOLVED},
            },
        )
        return Scenario(tool_calls=(bad, gone))

    def asking(body: Any) -> Scenario:
        ref = _ref_of({"messages": [m for m in body["messages"] if m["role"] == "tool"][:1]})
        question = "Which deployment profile does app.py run under?"
        component = {"component_id": "choice", "props_ref": ref}
        return Scenario(
            tool_calls=(ToolCall("ask_human", {"question": question, "component": component}),)
        )

    answered = Scenario(text=json.dumps({"findings": [FINDING]}))
    server.script(Scenario(tool_calls=(store,)), refused, asking, answered, model="gpt-hawk")


def test_a_reviewer_asks_with_a_large_picker_waits_and_goes_on_with_the_answer(
    tmp_path: Path,
    repo: Path,  # noqa: F811
    server: FakeOpenAI,
) -> None:
    """Exit 4 with the question; the refused asks replied to and not stored; the answer
    checked against the artifact's options; the same conversation resumed (the earlier
    messages plus the answer as the tool reply, in a new request); settled with both
    reviewers' findings, the replay reviewer not asked again."""
    state, rp = tmp_path / "state.json", _roster(tmp_path, server.base_url)
    script_asking_reviewer(server)
    first = review(repo, state, roster_path=rp)
    assert first.exit_code == 4, first.output
    assert "council answer ask_" in first.stdout
    assert server.count == 3
    shape, unresolved = _tool_replies(server.requests[2].body)[1:]
    assert "refused (shape)" in shape and "secret-1" not in shape
    assert "refused (unresolved-ref)" in unresolved and UNRESOLVED not in unresolved
    ref = _ref_of({"messages": [{"content": _tool_replies(server.requests[1].body)[0]}]})

    (ask,) = _asks(state)
    assert ask["participant"] == "hawk" and ask["run"]
    assert ask["component"] == {"component_id": "choice", "props_ref": ref}
    assert ask["question"] == "Which deployment profile does app.py run under?"
    still = review(repo, state, roster_path=rp)
    assert still.exit_code == 4, "an unanswered ask never passes the gate"
    assert server.count == 3, "nothing is sent to the reviewer before the answer"

    refused = _cli(state, "answer", ask["id"], "profile-999")
    assert refused.exit_code == 2 and "takes one of its options" in refused.output
    said = _cli(state, "answer", ask["id"], "profile-123", "--reason", "prod uses it")
    assert said.exit_code == 0, said.output
    assert _asks(state) == []

    out = tmp_path / "r.json"
    settled = review(repo, state, "--json", str(out), roster_path=rp)
    assert settled.exit_code == 1, settled.output  # the critical finding gates
    assert server.count == 4
    before, after = server.requests[2].body["messages"], server.requests[3].body["messages"]
    assert after[: len(before)] == before, "the same conversation goes on"
    (call,) = after[len(before)]["tool_calls"]
    assert call["function"]["name"] == "ask_human"
    reply = after[len(before) + 1]
    assert reply["role"] == "tool" and reply["tool_call_id"] == call["id"]
    assert json.loads(reply["content"]) == {"answer": "profile-123", "reason": "prod uses it"}
    assert len(after) == len(before) + 2

    report = json.loads(out.read_text())
    assert report["status"] == "settled", report
    people = {p["id"]: p for p in report["participants"]}
    assert {p: s["state"] for p, s in people.items()} == {"hawk": "answered", "owl": "answered"}
    assert people["owl"]["attempts"] == 1, "the other reviewer is not asked again"
    filed = sorted((f["origin"]["participant"], f["subject"]) for f in report["findings"])
    assert filed == [("hawk", FINDING["subject"]), ("owl", OTHER["subject"])]
    (shown,) = report["asks"]
    assert shown["answer"]["value"] == "profile-123"


COMMAND_REVIEWER = """#!/bin/sh
council ask --question "Is x meant to be 0?" \\
  --component '{"component_id": "choice", "props": ["fast", "safe"]}' 2>"$HOME/refused.txt"
refused=$?
answer=$(council ask --question "Which profile runs in production?" \\
  --component '{"component_id": "choice", "props": {"options": ["fast", "safe"]}}')
case "$answer" in
  asked:*) echo '{"findings": []}'; exit 0;;
esac
why=$(head -c 60 "$HOME/refused.txt" | tr -d '"\\n')
printf '{"findings": [{"subject": "profile %s divides by zero (refused %s: %s)", ' \\
  "$answer" "$refused" "$why"
printf '"label": "issue", "severity": "critical", '
printf '"location": {"kind": "line", "file": "app.py", "start": 2}}]}'

"""
"""A command reviewer: a refused question (props not an object), then a question whose
answer it needs; on its first run it waits, on the next it reports with the answer."""


def test_a_command_reviewer_asks_through_council_ask_and_runs_again_with_the_answer(
    tmp_path: Path,
    repo: Path,  # noqa: F811
) -> None:
    """council ask --question in the sandbox: refused (exit 2, the review goes on),
    accepted (the run waits, exit 4), answered on the next run of the reviewer."""
    from tests.sandboxing import bwrap_or_skip

    bwrap_or_skip()
    program = tmp_path / "asker.sh"
    program.write_text(COMMAND_REVIEWER)
    program.chmod(0o755)
    rp = roster(tmp_path, reviewer("asker", "command", program=str(program)))
    state = tmp_path / "state.json"
    first = review(repo, state, roster_path=rp)
    assert first.exit_code == 4, first.output
    (ask,) = _asks(state)
    assert ask["participant"] == "asker"
    assert ask["question"] == "Which profile runs in production?"
    assert _cli(state, "answer", ask["id"], "turbo").exit_code == 2
    assert _cli(state, "answer", ask["id"], "safe").exit_code == 0
    out = tmp_path / "r.json"
    settled = review(repo, state, "--json", str(out), roster_path=rp)
    assert settled.exit_code == 1, settled.output
    report = json.loads(out.read_text())
    (finding,) = report["findings"]
    said = "profile safe divides by zero (refused 2: council ask --question: ask refused (shape)"
    assert finding["subject"].startswith(said), finding["subject"]
    assert report["participants"][0]["attempts"] == 2


class _Artifacts:
    """An in-memory ArtifactDesk: refs ``art_`` + 22 characters, in put order."""

    def __init__(self) -> None:
        self.values: dict[str, object] = {}

    def put(self, value: object) -> str:
        ref = f"art_{len(self.values):022d}"
        self.values[ref] = value
        return ref

    def resolves(self, ref: str) -> bool:
        return ref in self.values


@pytest.mark.parametrize("backend", BACKENDS, ids=[b.name for b in BACKENDS])
def test_both_model_backends_pause_on_a_question_and_go_on_with_the_answer(
    backend: Backend,
) -> None:
    """openai and anthropic alike: an accepted ask_human ends the review with its pause
    (the turn's other replies kept, the ask's pending); given back with the answer, the
    next request holds the same messages plus the answer as that call's reply."""
    from dataclasses import replace

    from council.asks.paused import Resumption
    from council.asks.pending import Answer

    with backend.fake(api_key=KEY) as fake:
        ask = ToolCall("ask_human", {"question": "Is this on purpose?"})
        look = ToolCall("list_files", {})
        fake.script(Scenario(tool_calls=(look, ask)), Scenario(text='{"findings": []}'))
        who = participant(backend, fake, tools=["list_files", "ask_human"])
        first = request(who)
        first = replace(first, artifacts=_Artifacts())
        paused = backend.reviewer().review(first)
        assert paused.failure is None and paused.paused is not None, paused
        assert fake.count == 1
        held = paused.paused
        assert held.ask.question == "Is this on purpose?" and held.turns == 1
        (other, mine) = held.replies
        assert other[1] is not None and mine == (held.call_id, None)
        answer = Answer(value="yes, on purpose")
        resumed = backend.reviewer().review(
            replace(first, resume=Resumption(paused=held, answer=answer))
        )
        assert resumed.failure is None and resumed.paused is None, resumed
        assert fake.count == 2
        replies = backend.tool_replies(fake.requests[1].body)
        assert replies[-1] == json.dumps({"answer": "yes, on purpose"})
        sent = fake.requests[1].body["messages"]
        assert sent[: len(held.messages)] == held.messages
        assert resumed.usage is not None and paused.usage is not None
        assert resumed.usage.requests == 2, "the first leg's usage is counted on"
        assert resumed.usage_before == paused.usage, "so metrics count only the new leg"


def test_store_artifact_and_refusals_through_the_toolbox() -> None:
    """store_artifact replies with the ref; ask_human refused by shape, no-store and
    unresolved-ref says the code and never the value; a second ask in a turn waits."""
    from reviewers.models.tools import ToolBox

    desk = _Artifacts()
    box = ToolBox(["store_artifact", "ask_human"], None, MemorySink(), artifacts=desk)
    stored = box.call("store_artifact", {"value": {"options": OPTIONS}})
    (ref,) = desk.values
    assert ref in stored
    bad = box.call("ask_human", {"question": "Q", "component": {"component_id": "x", "p": 1}})
    assert "refused (shape)" in bad and box.asked is None
    quiet = ToolBox(["ask_human"], None, MemorySink())
    none = quiet.call(
        "ask_human", {"question": "Q", "component": {"component_id": "x", "props_ref": ref}}
    )
    assert "refused (no-store)" in none and ref not in none and quiet.asked is None
    gone = box.call(
        "ask_human", {"question": "Q", "component": {"component_id": "x", "props_ref": UNRESOLVED}}
    )
    assert "refused (unresolved-ref)" in gone and UNRESOLVED not in gone
    ok = box.call(
        "ask_human", {"question": "Q", "component": {"component_id": "c", "props_ref": ref}}, "c1"
    )
    assert box.asked is not None and box.asked[0] == "c1" and "pauses" in ok
    again = box.call("ask_human", {"question": "Q2"}, "c2")
    assert "One question at a time" in again and box.asked[0] == "c1"
    assert (
        ToolBox(["store_artifact"], None, MemorySink())
        .call("store_artifact", {"value": 1})
        .startswith("No artifact store")
    )


def test_a_reviewer_that_asks_again_waits_again_under_a_new_id(
    tmp_path: Path,
    repo: Path,  # noqa: F811
    server: FakeOpenAI,
) -> None:
    """After the first answer the reviewer asks a second question (the fake reuses the
    call id call_0): the run waits again (exit 4) on a new ask, and settles after it."""
    state, rp = tmp_path / "state.json", _roster(tmp_path, server.base_url)
    first_q = ToolCall("ask_human", {"question": "First?"})
    second_q = ToolCall("ask_human", {"question": "Second?"})
    done = Scenario(text=json.dumps({"findings": [FINDING]}))
    server.script(
        Scenario(tool_calls=(first_q,)), Scenario(tool_calls=(second_q,)), done, model="gpt-hawk"
    )
    assert review(repo, state, roster_path=rp).exit_code == 4
    (one,) = _asks(state)
    assert _cli(state, "answer", one["id"], "one").exit_code == 0
    again = review(repo, state, roster_path=rp)
    assert again.exit_code == 4, again.output
    (two,) = _asks(state)
    assert two["question"] == "Second?" and two["id"] != one["id"]
    assert _cli(state, "answer", two["id"], "two").exit_code == 0
    out = tmp_path / "r.json"
    settled = review(repo, state, "--json", str(out), roster_path=rp)
    assert settled.exit_code == 1, settled.output
    assert server.count == 3
    replies = _tool_replies(server.requests[2].body)
    assert [json.loads(r) for r in replies] == [{"answer": "one"}, {"answer": "two"}]
    report = json.loads(out.read_text())
    assert report["status"] == "settled"
    assert [f["subject"] for f in report["findings"] if f["origin"]["participant"] == "hawk"] == [
        FINDING["subject"]
    ]


def test_with_a_judge_the_run_waits_before_the_judge_and_judges_after(
    tmp_path: Path,
    repo: Path,  # noqa: F811
    server: FakeOpenAI,
) -> None:
    """A roster with a judge: the reviewer's question comes first (the run waits, the
    judge is not sent); once answered, the reviewers are filed and the judge judges."""
    judged = {**FINDING, "raisedBy": ["hawk"]}
    judge = '[judge]\nid = "arbiter"\nbackend = "replay"\n'
    judge += f'answer = "{answer(tmp_path, "j.json", judged)}"\n'
    hawk = reviewer(
        "hawk",
        "openai",
        model="gpt-hawk",
        base_url=server.base_url,
        api_key_env="HAWK_KEY",
        tools=["ask_human"],
    )
    rp = roster(tmp_path, hawk, judge, head=ROUND + "answer_ms = 0\n")
    server.script(
        Scenario(tool_calls=(ToolCall("ask_human", {"question": "Prod?"}),)),
        Scenario(text=json.dumps({"findings": [FINDING]})),
        model="gpt-hawk",
    )
    state = tmp_path / "state.json"
    first = review(repo, state, roster_path=rp)
    assert first.exit_code == 4, first.output
    out = tmp_path / "w.json"
    review(repo, state, "--json", str(out), roster_path=rp)
    waiting = json.loads(out.read_text())
    assert [p["id"] for p in waiting["participants"]] == ["hawk"], "no judge sent yet"
    (ask,) = _asks(state)
    assert _cli(state, "answer", ask["id"], "yes").exit_code == 0
    settled = review(repo, state, "--json", str(out), roster_path=rp)
    assert settled.exit_code == 1, settled.output
    report = json.loads(out.read_text())
    assert report["status"] == "settled", report
    assert {p["id"]: p["state"] for p in report["participants"]} == {
        "hawk": "answered",
        "arbiter": "answered",
    }
    (only,) = report["findings"]
    assert only["subject"] == FINDING["subject"]


def test_a_question_expires_with_its_run_and_the_next_review_starts_anew(
    tmp_path: Path,
    repo: Path,  # noqa: F811
    server: FakeOpenAI,
) -> None:
    """The state file keeps a waiting run's keys with their expiry; once past it, the
    run and its question are gone: the next council review says so and reviews anew,
    and council resume refuses the run (exit 2)."""
    state, rp = tmp_path / "state.json", _roster(tmp_path, server.base_url)
    server.script(
        Scenario(tool_calls=(ToolCall("ask_human", {"question": "Prod?"}),)),
        Scenario(text=json.dumps({"findings": []})),
        model="gpt-hawk",
    )
    assert review(repo, state, roster_path=rp).exit_code == 4
    (ask,) = _asks(state)
    saved = json.loads(state.read_text())
    (session,) = saved["sessions"].values()
    (kept,) = session["runs"].values()
    assert kept["expires_ms"] is not None and "run:" + ask["run"] in kept["keys"]
    kept["expires_ms"] = 1  # long past
    state.write_text(json.dumps(saved))
    assert _asks(state) == [], "an expired question is not listed"
    gone = _cli(state, "resume", ask["run"])
    assert gone.exit_code == 2 and "its questions went with it" in gone.output
    assert _cli(state, "resume", ask["run"]).exit_code == 2
    fresh = review(repo, state, roster_path=rp)
    assert fresh.exit_code == 0, fresh.output
    assert server.count == 2, "the new round asked the reviewer anew"
    assert _asks(state) == []


def test_a_reviewer_may_ask_only_so_many_questions_in_a_run(tmp_path: Path) -> None:
    """A reviewer that asks again after every answer would keep the pull request waiting
    forever: past ASKS_PER_RUN questions, ask_human and council ask --question are
    refused at the source (the reviewer goes on), and each pause counts its questions."""
    from council.asks.ask import Ask
    from council.asks.paused import ASKS_PER_RUN, Paused, Resumption, too_many_asks
    from council.asks.pending import Answer
    from reviewers.models.tools import ToolBox
    from reviewers.sandbox.ask_desk import AskDesk

    def resumed(asked: int, call: str = "call_9") -> Resumption:
        paused = Paused(
            ask=Ask(question="B?"), call_id=call, messages=[], replies=[(call, None)], asked=asked
        )
        return Resumption(paused=paused, answer=Answer(value="yes"))

    assert too_many_asks(resumed(ASKS_PER_RUN - 1)) is None
    refusal = too_many_asks(resumed(ASKS_PER_RUN))
    assert refusal is not None
    box = ToolBox(["ask_human"], None, MemorySink(), ask_refusal=refusal)
    reply = box.call("ask_human", {"question": "A?"})
    assert reply.startswith("The question was not asked") and box.asked is None
    desk = AskDesk(tmp_path, None, resumed(ASKS_PER_RUN), "run_1", "asker")
    assert desk.reply({"question": "A?"})["outcome"] == "refused" and desk.asked is None
    counting = AskDesk(tmp_path, None, resumed(2), "run_1", "asker")
    assert counting.reply({"question": "A?"})["outcome"] == "asked"
    assert counting.asked is not None and counting.asked.asked == 3


def test_a_round_waiting_on_a_question_lists_the_findings_heard_so_far(
    tmp_path: Path,
    repo: Path,  # noqa: F811
    server: FakeOpenAI,
) -> None:
    """hawk asks, owl answered: the waiting round (exit 4) reports owl's finding beside
    the question (never "No findings." while something is open) and files nothing: the
    settled round files both reviewers' findings (a new one's id is settled then: hawk's,
    first in the roster, takes 1)."""
    state, rp = tmp_path / "state.json", _roster(tmp_path, server.base_url)
    script_asking_reviewer(server)
    out = tmp_path / "waiting.json"
    first = review(repo, state, "--json", str(out), roster_path=rp)
    assert first.exit_code == 4, first.output
    waiting = json.loads(out.read_text())
    assert waiting["status"] == "waiting"
    assert [(f["id"], f["subject"]) for f in waiting["findings"]] == [(1, OTHER["subject"])]
    (asked,) = waiting["asks"]
    assert asked["ask"]["question"] == "Which deployment profile does app.py run under?"
    assert OTHER["subject"] in first.stdout and "No findings." not in first.stdout
    (ask,) = _asks(state)
    assert _cli(state, "answer", ask["id"], "profile-123").exit_code == 0
    settled_out = tmp_path / "settled.json"
    settled = review(repo, state, "--json", str(settled_out), roster_path=rp)
    assert settled.exit_code == 1, settled.output
    filed = {f["subject"]: f["id"] for f in json.loads(settled_out.read_text())["findings"]}
    assert filed == {FINDING["subject"]: 1, OTHER["subject"]: 2}
