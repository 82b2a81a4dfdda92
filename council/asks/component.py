"""The typed half of a human ask: which registered screen component collects the answer.

``{"component_id", "props"?, "props_ref"?}`` and no other key: ``component_id`` names a
component the front end registered (opaque here), ``props`` is a JSON object of at most
:data:`PROPS_MAX_BYTES` riding the checkpoint, ``props_ref`` its large half in the run's
artifact store. Never markup or code: a model may nominate a picker, never author one.
:func:`checked_component` refuses at the source, the first code that applies winning:
``shape`` (every shape problem is found before the store is looked at), ``no-store``,
``unresolved-ref``. A refusal describes the value by its SHAPE, never its contents (a
model's text must not leak into logs); :func:`read_component` reads a stored one back, or
None: no guessing. Source: docs/evidence-and-asks.md §2.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import (
    BaseModel,
    ConfigDict,
    JsonValue,
    ValidationError,
    model_serializer,
    model_validator,
)

from council.errors import AskRefused

RefusalCode = Literal["shape", "no-store", "unresolved-ref"]
"""Why a component was refused; what a program reads (tests assert on it)."""

REFUSAL_CODES: tuple[RefusalCode, ...] = ("shape", "no-store", "unresolved-ref")
"""Every refusal code, in the order the check applies them."""

COMPONENT_KEYS: tuple[str, ...] = ("component_id", "props", "props_ref")
"""The only keys a component may have; ``component_id`` is the one required."""

PROPS_MAX_BYTES = 16 * 1024
"""Largest ``props``, in UTF-8 bytes of its compact JSON
(``json.dumps(props, separators=(",", ":"), ensure_ascii=False)``): it rides every stored
checkpoint of the pause, so anything larger belongs behind ``props_ref``."""


_UNMODELLED = "the component holds a value the component model cannot take as plain JSON"
"""The description of a value the shape check passed but the model refused (a subclass
of a JSON type the model does not accept, say); should not happen, refused all the same."""


class ArtifactScope(Protocol):
    """The artifacts one run may point at: what a ``props_ref`` must resolve in.

    The run's artifact store provides one per run (``ArtifactStore.scope(run_id)`` in
    ``workers/stores/artifacts.py``); a ref of another run does not resolve in it.
    """

    def resolves(self, ref: str) -> bool:
        """Whether ``ref`` names an artifact of this scope."""
        ...


@dataclass(frozen=True)
class KnownRefs:
    """An :class:`ArtifactScope` given as the set of refs that resolve (for tests, and
    for ``council ask --check --refs``); an empty set is a store attached with none."""

    refs: frozenset[str]

    @classmethod
    def of(cls, refs: Collection[str]) -> KnownRefs:
        """The scope in which exactly ``refs`` resolve."""
        return cls(frozenset(refs))

    def resolves(self, ref: str) -> bool:
        """Whether ``ref`` is one of the known refs."""
        return ref in self.refs


class Refusal(BaseModel):
    """Why a component cannot be raised: the code, and the bad value's shape in words."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: RefusalCode
    description: str
    """What is wrong, by shape and size only (never a quoted value)."""


class Component(BaseModel):
    """A checked component: a registered component's id and its props, inline or by ref.

    Validating a value (``Component.model_validate``) applies the same shape rules as
    :func:`component_refusal` (so a stored component reads back only if it could have
    been raised); resolving ``props_ref`` needs the run's store and is
    :func:`checked_component`'s job. ``null`` is not absent: ``props: null`` is refused.
    Validation errors never show the input.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)

    component_id: str
    """A component the front end registered; opaque to the council, never blank."""

    props: dict[str, JsonValue] | None = None
    """Small inline props, at most :data:`PROPS_MAX_BYTES` as compact UTF-8 JSON; None
    when the component has none (the key is left out of its JSON)."""

    props_ref: str | None = None
    """An artifact of the run holding the large props (``art_`` + 22 base62
    characters when the store made it); None when there is none."""

    @model_validator(mode="before")
    @classmethod
    def _shaped(cls, data: Any) -> Any:
        """Refuse what :func:`shape_problem` refuses, with its description."""
        if isinstance(data, Component):
            return data
        problem = shape_problem(data)
        if problem is not None:
            raise ValueError(problem)
        return data

    @model_serializer(mode="plain")
    def as_json(self) -> dict[str, Any]:
        """The component as plain JSON, absent parts left out (never ``null``); also what
        ``model_dump`` and ``model_dump_json`` give, so a dumped component reads back."""
        out: dict[str, Any] = {"component_id": self.component_id}
        if self.props is not None:
            out["props"] = self.props
        if self.props_ref is not None:
            out["props_ref"] = self.props_ref
        return out


def component_refusal(value: object, scope: ArtifactScope | None) -> Refusal | None:
    """Why ``value`` cannot be raised as a component, or None when it can.

    ``scope`` is the run's artifact scope, or None when no artifact store is attached.
    Shape first, whatever the store: a malformed component is ``shape`` even when its
    ``props_ref`` would also be ``no-store`` or ``unresolved-ref``. The store is consulted
    only for a well-shaped ``props_ref``. Never raises (for a scope that does not).

    Source: docs/evidence-and-asks.md §2.
    """
    problem = shape_problem(value)
    if problem is not None:
        return Refusal(code="shape", description=problem)
    assert isinstance(value, dict)  # shape_problem checked it
    ref = value.get("props_ref")
    if ref is None:
        return None
    if scope is None:
        return Refusal(
            code="no-store",
            description=f"props_ref is {_shape(ref)}, and no artifact store is attached",
        )
    if not scope.resolves(ref):
        return Refusal(
            code="unresolved-ref",
            description=f"props_ref is {_shape(ref)} that names no artifact of this run",
        )
    return None


def checked_component(value: object, scope: ArtifactScope | None, *, door: str) -> Component:
    """``value`` as a :class:`Component`, checked at the source where the ask is raised.

    ``door`` names where the ask came in (``council ask --check``, a reviewer's question,
    a policy's confirmation); the refusal names it. Raises
    :class:`~council.errors.AskRefused` carrying the :func:`component_refusal`'s code
    and description. Source: docs/evidence-and-asks.md §2.
    """
    refusal = component_refusal(value, scope)
    if refusal is not None:
        raise AskRefused(refusal.code, door, refusal.description)
    try:
        return Component.model_validate(value)
    except ValidationError:  # the shape check let through what the model refuses
        raise AskRefused("shape", door, _UNMODELLED) from None


def read_component(value: object) -> Component | None:
    """The component a stored pause carries, or None when ``value`` is not one.

    The one reader: a value that the source would have refused as ``shape`` is reported
    absent, never repaired or guessed at. Its ``props_ref`` was resolved when the ask was
    raised and is not looked up again here. Never raises.
    Source: docs/evidence-and-asks.md §2.
    """
    if shape_problem(value) is not None:
        return None
    try:
        return Component.model_validate(value)
    except ValidationError:
        return None


def shape_problem(value: object) -> str | None:
    """What makes ``value`` not a component, in words about shapes; None when it is one.

    Checked in order: an object; no key but :data:`COMPONENT_KEYS`; ``component_id`` a
    non-blank string; ``props``, when present, a plain JSON object (string keys; values
    null, booleans, finite numbers, strings, arrays, objects) of at most
    :data:`PROPS_MAX_BYTES`; ``props_ref``, when present, a non-blank string. Blank means
    empty or whitespace only, any whitespace (``str.isspace``: tab, newline, U+00A0 …).
    A string must be Unicode text UTF-8 can carry (no lone surrogate). Never raises.
    Source: docs/evidence-and-asks.md §2.
    """
    if not isinstance(value, dict):
        return f"the component is {_shape(value)}, not an object"
    unknown = [key for key in value if key not in COMPONENT_KEYS]
    if unknown:
        return (
            f"the component has {_count(len(unknown), 'key')} besides component_id, props "
            f"and props_ref"
        )
    if "component_id" not in value:
        return "the component has no component_id"
    problem = _text_problem("component_id", value["component_id"])
    if problem is not None:
        return problem
    if "props" in value:
        problem = _props_problem(value["props"])
        if problem is not None:
            return problem
    if "props_ref" in value:
        return _text_problem("props_ref", value["props_ref"])
    return None


def _text_problem(name: str, value: object) -> str | None:
    """Why ``value`` is not a non-blank string (``name`` is the key), or None."""
    if value is None:
        return f"{name} is null (leave the key out when there is none)"
    if not isinstance(value, str):
        return f"{name} is {_shape(value)}, not a string"
    if not value:
        return f"{name} is an empty string"
    if not value.strip():
        return f"{name} is {_shape(value)}, all whitespace"
    if not _utf8(value):
        return f"{name} is {_shape(value)} that is not Unicode text (a lone surrogate)"
    return None


def _props_problem(props: object) -> str | None:
    """Why ``props`` is not a plain JSON object within the cap, or None.

    Walks the value once, iteratively, adding up the bytes of its compact UTF-8 JSON and
    stopping as soon as the sum passes the cap, so neither a deep nor a huge (or a
    self-containing) value can make the check slow or exhaust the stack.
    """
    if props is None:
        return "props is null (leave the key out when there are no props)"
    if not isinstance(props, dict):
        return f"props is {_shape(props)}, not an object"
    size = 0
    pending: list[object] = [props]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            size += 2 + max(0, 2 * len(item) - 1)  # braces, one colon per key, commas
            for key, member in item.items():
                if not isinstance(key, str):
                    return f"props holds an object with a key that is {_shape(key)}"
                piece = _string_bytes(key)
                if piece is None:
                    return "props holds a key that is not Unicode text (a lone surrogate)"
                size += piece
                pending.append(member)
        elif isinstance(item, list):
            size += 2 + max(0, len(item) - 1)  # brackets, commas
            pending.extend(item)
        elif isinstance(item, str):
            piece = _string_bytes(item)
            if piece is None:
                return f"props holds {_shape(item)} that is not Unicode text (a lone surrogate)"
            size += piece
        elif item is None or isinstance(item, bool):
            size += 4 if item is None or item is True else 5
        elif isinstance(item, int):
            try:
                size += len(int.__repr__(item))
            except ValueError:
                return "props holds an integer too long to write as JSON"
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                return "props holds a number JSON cannot carry (NaN or an infinity)"
            size += len(float.__repr__(item))
        else:
            return f"props holds {_shape(item)}, which JSON cannot carry"
        if size > PROPS_MAX_BYTES:
            return (
                f"props is over the {PROPS_MAX_BYTES}-byte cap as compact UTF-8 JSON "
                "(put the large half in the run's artifact store and pass props_ref)"
            )
    return None


def _string_bytes(text: str) -> int | None:
    """UTF-8 bytes of ``text`` as a JSON string (quotes and escapes), None when it holds
    a lone surrogate."""
    try:
        return len(json.dumps(text, ensure_ascii=False).encode("utf-8"))
    except UnicodeEncodeError:
        return None


def _utf8(text: str) -> bool:
    """Whether UTF-8 can carry ``text`` (it holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shape(value: object) -> str:
    """A value described by its JSON kind and size, never its contents."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return f"a string of {_count(len(value), 'character')}"
    if isinstance(value, list):
        return f"a JSON array of {_count(len(value), 'item')}"
    if isinstance(value, dict):
        return f"an object of {_count(len(value), 'key')}"
    return f"a Python {type(value).__name__}"


def _count(n: int, noun: str) -> str:
    """``1 key``, ``2 keys``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
