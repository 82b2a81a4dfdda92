"""Unit tests for the identity ledger (council.session.ledger) beyond the shared cases."""

from __future__ import annotations

import pytest

from council.errors import IdentityRefused
from council.model.findings import ChangeAnchor, Finding, Origin
from council.model.participant import Clocks, Identity, Participant
from council.session.ledger import Ledger, attributed_ids, identity_of


def _reviewer(pid: str, model: str, **extra: object) -> Participant:
    """A checked openai reviewer participant."""
    return Participant.model_validate({"id": pid, "backend": "openai", "model": model, **extra})


def _finding(origin: Origin, raised_by: tuple[str, ...] | None = None) -> Finding:
    """A minimal canonical finding with the given origin and raised_by."""
    return Finding(
        anchor=ChangeAnchor(), label="issue", subject="x", origin=origin, raised_by=raised_by
    )


def test_claim_accepts_a_participant_model() -> None:
    """A checked Participant claims the identity it describes, tools as a sorted set."""
    ledger = Ledger()
    got = ledger.claim("reviewer", _reviewer("hawk", "m1", tools=("grep", "read", "grep")), set())
    assert got == Identity(id="hawk", backend="openai", model="m1", tools=("grep", "read"))
    assert ledger.held() == [got]


def test_role_argument_wins_over_participant_role() -> None:
    """The role claimed is the one passed to claim, not the entry's default role."""
    got = Ledger().claim("judge", _reviewer("owl", "m1"), set())
    assert got.role == "judge"


def test_clocks_are_not_identity() -> None:
    """Two participants differing only in clocks have the same identity."""
    slow = _reviewer("hawk", "m1", clocks=Clocks(backstop_ms=9_000_000))
    assert identity_of("reviewer", slow) == identity_of("reviewer", _reviewer("hawk", "m1"))


def test_mapping_and_model_give_the_same_identity() -> None:
    """A plain roster mapping and the checked model of it claim the same identity."""
    plain = {"id": "hawk", "backend": "openai", "model": "m1", "backstop_ms": 60_000}
    assert identity_of("reviewer", plain) == identity_of("reviewer", _reviewer("hawk", "m1"))


@pytest.mark.parametrize(
    "entry",
    [{}, {"id": "  "}, {"id": 3}, {"id": "a", "model": 7}, {"id": "a", "tools": "grep"}],
)
def test_malformed_mapping_is_a_value_error(entry: dict[str, object]) -> None:
    """A mapping without a text id or with a field of the wrong type is refused."""
    with pytest.raises(ValueError):
        identity_of("reviewer", entry)


def test_unknown_role_is_a_value_error() -> None:
    """Only reviewer and judge are roles."""
    with pytest.raises(ValueError, match="role"):
        identity_of("observer", {"id": "a"})


def test_refusal_keeps_both_identities_and_explains() -> None:
    """A refusal carries the id, both identities and both ways out."""
    ledger = Ledger()
    ledger.claim("reviewer", _reviewer("hawk", "m1"), set())
    with pytest.raises(IdentityRefused) as caught:
        ledger.claim("reviewer", _reviewer("hawk", "m2"), {"hawk"})
    err = caught.value
    assert (err.participant, err.held.model, err.asked.model) == ("hawk", "m1", "m2")
    assert "new id" in str(err) and "release" in str(err)
    assert ledger.get("hawk") == err.held


def test_claim_round_is_all_or_nothing() -> None:
    """A refused claim late in a round leaves the earlier claims of the round unstored."""
    ledger = Ledger()
    ledger.claim("reviewer", _reviewer("hawk", "m1"), set())
    with pytest.raises(IdentityRefused):
        ledger.claim_round(
            [("reviewer", _reviewer("owl", "m1")), ("reviewer", _reviewer("hawk", "m2"))],
            {"hawk"},
        )
    assert [i.id for i in ledger.held()] == ["hawk"]
    assert "owl" not in ledger


def test_claim_round_holds_everyone_in_order() -> None:
    """A clean round holds every claim and returns identities in claim order."""
    ledger = Ledger()
    got = ledger.claim_round(
        [("reviewer", _reviewer("hawk", "m1")), ("judge", {"id": "owl", "model": "m9"})], set()
    )
    assert [(i.id, i.role) for i in got] == [("hawk", "reviewer"), ("owl", "judge")]
    assert ledger.held() == got


def test_claim_round_refuses_two_meanings_for_one_id() -> None:
    """One round cannot claim an id twice with different meanings."""
    ledger = Ledger()
    with pytest.raises(IdentityRefused):
        ledger.claim_round(
            [("reviewer", _reviewer("hawk", "m1")), ("reviewer", _reviewer("hawk", "m2"))],
            set(),
        )
    assert len(ledger) == 0


def test_claim_round_repoints_without_findings() -> None:
    """A round may re-point an id that nothing is attributed to, keeping its place."""
    ledger = Ledger()
    ledger.claim_round(
        [("reviewer", _reviewer("hawk", "m1")), ("reviewer", _reviewer("owl", "m1"))], set()
    )
    ledger.claim_round([("reviewer", _reviewer("hawk", "m2"))], {"owl"})
    assert [(i.id, i.model) for i in ledger.held()] == [("hawk", "m2"), ("owl", "m1")]


def test_json_round_trip_keeps_order_and_fields() -> None:
    """to_json/from_json give back the same identities in the same order."""
    ledger = Ledger()
    ledger.claim("reviewer", _reviewer("zeta", "m1", tools=("b", "a"), persona="sec"), set())
    ledger.claim("judge", {"id": "alpha", "backend": "somewhere"}, set())
    again = Ledger.from_json(ledger.to_json())
    assert again.held() == ledger.held()
    assert '"model"' not in ledger.to_json().split("alpha")[1]


def test_from_json_refuses_garbage_and_repeats() -> None:
    """from_json raises ValueError for text that is not a list of distinct identities."""
    with pytest.raises(ValueError):
        Ledger.from_json('{"id": "a"}')
    with pytest.raises(ValueError):
        Ledger.from_json('[{"id": "a"}, {"id": "a"}]')


def test_attributed_ids_reads_models_and_mappings() -> None:
    """Origins of reviewers and judges and every raised_by id count; hand origins don't."""
    findings: list[Finding | dict[str, object]] = [
        _finding(Origin(kind="reviewer", run_id="r1", participant="hawk")),
        _finding(Origin(kind="hand"), raised_by=("crow",)),
        _finding(Origin(kind="hand", participant="ghost")),
        {"origin": {"kind": "judge", "participant": "owl"}, "raised_by": ["wren"]},
        {"origin": {"kind": "hand", "participant": "nobody"}},
        {"raised_by": "not-a-list"},
    ]
    assert attributed_ids(findings) == {"hawk", "crow", "owl", "wren"}
