"""The identity ledger: which meaning each participant id stands for in a session.

An id re-pointed at another model mid-session would make every finding filed before it lie
about who raised it, so a new meaning is refused for an id with findings attributed to it.
Pure; the Redis store keeps the shape (``session:{session}:ledger``) and claims a round
atomically. Source: docs/identity-and-clocks.md "Identity and the ledger".

Usage::

    ledger = Ledger()
    ledger.claim_round([("reviewer", hawk), ("judge", owl)], attributed_ids(findings))
    ledger.held()          # [Identity(id="hawk", ...), Identity(id="owl", ...)]
    ledger.release("hawk") # True
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import cast

from pydantic import TypeAdapter

from council.errors import IdentityRefused
from council.model.findings import Finding
from council.model.participant import PROGRAM_BACKENDS, Identity, Participant, Role

ROLES: tuple[str, ...] = ("reviewer", "judge")
"""The roles an id can be claimed in."""

_TEXT_FIELDS: tuple[str, ...] = ("backend", "model", "thinking_level", "persona", "program")
"""Identity fields that are plain text when set (``tools`` is the one list)."""

_IDENTITIES: TypeAdapter[list[Identity]] = TypeAdapter(list[Identity])


def _checked_role(role: str) -> Role:
    """The role as the :data:`~council.model.participant.Role` literal, or ValueError."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    return cast(Role, role)


def _normalized(identity: Identity) -> Identity:
    """The identity with its tools as a sorted set (duplicates folded), so equality works."""
    if identity.tools is None:
        return identity
    return identity.model_copy(update={"tools": tuple(sorted(set(identity.tools)))})


def _before_programs_were_identity(held: Identity, asked: Identity) -> bool:
    """Whether ``held`` is ``asked`` as a ledger written before a program reviewer's
    program and args were identity recorded it (a ``command``/``sarif`` identity with no
    program: such a reviewer always has one). Why: refusing those would break every
    session of an upgraded council; the claim then records the program from now on."""
    return (
        held.backend in PROGRAM_BACKENDS
        and held.program is None
        and held.args is None
        and asked.program is not None
        and held == asked.model_copy(update={"program": None, "args": None})
    )


def _identity_from_mapping(role: Role, entry: Mapping[str, object]) -> Identity:
    """Read the identity fields of a plain roster entry; clocks and options are ignored."""
    pid = entry.get("id")
    if not isinstance(pid, str) or not pid.strip():
        raise ValueError(f"a participant needs a non-blank text id, got {pid!r}")
    text: dict[str, str | None] = {}
    for name in _TEXT_FIELDS:
        value = entry.get(name)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"participant {pid!r}: {name} must be text, got {value!r}")
        text[name] = value
    tools = entry.get("tools")
    tool_set: tuple[str, ...] | None = None
    if tools is not None:
        if not isinstance(tools, list | tuple) or not all(isinstance(t, str) for t in tools):
            raise ValueError(f"participant {pid!r}: tools must be a list of text, got {tools!r}")
        tool_set = tuple(sorted(set(cast("Sequence[str]", tools))))
    return Identity(
        id=pid,
        role=role,
        backend=text["backend"],
        model=text["model"],
        thinking_level=text["thinking_level"],
        tools=tool_set,
        persona=text["persona"],
        program=text["program"],
        args=_text_tuple(pid, "args", entry.get("args")),
    )


def _text_tuple(pid: str, name: str, value: object) -> tuple[str, ...] | None:
    """A list of text kept in order, or None when absent (ValueError otherwise)."""
    if value is None:
        return None
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"participant {pid!r}: {name} must be a list of text, got {value!r}")
    return tuple(cast("Sequence[str]", value))


def identity_of(role: str, participant: Participant | Mapping[str, object]) -> Identity:
    """The identity a participant claims in ``role``: what its id is trusted to mean.

    Why: identity is ``{id, role, backend, model, thinking_level, tools (a set),
    persona}``, and for a program reviewer (``command``, ``sarif``) its ``program`` and
    ``args``; clocks and other backend options are not part of it, so a roster that only
    changes how long a reviewer may take keeps its id.

    ``participant`` is a checked :class:`Participant` or a plain mapping of roster fields
    (any backend text accepted; unknown keys such as clocks are ignored). ``role`` wins
    over the participant's own role. Absent fields stay None: an absent tool list and a
    given one differ. Raises ValueError for an unknown role, a missing id or a field of
    the wrong type. Source: docs/identity-and-clocks.md "Identity and the ledger".
    """
    checked = _checked_role(role)
    if isinstance(participant, Participant):
        return _normalized(participant.identity().model_copy(update={"role": checked}))
    return _identity_from_mapping(checked, participant)


def _origin_participant(origin: object) -> str | None:
    """The id a reviewer or judge origin names; hand origins (and anything else) name nobody."""
    if origin is None:
        return None
    if isinstance(origin, Mapping):
        kind, participant = origin.get("kind"), origin.get("participant")
    else:
        kind, participant = getattr(origin, "kind", None), getattr(origin, "participant", None)
    if kind in ("reviewer", "judge") and isinstance(participant, str):
        return participant
    return None


def attributed_ids(findings: Iterable[Finding | Mapping[str, object]]) -> set[str]:
    """Every participant id some finding is attributed to.

    A finding is attributed to the id its origin names when the origin is a reviewer or a
    judge, and to every id in its ``raised_by`` whatever its origin (a hand-written
    finding that credits a reviewer blocks that reviewer's re-point). Findings may be
    canonical :class:`Finding` models or plain mappings of the same keys (only ``origin``
    and ``raised_by`` are read). The caller adds the ids that a still-open run holds.
    Source: docs/identity-and-clocks.md "Identity and the ledger".
    """
    ids: set[str] = set()
    for finding in findings:
        if isinstance(finding, Finding):
            origin: object = finding.origin
            raised_by: object = finding.raised_by
        else:
            origin, raised_by = finding.get("origin"), finding.get("raised_by")
        named = _origin_participant(origin)
        if named is not None:
            ids.add(named)
        if isinstance(raised_by, list | tuple):
            ids.update(item for item in raised_by if isinstance(item, str))
    return ids


class Ledger:
    """The identities held in one session, in the order their ids were first claimed.

    Why: a participant id must keep one meaning while findings are attributed to it.
    Shape: id → :class:`Identity`, insertion-ordered; a re-pointed id keeps its place, a
    released and reclaimed id goes last. In Redis this is the hash
    ``session:{session}:ledger`` (id → identity JSON) claimed atomically per round;
    here it is a plain in-memory value with a JSON form for embedded state files.
    Source: docs/identity-and-clocks.md "Identity and the ledger".
    """

    def __init__(self, identities: Iterable[Identity] = ()) -> None:
        """Start from identities already held, in order (ValueError on a repeated id)."""
        self._held: dict[str, Identity] = {}
        for identity in identities:
            if identity.id in self._held:
                raise ValueError(f"the ledger holds participant {identity.id!r} twice")
            self._held[identity.id] = _normalized(identity)

    def get(self, participant: str) -> Identity | None:
        """The identity held for an id, or None when the id is not held."""
        return self._held.get(participant)

    def __contains__(self, participant: object) -> bool:
        """Whether an id is held."""
        return participant in self._held

    def __len__(self) -> int:
        """How many ids are held."""
        return len(self._held)

    @staticmethod
    def _check(held: Identity | None, asked: Identity, attributed: AbstractSet[str]) -> None:
        """Raise IdentityRefused when ``asked`` would re-point an id with findings."""
        if held is None or held == asked or asked.id not in attributed:
            return
        if _before_programs_were_identity(held, asked):
            return
        raise IdentityRefused(asked.id, held, asked)

    def claim(
        self,
        role: str,
        participant: Participant | Mapping[str, object],
        attributed: AbstractSet[str],
    ) -> Identity:
        """Hold a participant's identity for this session and return it.

        * id not held, or held with the same identity → held (stored again).
        * held with another identity and the id is not in ``attributed`` → re-pointed:
          the new meaning is held, in the id's old place.
        * held with another identity and the id IS in ``attributed`` → refused.

        ``attributed`` is the set of ids the session's findings are attributed to
        (:func:`attributed_ids`) plus the ids a still-open run holds. Raises
        :class:`~council.errors.IdentityRefused` (the ledger is then unchanged), or
        ValueError for a malformed participant (see :func:`identity_of`).
        Source: docs/identity-and-clocks.md "Identity and the ledger".
        """
        asked = identity_of(role, participant)
        self._check(self._held.get(asked.id), asked, attributed)
        self._held[asked.id] = asked
        return asked

    def claim_round(
        self,
        claims: Sequence[tuple[str, Participant | Mapping[str, object]]],
        attributed: AbstractSet[str],
    ) -> list[Identity]:
        """Claim every participant of one round: all are held, or none is.

        Why: the first refusal stops the round before anyone is asked, so a refused
        roster must not leave half its ids re-pointed. Every claim is checked before any
        is stored. An id claimed earlier in the same round counts as attributed for the
        later claims (its run is about to open), so one round cannot give an id two
        meanings. ``claims`` are ``(role, participant)`` pairs; the result is their
        identities in the same order. Raises :class:`~council.errors.IdentityRefused`
        for the first claim refused, or ValueError for a malformed participant.
        Source: docs/identity-and-clocks.md "Identity and the ledger".
        """
        staged: dict[str, Identity] = dict(self._held)
        round_ids: set[str] = set()
        result: list[Identity] = []
        for role, participant in claims:
            asked = identity_of(role, participant)
            self._check(staged.get(asked.id), asked, attributed | round_ids)
            staged[asked.id] = asked
            round_ids.add(asked.id)
            result.append(asked)
        self._held = staged
        return result

    def release(self, participant: str) -> bool:
        """Free an id so the next claim holds it whatever it means; True if it was held.

        Its earlier findings then no longer say unambiguously who raised them: the way
        out a refusal offers, taken on purpose. Source: docs/identity-and-clocks.md.
        """
        return self._held.pop(participant, None) is not None

    def held(self) -> list[Identity]:
        """The identities held, in the order their ids were first claimed."""
        return list(self._held.values())

    def to_json(self) -> str:
        """The ledger as a JSON array of identity objects (absent fields omitted), in order."""
        return json.dumps(
            [identity.model_dump(mode="json", exclude_none=True) for identity in self.held()],
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Ledger:
        """Read back what :meth:`to_json` wrote, order kept.

        Raises ValueError (a pydantic ValidationError) when the text is not a JSON array
        of identities, or when an id appears twice.
        """
        return cls(_IDENTITIES.validate_json(text))
