"""A model review's state is freed when the review ends, not left to the garbage collector.

Why: a worker holds hundreds of reviews; a reference cycle through each one's run left its
request, session and tools (50 objects a stream) for the collector to find, and its full
collections walked them all (``bench/concurrency.py``).
"""

from __future__ import annotations

import gc
import json

from tests.fakes import FakeServer, Scenario
from tests.fakes.review import Backend, participant, request
from tests.unit.test_reviewer_openai_anthropic import backend, server  # noqa: F401 (fixtures)

ANSWER = json.dumps({"findings": []})

STATE = frozenset({"_Run", "ToolBox", "Watch", "ReviewRequest", "StreamedTurn"})
"""The types of a review's own state."""


def test_a_finished_review_leaves_no_cycle(
    backend: Backend,  # noqa: F811
    server: FakeServer,  # noqa: F811
) -> None:
    """After a review with tools, the collector finds none of its state as garbage:
    reference counting freed it all."""
    server.script(Scenario(text=ANSWER))
    reviewer = backend.reviewer()
    gc.collect()
    gc.disable()
    try:
        result = reviewer.review(request(participant(backend, server, tools=["read_file"])))
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = sorted({type(o).__name__ for o in gc.garbage} & STATE)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert result.answer == ANSWER
    assert left == []
