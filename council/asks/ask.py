"""A human ask: the question a paused piece of work puts to a person, and optionally which
registered screen component should collect the answer.

Built only through :func:`checked_ask`, at the door it is raised through, so a malformed
component or a ``props_ref`` the run's own scope does not hold fails the raise loudly
instead of pausing. The doors: ``council ask --check`` (nothing raised), a policy's
confirmation (:mod:`council.asks.confirm`), a model reviewer's ``ask_human`` tool and a
command reviewer's ``council ask --question`` (:mod:`council.asks.paused`).
Source: docs/evidence-and-asks.md §2.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_serializer

from council.asks.component import ArtifactScope, Component, checked_component
from council.errors import AskRefused

_QUESTION_FIX = "Ask the question in prose: a non-blank string a person can answer."
"""The way out of a refused question."""


class Ask(BaseModel):
    """A question for a person, with the component that should collect the answer.

    Frozen and strict: reading a stored ask back applies the component's shape rules
    again (a value the source would have refused does not read). Source:
    docs/evidence-and-asks.md §2.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)

    question: str
    """The question in prose, never blank: a person reads it whatever the screen shows."""

    component: Component | None = None
    """Which registered component collects the answer; None: a plain text answer."""

    @model_serializer(mode="plain")
    def _json(self) -> dict[str, Any]:
        """The ask as plain JSON, the component left out when there is none (never null)."""
        out: dict[str, Any] = {"question": self.question}
        if self.component is not None:
            out["component"] = self.component.as_json()
        return out

    @field_validator("question")
    @classmethod
    def _not_blank(cls, question: str) -> str:
        """Refuse a blank question (the ask would show nothing to answer)."""
        if not question.strip():
            raise ValueError("the question is blank")
        return question


QUESTION_MAX_CHARS = 4000
"""The longest question a door accepts, in characters (a person reads it whole, and it is
shown in every summary; a component's props carry the rest, capped as they are)."""

POLICY_COMPONENTS = frozenset({"confirm-finding"})
"""Components only a policy raises (:mod:`council.asks.confirm`): a reviewer raising one
would be shown as the policy's confirmation, whose answer it is not."""


def checked_ask(
    question: object,
    component: object,
    scope: ArtifactScope | None,
    *,
    door: str,
    reviewer: bool = False,
) -> Ask:
    """The ask to raise, checked at its source; ``component`` None means no component.

    ``scope`` is the run's artifact scope (None: no artifact store attached). Raises
    :class:`~council.errors.AskRefused` naming ``door``: ``shape`` for a question that is
    not a non-blank string or a malformed component; ``no-store`` and ``unresolved-ref``
    for a ``props_ref`` with no store or one the run's scope does not hold (see
    :func:`~council.asks.component.component_refusal`); ``shape`` too for a question over
    :data:`QUESTION_MAX_CHARS`, and, when a ``reviewer`` raises it, for a component of
    :data:`POLICY_COMPONENTS`. Source:
    docs/evidence-and-asks.md §2.
    """
    if not isinstance(question, str) or not question.strip():
        shown = "blank" if isinstance(question, str) else "not a string"
        raise AskRefused("shape", door, f"the question is {shown}", _QUESTION_FIX)
    if len(question) > QUESTION_MAX_CHARS:
        raise AskRefused(
            "shape",
            door,
            f"the question is {len(question)} characters, over the cap of {QUESTION_MAX_CHARS}",
            "Ask in a few sentences; put what the person must see in the component's props "
            "(or an artifact by props_ref)",
        )
    checked = None if component is None else checked_component(component, scope, door=door)
    if reviewer and checked is not None and checked.component_id in POLICY_COMPONENTS:
        raise AskRefused(
            "shape",
            door,
            f"the component {checked.component_id} is the confirm policy's, not a reviewer's",
            "Ask with another component (confirm, choice, text, finding-picker)",
        )
    return Ask(question=question, component=checked)
