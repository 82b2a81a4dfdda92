"""The committed baseline: findings a team has accepted, so they stop gating and posting.

A repository adopting the council late commits what it will not fix today to
``.council-baseline.json``; later runs list those under "Dismissed and baselined". An entry
is a decision about the occurrences it recorded: it is keyed by their fingerprint
(:func:`council.model.fingerprint.fingerprint`: rule, path and the anchored code), so it
keeps matching when that code moves, never another occurrence of the same rule; one
holding ``subject`` and ``discussion`` also matches a model's rewording at the same code
by agreement; ``programs`` lists the fingerprints of the program reviewers' tellings it
accepts (:mod:`council.session.kinds`). Applied by
:func:`council.session.decisions.suppress`::

    {"version": 1, "entries": [{"fingerprint": "<64 hex>", "reason": "legacy, see #12",
      "subject", "path", "discussion", "severity", "count", "occurrence", "programs",
      "block"}]}

An entry without ``occurrence`` was written before occurrences were kept: its fingerprint
is the claim's (:func:`council.model.fingerprint.claim`), and it covers only what it can be
shown to cover. Source: docs/harvest.md §5, §8; docs/identity-and-clocks.md "Occurrences".
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field

from council.errors import ConfigurationError
from council.model.findings import (
    SEVERITIES,
    Anchor,
    ChangeAnchor,
    FileAnchor,
    Finding,
    LineAnchor,
    Severity,
    anchor_path,
    severity_rank,
)
from council.model.fingerprint import claim, fingerprint, occurrence
from council.session.kinds import program_prints

BASELINE_FILE = ".council-baseline.json"
"""Where the baseline lives, relative to the repository root."""

BASELINE_VERSION = 1
"""The version of the file's shape; a reader refuses any other."""

_FINGERPRINT = re.compile(r"[0-9a-f]{64}")
_ENTRY_KEYS = (
    "fingerprint",
    "reason",
    "subject",
    "path",
    "discussion",
    "severity",
    "count",
    "occurrence",
    "programs",
    "block",
)

DISCUSSION_CHARS = 2_000
"""Characters of a finding's discussion an entry keeps: as many as the agreement
relation reads (:data:`council.merging.agreement.words.READ_CHARS`)."""


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
    discussion: str = ""
    """The finding's discussion (its first :data:`DISCUSSION_CHARS` characters); absent
    in entries written before it was kept, which then match by fingerprint only."""
    severity: str = ""
    """The finding's severity when it was accepted (``""``: none, or an entry written
    before it was kept). A rewording graver than it is not suppressed by agreement."""
    count: int = Field(default=1, ge=1)
    """How many findings with this fingerprint it accepts: the recorded occurrences (one,
    unless a reviewer told the same claim twice at one piece of code, or a file-level
    claim twice on one file). In an entry written before occurrences were kept, how many
    findings of the claim (bandit filed every ``shell=True`` of a file under one); older
    entries accept one."""
    occurrence: str | None = None
    """The occurrence it records (:func:`council.model.fingerprint.occurrence`:
    ``line:<code hash>``, ``file``, ``change`` or ``at:<side>:<lines>``); absent in an entry
    written before occurrences were kept, whose ``fingerprint`` is then the claim's."""
    programs: tuple[str, ...] = ()
    """The fingerprints of the program reviewers' tellings it accepts
    (:mod:`council.session.kinds`): a finding an analyzer told is covered only when the
    analyzer's own telling is listed. Empty: a model's finding, which never covers an
    analyzer's."""
    block: str | None = None
    """The hash of the block holding the recorded code when it was accepted
    (:attr:`council.model.findings.LineAnchor.block`): the entry carries to a gating
    finding only while it is the same (:mod:`council.session.stale`). Absent: not kept
    (an older entry, or not a line's), and then only where the change leaves the file
    alone."""

    @property
    def legacy(self) -> bool:
        """Written before occurrences were kept: keyed by the claim, no occurrence."""
        return self.occurrence is None

    def as_accepted(self) -> Finding:
        """The entry as a finding of its subject, path and severity (what the severity
        check of a match by fingerprint reads), whatever text it kept."""
        subject = self.subject if self.subject.strip() else "(a baseline entry)"
        return self._finding(subject, "")

    def as_finding(self) -> Finding | None:
        """The entry as a finding the agreement relation can read (label ``issue``;
        anchored on its file, or on the change), or None when it holds too little text:
        no subject or no discussion (such an entry matches by fingerprint only)."""
        if not self.subject.strip() or not self.discussion.strip():
            return None
        return self._finding(self.subject, self.discussion)

    def _finding(self, subject: str, discussion: str) -> Finding:
        """An ``issue`` of ``subject`` and ``discussion`` on the entry's file (or the
        change), at its severity when it kept a known one."""
        anchor: Anchor = FileAnchor(path=self.path) if self.path else ChangeAnchor()
        severity = cast(Severity, self.severity) if self.severity in SEVERITIES else None
        return Finding(
            anchor=anchor, label="issue", subject=subject, discussion=discussion, severity=severity
        )


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

    def counts(self) -> dict[str, int]:
        """Fingerprint → how many findings it accepts; the first entry wins."""
        out: dict[str, int] = {}
        for entry in self.entries:
            out.setdefault(entry.fingerprint, entry.count)
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
        if key == "count":
            value = raw.get(key, 1)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UnreadableBaseline(f"{at}.count must be a whole number ≥ 1, not {value!r}")
        elif key == "programs":
            _programs(at, raw.get(key, []))
        elif key in raw and not isinstance(raw[key], str):
            raise UnreadableBaseline(f"{at}.{key} must be a string, not {_kind(raw[key])}")
    if not _FINGERPRINT.fullmatch(raw["fingerprint"]):
        raise UnreadableBaseline(
            f"{at}.fingerprint {raw['fingerprint']!r} is not a council fingerprint "
            "(64 lowercase hexadecimal digits)"
        )
    return BaselineEntry(**raw)


def _programs(at: str, value: object) -> None:
    """Refuse an entry's ``programs`` unless it is a list of council fingerprints."""
    if not isinstance(value, list):
        raise UnreadableBaseline(f"{at}.programs must be a list, not {_kind(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str) or not _FINGERPRINT.fullmatch(item):
            raise UnreadableBaseline(
                f"{at}.programs[{index}] is not a council fingerprint "
                "(64 lowercase hexadecimal digits)"
            )


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
    programs: Collection[str] = frozenset(),
) -> str:
    """The text of a baseline accepting ``findings`` for ``reason``, newline-terminated.

    One entry per distinct fingerprint (one occurrence: rule, path and anchored code),
    with the finding's subject, path and discussion (``discussion`` left out when empty),
    its occurrence, its gravest severity, how many findings have it, and the
    fingerprints of its program tellings (``programs``: ids of the program reviewers,
    for findings whose origins do not say; :mod:`council.session.kinds`). Entries of
    ``existing`` are kept with their own reason and text (accepting a finding again does
    not rewrite why it was accepted; a new entry for an occurrence of the claim of an
    entry written before occurrences were kept takes that entry's reason), but take the
    severity, count and program tellings of what is accepted now when those are graver
    or more (else a finding graver than its entry would gate for good:
    :func:`council.session.decisions.suppress` does not hide it). ``reasons`` maps a
    fingerprint to the reason a person already gave for that finding (a dismissal's): it
    wins over ``reason``, the generic one, for a new entry. Entries are sorted by path,
    then fingerprint, and written with a 2-space indent and non-ASCII kept as is, so the
    same findings always give the same bytes and a diff of the committed file shows only
    what changed. Never raises.
    """
    by_fingerprint: dict[str, BaselineEntry] = {}
    if existing is not None:
        for entry in existing.entries:
            by_fingerprint.setdefault(entry.fingerprint, entry)
    occurrences: Counter[str] = Counter()
    first: dict[str, Finding] = {}
    gravest: dict[str, str] = {}
    told: dict[str, set[str]] = {}
    for finding in findings:
        value = fingerprint(finding)
        occurrences[value] += 1
        first.setdefault(value, finding)
        told.setdefault(value, set()).update(program_prints(finding, programs))
        if severity_rank(finding.severity) > severity_rank(gravest.get(value)):
            gravest[value] = finding.severity or ""
    for value, finding in first.items():
        kept = by_fingerprint.get(value)
        now = gravest.get(value, "")
        if kept is None:
            older = by_fingerprint.get(claim(finding))
            given = (reasons or {}).get(value) or (older.reason if older and older.legacy else "")
            by_fingerprint[value] = BaselineEntry(
                fingerprint=value,
                reason=given or reason,
                subject=finding.subject,
                path=anchor_path(finding.anchor) or "",
                discussion=finding.discussion[:DISCUSSION_CHARS],
                severity=now,
                count=occurrences[value],
                occurrence=occurrence(finding),
                programs=tuple(sorted(told[value])),
                block=_block(finding),
            )
        else:
            # Accepted again as it stands now: graver, at more places, or told by more
            # programs than before (an entry that kept no severity holds nothing back and
            # keeps none).
            severity = kept.severity
            if severity and severity_rank(now) > severity_rank(severity):
                severity = now
            count = max(kept.count, occurrences[value])
            listed = tuple(sorted({*kept.programs, *told[value]}))
            # A person accepts the code as its block is now.
            block = _block(finding) or kept.block
            if (severity, count, listed, block) != (
                kept.severity,
                kept.count,
                kept.programs,
                kept.block,
            ):
                by_fingerprint[value] = kept.model_copy(
                    update={
                        "severity": severity,
                        "count": count,
                        "programs": listed,
                        "block": block,
                    }
                )
    ordered = sorted(by_fingerprint.values(), key=lambda e: (e.path, e.fingerprint))
    document = {"version": BASELINE_VERSION, "entries": [_written(e) for e in ordered]}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _block(finding: Finding) -> str | None:
    """The block hash of a finding's anchor (None: not a line's, or not read)."""
    anchor = finding.anchor
    return anchor.block if isinstance(anchor, LineAnchor) else None


def _written(entry: BaselineEntry) -> dict[str, Any]:
    """An entry as the file holds it: ``discussion``, ``occurrence``, ``programs`` and
    ``block`` left out when empty (an entry written before they were kept stays as it
    was)."""
    left_out = {
        name
        for name, empty in (
            ("discussion", not entry.discussion),
            ("occurrence", entry.occurrence is None),
            ("programs", not entry.programs),
            ("block", entry.block is None),
        )
        if empty
    }
    return entry.model_dump(exclude=left_out or None)
