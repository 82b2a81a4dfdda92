"""A participant of the council (one roster entry), its clocks and its identity.

Source: docs/identity-and-clocks.md. The roster reader (:mod:`council.roster`) builds these
from TOML and refuses bad values with the field path; these models are the checked,
canonical result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["reviewer", "judge"]
Backend = Literal["openai", "anthropic", "command", "replay", "sarif"]
ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh"]

BACKENDS: tuple[str, ...] = ("openai", "anthropic", "command", "replay", "sarif")
THINKING_LEVELS: tuple[str, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")

MINUTE_MS = 60_000
"""One minute in milliseconds."""


class Clocks(BaseModel):
    """The three clocks of one participant, in milliseconds, already resolved.

    * ``backstop_ms``: the wall; the reviewer is stopped when it has run this long.
    * ``idle_ms``: stopped when nothing happened (no token, output line or journal entry)
      for this long; never longer than the backstop.
    * ``answer_ms``: the wrap-up reserve before the wall (0 = no wrap-up); at most half
      the backstop.

    Source: docs/identity-and-clocks.md "Clocks". Clocks are not identity.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    backstop_ms: int = 45 * MINUTE_MS
    idle_ms: int = 15 * MINUTE_MS
    answer_ms: int = 5 * MINUTE_MS

    @property
    def soft_deadline_ms(self) -> int | None:
        """Milliseconds after the start when the wrap-up is asked for, or None when off."""
        return None if self.answer_ms == 0 else self.backstop_ms - self.answer_ms


PROGRAM_BACKENDS = frozenset({"command", "sarif"})
"""Backends whose reviewer IS a program: its program and args are part of its identity
(re-pointing ``id = "mine"`` from ``./mine.py`` to ``./smells.py`` is a new meaning)."""


class Identity(BaseModel):
    """What a participant id means: the fields a reader trusts the id to stand for.

    ``tools`` is a set (kept sorted, duplicates folded). A program reviewer's ``program``
    and ``args`` (in order) are identity too. Absent fields are None and omitted from
    JSON. Clocks are not identity. Source: docs/identity-and-clocks.md.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    role: Role = "reviewer"
    backend: str | None = None
    model: str | None = None
    thinking_level: str | None = None
    tools: tuple[str, ...] | None = None
    persona: str | None = None
    program: str | None = None
    """A program reviewer's (``command``, ``sarif``) program, as the roster names it."""
    args: tuple[str, ...] | None = None
    """Its arguments, in order: they select what it checks (``["check", "src"]``)."""

    def describe(self) -> str:
        """One phrase naming every identity field that is set, e.g. for a refusal."""
        parts = [f"role {self.role}"]
        if self.backend is not None:
            parts.append(f"backend {self.backend}")
        if self.model is not None:
            parts.append(f"model {self.model}")
        if self.thinking_level is not None:
            parts.append(f"thinking {self.thinking_level}")
        if self.tools is not None:
            parts.append("tools [" + ", ".join(self.tools) + "]")
        if self.persona is not None:
            parts.append(f"persona {self.persona}")
        if self.program is not None:
            parts.append(f"program {self.program}")
        if self.args is not None:
            parts.append("args [" + ", ".join(self.args) + "]")
        return ", ".join(parts)


class SliceTag(BaseModel):
    """Which slice of the change a slice unit reviews: slice ``index`` (from 1) of
    ``count``, for the participant ``owner``. Source: docs/architecture.md "Slices"."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    owner: str
    index: int = Field(ge=1)
    count: int = Field(ge=2)


class Participant(BaseModel):
    """One checked roster entry: who it is, how to run it, and its clocks.

    ``options`` holds the backend's own settings exactly as the roster gave them
    (``program``/``args`` for ``command`` and ``sarif``; ``answer``/``journal``/
    ``latency_ms`` for ``replay``); each backend validates its own.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    role: Role = "reviewer"
    backend: Backend
    model: str | None = None
    thinking_level: ThinkingLevel | None = None
    tools: tuple[str, ...] | None = None
    persona: str | None = None
    clocks: Clocks = Clocks()
    options: dict[str, Any] = Field(default_factory=dict)
    optional: bool = False
    """A reviewer the gate may do without (``optional = true``): when it is not heard in
    full the run is still partial, but the council can complete. Not identity."""
    context_tokens: int | None = Field(default=None, ge=1)
    """The roster's context budget in tokens (None: the model family's default, and no
    budget for a program; :mod:`council.slicing.tokens`). Not identity."""
    slice: SliceTag | None = None
    """Set on a slice unit only: one task's share of a participant whose change was cut
    into slices (:mod:`council.slicing`); its id is :func:`unit_id`. Not identity."""

    def owner_id(self) -> str:
        """The roster participant this entry reviews for: its own id, or a slice's owner."""
        return self.slice.owner if self.slice is not None else self.id

    def identity(self) -> Identity:
        """The identity this entry claims in the ledger (tools as a sorted set)."""
        tools = tuple(sorted(set(self.tools))) if self.tools is not None else None
        program = self.options.get("program") if self.backend in PROGRAM_BACKENDS else None
        args = self.options.get("args") if program is not None else None
        return Identity(
            id=self.id,
            role=self.role,
            backend=self.backend,
            model=self.model,
            thinking_level=self.thinking_level,
            tools=tools,
            persona=self.persona,
            program=program if isinstance(program, str) else None,
            args=tuple(str(a) for a in args) if isinstance(args, list | tuple) else None,
        )


UNIT_MARK = "@"
"""Between a participant id and a slice number in a slice unit's id (``hawk@2``): never in
a participant id (:data:`council.roster.participant_tables.ID_PATTERN`), nor ``|``."""


def unit_id(owner: str, index: int) -> str:
    """The id of slice ``index`` (from 1) of participant ``owner``: ``hawk@2``."""
    return f"{owner}{UNIT_MARK}{index}"


def working(participants: Sequence[Participant]) -> list[Participant]:
    """The entries of ``participants`` that run as tasks: every slice unit, and every
    participant none of whose slices is among them (a sliced one runs only as its units)."""
    sliced = {p.slice.owner for p in participants if p.slice is not None}
    return [p for p in participants if p.slice is not None or p.id not in sliced]


def by_owner(participants: Sequence[Participant]) -> dict[str, list[Participant]]:
    """A sliced participant's id → its units among ``participants``, in slice order."""
    out: dict[str, list[Participant]] = {}
    for p in participants:
        if p.slice is not None:
            out.setdefault(p.slice.owner, []).append(p)
    for units in out.values():
        units.sort(key=lambda u: u.slice.index if u.slice is not None else 0)
    return out
