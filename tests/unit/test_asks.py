"""The typed ask's component check beyond the shared cases (docs/evidence-and-asks.md §2).

The shared cases pin the refusals one JSON example at a time; these tests pin what a
Python caller can also pass (values JSON cannot carry, self-containing or very deep
props), the exact compact-JSON measure at the cap, that a refusal never quotes the value,
the ask model's round trip, and the one reader.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

import council.asks.component as component_module
from council.asks import (
    PROPS_MAX_BYTES,
    Ask,
    Component,
    KnownRefs,
    checked_ask,
    checked_component,
    component_refusal,
    read_component,
    shape_problem,
)
from council.errors import AskRefused, ConfigurationError

REF = "art_4kQz9XbTn2LmP0sVw7YcRd"
SECRET = "hunter2-do-not-print"


def code(value: object, scope: KnownRefs | None = None) -> str:
    """The refusal code of ``value``, or ``ok``."""
    refusal = component_refusal(value, scope)
    return "ok" if refusal is None else refusal.code


def compact_bytes(value: object) -> int:
    """The design's measure: UTF-8 bytes of compact JSON, as json.dumps writes it."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return len(text.encode("utf-8"))


def padded(filler: str, extra: dict[str, Any], target: int) -> dict[str, Any]:
    """Props whose compact JSON is exactly ``target`` bytes: ``extra`` plus a ``pad``
    string of as many ``filler`` characters as fit, topped up with ASCII."""
    props: dict[str, Any] = {**extra, "pad": ""}
    step = compact_bytes(filler) - 2  # the bytes one filler adds inside a JSON string
    props["pad"] = filler * ((target - compact_bytes(props)) // step)
    props["pad"] += "a" * (target - compact_bytes(props))
    assert compact_bytes(props) == target
    return props


@pytest.mark.parametrize(
    ("filler", "extra"),
    [
        ("é", {}),
        ("\n", {"n": [1, -2.5, 1e100, None, True, False]}),
        ('"', {"nested": {"a": {"b": []}}}),
        ("\u2028", {"k\u00e9y": "v"}),
        ("😀", {"x": [{}, [], ""]}),
        ("\x01", {}),
    ],
    ids=["two-byte", "escaped-newline", "escaped-quote", "u2028-raw", "four-byte", "control"],
)
def test_props_are_measured_as_compact_utf8_json_to_the_byte(
    filler: str, extra: dict[str, Any]
) -> None:
    """Props of exactly 16 384 compact UTF-8 bytes are accepted and one byte more is not,
    whatever the escapes, the non-ASCII text and the numbers inside."""
    at_cap = padded(filler, extra, PROPS_MAX_BYTES)
    assert code({"component_id": "c", "props": at_cap}) == "ok"
    over = {**at_cap, "pad": at_cap["pad"] + "a"}
    assert code({"component_id": "c", "props": over}) == "shape"


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)


@given(props=st.dictionaries(st.text(max_size=6), JSON_VALUES), cap=st.integers(2, 300))
def test_the_size_walk_agrees_with_json_dumps(props: dict[str, Any], cap: int) -> None:
    """For any JSON object and any cap, the check accepts exactly when json.dumps's compact
    UTF-8 form fits (the walk that stops early measures what json.dumps writes)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(component_module, "PROPS_MAX_BYTES", cap)
        accepted = shape_problem({"component_id": "c", "props": props}) is None
    assert accepted == (compact_bytes(props) <= cap)


def self_containing() -> list[Any]:
    """A list that holds itself (json.dumps would say "circular reference")."""
    loop: list[Any] = []
    loop.append(loop)
    return loop


def very_deep(levels: int = 100_000) -> list[Any]:
    """Lists nested far beyond the interpreter's recursion limit."""
    top: list[Any] = []
    current = top
    for _ in range(levels):
        inner: list[Any] = []
        current.append(inner)
        current = inner
    return top


@pytest.mark.parametrize(
    "props",
    [
        {"a": float("nan")},
        {"a": float("inf")},
        {"a": {1, 2}},
        {"a": (1, 2)},
        {"a": b"bytes"},
        {1: "int key"},
        {"a": "lone \ud800 surrogate"},
        {"lone \udfff key": 1},
        {"a": self_containing()},
        {"a": very_deep()},
        {"a": 10**5000},
    ],
    ids=[
        "nan",
        "infinity",
        "set",
        "tuple",
        "bytes",
        "int-key",
        "surrogate-value",
        "surrogate-key",
        "self-containing",
        "deeper-than-the-stack",
        "huge-int",
    ],
)
def test_props_json_cannot_carry_are_shape(props: dict[Any, Any]) -> None:
    """A Python caller's props that are not plain JSON are refused as shape, quickly and
    without raising (a cycle or a deep nest reads as over the cap, never as a crash)."""
    assert code({"component_id": "c", "props": props}) == "shape"


@pytest.mark.parametrize(
    "value",
    [
        {"component_id": "c\ud800"},
        {"component_id": "c", "props_ref": "art_\udc00"},
        {"component_id": "\u00a0\u2003\x1f"},
        {"component_id": "c", "props_ref": "\u3000"},
        {"component_id": True},
        {1: "x", "component_id": "c"},
    ],
    ids=[
        "surrogate-id",
        "surrogate-ref",
        "unicode-blank-id",
        "ideographic-blank-ref",
        "bool",
        "int-key",
    ],
)
def test_other_python_values_are_shape(value: object) -> None:
    """Text UTF-8 cannot carry, blanks made of any whitespace, a boolean id, a key that is
    not a string: all shape, whatever the store holds."""
    assert code(value, KnownRefs.of([REF, "\u3000"])) == "shape"


@pytest.mark.parametrize(
    "value",
    [
        SECRET,
        [SECRET],
        {"component_id": "c", SECRET: 1},
        {"component_id": SECRET, "html": "<b>x</b>"},
        {"component_id": "c", "props": SECRET},
        {"component_id": "c", "props": [SECRET]},
        {"component_id": "c", "props": {"k": SECRET * 2000}},
        {"component_id": "c", "props": {"k": f"{SECRET}\ud800"}},
        {"component_id": "c", "props_ref": SECRET},
        {"component_id": "c", "props_ref": {SECRET: SECRET}},
    ],
)
@pytest.mark.parametrize("scope", [None, KnownRefs.of([])], ids=["no-store", "empty-store"])
def test_a_refusal_never_quotes_the_value(value: object, scope: KnownRefs | None) -> None:
    """Whatever is refused, and why, the description and the error's message describe
    shapes only: the value's text (which a model may have written) is never in them."""
    with pytest.raises(AskRefused) as caught:
        checked_component(value, scope, door="test door")
    assert SECRET not in str(caught.value)
    assert SECRET not in caught.value.description


def test_shape_is_checked_before_the_store_is_asked() -> None:
    """A malformed component never reaches the store: the scope is not consulted."""

    class Watching:
        def __init__(self) -> None:
            self.asked: list[str] = []

        def resolves(self, ref: str) -> bool:
            self.asked.append(ref)
            return True

    scope = Watching()
    value = {"component_id": "c", "props": None, "props_ref": REF}
    assert component_refusal(value, scope) is not None
    assert code(value, KnownRefs.of([REF])) == "shape"
    assert scope.asked == []
    assert component_refusal({"component_id": "c", "props_ref": REF}, scope) is None
    assert scope.asked == [REF]


def test_a_refusal_names_the_door_and_is_a_configuration_error() -> None:
    """AskRefused carries code, door and description, exits 2 like a configuration error."""
    with pytest.raises(AskRefused) as caught:
        checked_component({"component_id": "c", "props_ref": REF}, None, door="reviewer hawk")
    refused = caught.value
    assert (refused.code, refused.door) == ("no-store", "reviewer hawk")
    assert isinstance(refused, ConfigurationError) and refused.exit_code == 2
    assert str(refused).startswith("reviewer hawk: ask refused (no-store): ")


def test_a_checked_component_round_trips_without_nulls() -> None:
    """A component dumps with absent parts left out (never null), and reads back equal."""
    component = checked_component(
        {"component_id": "c", "props": {"a": None, "b": [1]}, "props_ref": REF},
        KnownRefs.of([REF]),
        door="d",
    )
    bare = Component(component_id="c")
    assert bare.model_dump() == {"component_id": "c"}
    assert json.loads(bare.model_dump_json()) == {"component_id": "c"}
    assert Component.model_validate_json(component.model_dump_json()) == component
    assert component.model_dump()["props"] == {"a": None, "b": [1]}


def test_the_model_refuses_what_the_source_refuses_without_showing_it() -> None:
    """Reading a stored component applies the same shape rules (props null is not
    absent), and the validation error does not show the input."""
    with pytest.raises(ValidationError) as caught:
        Component.model_validate_json(json.dumps({"component_id": "c", "props": None}))
    with pytest.raises(ValidationError) as unknown:
        Component.model_validate({"component_id": "c", "html": SECRET})
    assert SECRET not in str(unknown.value)
    assert "props is null" in str(caught.value)


@given(value=JSON_VALUES)
def test_the_reader_never_guesses(value: object) -> None:
    """The reader gives a component exactly when the source's shape check passes, and
    None otherwise; it never raises."""
    read = read_component(value)
    assert (read is None) == (shape_problem(value) is not None)
    for candidate in ({"component_id": "c", "props": value}, {"component_id": value}):
        read = read_component(candidate)
        assert (read is None) == (shape_problem(candidate) is not None)
        if read is not None:
            assert read.model_dump() == candidate


def test_an_ask_round_trips_and_refuses_a_blank_question() -> None:
    """checked_ask builds the ask at its door; a blank or missing question is shape; an
    ask dumps without nulls and reads back equal."""
    ask = checked_ask("Who owns billing?", {"component_id": "owner-picker"}, None, door="d")
    assert ask.model_dump() == {
        "question": "Who owns billing?",
        "component": {"component_id": "owner-picker"},
    }
    assert Ask.model_validate_json(ask.model_dump_json()) == ask
    plain = checked_ask("Is this intended?", None, None, door="d")
    assert plain.model_dump() == {"question": "Is this intended?"}
    for question in (" \t\n", None, 3):
        with pytest.raises(AskRefused) as caught:
            checked_ask(question, None, None, door="policy")
        assert caught.value.code == "shape"
    with pytest.raises(ValidationError):
        Ask.model_validate({"question": "  "})


def test_an_ask_refuses_its_component_at_the_source() -> None:
    """An ask whose component does not resolve in the run's scope is refused, not built."""
    with pytest.raises(AskRefused) as caught:
        checked_ask("Pick one", {"component_id": "c", "props_ref": REF}, KnownRefs.of([]), door="d")
    assert caught.value.code == "unresolved-ref"
