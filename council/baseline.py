"""The committed baseline: findings a team has accepted, so they stop gating and posting.

A repository that adopts the council late has findings it will not fix today. It
commits them to ``.council-baseline.json``; a later run lists them under "Dismissed and
baselined" instead of gating on them or posting them again. Entries are keyed by the
content fingerprint (:func:`council.fingerprint.fingerprint`), so an entry keeps
matching when the code around it moves. The file::

    {
      "version": 1,
      "entries": [
        {"fingerprint": "<64 hex>", "reason": "legacy, tracked in #12",
         "subject": "pool leaks on timeout", "path": "src/pool.py"}
      ]
    }

``subject`` and ``path`` are for the people reading a diff of the file; only the
fingerprint matches. Source: docs/harvest.md §5 (sameness, which the fingerprint folds like).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from council.errors import ConfigurationError
from council.findings import Finding, anchor_path
from council.fingerprint import fingerprint
from council.report.model import CouncilReport, Suppression

BASELINE_FILE = ".council-baseline.json"
"""Where the baseline lives, relative to the repository root."""

BASELINE_VERSION = 1
"""The version of the file's shape; a reader refuses any other."""

_FINGERPRINT = re.compile(r"[0-9a-f]{64}")
_ENTRY_KEYS = ("fingerprint", "reason", "subject", "path")


class UnreadableBaseline(ConfigurationError, ValueError):
    """The baseline file is not one council can read. ``reason`` says what is wrong.

    Exit code 2: the committed file is at fault; fix it (or write it again with
    ``write_baseline``) and run again.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(
            f"cannot read {BASELINE_FILE}: {reason}. Fix the file, or write it again from a report."
        )


class BaselineEntry(BaseModel):
    """One accepted finding: its fingerprint, why it was accepted, and what it said."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fingerprint: str
    reason: str = ""
    subject: str = ""
    path: str = ""
    """The anchor's path, ``""`` for a finding about the change as a whole."""


class Baseline(BaseModel):
    """The entries of a baseline file, in file order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = BASELINE_VERSION
    entries: tuple[BaselineEntry, ...] = ()

    def reasons(self) -> dict[str, str]:
        """Fingerprint → reason; the first entry wins when a fingerprint repeats."""
        out: dict[str, str] = {}
        for entry in self.entries:
            out.setdefault(entry.fingerprint, entry.reason)
        return out


def read_baseline(text: str) -> Baseline:
    """Read the text of ``.council-baseline.json``.

    An empty (or blank) text is an empty baseline. Raises :class:`UnreadableBaseline`
    (a ValueError) naming what is wrong: not JSON (with line and column), not an
    object, a missing or unknown ``version``, ``entries`` not a list, an entry that is
    not an object, has an unknown or missing key, a value that is not a string, or a
    fingerprint that is not 64 lowercase hex digits (``entries[3].fingerprint``). A
    fingerprint listed twice is accepted (merging two branches' baselines does that);
    the first reason wins. Why: a hand-edited file must fail loudly, never suppress
    the wrong findings or none at all.
    """
    if not text.strip():
        return Baseline()
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnreadableBaseline(
            f"it is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from exc
    if not isinstance(data, dict):
        raise UnreadableBaseline(f"it must be a JSON object, not {_kind(data)}")
    unknown = sorted(set(data) - {"version", "entries"})
    if unknown:
        raise UnreadableBaseline(f"unknown key {unknown[0]!r} (expected version, entries)")
    version = data.get("version")
    if version != BASELINE_VERSION or isinstance(version, bool):
        raise UnreadableBaseline(
            f"version is {version!r}; this council reads version {BASELINE_VERSION}"
        )
    entries = data.get("entries", [])
    if not isinstance(entries, list):
        raise UnreadableBaseline(f"entries must be a list, not {_kind(entries)}")
    return Baseline(entries=tuple(_entry(index, raw) for index, raw in enumerate(entries)))


def _entry(index: int, raw: object) -> BaselineEntry:
    at = f"entries[{index}]"
    if not isinstance(raw, dict):
        raise UnreadableBaseline(f"{at} must be an object, not {_kind(raw)}")
    for key in raw:
        if key not in _ENTRY_KEYS:
            raise UnreadableBaseline(f"{at} has unknown key {key!r}")
    if "fingerprint" not in raw:
        raise UnreadableBaseline(f"{at} has no fingerprint")
    for key in _ENTRY_KEYS:
        if key in raw and not isinstance(raw[key], str):
            raise UnreadableBaseline(f"{at}.{key} must be a string, not {_kind(raw[key])}")
    if not _FINGERPRINT.fullmatch(raw["fingerprint"]):
        raise UnreadableBaseline(
            f"{at}.fingerprint {raw['fingerprint']!r} is not a council fingerprint "
            "(64 lowercase hexadecimal digits)"
        )
    return BaselineEntry(**raw)


def _kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


def write_baseline(
    findings: Iterable[Finding],
    reason: str,
    *,
    existing: Baseline | None = None,
    reasons: Mapping[str, str] | None = None,
) -> str:
    """The text of a baseline accepting ``findings`` for ``reason``, newline-terminated.

    One entry per distinct fingerprint; entries of ``existing`` are kept with their own
    reason (accepting a finding again does not rewrite why it was accepted). ``reasons``
    maps a fingerprint to the reason a person already gave for that finding (a
    dismissal's): it wins over ``reason``, the generic one, for a new entry. Entries are
    sorted by path, then fingerprint, and written with a 2-space indent and non-ASCII
    kept as is, so the same findings always give the same bytes and a diff of the
    committed file shows only what changed. Never raises.
    """
    by_fingerprint: dict[str, BaselineEntry] = {}
    if existing is not None:
        for entry in existing.entries:
            by_fingerprint.setdefault(entry.fingerprint, entry)
    for finding in findings:
        value = fingerprint(finding)
        if value not in by_fingerprint:
            by_fingerprint[value] = BaselineEntry(
                fingerprint=value,
                reason=(reasons or {}).get(value) or reason,
                subject=finding.subject,
                path=anchor_path(finding.anchor) or "",
            )
    ordered = sorted(by_fingerprint.values(), key=lambda e: (e.path, e.fingerprint))
    document = {
        "version": BASELINE_VERSION,
        "entries": [e.model_dump() for e in ordered],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def suppress(
    report: CouncilReport, baseline: Baseline, dismissals: Mapping[str, str]
) -> CouncilReport:
    """The report with ``suppressed`` filled from the session's dismissals and the baseline.

    ``dismissals`` maps a content fingerprint to the reason a person gave when
    dismissing it in this session; ``baseline`` is the committed file. A finding whose
    fingerprint is dismissed gets ``Suppression(source="dismissed")``; otherwise one in
    the baseline gets ``source="baseline"``: the session's decision is the more recent
    one, so it wins. Suppressions already in the report are kept unless one of these
    replaces them. Findings without an id cannot be keyed and are never suppressed.
    Nothing is removed from ``findings``: suppressed findings are still listed, they
    only stop gating (:func:`council.gate.gate_tripped`) and posting. Never raises.
    """
    accepted = baseline.reasons()
    suppressed = dict(report.suppressed)
    for finding in report.findings:
        if finding.id is None:
            continue
        value = fingerprint(finding)
        if value in dismissals:
            suppressed[finding.id] = Suppression(source="dismissed", reason=dismissals[value])
        elif value in accepted:
            suppressed[finding.id] = Suppression(source="baseline", reason=accepted[value])
    return report.model_copy(update={"suppressed": suppressed})
