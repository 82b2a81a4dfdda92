"""The run lifecycle: the states a run is in, the events that move it, what each files.

The authority: workers name the event, :func:`step` says where it leads
(:data:`TRANSITIONS`) or refuses it (:class:`TransitionRefused`: any event on a final
state, so filing happens once; a late reviewer outcome or a repeated chord on
``judging``), and the store only persists the transition, compare-and-set on the state
(``workers.stores.sessions.SessionStore.commit``). A run opens ``open``, passes
``judging`` when it has a judge, may wait (``waiting``) on a person's confirmation or a
reviewer's question, and ends ``settled`` when every participant of the step was heard
in full, else ``partial`` (or ``cancelled``, ``timeout``).
Source: docs/architecture.md "The run lifecycle" (the table of every transition).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from council.model.report import RunStatus

Event = Literal[
    "opened",
    "dispatched",
    "reviewer_settled",
    "reviewers_settled",
    "worker_lost",
    "watchdog_fired",
    "judge_settled",
    "cancelled",
    "timed_out",
    "answered",
    "abandoned",
    "reviewers_asked",
    "resumed",
]
"""What happened to a run, as the runtime notices it."""

EVENTS: tuple[Event, ...] = get_args(Event)
"""Every event, in the order the Literal lists them."""

Filing = Literal["claims", "nothing", "outcome", "reviewers", "judge", "answers", "asks"]
"""What a transition writes: the run record and identity claims; nothing; one
participant's outcome; the reviewers' findings (a round's filing); the judge's; a
person's answers; the reviewers' questions."""

FINAL: frozenset[RunStatus] = frozenset({"settled", "partial", "cancelled", "timeout"})
"""States a run never leaves: its report is stored, its keys expire."""

STATES: tuple[RunStatus, ...] = (
    "open",
    "judging",
    "waiting",
    "settled",
    "partial",
    "cancelled",
    "timeout",
)

PARKED: frozenset[RunStatus] = FINAL | {"waiting"}
"""States in which no worker works on the run: its keys get their retention TTL."""

Whole = Literal["whole", "in part"]
"""Whether every participant of the step was heard in full."""

_WHOLE_TARGET: dict[Whole, RunStatus] = {"whole": "settled", "in part": "partial"}


@dataclass(frozen=True)
class Rule:
    """One row of the table: ``source`` + ``event`` → a target, and what it files.

    ``target`` is a state, or ``"heard"`` (settled or partial, by who was heard in
    full), or ``"ask-or-heard"`` (``waiting`` when a person must be asked first, else as
    ``"heard"``), or ``"judge-or-heard"`` (``judging`` when the roster has a judge, else
    as ``"ask-or-heard"``).
    """

    source: RunStatus | None
    event: Event
    target: RunStatus | Literal["heard", "ask-or-heard", "judge-or-heard"]
    files: Filing


TRANSITIONS: tuple[Rule, ...] = (
    Rule(None, "opened", "open", "claims"),
    Rule("open", "dispatched", "open", "nothing"),
    Rule("open", "reviewer_settled", "open", "outcome"),
    Rule("open", "reviewers_settled", "judge-or-heard", "reviewers"),
    Rule("open", "worker_lost", "judge-or-heard", "reviewers"),
    Rule("open", "watchdog_fired", "judge-or-heard", "reviewers"),
    Rule("open", "cancelled", "cancelled", "reviewers"),
    Rule("open", "timed_out", "timeout", "reviewers"),
    Rule("open", "abandoned", "cancelled", "reviewers"),
    Rule("open", "reviewers_asked", "waiting", "asks"),
    Rule("judging", "judge_settled", "ask-or-heard", "judge"),
    Rule("judging", "watchdog_fired", "ask-or-heard", "judge"),
    Rule("judging", "cancelled", "cancelled", "judge"),
    Rule("judging", "timed_out", "timeout", "judge"),
    Rule("waiting", "answered", "heard", "answers"),
    Rule("waiting", "resumed", "open", "answers"),
)
"""Every allowed transition; any pair not here is refused."""

_RULES: dict[tuple[RunStatus | None, Event], Rule] = {(r.source, r.event): r for r in TRANSITIONS}


@dataclass(frozen=True)
class Transition:
    """An allowed move: from ``source`` to ``target`` on ``event``, filing ``files``."""

    source: RunStatus | None
    event: Event
    target: RunStatus
    files: Filing

    @property
    def final(self) -> bool:
        """Whether the run ends here (its report is final)."""
        return self.target in FINAL

    @property
    def parks(self) -> bool:
        """Whether no worker works on the run after it (final, or waiting on a person):
        its keys get their retention TTL and it leaves the session's open runs."""
        return self.target in PARKED


class TransitionRefused(ValueError):
    """``event`` cannot happen to a run in ``state``: the stored state stands.

    Not a fault in itself: a second consolidation of a settled run, or a task
    redelivered after its run moved on, is refused and answered with the stored report.
    """

    def __init__(self, state: RunStatus | None, event: Event) -> None:
        self.state, self.event = state, event
        where = f"a run in state {state!r}" if state is not None else "a run not yet opened"
        super().__init__(f"{event} cannot happen to {where}")


def step(
    state: RunStatus | None,
    event: Event,
    *,
    judge: bool = False,
    whole: Whole = "whole",
    ask: bool = False,
) -> Transition:
    """The transition ``event`` makes from ``state``.

    ``judge``: the roster has a judge (the reviewers' filing then leads to ``judging``).
    ``ask``: a person must be asked before the run may settle (it then goes ``waiting``).
    ``whole``: whether every participant of this step was heard in full (for the judge's
    step: the reviewers and the judge), which decides ``settled`` or ``partial``.
    Raises :class:`TransitionRefused` for a pair the table does not allow.
    """
    rule = _RULES.get((state, event))
    if rule is None:
        raise TransitionRefused(state, event)
    heard = _WHOLE_TARGET[whole]
    if rule.target == "judge-or-heard":
        target: RunStatus = "judging" if judge else ("waiting" if ask else heard)
    elif rule.target == "ask-or-heard":
        target = "waiting" if ask else heard
    elif rule.target == "heard":
        target = heard
    else:
        target = rule.target
    return Transition(source=state, event=event, target=target, files=rule.files)


def allows(state: RunStatus | None, event: Event) -> bool:
    """Whether ``event`` may happen to a run in ``state`` (:func:`step` would not refuse)."""
    return (state, event) in _RULES


def is_final(state: RunStatus | None) -> bool:
    """Whether ``state`` is one a run never leaves."""
    return state in FINAL


def ending(forced: RunStatus | None, *, deadline_passed: bool = False) -> Event | None:
    """The event a forced status or the watchdog names, if any.

    ``forced`` is ``cancelled`` (Ctrl-C, SIGTERM, a cancellation stored on the run) or
    ``timeout`` (``--timeout``); ``deadline_passed`` is the waiting CLI's watchdog.
    Returns None when neither applies (the chord's own settling).
    Raises ValueError for a forced status that is not an ending.
    """
    if forced == "cancelled":
        return "cancelled"
    if forced == "timeout":
        return "timed_out"
    if forced is not None:
        raise ValueError(f"a run cannot be forced to {forced!r}: only cancelled or timeout")
    return "watchdog_fired" if deadline_passed else None
