"""The run lifecycle's table: every allowed transition, every refused one, and the rule
that the stores persist transitions without running the domain's rules."""

from __future__ import annotations

import ast
import inspect
import typing
from pathlib import Path

import pytest

from council.model.report import RunStatus
from council.round.lifecycle import (
    EVENTS,
    FINAL,
    STATES,
    TRANSITIONS,
    Event,
    TransitionRefused,
    allows,
    ending,
    is_final,
    step,
)
from workers.stores.sessions import SessionStore

ALLOWED: dict[tuple[RunStatus | None, Event], tuple[str, ...]] = {
    (None, "opened"): ("open",),
    ("open", "dispatched"): ("open",),
    ("open", "reviewer_settled"): ("open",),
    ("open", "reviewers_settled"): ("judging", "waiting", "settled", "partial"),
    ("open", "worker_lost"): ("judging", "waiting", "settled", "partial"),
    ("open", "watchdog_fired"): ("judging", "waiting", "settled", "partial"),
    ("open", "cancelled"): ("cancelled",),
    ("open", "abandoned"): ("cancelled",),
    ("open", "timed_out"): ("timeout",),
    ("open", "reviewers_asked"): ("waiting",),
    ("judging", "judge_settled"): ("waiting", "settled", "partial"),
    ("judging", "watchdog_fired"): ("waiting", "settled", "partial"),
    ("judging", "cancelled"): ("cancelled",),
    ("judging", "timed_out"): ("timeout",),
    ("waiting", "answered"): ("settled", "partial"),
    ("waiting", "resumed"): ("open",),
}
"""The table of council/round/lifecycle.py's docstring, written out again by hand."""

EVERY_PAIR = [(state, event) for state in (None, *STATES) for event in EVENTS]


def test_the_status_names_scripts_read_are_kept() -> None:
    """The states are today's status names and spellings, and the Literal lists them all."""
    assert STATES == (
        "open",
        "judging",
        "waiting",
        "settled",
        "partial",
        "cancelled",
        "timeout",
    )
    assert set(typing.get_args(RunStatus)) == set(STATES)
    assert set(typing.get_args(Event)) == set(EVENTS)
    assert {"settled", "partial", "cancelled", "timeout"} == FINAL


def test_the_table_is_exactly_the_documented_one() -> None:
    assert {(r.source, r.event) for r in TRANSITIONS} == set(ALLOWED)


@pytest.mark.parametrize(("state", "event"), sorted(ALLOWED, key=str))
def test_every_allowed_transition_reaches_its_targets(
    state: RunStatus | None, event: Event
) -> None:
    reached = {
        step(state, event, judge=judge, whole=whole, ask=ask).target
        for judge in (False, True)
        for whole in ("whole", "in part")
        for ask in (False, True)
    }
    assert reached == set(ALLOWED[(state, event)])
    assert allows(state, event)


@pytest.mark.parametrize(
    ("state", "event"), [pair for pair in EVERY_PAIR if pair not in ALLOWED], ids=str
)
def test_every_other_pair_is_refused(state: RunStatus | None, event: Event) -> None:
    assert not allows(state, event)
    with pytest.raises(TransitionRefused) as refused:
        step(state, event)
    assert event in str(refused.value)


def test_the_reviewers_filing_waits_for_a_judge_and_heard_decides_the_end() -> None:
    assert step("open", "reviewers_settled", judge=True, whole="in part").target == "judging"
    assert step("open", "reviewers_settled", whole="whole").target == "settled"
    assert step("open", "worker_lost", whole="in part").target == "partial"
    assert step("open", "cancelled", judge=True).target == "cancelled"
    judged = step("judging", "judge_settled", whole="in part")
    assert (judged.target, judged.files, judged.final) == ("partial", "judge", True)
    interim = step("open", "reviewers_settled", judge=True)
    assert (interim.files, interim.final) == ("reviewers", False)


def test_a_final_state_refuses_every_event() -> None:
    """Filing happens once: a second consolidation, a late errback, a redelivered task."""
    for state in FINAL:
        assert is_final(state)
        assert not any(allows(state, event) for event in EVENTS)
    assert not is_final("open") and not is_final("judging") and not is_final(None)
    assert not is_final("waiting")


def test_ending_names_the_forced_event() -> None:
    assert ending("cancelled") == "cancelled"
    assert ending("timeout") == "timed_out"
    assert ending(None, deadline_passed=True) == "watchdog_fired"
    assert ending(None) is None
    with pytest.raises(ValueError, match="only cancelled or timeout"):
        ending("settled")


STORES = Path(__file__).parents[2] / "workers" / "stores"


@pytest.mark.parametrize("module", sorted(p.name for p in STORES.glob("*.py")))
def test_stores_import_no_domain_rules(module: str) -> None:
    """The stores persist; the round's rules, landing and the gate stay out of them."""
    tree = ast.parse((STORES / module).read_text())
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    } | {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    forbidden = {
        "council.round.filing",
        "council.change.commentable",
        "council.round.gate",
        "council.merging.consolidation",
    }
    assert not imported & forbidden


def test_the_store_commit_takes_no_callables() -> None:
    """SessionStore.commit gets data (a transition and a filing), never a closure to run
    inside its transaction."""
    hints = typing.get_type_hints(SessionStore.commit)
    for name, hint in hints.items():
        text = str(hint)
        assert "Callable" not in text and "function" not in text, name
    assert not hasattr(SessionStore, "settle")
    assert list(inspect.signature(SessionStore.commit).parameters) == [
        "self",
        "record",
        "transition",
        "filing",
        "now_ms",
    ]
