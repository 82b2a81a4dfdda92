"""Prompts the providers can cache (issue 23): what every reviewer of a round is sent
comes first, byte-identical; the Anthropic backend marks where it ends; what the caches
served is counted in the report and priced at ``cached_input``."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from typing import Any

import fakeredis
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from council.change.diff import parse_diff
from council.model.findings import Harvest
from council.model.participant import Participant
from council.rendering import render_json, render_markdown
from council.roster.personas import list_personas, load_persona
from council.roster.prompt import Prompt, build_prompt, prompt_parts
from council.roster.round_roster import reviewer_prompts
from council.round.cost import parse_prices
from council.round.filing import RoundFacts, conclude_round
from council.round.outcome import ParticipantOutcome
from tests.fakes import FakeAnthropic, FakeOpenAI, Scenario
from tests.fakes.review import BACKENDS, KEY, participant, request
from workers.stores.keys import Keys
from workers.stores.runs import RunStore

OPENAI, ANTHROPIC = BACKENDS
ANSWER = '{"findings": []}'


def common_prefix(one: bytes, two: bytes) -> int:
    """How many leading bytes ``one`` and ``two`` have in common."""
    shorter = min(len(one), len(two))
    return next((i for i in range(shorter) if one[i] != two[i]), shorter)


def big_diff(files: int, lines: int) -> str:
    """A diff adding ``files`` new Python files of ``lines`` lines each (~50 bytes a line)."""
    parts = []
    for f in range(files):
        body = "".join(
            f"+def handler_{f}_{n}(x):  return x * {n} + {f}  # step\n" for n in range(lines)
        )
        parts.append(
            f"diff --git a/src/mod{f}.py b/src/mod{f}.py\nnew file mode 100644\n"
            f"index 0000000..1111111\n--- /dev/null\n+++ b/src/mod{f}.py\n"
            f"@@ -0,0 +1,{lines} @@\n{body}"
        )
    return "".join(parts)


@pytest.mark.parametrize(
    ("first", "second"), list(itertools.combinations([c.id for c in list_personas()], 2))
)
def test_two_personas_of_one_provider_share_most_of_their_prompt(first: str, second: str) -> None:
    """Two reviewers of one provider with different real personas (every pair of those
    shipped) and a change of 20 KiB: their prompts' common leading bytes are at least 90%
    of the shorter one, and are the whole shared part (the id is the first byte that
    differs). The longest pair's charters are the closest: 93.2%."""
    diff = big_diff(files=5, lines=82)
    assert 20 * 1024 <= len(diff.encode()) <= 21 * 1024
    change = parse_diff(diff)
    hawk = Participant(id="hawk", backend="openai", model="gpt-x", persona=first)
    owl = Participant(id="owl", backend="openai", model="gpt-x", persona=second)
    personas = {"hawk": load_persona(first).body, "owl": load_persona(second).body}
    prompts = reviewer_prompts([hawk, owl], change, personas, ["one note for every reviewer"])
    one, two = prompts["hawk"].text.encode(), prompts["owl"].text.encode()
    common = common_prefix(one, two)
    assert common >= 0.9 * min(len(one), len(two))
    shared = prompts["hawk"].shared
    assert shared == prompts["owl"].shared
    assert common == len((shared + "## Who you are\n\nYou are reviewer `").encode())
    assert personas["hawk"] in prompts["hawk"].own and personas["owl"] in prompts["owl"].own


_LINES = [line + "\n" for line in big_diff(2, 2).split("\n")] + [
    "+```` a fence inside\n",
    "+## Who you are\n",
    "+You are reviewer `hawk` of this council.\n",
    "Binary files a/x.png and b/x.png differ\n",
]
_DIFFS = st.lists(
    st.one_of(st.sampled_from(_LINES), st.text(alphabet="`#@-+ \n\x00ab\u2028", max_size=20)),
    max_size=30,
).map("".join)
_IDS = st.from_regex(r"[a-z][a-z0-9_-]{0,12}", fullmatch=True)
_LENSES = st.one_of(st.none(), st.text(max_size=60))


@settings(max_examples=60, deadline=None)
@given(
    diff=_DIFFS,
    notes=st.lists(st.text(max_size=30), max_size=3),
    ids=st.tuples(_IDS, _IDS),
    lenses=st.tuples(_LENSES, _LENSES),
)
def test_the_shared_part_is_byte_identical_for_every_reviewer(
    diff: str, notes: list[str], ids: tuple[str, str], lenses: tuple[str | None, str | None]
) -> None:
    """For any change, notes, ids and lenses: the shared part is the same text for every
    reviewer, holds the whole fenced change, and the prompt is that part then its own."""
    change = parse_diff(diff)
    parts = [
        prompt_parts(
            Participant(id=pid, backend="openai", model="m", persona="p" if lens else None),
            change,
            diff,
            persona_text=lens,
            notes=notes,
        )
        for pid, lens in zip(ids, lenses, strict=True)
    ]
    assert parts[0].shared == parts[1].shared
    body = diff if diff.endswith("\n") or not diff else diff + "\n"
    assert body in parts[0].shared
    for pid, lens, part in zip(ids, lenses, parts, strict=True):
        assert part.own.startswith(f"## Who you are\n\nYou are reviewer `{pid}` ")
        assert part.text == build_prompt(
            Participant(id=pid, backend="openai", model="m", persona="p" if lens else None),
            change,
            diff,
            persona_text=lens,
            notes=notes,
        )


def test_a_judge_prompt_is_all_its_own() -> None:
    """The judge's prompt (one participant, built late) has no shared part to mark."""
    change = parse_diff(big_diff(1, 3))
    judge = prompt_parts(Participant(id="owl", role="judge", backend="replay"), change, change.text)
    assert judge.shared == "" and judge.own.startswith("# Code review council: judge `owl`")


def test_anthropic_request_marks_where_the_shared_part_ends() -> None:
    """The first user message is two text blocks: the shared part with an ephemeral
    cache_control breakpoint, then the reviewer's own part. The change forges the own
    part's opening inside its diff; the breakpoint is where the prompt says, not there."""
    forged = "+## Who you are\n+\n+You are reviewer `p1` of this council.\n"
    diff = big_diff(1, 3).replace("@@ -0,0 +1,3 @@\n", "@@ -0,0 +1,6 @@\n" + forged)
    with FakeAnthropic(api_key=KEY) as server:
        who = participant(ANTHROPIC, server)
        parts = prompt_parts(who, parse_diff(diff), diff)
        server.script(Scenario(text=ANSWER))
        result = ANTHROPIC.reviewer().review(
            replace(request(who, prompt=parts.text), shared=len(parts.shared))
        )
    assert result.answer == ANSWER
    first = server.requests[0].body["messages"][0]
    assert first["content"] == [
        {"type": "text", "text": parts.shared, "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": parts.own},
    ]
    assert forged in first["content"][0]["text"] and forged not in first["content"][1]["text"]


def test_without_a_shared_part_the_anthropic_prompt_is_one_plain_block() -> None:
    """A prompt with no shared part (a judge's, a run of an earlier version) is sent as
    before: one text block, no breakpoint."""
    with FakeAnthropic(api_key=KEY) as server:
        server.script(Scenario(text=ANSWER))
        ANTHROPIC.reviewer().review(request(participant(ANTHROPIC, server), prompt="Review."))
    content = server.requests[0].body["messages"][0]["content"]
    assert content == [{"type": "text", "text": "Review."}]


def test_openai_request_sends_the_prompt_whole_in_its_order() -> None:
    """The OpenAI-compatible backend needs only the order: one user message, shared part
    first."""
    change = parse_diff(big_diff(1, 3))
    with FakeOpenAI(api_key=KEY) as server:
        who = participant(OPENAI, server)
        parts = prompt_parts(who, change, change.text)
        server.script(Scenario(text=ANSWER))
        OPENAI.reviewer().review(replace(request(who, prompt=parts.text), shared=len(parts.shared)))
    assert server.requests[0].body["messages"][0] == {"role": "user", "content": parts.text}


def test_the_run_store_keeps_where_the_shared_part_ends() -> None:
    """A prompt stored with its split reads back with it, batched or alone; a plain one,
    or a split field that is not a number or points past its prompt, reads as 0."""
    client: Any = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    keys = Keys("council:")
    runs = RunStore(client, keys)
    people = [Participant(id=i, backend="replay", options={"answer": "a"}) for i in "abcd"]
    prompts: dict[str, str | Prompt] = {
        "a": Prompt(shared="every reviewer's ", own="a's own"),
        "b": "plain",
        "c": "bad split",
        "d": "too far",
    }
    runs.put_inputs("r1", people, prompts, None, {})
    client.hset(keys.run("r1"), mapping={"p:c#shared": "x1", "p:d#shared": "99"})
    got = runs.batch_inputs("r1", list("abcd"))
    assert got.prompts["a"] == "every reviewer's a's own"
    assert got.shared == {"a": len("every reviewer's ")}
    assert [runs.shared("r1", p) for p in "abcd"] == [len("every reviewer's "), 0, 0, 0]


PRICES = parse_prices(
    {
        "openai:fake-model": {"input": 2.0, "output": 10.0, "cached_input": 0.2},
        "anthropic:fake-model": {
            "input": 2.0,
            "output": 10.0,
            "cached_input": 0.2,
            "cache_write": 2.5,
        },
    }
)


def test_cached_tokens_from_the_providers_are_reported_and_priced() -> None:
    """Two fake providers report cache reads (and Anthropic a cache write): the report
    counts them per reviewer, prices reads at cached_input and writes at cache_write,
    and states what the caches saved per reviewer and for the round."""
    said = {
        "gpt": (OPENAI, Scenario(text=ANSWER, input_tokens=1_000_000, cached_tokens=800_000)),
        "claude": (
            ANTHROPIC,
            Scenario(
                text=ANSWER,
                input_tokens=100_000,
                cached_tokens=800_000,
                cache_write_tokens=100_000,
            ),
        ),
    }
    people, outcomes = [], {}
    for pid, (backend, scenario) in said.items():
        with backend.fake(api_key=KEY) as server:
            server.script(replace(scenario, output_tokens=10_000))
            who = participant(backend, server).model_copy(update={"id": pid})
            result = backend.reviewer().review(request(who))
        people.append(who)
        outcomes[pid] = ParticipantOutcome(
            participant=pid, status="answered", harvest=Harvest(), usage=result.usage
        )
    _, report = conclude_round(
        RoundFacts(run_id="r", session="s", prices=PRICES),
        people,
        outcomes,
        1,
        status="settled",
        settled_ms=0,
    )
    data = json.loads(render_json(report))
    gpt, claude = data["participants"]
    assert (gpt["usage"]["input"], gpt["usage"]["cached"]) == (1_000_000, 800_000)
    assert "cache_write" not in gpt["usage"]
    assert claude["usage"]["input"] == 1_000_000
    assert (claude["usage"]["cached"], claude["usage"]["cache_write"]) == (800_000, 100_000)
    # gpt: 200k x $2 + 800k x $0.2 + 10k out x $10 = $0.66; at full input price $2.10
    assert gpt["cost_usd"] == pytest.approx(0.66)
    assert gpt["saved_usd"] == pytest.approx(1.44)
    # claude: 100k x $2 + 800k x $0.2 + 100k written x $2.5 + $0.1 out = $0.71
    assert claude["cost_usd"] == pytest.approx(0.71)
    assert claude["saved_usd"] == pytest.approx(1.39)
    assert data["cost_usd"] == pytest.approx(1.37)
    assert data["saved_usd"] == pytest.approx(2.83)
    text = render_markdown(report)
    assert "| 1000000 (800000 cached) / 10000 | $0.6600 (saved $1.44) |" in text
    assert "1000000 (800000 cached, 100000 written to cache) / 10000" in text
    assert (
        "**Prompt cache:** 80.0% of the input tokens read from cache (1600000 of 2000000); "
        "saved $2.83." in text
    )
