"""Findings from files other tools wrote: what ``council consolidate`` merges.

Each source is one file's text, told apart by its keys (docs/harvest.md §8):

* a council JSON report (``schema_version`` and ``participants``): each participant is a
  reviewer; a consolidated finding gives back each member's own telling; a finding the
  report suppressed (dismissed, baselined, not upheld by its judge) stays suppressed in
  the merged report when every telling of it is (:func:`carried_suppressions`);
* a SARIF log (``runs``): each run's tool is a reviewer (every result read, none kept to
  a change: there is none);
* a Harvest JSON (``findings``, ``warnings`` and ``truncated``: ``council harvest``'s
  output): one reviewer;
* anything else is a reviewer's answer, read by the harvest (:func:`council.harvest`).

A source given a NAME is one reviewer of that name, whatever it holds; else the
participant or tool name; else the file's stem. Pure: no I/O. Never raises but
:class:`SourceError`, naming what could not be read.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from council.findings import HARVEST, Anchor, Finding, Member, Origin, Warning
from council.harvest import harvest
from council.report.jsonreport import UnknownSchemaVersion, UnreadableReport, read_json
from council.report.model import Suppression
from council.reviewers.sarif import SarifError, every_path, findings_from_sarif


class SourceError(ValueError):
    """A source file that is none of the kinds it looks like (a report of an unknown
    version, a broken SARIF log or Harvest JSON)."""


@dataclass
class Told:
    """One reviewer's findings from a source, and what was said besides."""

    reviewer: str
    kind: str
    findings: list[Finding] = field(default_factory=list)
    warnings: list[Warning] = field(default_factory=list)
    suppressed: dict[int, Suppression] = field(default_factory=dict)
    """Position in ``findings`` → the suppression its report gave it (reports only)."""


def kind_of(data: Any) -> str:
    """``report``, ``sarif``, ``harvest`` or ``answer`` (by the keys, docs/harvest.md §8)."""
    if isinstance(data, dict):
        if "schema_version" in data and "participants" in data:
            return "report"
        if isinstance(data.get("runs"), list) and ("version" in data or "$schema" in data):
            return "sarif"
        if {"findings", "warnings", "truncated"} <= data.keys():
            return "harvest"
    return "answer"


def read_source(text: str, stem: str, name: str | None = None) -> list[Told]:
    """The reviewers of one source file (its text; ``stem``: the file's stem; ``name``:
    the NAME it was given), in the order the source lists them."""
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = None
    kind = kind_of(data)
    if kind == "report":
        told = _from_report(text)
    elif kind == "sarif":
        told = _from_sarif(data, stem)
    elif kind == "harvest":
        try:
            read = HARVEST.validate_python(data)
        except ValidationError as exc:
            raise SourceError(f"a Harvest JSON that cannot be read ({_first(exc)})") from None
        told = [Told(stem, kind, list(read.findings), list(read.warnings))]
    else:
        read = harvest(text)
        told = [Told(stem, kind, list(read.findings), list(read.warnings))]
    if name is None:
        return told
    one = Told(name, kind)
    for each in told:
        at = len(one.findings)
        one.suppressed.update({at + k: entry for k, entry in each.suppressed.items()})
        one.findings += each.findings
        one.warnings += each.warnings
    return [one]


def _first(exc: ValidationError) -> str:
    error = exc.errors()[0]
    return f"{'.'.join(str(p) for p in error['loc']) or 'it'}: {error['msg']}"


def _from_report(text: str) -> list[Told]:
    try:
        report = read_json(text)
    except (UnknownSchemaVersion, UnreadableReport) as exc:
        raise SourceError(f"a council report that cannot be read ({exc})") from None
    told: dict[str, Told] = {p.id: Told(p.id, "report") for p in report.participants}
    for finding in report.open_findings:
        entry = report.suppressed.get(finding.id) if finding.id is not None else None
        for participant, telling in _tellings(finding):
            one = told.setdefault(participant, Told(participant, "report"))
            if entry is not None:
                one.suppressed[len(one.findings)] = entry
            one.findings.append(telling)
    return list(told.values())


def _tellings(finding: Finding) -> list[tuple[str, Finding]]:
    """A report's finding back as each reviewer told it (members, else itself)."""
    if finding.members:
        return [(m.participant, _as_telling(m)) for m in finding.members]
    origin = finding.origin
    who = origin.participant if origin is not None and origin.participant else "hand"
    bare = finding.model_copy(
        update={"id": None, "raised_by": None, "members": None, "agreement": None}
    )
    return [(who, bare)]


def _as_telling(member: Member) -> Finding:
    return Finding(
        anchor=member.anchor,
        label=member.label,
        subject=member.subject,
        discussion=member.discussion,
        origin=member.origin,
        severity=member.severity,
        confidence=member.confidence,
    )


def _from_sarif(log: dict[str, Any], stem: str) -> list[Told]:
    told: dict[str, Told] = {}
    for number, run in enumerate(log["runs"]):
        tool = run.get("tool") if isinstance(run, dict) else None
        driver = tool.get("driver") if isinstance(tool, dict) else None
        named = driver.get("name") if isinstance(driver, dict) else None
        who = named if isinstance(named, str) and named.strip() else f"{stem}#{number}"
        one = {"version": "2.1.0", "runs": [run]}
        try:
            answer = findings_from_sarif(one, every_path(one), scope="files")
        except SarifError as exc:
            raise SourceError(f"a SARIF log that cannot be read ({exc})") from None
        read = harvest(json.dumps(answer))
        entry = told.setdefault(who, Told(who, "sarif"))
        entry.findings += read.findings
        entry.warnings += read.warnings
    return list(told.values())


def with_reviewer(told: Sequence[Told], run_id: str) -> list[tuple[str, list[Finding]]]:
    """``(reviewer, findings with origin)`` per reviewer, for the consolidation; a
    reviewer named twice (two sources) keeps one entry, in first-seen order."""
    merged: dict[str, list[Finding]] = {}
    for each in told:
        origin = Origin(kind="reviewer", run_id=run_id, participant=each.reviewer)
        merged.setdefault(each.reviewer, []).extend(
            f.model_copy(update={"origin": origin, "raised_by": None, "id": None})
            for f in each.findings
        )
    return list(merged.items())


Telling = tuple[str, Anchor, str, str, str, str | None]
"""What tells one reviewer's telling apart: reviewer, anchor, label, subject, discussion,
severity (its origin and id are the merge's own)."""


def _telling_of(reviewer: str, finding: Finding | Member) -> Telling:
    return (
        reviewer,
        finding.anchor,
        finding.label,
        finding.subject,
        finding.discussion,
        finding.severity,
    )


def carried_suppressions(told: Sequence[Told], merged: Sequence[Finding]) -> dict[int, Suppression]:
    """Finding id → suppression, for the merged findings (ids assigned) EVERY telling of
    which a source report suppressed: dismissed, baselined or not upheld by its judge
    there, it stays so (the first telling's entry). A finding that some source raised
    without a suppression stays open (fail closed), and so does one whose telling cannot
    be told apart from an open telling of the same reviewer. Never raises."""
    quiet: dict[Telling, Suppression] = {}
    loud: set[Telling] = set()
    for each in told:
        for at, finding in enumerate(each.findings):
            key = _telling_of(each.reviewer, finding)
            entry = each.suppressed.get(at)
            if entry is None:
                loud.add(key)
            else:
                quiet.setdefault(key, entry)
    carried: dict[int, Suppression] = {}
    for finding in merged:
        if finding.id is None:
            continue
        if finding.members:
            keys = [_telling_of(m.participant, m) for m in finding.members]
        else:
            who = finding.origin.participant if finding.origin is not None else None
            keys = [_telling_of(who or "", finding)]
        if all(key in quiet and key not in loud for key in keys):
            carried[finding.id] = quiet[keys[0]]
    return carried
