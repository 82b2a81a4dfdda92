"""The reviewer registry: a backend per participant, and option checks with field paths."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from council.errors import RosterError
from council.model.participant import Participant
from reviewers import BUILT_BACKENDS, check_options, load_backends, reviewer_for
from reviewers.base import ReviewRequest
from reviewers.models.anthropic_messages import AnthropicReviewer
from reviewers.models.openai_chat import OpenAIReviewer
from reviewers.programs.command import CommandReviewer
from reviewers.programs.replay import ReplayReviewer
from reviewers.programs.sarif import SarifReviewer
from reviewers.unavailable import UnavailableReviewer


class MemorySink:
    """An in-memory journal sink."""

    def __init__(self) -> None:
        self.entries: list[str] = []

    def append(self, raw: str) -> str:
        self.entries.append(raw)
        return "Recorded."


def participant(backend: str, role: str = "reviewer", **options: Any) -> Participant:
    """A participant ``p1`` on ``backend`` with ``options``."""
    return Participant.model_validate(
        {"id": "p1", "role": role, "backend": backend, "options": options}
    )


@pytest.mark.parametrize(
    ("backend", "kind"),
    [
        ("command", CommandReviewer),
        ("replay", ReplayReviewer),
        ("sarif", SarifReviewer),
        ("openai", OpenAIReviewer),
        ("anthropic", AnthropicReviewer),
    ],
)
def test_built_backends_get_their_reviewer(backend: str, kind: type) -> None:
    """Each built backend maps to its reviewer class."""
    assert isinstance(reviewer_for(participant(backend)), kind)
    assert backend in BUILT_BACKENDS


def test_unbuilt_backend_fails_saying_so() -> None:
    """A backend not in this version gives a reviewer whose result is a failure naming it."""
    p = participant("command")
    result = UnavailableReviewer("bedrock").review(
        ReviewRequest(participant=p, prompt="", journal=MemorySink())
    )
    assert result.failure is not None
    assert "the bedrock backend is not available in this version" in result.failure
    assert result.answer == "" and result.stop is None


def test_check_options_uses_the_given_prefix() -> None:
    """A replay without answer is refused at <where>.answer."""
    with pytest.raises(RosterError) as caught:
        check_options(participant("replay"), where="reviewers[2]")
    assert caught.value.path == "reviewers[2].answer"
    assert str(caught.value).startswith("roster: reviewers[2].answer: ")


def test_check_options_default_prefix_names_the_id_or_judge() -> None:
    """Without where, the prefix is reviewers[<id>], or judge for the judge."""
    with pytest.raises(RosterError) as caught:
        check_options(participant("command"))
    assert caught.value.path == "reviewers[p1].program"
    with pytest.raises(RosterError) as caught:
        check_options(participant("sarif", role="judge"))
    assert caught.value.path == "judge.program"


@pytest.mark.parametrize(
    ("backend", "options", "field"),
    [
        ("command", {"program": ""}, "program"),
        ("command", {"program": "x", "args": "--flag"}, "args"),
        ("command", {"program": "x", "args": ["ok", 3]}, "args"),
        ("command", {"program": "x", "progam": "y"}, "progam"),
        ("sarif", {"program": 7}, "program"),
        ("sarif", {"program": "ruff", "base_dir": 1}, "base_dir"),
        ("replay", {"answer": "a.txt", "latency_ms": "10"}, "latency_ms"),
    ],
)
def test_bad_options_are_refused_with_their_field(
    backend: str, options: dict[str, Any], field: str
) -> None:
    """Every bad option is refused with its own field path."""
    with pytest.raises(RosterError) as caught:
        check_options(participant(backend, **options), where="reviewers[0]")
    assert caught.value.path == f"reviewers[0].{field}"


@pytest.mark.parametrize(
    ("backend", "options"),
    [
        ("command", {"program": "reviewer.py", "args": ["-v"]}),
        ("sarif", {"program": "ruff", "base_dir": "/r"}),
        ("replay", {"answer": "a.txt", "journal": "j.jsonl", "latency_ms": 0}),
    ],
)
def test_good_options_pass(backend: str, options: dict[str, Any]) -> None:
    """Well-formed options are accepted."""
    check_options(participant(backend, **options), where="reviewers[0]")


def test_load_backends_imports_the_model_backends_named() -> None:
    """load_backends imports a model backend's module (and SDK) ahead of its first use;
    program backends and unknown names are skipped without raising."""
    load_backends(["command", "no-such-backend", "openai", "openai"])
    assert "reviewers.models.openai_chat" in sys.modules
