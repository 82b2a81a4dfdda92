"""The committed baseline: findings a team has accepted, so they stop gating and posting.

A repository adopting the council late commits what it will not fix today to
``.council-baseline.json``; later runs list those under "Dismissed and baselined". Entries
are keyed by the content fingerprint (:func:`council.model.fingerprint.fingerprint`), so
they keep matching when code moves; one holding ``subject`` and ``discussion`` also matches
a rewording by agreement (:func:`suppress`)::

    {"version": 1, "entries": [{"fingerprint": "<64 hex>", "reason": "legacy, see #12",
      "subject", "path", "discussion", "severity", "count"}]}

Source: docs/harvest.md §5, §8; docs/identity-and-clocks.md "Identity of a finding across
rounds".
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from council.errors import ConfigurationError
from council.merging.agreement import recognize
from council.model.findings import (
    SEVERITIES,
    Anchor,
    ChangeAnchor,
    FileAnchor,
    Finding,
    Severity,
    anchor_path,
    severity_rank,
)
from council.model.fingerprint import fingerprint
from council.model.participant import PROGRAM_BACKENDS
from council.model.report import CouncilReport, Reworded, Suppression

BASELINE_FILE = ".council-baseline.json"
"""Where the baseline lives, relative to the repository root."""

BASELINE_VERSION = 1
"""The version of the file's shape; a reader refuses any other."""

_FINGERPRINT = re.compile(r"[0-9a-f]{64}")
_ENTRY_KEYS = ("fingerprint", "reason", "subject", "path", "discussion", "severity", "count")

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
    """How many findings with this fingerprint it accepts (bandit files every
    ``shell=True`` of a file under one subject, so one fingerprint): a new occurrence
    past them gates. Entries written before it was kept accept one."""

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
        elif key in raw and not isinstance(raw[key], str):
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

    One entry per distinct fingerprint, with the finding's subject, path and discussion
    (``discussion`` left out when empty), its gravest severity and how many findings
    have it; entries of ``existing`` are kept with their own reason and text (accepting a
    finding again does not rewrite why it was accepted), but take the severity and count
    of what is accepted now when those are graver or more (else a finding graver than
    its entry would gate for good: :func:`suppress` does not hide it). ``reasons``
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
    occurrences: Counter[str] = Counter()
    first: dict[str, Finding] = {}
    gravest: dict[str, str] = {}
    for finding in findings:
        value = fingerprint(finding)
        occurrences[value] += 1
        first.setdefault(value, finding)
        if severity_rank(finding.severity) > severity_rank(gravest.get(value)):
            gravest[value] = finding.severity or ""
    for value, finding in first.items():
        kept = by_fingerprint.get(value)
        now = gravest.get(value, "")
        if kept is None:
            by_fingerprint[value] = BaselineEntry(
                fingerprint=value,
                reason=(reasons or {}).get(value) or reason,
                subject=finding.subject,
                path=anchor_path(finding.anchor) or "",
                discussion=finding.discussion[:DISCUSSION_CHARS],
                severity=now,
                count=occurrences[value],
            )
        else:
            # Accepted again as it stands now: graver, or at more places, than before (an
            # entry that kept no severity holds nothing back and keeps none).
            severity = kept.severity
            if severity and severity_rank(now) > severity_rank(severity):
                severity = now
            count = max(kept.count, occurrences[value])
            if (severity, count) != (kept.severity, kept.count):
                by_fingerprint[value] = kept.model_copy(
                    update={"severity": severity, "count": count}
                )
    ordered = sorted(by_fingerprint.values(), key=lambda e: (e.path, e.fingerprint))
    document = {
        "version": BASELINE_VERSION,
        "entries": [
            e.model_dump(exclude={"discussion"} if not e.discussion else None) for e in ordered
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def suppress(
    report: CouncilReport,
    baseline: Baseline,
    dismissals: Mapping[str, str],
    dismissed: Mapping[str, Finding] | None = None,
) -> CouncilReport:
    """The report with ``suppressed`` filled from the session's dismissals and the baseline.

    ``dismissals``: fingerprint → a person's reason; ``dismissed``: fingerprint → the finding
    dismissed, where known. Each open finding (carried ones too) matches by fingerprint, a
    dismissal winning over the baseline (the more recent decision), else by agreement: one that
    kept a dismissed id goes with it, the others via :func:`council.merging.agreement.recognize`
    to dismissed findings, then to baseline entries with text (``by_agreement``). A dismissal
    covers ONE finding, an entry its ``count``; more occurrences and graver rewordings gate,
    noted (:func:`beyond_note`, :func:`graver_note`). Nothing leaves ``findings``; findings
    without an id are never suppressed; never raises. Source: docs/identity-and-clocks.md
    "Identity of a finding across rounds".
    """
    accepted = baseline.reasons()
    budget = baseline.counts()
    suppressed = dict(report.suppressed)
    left: list[Finding] = []
    beyond: list[tuple[Finding, str, int]] = []
    graver: list[tuple[Finding, Finding, str, str]] = []
    dismissed_id = {p: f.id for p, f in (dismissed or {}).items() if f.id is not None}
    entry_of = {e.fingerprint: e.as_accepted() for e in reversed(baseline.entries)}
    held = {f.id for f in report.open_findings if f.id is not None}
    used: set[str] = set()
    seen = set(report.seen)
    # Seen findings first: an occurrence an earlier round reported is the accepted one,
    # a new occurrence of the same claim is not.
    ordered = sorted(
        (f for f in report.open_findings if f.id is not None), key=lambda f: f.id not in seen
    )
    for finding in ordered:
        value = fingerprint(finding)
        ident = finding.id
        assert ident is not None
        if value in dismissals:
            owner = dismissed_id.get(value)
            if ident == owner or (value not in used and owner not in held):
                used.add(value)
                earlier = (dismissed or {}).get(value)
                if earlier is not None and _graver(finding, earlier, "dismissed"):
                    graver.append((finding, earlier, "dismissed", "fingerprint"))
                    continue
                suppressed[ident] = Suppression(source="dismissed", reason=dismissals[value])
            else:
                beyond.append((finding, "dismissed", 1))
        elif value in accepted:
            if budget.get(value, 1) > 0:
                budget[value] = budget.get(value, 1) - 1
                earlier = entry_of[value]
                if _graver(finding, earlier, "baseline"):
                    graver.append((finding, earlier, "baseline", "fingerprint"))
                    continue
                suppressed[ident] = Suppression(source="baseline", reason=accepted[value])
            else:
                beyond.append((finding, "baseline", baseline.counts()[value]))
        else:
            left.append(finding)
    order = {f.id: at for at, f in enumerate(report.open_findings)}
    left.sort(key=lambda f: order[f.id])
    roster = [p.id for p in report.participants]
    # A decision used by a fingerprint match covers that finding alone: it leaves the
    # pools the rest are matched against by id and by agreement.
    known = [(p, f) for p, f in (dismissed or {}).items() if p in dismissals and p not in used]
    by_id = {f.id: (p, f) for p, f in known if f.id is not None}
    still: list[Finding] = []
    for finding in left:
        ident = finding.id
        took = by_id.pop(ident, None) if ident is not None else None
        if ident is None or took is None:
            still.append(finding)
            continue
        print_, earlier = took
        if _graver(finding, earlier, "dismissed"):
            graver.append((finding, earlier, "dismissed", "agreement"))
            continue
        suppressed[ident] = _reworded("dismissed", dismissals[print_], print_, earlier)
    pool = [(p, f) for p, f in known if f.id is None or f.id in by_id]
    programs = {p.id for p in report.participants if p.backend in PROGRAM_BACKENDS}
    still = _match(still, pool, roster, "dismissed", dismissals, suppressed, graver, programs)
    entries = [
        (e.fingerprint, f)
        for e in _first_entries(baseline)
        if (f := e.as_finding()) is not None
        for _ in range(min(budget.get(e.fingerprint, e.count), len(still)))
    ]
    _match(still, entries, roster, "baseline", accepted, suppressed, graver, programs)
    notes = (
        *(graver_note(f, e, source, how) for f, e, source, how in graver),
        *(
            beyond_note(f, source, n)
            for f, source, n in sorted(beyond, key=lambda b: order[b[0].id])
        ),
    )
    update: dict[str, object] = {"suppressed": suppressed}
    if notes:
        update["notes"] = (*report.notes, *(n for n in notes if n not in report.notes))
    return report.model_copy(update=update)


def _first_entries(baseline: Baseline) -> list[BaselineEntry]:
    """The baseline's entries, the first of each fingerprint only (as :meth:`Baseline.
    reasons` and :meth:`Baseline.counts` read them)."""
    firsts: dict[str, BaselineEntry] = {}
    for entry in baseline.entries:
        firsts.setdefault(entry.fingerprint, entry)
    return list(firsts.values())


def _graver(finding: Finding, earlier: Finding, source: str) -> bool:
    """Whether ``finding`` is graver than the dismissed or baselined ``earlier`` it was
    matched to (by fingerprint or by agreement): a person's decision covers what they
    saw, so the same subject, or a rewording, raised to a higher severity is not
    suppressed by it (it gates until a person dismisses it again). A consolidated
    finding carries its gravest telling's severity, so another reviewer's graver
    telling merged into a dismissed one is not hidden by it either. A baseline entry
    that kept no severity (written before entries kept one) holds nothing back."""
    if source == "baseline" and earlier.severity is None:
        return False
    return severity_rank(finding.severity) > severity_rank(earlier.severity)


def beyond_note(finding: Finding, source: str, count: int) -> str:
    """The report's note for an occurrence of a dismissed or baselined claim past what
    the person accepted (the same fingerprint, another finding)."""
    if source == "dismissed":
        what = "was dismissed for one finding"
    else:
        what = f"is in the baseline for {count} finding{'s' if count != 1 else ''}"
    return (
        f"#{finding.id} makes the same claim as one that {what} ({finding.subject[:80]!r} "
        f"on the same file): this further occurrence is not suppressed, and gates until a "
        f"person dismisses it or the baseline is written again"
    )


def graver_note(finding: Finding, earlier: Finding, source: str, how: str = "agreement") -> str:
    """The report's note for a finding held back from a suppression by :func:`_graver`
    (``how``: ``fingerprint`` when it makes the same claim, ``agreement`` when it
    rewords it)."""
    what = "dismissed" if source == "dismissed" else "in the baseline"
    earlier_name = f"#{earlier.id}" if earlier.id is not None else repr(earlier.subject[:80])
    said = "makes the same claim as" if how == "fingerprint" else "rewords"
    by = "" if how == "fingerprint" else ", by agreement,"
    return (
        f"#{finding.id} {said} {earlier_name}, {what}{by} but is graver "
        f"({finding.severity or 'no severity'} over {earlier.severity or 'no severity'}): "
        f"it is not suppressed and gates until a person dismisses it again"
    )


def _match(
    findings: Sequence[Finding],
    pool: Sequence[tuple[str, Finding]],
    roster: Sequence[str],
    source: Literal["dismissed", "baseline"],
    reasons: Mapping[str, str],
    suppressed: dict[int, Suppression],
    graver: list[tuple[Finding, Finding, str, str]],
    programs: Collection[str] = frozenset(),
) -> list[Finding]:
    """Suppress those of ``findings`` that agree with a finding of ``pool`` (fingerprint
    it is keyed by, the finding): one to one; returns the findings left, in order. One
    graver than the finding it matched (:func:`_graver`) is not suppressed: it is added
    to ``graver`` (and not left for a later pool either)."""
    if not findings or not pool:
        return list(findings)
    found = recognize(findings, [f for _, f in pool], roster, programs)
    left: list[Finding] = []
    for at, finding in enumerate(findings):
        seen = found.get(at)
        if seen is None or finding.id is None:
            left.append(finding)
            continue
        if _graver(finding, seen.earlier, source):
            graver.append((finding, seen.earlier, source, "agreement"))
            continue
        print_ = pool[seen.at][0]
        suppressed[finding.id] = _reworded(source, reasons.get(print_, ""), print_, seen.earlier)
    return left


def _reworded(
    source: Literal["dismissed", "baseline"], reason: str, print_: str, earlier: Finding
) -> Suppression:
    return Suppression(
        source=source,
        reason=reason,
        by_agreement=Reworded(fingerprint=print_, id=earlier.id, subject=earlier.subject),
    )
