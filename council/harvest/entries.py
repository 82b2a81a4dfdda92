"""Reading one entry of a findings list (or of the journal) into a finding.

One bad entry costs one finding, never the batch, and only an entry that says nothing
(no subject) is dropped: every other flaw degrades the finding (a vaguer anchor, the
``note`` label, no severity) and leaves a warning naming the entry. The checks run in the
order of the table of docs/harvest.md §4, so an entry's warnings always come in that order:
entry, subject, label, discussion, location, severity, confidence, raisedBy.

Source: docs/harvest.md §4 (the table and its general rules), §2 (the finding's shape).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from council.harvest.fields import (
    EntryWarnings,
    clean,
    compact_json,
    first_text,
    shown,
    text_value,
    type_name,
)
from council.harvest.location import read_location
from council.model.findings import Finding, Label, Severity, Warning

LABEL_WORDS: dict[str, Label] = {
    "praise": "praise",
    "nitpick": "nitpick",
    "suggestion": "suggestion",
    "issue": "issue",
    "todo": "todo",
    "question": "question",
    "thought": "thought",
    "chore": "chore",
    "note": "note",
}
"""The nine Conventional Comments labels, by their case-folded spelling."""

SEVERITY_WORDS: dict[str, Severity] = {
    "critical": "critical",
    "blocking": "critical",
    "required": "critical",
    "high": "critical",
    "medium": "medium",
    "moderate": "medium",
    "minor": "minor",
    "low": "minor",
    "non-blocking": "minor",
    "nice-to-have": "minor",
    "info": "minor",
}
"""Every severity word understood (case-folded) and the severity it means. No others."""

_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
"""A confidence written as text must be a JSON number (``"0.7"``; not ``".5"``, ``"+1"``)."""


def read_entry(
    entry: object, at: str, witness: str | None
) -> tuple[Finding | None, tuple[Warning, ...]]:
    """Read one entry: the finding (None when dropped) and its warnings, in table order.

    ``entry`` is a decoded JSON value; ``at`` names it (``findings[3]``, ``recorded[0]``);
    ``witness`` is stamped on the anchor (None when the tree was not pinned). Dropped
    entries (``not-an-object``, ``no-subject``) cost exactly one warning: no finding is
    left whose other fields could degrade. Never raises. Source: docs/harvest.md §4.
    """
    notes = EntryWarnings(at)
    if not isinstance(entry, Mapping):
        notes.add("not-an-object", f"is {type_name(entry)}, not an object; it was dropped.")
        return None, tuple(notes.items)
    subject = first_text(entry, "subject", "title").text
    if subject is None:
        notes.add("no-subject", "has no subject (nor title), so it says nothing; it was dropped.")
        return None, tuple(notes.items)
    label, about_label = _label(entry, notes)
    discussion_field = first_text(entry, "discussion", "body")
    for name in discussion_field.wrong:
        notes.add(
            "wrong-type",
            f"has a {name} that is {type_name(entry.get(name))}, not text; it was read as absent.",
        )
    discussion = discussion_field.text or ""
    if about_label:
        discussion = f"{discussion}\n\n{about_label}" if discussion else about_label
    anchor = read_location(entry, notes, witness)
    finding = Finding(
        anchor=anchor,
        label=label,
        subject=subject,
        discussion=discussion,
        severity=_severity(entry, notes),
        confidence=_confidence(entry, notes),
        raised_by=_raised_by(entry, notes),
    )
    return finding, tuple(notes.items)


def _label(entry: Mapping[object, object], notes: EntryWarnings) -> tuple[Label, str]:
    """The label, and the sentence to add to the discussion when the label was unknown.

    Missing (absent, null, blank) → ``note``. Unknown, or not text → ``note`` too, and
    the word as given (trimmed, original case; compact JSON for a non-string) is kept in
    the discussion, because warnings do not travel with the finding.
    """
    raw = entry.get("label")
    text = text_value(raw)
    if text is None:
        notes.add("missing-label", "has no label; it was filed as a note.")
        return "note", ""
    if isinstance(text, str) and text.casefold() in LABEL_WORDS:
        return LABEL_WORDS[text.casefold()], ""
    word = f'"{clean(text)}"' if isinstance(text, str) else compact_json(raw)
    notes.add(
        "unknown-label",
        f"is labelled {shown(raw)}, which is not a conventional label; it was filed as a "
        "note and the label was kept in its discussion.",
    )
    return "note", f"(Labelled {word}, which is not a conventional label.)"


def _severity(entry: Mapping[object, object], notes: EntryWarnings) -> Severity | None:
    """The severity the entry's word means; absent when missing, unknown or not text."""
    raw = entry.get("severity")
    text = text_value(raw)
    if text is None:
        return None
    if isinstance(text, str) and text.casefold() in SEVERITY_WORDS:
        return SEVERITY_WORDS[text.casefold()]
    notes.add(
        "unknown-severity",
        f"has severity {shown(raw)}, which is not a known severity word; no severity was kept.",
    )
    return None


def _confidence(entry: Mapping[object, object], notes: EntryWarnings) -> float | None:
    """A confidence in [0, 1]: a finite number, or text in JSON number syntax.

    A percentage is not guessed (``70`` and ``"70%"`` warn), nor are booleans, NaN or
    infinities. Absent (null, blank) gives none without a warning.
    """
    raw = entry.get("confidence")
    number: float | None = None
    if isinstance(raw, str):
        spelled = raw.strip()
        if not spelled:
            return None
        if _JSON_NUMBER.fullmatch(spelled):
            number = float(spelled)
    elif raw is None:
        return None
    elif isinstance(raw, int) and not isinstance(raw, bool):
        number = float(raw) if 0 <= raw <= 1 else None
    elif isinstance(raw, float):
        number = raw
    if number is not None and math.isfinite(number) and 0.0 <= number <= 1.0:
        return number
    notes.add(
        "bad-confidence",
        f"has confidence {shown(raw)}, which is not a number from 0 to 1; no confidence was kept.",
    )
    return None


def _raised_by(entry: Mapping[object, object], notes: EntryWarnings) -> tuple[str, ...] | None:
    """The participant ids of ``raisedBy``: trimmed, first of each kept, unusable dropped.

    Not a list → none (a string is not split). Blank or non-text items are dropped with
    ONE warning for the entry; repeats are dropped silently. An empty result is no field.
    """
    raw = entry.get("raisedBy")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    if not isinstance(raw, list | tuple):
        notes.add(
            "bad-raised-by",
            f"has raisedBy {shown(raw)}, which is not a list of ids; it was ignored.",
        )
        return None
    ids: dict[str, None] = {}  # insertion-ordered: the first telling of each id is kept
    dropped = 0
    for item in raw:
        text = text_value(item)
        if isinstance(text, str):
            ids.setdefault(clean(text))
        else:
            dropped += 1
    if dropped:
        notes.add(
            "bad-raised-by",
            f"lists {dropped} raisedBy item(s) that are blank or not text; they were dropped.",
        )
    return tuple(ids) or None
