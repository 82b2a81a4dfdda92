"""A question a run waits on, and the answer a person gave to it.

A :class:`PendingAsk` is an :class:`~council.asks.ask.Ask` raised in a run: it has an id
a person answers it by (``council answer ASK VALUE``), the run it belongs to, and, for a
confirmation, the finding it is about. An :class:`Answer` is checked against the ask's
component before it is recorded (:func:`checked_answer`): a ``confirm-finding`` or
``confirm`` takes ``yes`` or ``no`` and an optional reason; a ``choice`` one of its
options; anything else (``text`` or no component) any non-blank text.

Source: docs/evidence-and-asks.md §2.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from council.asks.ask import Ask
from council.errors import ConfigurationError

CONFIRM_COMPONENTS = frozenset({"confirm-finding", "confirm"})
"""Components whose answer is yes or no."""

YES = ("yes", "y", "true", "confirm", "confirmed")
NO = ("no", "n", "false", "reject", "rejected")


class AnswerRefused(ConfigurationError):
    """An answer that does not fit its ask (exit 2); says what the ask takes."""


class Answer(BaseModel):
    """What a person answered: ``value`` (``yes``/``no`` for a confirmation, the option
    for a choice, the text), an optional ``reason``, and when (ms since the epoch)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    value: str
    reason: str | None = None
    answered_ms: int = 0
    by: str | None = None
    """Who answered, when the front end knows (``$USER`` for the CLI)."""


class PendingAsk(BaseModel):
    """A question a run waits on: ``id`` (``ask_…``), the run, the ask itself, the
    finding it confirms (None for other asks), and its answer once given."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    run: str
    ask: Ask
    finding: int | None = None
    participant: str | None = None
    """The reviewer that asked (its conversation waits on the answer); None for a
    policy's confirmation."""
    answer: Answer | None = None

    @property
    def confirms(self) -> bool:
        """Whether the answer is a yes or a no (a confirmation component)."""
        component = self.ask.component
        return component is not None and component.component_id in CONFIRM_COMPONENTS


def checked_answer(
    ask: PendingAsk,
    value: str,
    reason: str | None,
    now_ms: int,
    stored_props: Mapping[str, object] | None = None,
    against: str | None = None,
) -> Answer:
    """The answer ``value`` (with ``reason``) to ``ask``, checked against its component.

    ``stored_props`` are the props the component's ``props_ref`` names, read from the
    run's artifact store by the caller (None: no ref, or it no longer resolves); a
    ``choice``'s options are looked for there too. ``against`` is the artifact ref the
    person answered from (the console sends the one it rendered; ``council answer
    --against``), None when not said. Raises :class:`AnswerRefused` naming what the ask
    takes: yes or no for a confirmation (``y``/``true``/``confirm`` read as yes,
    ``n``/``false``/``reject`` as no), one of the options for a ``choice`` (props
    ``options``: a list of text, or of objects with a ``value``), non-blank text
    otherwise; and, as **stale**, an answer made against another artifact than the ask
    pinned (:func:`stale_problem`), or a ``choice`` whose options lived in an artifact
    that no longer resolves (the person cannot have seen what the ask offers now).
    """
    text = value.strip()
    component = ask.ask.component
    stale = stale_problem(ask, against)
    if stale is not None:
        raise AnswerRefused(stale)
    if (
        component is not None
        and component.component_id == "choice"
        and component.props_ref is not None
        and stored_props is None
        and not _options(component.props or {})
    ):
        raise AnswerRefused(
            f"stale: ask {ask.id}'s options are in the artifact {component.props_ref}, "
            "which no longer resolves in its run (expired?): it cannot be answered; run "
            "the review again"
        )
    if ask.confirms:
        folded = text.casefold()
        if folded in YES:
            return Answer(value="yes", reason=_reason(reason), answered_ms=now_ms)
        if folded in NO:
            return Answer(value="no", reason=_reason(reason), answered_ms=now_ms)
        raise AnswerRefused(
            f"ask {ask.id} asks for a confirmation: answer yes or no (with --reason to say "
            f"why), not {text[:40]!r}"
        )
    if component is not None and component.component_id == "choice":
        options = _options(component.props or {}) + _options(stored_props or {})
        if options and text not in options:
            shown = ", ".join(options[:10]) + (" …" if len(options) > 10 else "")
            raise AnswerRefused(f"ask {ask.id} takes one of its options ({shown}), not {text!r}")
    if not text:
        raise AnswerRefused(f"ask {ask.id} needs an answer: the value is blank")
    return Answer(value=text, reason=_reason(reason), answered_ms=now_ms)


def _reason(reason: str | None) -> str | None:
    return reason.strip() if reason is not None and reason.strip() else None


def _options(props: Mapping[str, object]) -> list[str]:
    """The option values of a ``choice`` component's inline props."""
    raw = props.get("options")
    if not isinstance(raw, list):
        return []
    out: list[str] = []
    for item in raw:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("value"), str):
            out.append(item["value"])
    return out


def stale_problem(ask: PendingAsk, against: str | None) -> str | None:
    """Why an answer made against the artifact ``against`` is stale for ``ask``, or None.

    None when ``against`` is not said, or is the ref the ask pinned. Stale when the ask
    pinned another artifact, or none (``against`` given for an ask whose props are all
    inline): the person answered what another version of the question showed."""
    if against is None:
        return None
    pinned = ask.ask.component.props_ref if ask.ask.component is not None else None
    if against.strip() == (pinned or ""):
        return None
    shows = f"the artifact {pinned}" if pinned else "no artifact"
    return (
        f"stale: the answer was made against the artifact {against.strip()!r}, but ask "
        f"{ask.id} pins {shows}; reload the question and answer again"
    )
