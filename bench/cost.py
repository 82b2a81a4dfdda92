"""Benchmark: what the providers' prefix caches save a council, with the prompt's order.

A council of four model reviewers (the ``security``, ``performance``, ``tests`` and
``api-design`` personas, one provider) reviews a 20 KiB change through the real
``openai`` backend, against a fake OpenAI-compatible server in this process that reports
usage and honours a prefix cache the way OpenAI documents its own: it remembers every
prompt it has answered and reports as cached the longest common prefix with any of them
(tokens ≈ characters / 4), from 1,024 tokens on, in steps of 128. The same round is run
twice, each on a fresh cache: the prompts as :func:`council.roster.prompt.prompt_parts`
builds them (the part every reviewer shares first) and, as the baseline, the same bytes
in the old order (each reviewer's id and lens first, then the rest). Printed: tokens
sent, the cached share, and the cost at gpt-4.1's published prices ($2 input, $0.50
cached input, $8 output per million tokens) with the saving, from the report's own
arithmetic (:mod:`council.round.cost`), and the report's prompt-cache line.

The reviewers are sent one after another: a provider caches a prompt once it has
answered it, so reviewers sent at the same instant all miss (the real council sends
them at once; its later rounds and retries are what hits).

Run: ``python bench/cost.py [--quick]`` from the checkout (it is quick already:
``--quick`` changes nothing). Exits 0 unless it crashes."""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.headline import headline  # noqa: E402
from council.change.diff import parse_diff  # noqa: E402
from council.model.backend_result import Usage  # noqa: E402
from council.model.findings import Harvest  # noqa: E402
from council.model.participant import Participant  # noqa: E402
from council.rendering import render_markdown  # noqa: E402
from council.roster.personas import load_persona  # noqa: E402
from council.roster.prompt import Prompt  # noqa: E402
from council.roster.round_roster import reviewer_prompts  # noqa: E402
from council.round.cost import cost_usd, parse_prices, saved_usd  # noqa: E402
from council.round.filing import RoundFacts, conclude_round  # noqa: E402
from council.round.outcome import ParticipantOutcome  # noqa: E402
from reviewers.base import ReviewRequest  # noqa: E402
from reviewers.models.openai_chat import OpenAIReviewer  # noqa: E402
from tests.fakes import FakeOpenAI, Scenario  # noqa: E402
from tests.fakes.review import MemorySink  # noqa: E402

PERSONAS = ("security", "performance", "tests", "api-design")
"""The four reviewers' personas (their ids are the personas')."""

CHARS_PER_TOKEN = 4
"""How the fake counts tokens: characters / 4."""

MIN_CACHED_TOKENS = 1024
"""The shortest prefix the fake serves from cache (OpenAI's documented minimum)."""

CACHE_STEP_TOKENS = 128
"""The cached prefix grows in steps of this many tokens (OpenAI's documented step)."""

OUTPUT_TOKENS = 400
"""Tokens each fake answer reports as output."""

PRICES = parse_prices({"openai:fake-model": {"input": 2.0, "output": 8.0, "cached_input": 0.5}})
"""gpt-4.1's published prices (USD per million tokens), for the fake model."""

KEY = "bench-key"
"""The key the fake server expects."""


def change_text(files: int = 6, lines: int = 46) -> str:
    """A 20 KiB diff: ``files`` modified Python files, each a hunk of ``lines`` added
    lines between context lines."""
    parts = []
    for f in range(files):
        added = "".join(
            f"+    total_{n} = sum(item.price * {n} for item in order_{f}.items)  # line\n"
            for n in range(lines)
        )
        parts.append(
            f"diff --git a/shop/orders_{f}.py b/shop/orders_{f}.py\n"
            f"index 1111111..2222222 100644\n--- a/shop/orders_{f}.py\n+++ b/shop/orders_{f}.py\n"
            f"@@ -10,2 +10,{lines + 2} @@ def checkout_{f}(order_{f}):\n"
            f"     total = 0\n{added}     return total\n"
        )
    return "".join(parts)


class PrefixCache:
    """The fake provider's prompt cache: the prompts answered so far."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.lock = threading.Lock()

    def answer(self, body: Mapping[str, Any]) -> Scenario:
        """A scenario for one request, its usage counted from the prompt and the cache."""
        messages = body.get("messages") or []
        prompt = "".join(str(m.get("content") or "") for m in messages if isinstance(m, dict))
        with self.lock:
            common = max((_common(prompt, old) for old in self.seen), default=0)
            self.seen.append(prompt)
        tokens = math.ceil(len(prompt) / CHARS_PER_TOKEN)
        hit = common // CHARS_PER_TOKEN
        cached = hit - hit % CACHE_STEP_TOKENS if hit >= MIN_CACHED_TOKENS else 0
        return Scenario(
            text='{"findings": []}',
            input_tokens=tokens,
            cached_tokens=min(cached, tokens),
            output_tokens=OUTPUT_TOKENS,
        )


def _common(one: str, two: str) -> int:
    """How many leading characters ``one`` and ``two`` share."""
    shorter = min(len(one), len(two))
    return next((i for i in range(shorter) if one[i] != two[i]), shorter)


def run_round(
    people: Sequence[Participant], prompts: Mapping[str, Prompt], text: Callable[[Prompt], str]
) -> dict[str, Usage]:
    """Each reviewer's usage, sent one after another to a fresh fake with a fresh cache;
    ``text`` makes the prompt sent from its two parts."""
    cache = PrefixCache()
    used: dict[str, Usage] = {}
    with FakeOpenAI(api_key=KEY) as server:
        for p in people:
            server.script(cache.answer)
            who = p.model_copy(
                update={"options": {"base_url": server.base_url, "api_key_env": "BENCH_KEY"}}
            )
            request = ReviewRequest(
                participant=who,
                prompt=text(prompts[p.id]),
                journal=MemorySink(),
                secrets={"BENCH_KEY": KEY},
                shared=len(prompts[p.id].shared),
            )
            result = OpenAIReviewer().review(request)
            if result.usage is None or result.failure is not None:
                raise SystemExit(f"{p.id}: the fake provider failed: {result.failure}")
            used[p.id] = result.usage
    return used


def report_line(people: Sequence[Participant], used: Mapping[str, Usage]) -> str:
    """The report's prompt-cache line for the round (its Markdown)."""
    outcomes = {
        p.id: ParticipantOutcome(
            participant=p.id, status="answered", harvest=Harvest(), usage=used[p.id]
        )
        for p in people
    }
    facts = RoundFacts(run_id="bench", session="bench", prices=PRICES)
    _, report = conclude_round(facts, people, outcomes, 1, status="settled", settled_ms=0)
    markdown = render_markdown(report)
    return next((ln for ln in markdown.splitlines() if ln.startswith("**Prompt cache:**")), "")


def main() -> None:
    diff = change_text()
    change = parse_diff(diff)
    people = [
        Participant(id=name, backend="openai", model="fake-model", persona=name)
        for name in PERSONAS
    ]
    personas = {p.id: load_persona(p.id).body for p in people}
    prompts = reviewer_prompts(people, change, personas, [])
    sizes = [len(prompts[p.id].text) for p in people]
    shared = len(prompts[people[0].id].shared)
    print(
        f"one round: {len(people)} openai reviewers ({', '.join(PERSONAS)}), a "
        f"{len(diff.encode()) / 1024:.1f} KiB change; prompts {min(sizes):,}-{max(sizes):,} "
        f"characters, {shared:,} of them shared ({100 * shared / min(sizes):.1f}% of the "
        "shortest)"
    )
    print(
        f"fake provider: prefix cache from {MIN_CACHED_TOKENS} tokens in steps of "
        f"{CACHE_STEP_TOKENS}; prices $2 input, $0.50 cached, $8 output per 1M tokens"
    )
    orders: list[tuple[str, Callable[[Prompt], str]]] = [
        ("id and lens first (old)", lambda parts: parts.own + parts.shared),
        ("shared part first (new)", lambda parts: parts.text),
    ]
    print(f"{'order':<26}{'tokens sent':>12}{'cached':>9}{'share':>8}{'cost':>10}{'saved':>10}")
    rows: dict[str, float] = {}
    for name, text in orders:
        used = run_round(people, prompts, text)
        sent = sum(u.input for u in used.values())
        cached = sum(u.cached for u in used.values())
        cost = sum(cost_usd(u, "openai", "fake-model", PRICES) or 0.0 for u in used.values())
        saved = sum(saved_usd(u, "openai", "fake-model", PRICES) or 0.0 for u in used.values())
        rows[name] = cost
        print(
            f"{name:<26}{sent:>12,}{cached:>9,}{100 * cached / sent:>7.1f}%"
            f"{cost:>10.4f}{saved:>10.4f}"
        )
        print(f"  report: {report_line(people, used) or '(no prompt-cache line)'}")
    old, new = (rows[name] for name, _ in orders)
    ceiling = (len(people) - 1) * shared / sum(sizes)
    print(
        f"the new order costs {100 * (old - new) / old:.1f}% less than the old one; the most "
        f"{len(people)} reviewers can read from cache is {100 * ceiling:.1f}% (the first one "
        "writes what the others read)"
    )
    headline(
        "cost",
        f"a round of {len(people)} persona reviewers with prefix caching, cost",
        f"${new:.4f} (shared part first)",
        f"${old:.4f} (the old order)",
        new / old,
    )


if __name__ == "__main__":
    main()
