"""Runs every shared asks case (shared/cases/asks/*.json) through the component check.

One data-driven test, ids = file names; a new case file is picked up without code changes,
and a case this harness cannot interpret fails (it is never skipped). Per
shared/cases/README.md (asks/): ``store: null`` is no artifact store attached, ``refs``
the refs that resolve in the run's own scope; ``expect`` is ``"ok"`` or
``{"refused": CODE}``. The refusal is compared by code, never by wording, and is raised
as :class:`~council.errors.AskRefused` naming the door.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from council.asks import COMPONENT_KEYS, REFUSAL_CODES, ArtifactScope, KnownRefs, checked_component
from council.errors import AskRefused
from tests.cases.loader import CaseError, case_params, load_case

KNOWN_FIELDS = frozenset({"name", "why", "component", "store", "expect", "answer_repeat"})
"""The fields an asks case may have (shared/cases/README.md, asks/)."""

DOOR = "shared case"
"""The door the cases raise their asks through (the refusal must name it)."""


def _scope(case: dict[str, Any], name: str) -> ArtifactScope | None:
    """The case's artifact scope: None when no store is attached, else its refs."""
    store = case["store"]
    if store is None:
        return None
    if not isinstance(store, dict) or set(store) != {"refs"}:
        raise CaseError(f"{name}: store must be null or exactly {{'refs': [...]}}")
    refs = store["refs"]
    if not isinstance(refs, list) or not all(isinstance(ref, str) for ref in refs):
        raise CaseError(f"{name}: store.refs must be a list of strings")
    return KnownRefs.of(refs)


def _expected(case: dict[str, Any], name: str) -> str | None:
    """The expected refusal code, or None when the case expects ``ok``."""
    expect = case["expect"]
    if expect == "ok":
        return None
    if isinstance(expect, dict) and set(expect) == {"refused"}:
        code = expect["refused"]
        if code in REFUSAL_CODES:
            return str(code)
    raise CaseError(f"{name}: expect must be 'ok' or {{'refused': one of {REFUSAL_CODES}}}")


@pytest.mark.parametrize("path", case_params("asks"))
def test_asks_case(path: Path | str) -> None:
    """Each shared asks case's component is accepted, or refused with its expected code."""
    case = load_case(path)
    name = Path(path).name
    unknown = set(case) - KNOWN_FIELDS
    missing = {"component", "store", "expect"} - set(case)
    if unknown or missing:
        raise CaseError(f"{name}: unknown fields {sorted(unknown)}, missing {sorted(missing)}")
    scope, expected = _scope(case, name), _expected(case, name)
    context = f"{name} ({case.get('why', '')})"
    if expected is None:
        try:
            component = checked_component(case["component"], scope, door=DOOR)
        except AskRefused as refused:
            pytest.fail(f"refused {refused.code} ({refused.description}), expected ok: {context}")
        assert component.as_json() == case["component"], f"component changed: {context}"
        return
    with pytest.raises(AskRefused) as caught:
        checked_component(case["component"], scope, door=DOOR)
    assert caught.value.code == expected, f"refused {caught.value.code}: {context}"
    assert caught.value.door == DOOR, context
    message = str(caught.value)
    for text in _contents(case["component"]):
        assert text not in message, f"the refusal quotes the component: {context}"


def _contents(value: object) -> list[str]:
    """The component's own text (string values at any depth, keys it may not have), at
    least 4 characters and not blank: a refusal describes shapes, never contents."""
    found: list[str] = []
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, list):
        for item in value:
            found += _contents(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in COMPONENT_KEYS:
                found.append(key)
            found += _contents(item)
    return [text for text in found if len(text) >= 4 and text.strip()]
