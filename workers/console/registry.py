"""The console's component registry: which template shows an ask, keyed by ``component_id``.

An ask names the screen component that collects its answer (``{component_id, props?,
props_ref?}``), never markup. Each registered id maps to ONE template under
``templates/components/`` and a reader that turns the props into the few plain values the
template shows, or raises :class:`PropsUnreadable` (describing their shape, never their
text): no template touches raw props. The ids, their props and answers are listed in
docs/evidence-and-asks.md §2. An unknown id, unreadable props or an unresolved ``props_ref``
shows the prose question with a note and a text answer (:data:`FALLBACK`): nothing is
guessed, and :func:`council.asks.pending.checked_answer` checks the answer whatever showed.

Source: docs/evidence-and-asks.md §2.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pydantic import JsonValue

from council.asks.pending import PendingAsk

Props = Mapping[str, JsonValue]
"""A component's props as JSON (inline ``props``, with a ``props_ref``'s object merged)."""

FALLBACK = "components/fallback.html"
"""The template of an ask shown as prose only, with a note saying why."""

PLAIN = "components/text.html"
"""The template of an ask without a component: a plain text answer."""

LABEL_CHARS = 500
"""The most characters of one option label, subject or discussion line the console
shows before cutting it (with ``…``); the answer still takes the whole value."""


class PropsUnreadable(ValueError):
    """A registered component's props do not have the shape its template needs; the
    message describes the shape (``options is a JSON object``), never the values."""


@dataclass(frozen=True)
class Option:
    """One option of a ``choice``: what is sent as the answer, and what is shown."""

    value: str
    label: str


@dataclass(frozen=True)
class PickedFinding:
    """One finding a ``finding-picker`` offers: its id as the answer takes it, its
    subject, and (when the props give them) its severity and path."""

    value: str
    subject: str
    severity: str | None = None
    path: str | None = None


@dataclass(frozen=True)
class ShownFinding:
    """The finding a ``confirm-finding`` asks about, as its props carry it."""

    id: str | None
    subject: str
    severity: str | None = None
    label: str | None = None
    where: str | None = None
    discussion: str = ""
    raised_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rendering:
    """How one ask is shown: the template, the values it reads, and the note a fallback
    shows (None when the registered component is shown)."""

    template: str
    component_id: str | None
    values: Mapping[str, object] = field(default_factory=dict)
    note: str | None = None

    @property
    def fallback(self) -> bool:
        """Whether the prose fallback is shown instead of a registered component."""
        return self.template == FALLBACK


Reader = Callable[[Props], Mapping[str, object]]
"""Reads a component's props into its template's values; raises :class:`PropsUnreadable`."""


@dataclass(frozen=True)
class Registered:
    """One registered component: its template and the reader of its props."""

    template: str
    read: Reader
    takes: str
    """What the answer is, in a few words, for the page (``yes or no``)."""


def _confirm_finding(props: Props) -> Mapping[str, object]:
    raw = props.get("finding")
    if not isinstance(raw, dict):
        raise PropsUnreadable(f"finding is {_shape(raw)}, not a JSON object")
    subject = raw.get("subject")
    if not isinstance(subject, str) or not subject.strip():
        raise PropsUnreadable(f"finding.subject is {_shape(subject)}, not non-blank text")
    raised = raw.get("raised_by")
    raisers = tuple(r for r in raised if isinstance(r, str)) if isinstance(raised, list) else ()
    ident = raw.get("id")
    shown = ShownFinding(
        id=str(ident) if isinstance(ident, int | str) and not isinstance(ident, bool) else None,
        subject=_cut(subject),
        severity=_text(raw.get("severity")),
        label=_text(raw.get("label")),
        where=_where(raw.get("anchor")),
        discussion=_text(raw.get("discussion")) or "",
        raised_by=raisers,
    )
    return {"finding": shown}


def _confirm(props: Props) -> Mapping[str, object]:
    return {}


def _choice(props: Props) -> Mapping[str, object]:
    raw = props.get("options")
    if not isinstance(raw, list) or not raw:
        raise PropsUnreadable(f"options is {_shape(raw)}, not a non-empty JSON array")
    options: list[Option] = []
    for n, item in enumerate(raw, 1):
        if isinstance(item, str):
            options.append(Option(value=item, label=_cut(item)))
        elif isinstance(item, dict) and isinstance(item.get("value"), str):
            value = str(item["value"])
            label = item.get("label")
            shown = label if isinstance(label, str) and label.strip() else value
            options.append(Option(value=value, label=_cut(shown)))
        else:
            raise PropsUnreadable(
                f"option {n} is {_shape(item)}, not text or an object with a text value"
            )
    return {"options": tuple(options)}


def _text_answer(props: Props) -> Mapping[str, object]:
    placeholder = props.get("placeholder")
    multiline = props.get("multiline")
    if placeholder is not None and not isinstance(placeholder, str):
        raise PropsUnreadable(f"placeholder is {_shape(placeholder)}, not text")
    if multiline is not None and not isinstance(multiline, bool):
        raise PropsUnreadable(f"multiline is {_shape(multiline)}, not true or false")
    return {"placeholder": _cut(placeholder or ""), "multiline": bool(multiline)}


def _finding_picker(props: Props) -> Mapping[str, object]:
    raw = props.get("findings")
    multiple = props.get("multiple")
    if multiple is not None and not isinstance(multiple, bool):
        raise PropsUnreadable(f"multiple is {_shape(multiple)}, not true or false")
    if not isinstance(raw, list) or not raw:
        raise PropsUnreadable(f"findings is {_shape(raw)}, not a non-empty JSON array")
    picks: list[PickedFinding] = []
    for n, item in enumerate(raw, 1):
        ident = item.get("id") if isinstance(item, dict) else None
        subject = item.get("subject") if isinstance(item, dict) else None
        if (
            not isinstance(item, dict)
            or not isinstance(ident, int | str)
            or isinstance(ident, bool)
            or not str(ident).strip()
            or not isinstance(subject, str)
        ):
            raise PropsUnreadable(
                f"finding {n} is {_shape(item)}, not an object with an id and a text subject"
            )
        picks.append(
            PickedFinding(
                value=str(ident),
                subject=_cut(subject),
                severity=_text(item.get("severity")),
                path=_text(item.get("path")),
            )
        )
    return {"findings": tuple(picks), "multiple": bool(multiple)}


REGISTRY: Mapping[str, Registered] = {
    "confirm-finding": Registered(
        "components/confirm-finding.html", _confirm_finding, "yes (it gates) or no (dismissed)"
    ),
    "confirm": Registered("components/confirm.html", _confirm, "yes or no"),
    "choice": Registered("components/choice.html", _choice, "one of the options"),
    "text": Registered(PLAIN, _text_answer, "text"),
    "finding-picker": Registered(
        "components/finding-picker.html", _finding_picker, "a finding's id"
    ),
}
"""``component_id`` → its template and props reader: every component this console can
show. An id not here is shown as the prose fallback, never as a near match."""


def rendering(ask: PendingAsk, props: Props | None, problem: str | None = None) -> Rendering:
    """How ``ask`` is shown, given its ``props`` (inline, with a ``props_ref``'s object
    merged; None when it has none) and ``problem``, the reason the props could not be
    assembled (a ``props_ref`` that did not resolve), if any.

    Never raises: an unknown ``component_id``, a ``problem`` or props the component's
    reader refuses all give the :data:`FALLBACK` rendering with a note saying which.
    Source: docs/evidence-and-asks.md §2.
    """
    component = ask.ask.component
    if component is None:
        return Rendering(PLAIN, None, {"placeholder": "", "multiline": True})
    cid = component.component_id
    entry = REGISTRY.get(cid)
    if entry is None:
        return _fallback(
            cid,
            f"This console has no component registered as {_cut(cid, 80)!r}: the question "
            "is shown in prose, and the answer is taken as text.",
        )
    if problem is not None:
        return _fallback(
            cid, f"The {cid} component cannot be shown ({problem}): the question is shown in prose."
        )
    try:
        values = entry.read(props or {})
    except PropsUnreadable as unreadable:
        return _fallback(
            cid,
            f"The {cid} component's props cannot be read ({unreadable}): the question is "
            "shown in prose, and the answer is taken as text.",
        )
    return Rendering(entry.template, cid, {**values, "takes": entry.takes})


def _fallback(component_id: str, note: str) -> Rendering:
    return Rendering(FALLBACK, component_id, {"takes": "text"}, note)


def _text(value: object) -> str | None:
    return _cut(value) if isinstance(value, str) and value.strip() else None


def _cut(text: str, limit: int = LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _where(anchor: object) -> str | None:
    """An anchor's place in words (``app.py:2``, ``app.py (whole file)``, ``the change``)."""
    if not isinstance(anchor, dict):
        return None
    path, line, start = anchor.get("path"), anchor.get("line"), anchor.get("start_line")
    if not isinstance(path, str):
        return "the change" if anchor.get("kind") == "change" else None
    if isinstance(line, int) and not isinstance(line, bool):
        span = f"{start}-{line}" if isinstance(start, int) and not isinstance(start, bool) else line
        return _cut(f"{path}:{span}")
    return _cut(f"{path} (whole file)")


def _shape(value: object) -> str:
    """A value described by its JSON type (and size), never its contents."""
    if value is None:
        return "absent"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "blank text" if not value.strip() else f"text of {len(value)} characters"
    if isinstance(value, list):
        return f"a JSON array of {len(value)} items" if value else "an empty JSON array"
    if isinstance(value, dict):
        return f"a JSON object of {len(value)} keys"
    return "a value JSON does not have"
