"""Reviewer backends: one adapter per backend, behind one small interface.

:func:`reviewer_for` picks the backend a roster entry names; :func:`check_options` refuses
its bad options with the field path (RosterError), so a round stops before anything is
sent; :func:`key_env` names the variable a worker reads the provider key from. Backends
never raise for a reviewer fault: they return a :class:`ReviewResult` with a ``failure``
or a ``stop`` (docs/harvest.md §7). The model backends (``openai``, ``anthropic``) import
their SDK on first use (over a second each), so a round without them never pays for it.

Source: docs/architecture.md "Layers" (reviewers), docs/identity-and-clocks.md "Participant".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from council.model.backend_result import ReviewResult, Stop
from council.model.participant import Participant
from council.roster.backend_options import key_env, where_of
from reviewers.base import JournalSink, Reviewer, ReviewRequest
from reviewers.programs import command, replay, sarif
from reviewers.unavailable import UnavailableReviewer

__all__ = [
    "BUILT_BACKENDS",
    "JournalSink",
    "ReviewRequest",
    "ReviewResult",
    "Reviewer",
    "Stop",
    "check_options",
    "key_env",
    "load_backends",
    "reviewer_for",
]


def _openai() -> Reviewer:
    from reviewers.models.openai_chat import OpenAIReviewer

    return OpenAIReviewer()


def _anthropic() -> Reviewer:
    from reviewers.models.anthropic_messages import AnthropicReviewer

    return AnthropicReviewer()


def _check_openai(participant: Participant, where: str) -> None:
    from reviewers.models.openai_chat import check_participant

    check_participant(participant, where)


def _check_anthropic(participant: Participant, where: str) -> None:
    from reviewers.models.anthropic_messages import check_participant

    check_participant(participant, where)


_REVIEWERS: dict[str, Callable[[], Reviewer]] = {
    "command": command.CommandReviewer,
    "replay": replay.ReplayReviewer,
    "sarif": sarif.SarifReviewer,
    "openai": _openai,
    "anthropic": _anthropic,
}

_CHECKS: dict[str, Callable[[Mapping[str, Any], str], None]] = {
    "command": command.check_options,
    "replay": replay.check_options,
    "sarif": sarif.check_options,
}

_PARTICIPANT_CHECKS: dict[str, Callable[[Participant, str], None]] = {
    "openai": _check_openai,
    "anthropic": _check_anthropic,
}
"""Checks that need the whole participant (model, thinking level, tools), not only options."""

BUILT_BACKENDS: tuple[str, ...] = tuple(_REVIEWERS)
"""The backends this version runs; the others of the design fail with a clear reason."""


def reviewer_for(participant: Participant) -> Reviewer:
    """The reviewer backend for a participant (by ``participant.backend``).

    A backend of the design that is not built in this version gets a reviewer whose
    every result is a failure saying so. Never raises.
    """
    factory = _REVIEWERS.get(participant.backend)
    if factory is None:
        return UnavailableReviewer(participant.backend)
    return factory()


def load_backends(backends: Iterable[str]) -> None:
    """Import the modules (and SDK) of each of ``backends`` now rather than on first use:
    a worker whose registry holds a model provider loads its SDK before its heap is
    frozen (``workers.app.tasks``). Unknown names are skipped. Never raises."""
    for backend in dict.fromkeys(backends):
        if backend in _PARTICIPANT_CHECKS:
            _REVIEWERS[backend]()


def check_options(participant: Participant, where: str | None = None) -> None:
    """Refuse a participant's bad backend options, naming the field path.

    ``where`` is the roster path prefix of the entry (``reviewers[2]``, ``judge``); by
    default ``reviewers[<id>]`` (``judge`` for the judge). Why at roster time: a replay
    without ``answer`` or a command without ``program`` should stop the round before any
    reviewer is asked. A model backend also refuses a missing model, a thinking level it
    cannot express, and unknown tools. Backends not built here accept any options
    (nothing reads them). Raises :class:`council.errors.RosterError`
    (``reviewers[2].answer: missing ...``).
    """
    prefix = where if where is not None else where_of(participant)
    check = _CHECKS.get(participant.backend)
    if check is not None:
        check(participant.options, prefix)
    whole = _PARTICIPANT_CHECKS.get(participant.backend)
    if whole is not None:
        whole(participant, prefix)
