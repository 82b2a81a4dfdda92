"""Findings from files other tools wrote: what ``council consolidate`` merges.

A source is told apart by its keys: a council JSON report (``schema_version`` and
``participants``: each participant a reviewer, each member's own telling given back, a
suppression kept when every telling was suppressed: :func:`carried_suppressions`); a SARIF
log (``runs``: each run's tool a reviewer, every result read, there being no change); a
Harvest JSON (``findings``, ``warnings``, ``truncated``); anything else an answer, read by
:func:`council.harvest`. A source given a NAME is one reviewer of that name; else the
participant or tool name; else the file's stem. Pure: no I/O. Never raises but
:class:`SourceError`, naming what could not be read. Source: docs/harvest.md §8.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from council.harvest import harvest, harvest_entries
from council.model.findings import HARVEST, Anchor, Finding, Harvest, Member, Warning
from council.model.report import CouncilReport, ParticipantState, ParticipantSummary, Suppression
from council.readers.sarif import (
    SarifError,
    every_path,
    read_sarif,
    unanalyzed_note,
    unreadable_note,
)
from council.rendering.jsonreport import UnknownSchemaVersion, UnreadableReport, read_json
from council.round.filing import Heard, RoundFacts, file_round
from council.round.outcome import READ_IN_PART_CODES, UNREAD_CODES


class SourceError(ValueError):
    """A source file that is none of the kinds it looks like (a report of an unknown
    version, a broken SARIF log or Harvest JSON)."""


@dataclass
class Told:
    """One reviewer's findings from a source, and what was said besides."""

    reviewer: str
    kind: str
    named_by: Literal["given", "content", "stem"] = "content"
    """Where ``reviewer`` came from: ``given`` (NAME=), ``content`` (a participant or a
    tool name in the file) or ``stem`` (the file's stem: two files of one stem are
    two reviewers by accident, see :func:`name_clashes`)."""
    findings: list[Finding] = field(default_factory=list)
    warnings: list[Warning] = field(default_factory=list)
    suppressed: dict[int, Suppression] = field(default_factory=dict)
    """Position in ``findings`` → the suppression its source gave it (a report's entry, a
    SARIF result's accepted suppression)."""
    state: ParticipantState = "answered"
    """How the reviewer ended in the source (a report's participant may have failed)."""
    failure: str | None = None
    unread: str | None = None
    """Why nothing could be read from the source (``no-json``, ``no-findings-array``,
    ``said-nothing``; or a report participant's own)."""
    notes: list[str] = field(default_factory=list)
    """Sentences for the report (what an analyzer's log says it did not analyze)."""
    read_in_part: str | None = None
    """Why the source was read only in part (``cut-off``, ``malformed-json``,
    ``over-cap``, ``unanalyzed``; or a report participant's own)."""
    about: str = ""
    """What a council report says it reviewed (``repository@head``), "" for others:
    sources about different changes are merged with a note (:func:`about_notes`)."""


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


SOURCE_MAX_BYTES = 64 * 1024 * 1024
"""Bytes of one source file read at most; a larger file is refused (``council
consolidate`` says so), never read in part."""

SOURCE_MAX_ENTRIES = 10_000
"""Findings read from one source file at most: an answer's entries, a SARIF log's results,
a Harvest JSON's findings. Past it the source is read in part (``over-cap``): its
reviewer is not heard in full and the gate says so (exit 3)."""


def read_source(text: str, stem: str, name: str | None = None) -> list[Told]:
    """The reviewers of one source file (its text; ``stem``: the file's stem; ``name``:
    the NAME it was given), in the order the source lists them, each with how whole it
    was read. Raises :class:`SourceError` for a file of a kind that cannot be read."""
    try:
        data: Any = json.loads(text)
    except (ValueError, RecursionError):
        data = None  # too deep for json: the harvest reads it, with its nesting cap
    kind = kind_of(data)
    if kind == "report":
        told = _from_report(text)
    elif kind == "sarif":
        told = _from_sarif(data, stem)
    elif kind == "harvest":
        told = [_from_harvest(data, stem)]
    else:
        told = [
            _heard(Told(stem, kind, named_by="stem"), harvest(text, max_entries=SOURCE_MAX_ENTRIES))
        ]
    if name is None:
        return told
    one = Told(name, kind, named_by="given")
    for each in told:
        at = len(one.findings)
        one.suppressed.update({at + k: entry for k, entry in each.suppressed.items()})
        one.findings += each.findings
        one.warnings += each.warnings
        one.notes += each.notes
    one.state, one.failure, one.unread, one.read_in_part = heard_as(told)
    return [one]


def _heard(told: Told, read: Harvest) -> Told:
    """``told`` with the harvest's findings (without ids: the filing gives its own) and
    warnings, and how whole it was read (by its answer-level warnings)."""
    told.findings += [
        f if f.id is None else f.model_copy(update={"id": None}) for f in read.findings
    ]
    told.warnings += read.warnings
    codes = [w.code for w in read.warnings if w.at == "answer"]
    told.unread = next((c for c in codes if c in UNREAD_CODES), told.unread)
    in_part = next((c for c in codes if c in READ_IN_PART_CODES), None)
    if in_part is None and read.truncated:
        in_part = "cut-off"
    told.read_in_part = told.read_in_part or in_part
    return told


def _from_harvest(data: Any, stem: str) -> Told:
    """A Harvest JSON: its findings (at most :data:`SOURCE_MAX_ENTRIES`) and warnings;
    read in part when it says it was truncated, or holds more findings than read."""
    listed = data.get("findings")
    over = isinstance(listed, list) and len(listed) > SOURCE_MAX_ENTRIES
    if over:
        data = {**data, "findings": listed[:SOURCE_MAX_ENTRIES]}
    try:
        read = HARVEST.validate_python(data)
    except ValidationError as exc:
        raise SourceError(f"a Harvest JSON that cannot be read ({_first(exc)})") from None
    if over:
        cut = Warning(
            code="over-cap",
            at="answer",
            message=f"the Harvest JSON holds {len(listed)} findings; the first "
            f"{SOURCE_MAX_ENTRIES} were read",
        )
        read = read.model_copy(update={"warnings": (cut, *read.warnings)})
    return _heard(Told(stem, "harvest", named_by="stem"), read)


def heard_as(told: Sequence[Told]) -> tuple[ParticipantState, str | None, str | None, str | None]:
    """How one reviewer told by several sources was heard, all of them together:
    ``(state, failure, unread, read_in_part)``. Answered whole when every source was;
    when none could be heard, as the first says; when some could and some not, answered
    but read in part (the first code that says why)."""
    whole = [
        t for t in told if t.state == "answered" and t.unread is None and t.read_in_part is None
    ]
    if len(whole) == len(told):
        return "answered", None, None, None
    answered = [t for t in told if t.state == "answered" and t.unread is None]
    if not answered:
        first = told[0]
        return first.state, first.failure, first.unread, first.read_in_part
    why = next((t.read_in_part or t.unread or t.state for t in told if t not in whole), "unread")
    return "answered", None, None, why


def _first(exc: ValidationError) -> str:
    error = exc.errors()[0]
    return f"{'.'.join(str(p) for p in error['loc']) or 'it'}: {error['msg']}"


def _from_report(text: str) -> list[Told]:
    try:
        report = read_json(text)
    except (UnknownSchemaVersion, UnreadableReport) as exc:
        raise SourceError(f"a council report that cannot be read ({exc})") from None
    told: dict[str, Told] = {}
    listed: set[str] = set()
    for p in report.participants:
        if p.id in listed:
            raise SourceError(f"a council report that lists participant {p.id!r} twice")
        listed.add(p.id)
    for p in report.participants:
        if p.role == "judge":
            continue  # a judge consolidates, it does not raise: a reviewer only by its own findings
        told[p.id] = Told(
            p.id,
            "report",
            about=_about(report),
            state=p.state,
            failure=p.failure,
            unread=p.unread,
            read_in_part=p.read_in_part,
        )
    ids = Counter(f.id for f in report.open_findings if f.id is not None)
    shared = sorted(i for i, n in ids.items() if n > 1)
    if shared:
        raise SourceError(
            f"a council report whose findings share an id ({', '.join(map(str, shared))}): "
            "which of them its suppressions and marks mean cannot be told"
        )
    for finding in report.open_findings:
        strangers = [m.participant for m in finding.members or () if m.participant not in listed]
        if strangers:
            raise SourceError(
                f"a council report whose finding #{finding.id} has members of "
                f"{', '.join(map(repr, strangers))}, not participants of the report"
            )
    for finding in report.open_findings:
        entry = report.suppressed.get(finding.id) if finding.id is not None else None
        for participant, telling in _findings_by_member(finding):
            one = told.setdefault(participant, Told(participant, "report", about=_about(report)))
            if entry is not None:
                one.suppressed[len(one.findings)] = entry
            one.findings.append(telling)
    return list(told.values())


def _about(report: CouncilReport) -> str:
    """``repository@head`` of a report (shortened head), "" when it names neither."""
    if not report.repository and not report.head:
        return ""
    return f"{report.repository or '?'}@{report.head[:12] or '?'}"


def about_notes(told: Sequence[Told]) -> tuple[str, ...]:
    """A note when the council reports merged name different repositories or heads: the
    merge treats every finding as about one change, which they are not."""
    named = sorted({t.about for t in told if t.about})
    if len(named) < 2:
        return ()
    shown = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
    return (
        f"the council reports merged are about different changes ({shown}): their "
        "findings were merged as if about one; consolidate the reports of one change",
    )


def _findings_by_member(finding: Finding) -> list[tuple[str, Finding]]:
    """``(reviewer, finding)`` for each member of a report's finding, as that reviewer
    told it; a finding of one telling is its raiser's (else ``hand``'s), bare."""
    if finding.members:
        return [(m.participant, m.as_finding()) for m in finding.members]
    origin = finding.origin
    who = origin.participant if origin is not None and origin.participant else "hand"
    bare = finding.model_copy(
        update={"id": None, "raised_by": None, "members": None, "agreement": None}
    )
    return [(who, bare)]


def _from_sarif(log: dict[str, Any], stem: str) -> list[Told]:
    told: dict[str, Told] = {}
    for number, run in enumerate(log["runs"]):
        tool = run.get("tool") if isinstance(run, dict) else None
        driver = tool.get("driver") if isinstance(tool, dict) else None
        named = driver.get("name") if isinstance(driver, dict) else None
        who = named if isinstance(named, str) and named.strip() else f"{stem}#{number}"
        results = run.get("results") if isinstance(run, dict) else None
        held: list[dict[str, Any]] = []
        if isinstance(run, dict) and isinstance(results, list):
            held = [r for r in results if _accepted(r)]
            if held:  # read apart below: each keeps its suppression
                run = {**run, "results": [r for r in results if not _accepted(r)]}
        one = {"version": "2.1.0", "runs": [run]}
        try:
            read = read_sarif(one, every_path(one), scope="files", unplaced=True)
        except SarifError as exc:
            raise SourceError(f"a SARIF log that cannot be read ({exc})") from None
        entry = told.setdefault(
            who, Told(who, "sarif", named_by="content" if who == named else "stem")
        )
        _heard(entry, harvest_entries(read.findings, max_entries=SOURCE_MAX_ENTRIES))
        for result in held:
            alone = {"version": "2.1.0", "runs": [{**run, "results": [result]}]}
            start = len(entry.findings)
            try:
                kept = read_sarif(alone, every_path(alone), scope="files", unplaced=True)
            except SarifError as exc:
                raise SourceError(f"a SARIF log that cannot be read ({exc})") from None
            _heard(entry, harvest_entries(kept.findings, max_entries=SOURCE_MAX_ENTRIES))
            for at in range(start, len(entry.findings)):
                entry.suppressed[at] = _suppression_of(result, stem)
        if read.unreadable_results:
            entry.warnings.append(
                Warning(
                    code="not-an-object",
                    at=f"runs[{number}].results",
                    message=unreadable_note(read.unreadable_results),
                )
            )
        if read.unanalyzed:
            entry.read_in_part = entry.read_in_part or "unanalyzed"
            note = unanalyzed_note(read.unanalyzed_files, read.execution_failed)
            entry.notes.append(f"{who}: {note}")
    return list(told.values())


def _accepted(result: object) -> bool:
    """Whether a SARIF result carries a suppression council's SARIF wrote for a person's
    decision: ``external``, ``accepted``, and its properties' ``source`` a dismissal or
    the baseline (as a council report's own entries are kept). Any other does not count
    (fail closed): one under review or rejected is no decision, an ``inSource`` one is a
    comment in the code under review, and another tool's may follow configuration the
    pull request wrote."""
    held = result.get("suppressions") if isinstance(result, dict) else None
    return isinstance(held, list) and any(_external_accepted(s) for s in held)


def _external_accepted(suppression: object) -> bool:
    if not isinstance(suppression, dict):
        return False
    props = suppression.get("properties")
    return (
        suppression.get("status") == "accepted"
        and suppression.get("kind") == "external"
        and isinstance(props, dict)
        and props.get("source") in ("dismissed", "baseline")
    )


def _suppression_of(result: dict[str, Any], stem: str) -> Suppression:
    """The suppression a result's accepted SARIF suppression stands for: the baseline
    when its properties say so (council's own SARIF), else a dismissal; its reason the
    justification, cut at 500 characters, and where it was read: a SARIF file is no
    record of who decided, so the report says which file said so."""
    held = next(s for s in result["suppressions"] if _external_accepted(s))
    baseline = held["properties"]["source"] == "baseline"
    reason = held.get("justification")
    text = reason[:500] if isinstance(reason, str) and reason.strip() else ""
    said = f"{text} " if text else ""
    return Suppression(
        source="baseline" if baseline else "dismissed",
        reason=f"{said}(as the SARIF log {stem} says: nothing else records this decision)",
    )


def name_clashes(sources: Sequence[tuple[str, Sequence[Told]]]) -> list[str]:
    """Sentences naming each reviewer that two source files both give by their STEM
    (``m1/answer.json`` and ``m2/answer.json`` are both ``answer``): merged, their
    findings would be one reviewer's, and agreement between them would be lost.
    ``sources``: (the FILE as given, what it told) in the order given. A name given with
    NAME=, or read in the files (a participant, a tool), may well span several files and
    is not a clash."""
    by_name: dict[str, list[tuple[str, str]]] = {}
    for given, told in sources:
        for each in told:
            by_name.setdefault(each.reviewer, []).append((given, each.named_by))
    clashes: list[str] = []
    for name, places in by_name.items():
        files = list(dict.fromkeys(given for given, _ in places))
        if len(files) > 1 and any(named_by == "stem" for _, named_by in places):
            clashes.append(
                f"{', '.join(files)} all read as reviewer {name!r}; name each one: "
                + " ".join(f"NAME{k}={given}" for k, given in enumerate(files, 1))
            )
    return clashes


def file_sources(told: Sequence[Told], run_id: str, files: int) -> CouncilReport:
    """The consolidated report of what the sources told, filed by the round's own code
    (:func:`council.round.filing.file_round`), so "k of n" counts the reviewers heard in
    full as a review's does. ``told``: every source's reviewers, in the order given (the
    roster order: first seen first); ``files``: how many files were read (for the note).

    A reviewer told by several sources is one participant, heard as :func:`heard_as`
    says; its backend is the kind of the last source that told it, but each finding is a
    program's telling only when its own source is a SARIF log (an answer's, a report's or
    a Harvest JSON's findings are models' tellings, whatever else that reviewer gave).
    Ids run from 1; a finding every telling of which a source report suppressed stays so
    (:func:`carried_suppressions`). No clock: ``settled_ms`` is absent. Never raises.
    """
    by_reviewer: dict[str, list[Told]] = {}
    for each in told:
        by_reviewer.setdefault(each.reviewer, []).append(each)
    heard = [_heard_in_all(who, sources) for who, sources in by_reviewer.items()]
    whole = all(h.summary.heard_in_full for h in heard)
    facts = RoundFacts(
        run_id=run_id,
        session=run_id,
        notes=(f"consolidated from {files} file(s), {len(heard)} reviewer(s)",),
    )
    merged, report = file_round(
        facts, heard, 1, status="settled" if whole else "partial", settled_ms=None
    )
    return report.model_copy(update={"suppressed": carried_suppressions(told, merged)})


def _heard_in_all(who: str, sources: Sequence[Told]) -> Heard:
    """One reviewer as every source that told it said it, for the filing."""
    state, failure, unread, in_part = heard_as(sources)
    findings = [f for each in sources for f in each.findings]
    warnings = [w for each in sources for w in each.warnings]
    summary = ParticipantSummary(
        id=who,
        backend=sources[-1].kind,
        state=state,
        failure=failure,
        unread=unread,
        read_in_part=in_part,
        findings=len(findings),
        warnings=len(warnings),
    )
    programs = [
        each.kind == "sarif" or (f.origin is not None and bool(f.origin.program))
        for each in sources
        for f in each.findings
    ]
    notes = [n for each in sources for n in each.notes]
    return Heard(summary, findings, warnings, notes, programs)


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
