"""A program reviewer's program and args are part of its identity: re-pointing an id with
findings attributed is refused, like a model change; a ledger written before programs were
identity is not refused for it."""

from __future__ import annotations

import pytest

from council.errors import IdentityRefused
from council.model.participant import Identity, Participant
from council.session.ledger import Ledger


def _mine(program: str, *args: str) -> Participant:
    options: dict[str, object] = {"program": program}
    if args:
        options["args"] = list(args)
    return Participant(id="mine", backend="command", options=options)


def test_repointing_the_program_with_findings_is_refused() -> None:
    ledger = Ledger()
    ledger.claim("reviewer", _mine("./mine.py"), set())
    with pytest.raises(IdentityRefused) as refused:
        ledger.claim("reviewer", _mine("./smells.py"), {"mine"})
    assert "program ./smells.py" in str(refused.value)
    assert ledger.get("mine") == _mine("./mine.py").identity()


def test_changing_the_args_is_a_new_meaning_too() -> None:
    ledger = Ledger()
    ledger.claim("reviewer", _mine("ruff", "check", "src"), set())
    with pytest.raises(IdentityRefused):
        ledger.claim("reviewer", _mine("ruff", "check", "tests"), {"mine"})
    assert ledger.claim("reviewer", _mine("ruff", "check", "tests"), set()).args == (
        "check",
        "tests",
    )


def test_other_options_and_model_reviewers_keep_no_program() -> None:
    model = Participant(id="hawk", backend="openai", model="m", options={"program": "x"})
    assert model.identity().program is None
    replay = Participant(id="tape", backend="replay", options={"answer": "a.json"})
    assert replay.identity().program is None and replay.identity().args is None


def test_a_ledger_from_before_programs_were_identity_is_not_refused() -> None:
    old = Identity(id="mine", role="reviewer", backend="command")
    ledger = Ledger([old])
    held = ledger.claim("reviewer", _mine("./mine.py"), {"mine"})
    assert held.program == "./mine.py"
    with pytest.raises(IdentityRefused):
        ledger.claim("reviewer", _mine("./smells.py"), {"mine"})
