"""The SARIF 2.1.0 report: what code-scanning services (GitHub, Azure DevOps...) ingest::

    {"$schema", "version": "2.1.0", "runs": [{"tool": {"driver": {"name": <participant>,
     "rules"}}, "invocations", "properties": {"participant", "backend", "state", ...},
     "results": [{"ruleId", "level", "message", "locations"?, "baselineState",
       "partialFingerprints": {"councilFingerprint/v2"}, "suppressions"?,
       "properties": {"raisedBy", "evidence"?, "severityNote"?, "carried"?, ...}}]}]}

One run per participant, judges too (:data:`UNATTRIBUTED_RUN` for the rest), each finding
in its origin's; ``ruleId`` is the analyzer's rule (:data:`ANALYZER_RULE`), else the label.
Nothing is left out (the host decides); over :data:`GITHUB_LIMITS` the log is cut and says
so. Source: docs/architecture.md "Reports, the CLI and the gate", docs/harvest.md §2
(anchors), §8 (raised_by); OASIS SARIF 2.1.0; GitHub "SARIF support for code scanning".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from council.evidence import verdict_json
from council.merging.sameness import ANALYZER_RULE
from council.model.findings import (
    LABELS,
    ChangeAnchor,
    FileAnchor,
    Finding,
    canonical,
    severity_rank,
)
from council.model.fingerprint import fingerprint
from council.model.report import CouncilReport, ParticipantSummary
from council.rendering.agreement import agreement_properties, tellings_plain
from council.rendering.escape import no_controls, no_controls_json

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
"""The schema the document declares (OASIS SARIF 2.1.0, errata 01)."""

FINGERPRINT_KEY = "councilFingerprint/v2"
"""The ``partialFingerprints`` key under which the occurrence fingerprint is written
(:func:`council.model.fingerprint.fingerprint`; ``/v1`` held the claim's before)."""

UNATTRIBUTED_RUN = "council (unattributed)"
"""The tool name of the run holding findings no listed participant filed."""

LEVELS: dict[str | None, str] = {
    "critical": "error",
    "medium": "warning",
    "minor": "note",
    None: "note",
}
"""SARIF ``level`` for each severity; a finding without severity is a note."""

LABEL_MEANINGS: dict[str, str] = {
    "praise": "Something done well, worth keeping.",
    "nitpick": "A trivial, preference-based remark.",
    "suggestion": "A proposed improvement, with what to change and why.",
    "issue": "A specific problem in the change.",
    "todo": "A small, necessary change before the work is done.",
    "question": "A possible concern the reviewer asks about.",
    "thought": "An idea the review brought up; not a request.",
    "chore": "A process step needed before the change can land.",
    "note": "Something the reader should notice; no action asked.",
}
"""The rule description of each Conventional Comments label (docs/harvest.md §1)."""


@dataclass(frozen=True)
class SarifLimits:
    """What a code host accepts in one SARIF file.

    ``file_bytes`` is measured on the UTF-8 text before compression. GitHub measures
    its 10 MB after gzip, so keeping the uncompressed text under it is always safe.
    """

    runs: int = 20
    """Runs per file."""
    results_per_run: int = 25_000
    """Results per run."""
    file_bytes: int = 10_000_000
    """Size of the file, in bytes of UTF-8."""


GITHUB_LIMITS = SarifLimits()
"""GitHub code scanning's hard limits ("SARIF results exceed hard limit", "file too large")."""

_SKELETON_MARGIN = 16_384
"""Bytes kept free for the cut notes when sizing results against ``file_bytes``."""

_RULE_INDEX_BYTES = len(',"ruleIndex":99999,')
"""What a result's ``ruleIndex`` and the comma after it add (at most, in practice)."""


def rule_id(finding: Finding) -> str:
    """The result's ``ruleId``: the analyzer rule opening the subject, else the label.

    Labels hold no digit, so an analyzer rule id never takes a label's name.
    """
    found = ANALYZER_RULE.match(finding.subject)
    return found.group(1) if found else finding.label


@dataclass
class _Run:
    name: str
    summary: ParticipantSummary | None
    entries: list[int] = field(default_factory=list)
    cut: int = 0
    notes: list[str] = field(default_factory=list)


def render_sarif(report: CouncilReport) -> str:
    """The report as a SARIF 2.1.0 document within GitHub's limits, newline-terminated.

    See :func:`render_sarif_with_cuts`, which also returns what was cut. Never raises.
    """
    return render_sarif_with_cuts(report)[0]


def render_sarif_with_cuts(
    report: CouncilReport, *, limits: SarifLimits = GITHUB_LIMITS
) -> tuple[str, list[str]]:
    """The SARIF text, and one sentence per cut made to fit ``limits`` (empty: no cut).

    Cuts happen in this order, each keeping the highest severity first, then filing
    order: whole runs beyond ``limits.runs`` (runs with no results go first), results
    beyond ``limits.results_per_run`` in a run, then results until the UTF-8 text fits
    in ``limits.file_bytes``. Each cut is also written into the document (the run's
    ``invocations[0].toolExecutionNotifications`` and ``properties.cut``; runs cut
    whole are named on the first run kept). Why: a file over GitHub's limits is
    refused whole, so a partial upload that says it is partial beats none. The output
    is deterministic: the same report gives the same text. Never raises.
    """
    findings = report.open_findings
    runs = _runs(report)
    messages: list[str] = []
    runs = _cut_runs(runs, findings, limits, messages)
    for run in runs:
        _cut_results(run, findings, limits, messages)
    seen = frozenset(report.seen)
    first_carried = len(report.findings)
    results = {
        i: _result(report, findings[i], seen, carried=i >= first_carried)
        for run in runs
        for i in run.entries
    }
    text = _text(report, runs, results)
    if len(text.encode("utf-8")) > limits.file_bytes:
        text = _cut_bytes(report, runs, results, limits, messages)
    return text, messages


def _owner(finding: Finding) -> str | None:
    origin = finding.origin
    if origin is None or origin.kind == "hand":
        return None
    return origin.participant


def _runs(report: CouncilReport) -> list[_Run]:
    runs: dict[str, _Run] = {}
    for summary in report.participants:
        runs.setdefault(summary.id, _Run(summary.id, summary))
    spare = UNATTRIBUTED_RUN
    while spare in runs:
        spare += "'"
    for index, finding in enumerate(report.open_findings):
        owner = _owner(finding)
        run = runs.get(owner) if owner is not None else None
        if run is None:
            run = runs.setdefault(spare, _Run(spare, None))
        run.entries.append(index)
    return list(runs.values())


def _rank(findings: tuple[Finding, ...], index: int) -> tuple[int, int]:
    return (-severity_rank(findings[index].severity), index)


def _cut_runs(
    runs: list[_Run], findings: tuple[Finding, ...], limits: SarifLimits, messages: list[str]
) -> list[_Run]:
    if len(runs) <= limits.runs:
        return runs

    def order(position: int) -> tuple[int, int, int, int]:
        entries = runs[position].entries
        if not entries:
            return (1, 0, 0, position)
        best = min(_rank(findings, i) for i in entries)
        return (0, best[0], best[1], position)

    ranked = sorted(range(len(runs)), key=order)
    kept = [runs[p] for p in sorted(ranked[: max(limits.runs, 0)])]
    dropped = [runs[p] for p in sorted(ranked[max(limits.runs, 0) :])]
    lost = sum(len(r.entries) for r in dropped)
    names = ", ".join(r.name for r in dropped)
    text = (
        f"{len(dropped)} of {len(runs)} runs cut ({names}) with their {lost} result(s): "
        f"the file may hold at most {limits.runs} runs; the runs with the most severe "
        "findings were kept"
    )
    messages.append(f"sarif: {text}")
    if kept:
        kept[0].notes.append(text)
    return kept


def _cut_results(
    run: _Run, findings: tuple[Finding, ...], limits: SarifLimits, messages: list[str]
) -> None:
    total = len(run.entries)
    if total <= limits.results_per_run:
        return
    keep = sorted(run.entries, key=lambda i: _rank(findings, i))[: max(limits.results_per_run, 0)]
    run.entries = sorted(keep)
    cut = total - len(run.entries)
    run.cut += cut
    text = (
        f"{cut} of {total} results cut: a run may hold at most {limits.results_per_run} "
        "results; the most severe were kept, then the earliest filed"
    )
    run.notes.append(text)
    messages.append(f"sarif: run {run.name!r}: {text}")


def _cut_bytes(
    report: CouncilReport,
    runs: list[_Run],
    results: dict[int, dict[str, Any]],
    limits: SarifLimits,
    messages: list[str],
) -> str:
    findings = report.open_findings
    sizes = {i: len(_dumps(r).encode("utf-8")) + _RULE_INDEX_BYTES for i, r in results.items()}
    skeleton = len(_text(report, [_Run(r.name, r.summary) for r in runs], {}).encode("utf-8"))
    budget = limits.file_bytes - skeleton - _SKELETON_MARGIN
    ranked = sorted(results, key=lambda i: _rank(findings, i))
    kept: set[int] = set()
    used = 0
    for index in ranked:
        if used + sizes[index] > budget:
            break
        kept.add(index)
        used += sizes[index]
    while True:
        text = _bytes_cut_text(report, runs, results, kept, limits)
        if len(text.encode("utf-8")) <= limits.file_bytes or not kept:
            break
        ranked = sorted(kept, key=lambda i: _rank(findings, i))
        kept = set(ranked[: len(ranked) * 9 // 10])
    messages.append(f"sarif: {_bytes_note(len(results) - len(kept), limits)}")
    return text


def _bytes_note(cut: int, limits: SarifLimits) -> str:
    return (
        f"{cut} more result(s) cut to keep the file under {limits.file_bytes} bytes; "
        "the most severe were kept, then the earliest filed"
    )


def _bytes_cut_text(
    report: CouncilReport,
    runs: list[_Run],
    results: dict[int, dict[str, Any]],
    kept: set[int],
    limits: SarifLimits,
) -> str:
    trimmed: list[_Run] = []
    for run in runs:
        entries = [i for i in run.entries if i in kept]
        cut = len(run.entries) - len(entries)
        notes = [*run.notes, _bytes_note(cut, limits)] if cut else run.notes
        trimmed.append(_Run(run.name, run.summary, entries, run.cut + cut, notes))
    return _text(report, trimmed, results)


def _dumps(value: object) -> str:
    return no_controls_json(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _text(report: CouncilReport, runs: list[_Run], results: dict[int, dict[str, Any]]) -> str:
    document = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [_run(report, run, results) for run in runs],
    }
    return _dumps(document) + "\n"


def _rules(report: CouncilReport, run: _Run) -> list[dict[str, Any]]:
    """The run's rules: the labels used (in label order), then analyzer rules (sorted)."""
    findings = report.open_findings
    ids = {rule_id(findings[i]) for i in run.entries}
    rules: list[dict[str, Any]] = [
        {
            "id": label,
            "name": label,
            "shortDescription": {"text": LABEL_MEANINGS[label]},
            "properties": {"tags": ["council", label]},
        }
        for label in LABELS
        if label in ids
    ]
    rules += [
        {
            "id": analyzer,
            "shortDescription": {"text": f"The analyzer's rule {analyzer}."},
            "properties": {"tags": ["council", "analyzer"]},
        }
        for analyzer in sorted(ids - set(LABELS))
    ]
    return rules


def _run(report: CouncilReport, run: _Run, results: dict[int, dict[str, Any]]) -> dict[str, Any]:
    rules = _rules(report, run)
    index = {rule["id"]: position for position, rule in enumerate(rules)}
    driver: dict[str, Any] = {"name": run.name, "rules": rules}
    summary = run.summary
    if summary is not None:
        engine = (
            summary.backend if summary.model is None else f"{summary.backend} / {summary.model}"
        )
        driver["fullName"] = f"council {summary.role} {summary.id} ({engine})"
    return {
        "tool": {"driver": driver},
        "invocations": [_invocation(run)],
        "results": [{**results[i], "ruleIndex": index[results[i]["ruleId"]]} for i in run.entries],
        "properties": _run_properties(report, run),
    }


def _invocation(run: _Run) -> dict[str, Any]:
    summary = run.summary
    notes: list[dict[str, Any]] = []
    if summary is not None and summary.state != "answered":
        level = "error" if summary.state == "failed" else "warning"
        notes.append(_notification(_state_text(summary), level))
    notes += [_notification(text, "warning", "council/cut") for text in run.notes]
    invocation: dict[str, Any] = {
        "executionSuccessful": summary is None or summary.state == "answered"
    }
    if notes:
        invocation["toolExecutionNotifications"] = notes
    return invocation


def _notification(text: str, level: str, rule: str = "council/participant") -> dict[str, Any]:
    return {"level": level, "message": {"text": no_controls(text)}, "descriptor": {"id": rule}}


def _state_text(summary: ParticipantSummary) -> str:
    if summary.state == "stopped":
        how = summary.stop.describe() if summary.stop is not None else "our clocks"
        return f"stopped by {how}; {summary.findings} finding(s) kept"
    if summary.state == "failed":
        return f"failed: {summary.failure or 'no reason given'}"
    return f"never answered (still {summary.state})"


def _run_properties(report: CouncilReport, run: _Run) -> dict[str, Any]:
    properties: dict[str, Any] = {"councilRun": report.run_id, "session": report.session}
    summary = run.summary
    if summary is not None:
        properties.update(
            participant=summary.id, role=summary.role, backend=summary.backend, state=summary.state
        )
        if summary.model is not None:
            properties["model"] = summary.model
    if run.cut or run.notes:
        properties["cut"] = {"results": run.cut, "notes": list(run.notes)}
    return properties


def _result(
    report: CouncilReport, finding: Finding, seen: frozenset[int], *, carried: bool = False
) -> dict[str, Any]:
    text = finding.subject
    if finding.discussion.strip():
        text += "\n\n" + finding.discussion
    others = tellings_plain(finding)
    if others:
        text += "\n\n" + others
    result: dict[str, Any] = {
        "ruleId": rule_id(finding),
        "level": LEVELS[finding.severity],
        "message": {"text": no_controls(text)},
    }
    location = _location(finding)
    if location is not None:
        result["locations"] = [location]
    result["partialFingerprints"] = {FINGERPRINT_KEY: fingerprint(finding)}
    # SARIF §3.27.24: against the session's earlier rounds, a finding seen or carried
    # from them is unchanged, any other is new.
    result["baselineState"] = "unchanged" if carried or finding.id in seen else "new"
    entry = report.suppressed.get(finding.id) if finding.id is not None else None
    if entry is not None:
        default = "dismissed" if entry.source == "dismissed" else "in the committed baseline"
        held: dict[str, Any] = {"source": entry.source}
        if entry.by_agreement is not None:
            held["matchedBy"] = "agreement"
            held["matches"] = canonical(entry.by_agreement)
        result["suppressions"] = [
            {
                "kind": "external",
                "status": "accepted",
                "justification": no_controls(entry.reason or default),
                "properties": held,
            }
        ]
    result["properties"] = _result_properties(report, finding, seen)
    rank = report.ranks.get(finding.id) if finding.id is not None else None
    if rank is not None:
        # SARIF §3.27.27: a result's rank, 0.0 (least) to 100.0 (most) relevant.
        result["rank"] = round(100 * rank.likelihood, 1)
        result["properties"]["likelihood"] = round(rank.likelihood, 4)
    if carried:
        result["properties"]["carried"] = True
    return result


def _location(finding: Finding) -> dict[str, Any] | None:
    anchor = finding.anchor
    if isinstance(anchor, ChangeAnchor) or not anchor.path:
        return None
    physical: dict[str, Any] = {"artifactLocation": {"uri": quote(anchor.path, safe="/")}}
    if not isinstance(anchor, FileAnchor):
        first = anchor.start_line if anchor.start_line is not None else anchor.line
        low, high = sorted((first, anchor.line))
        physical["region"] = {"startLine": low, "endLine": high}
    return {"physicalLocation": physical}


def _result_properties(
    report: CouncilReport, finding: Finding, seen: frozenset[int]
) -> dict[str, Any]:
    properties: dict[str, Any] = {"label": finding.label, "anchor": finding.anchor.kind}
    if finding.id is not None:
        properties["councilId"] = finding.id
    anchor = finding.anchor
    if not isinstance(anchor, ChangeAnchor):
        properties["path"] = anchor.path
        if not isinstance(anchor, FileAnchor) and anchor.side == "old":
            properties["side"] = "old"
    if finding.severity is not None:
        properties["severity"] = finding.severity
    if finding.confidence is not None:
        properties["confidence"] = finding.confidence
    owner = _owner(finding)
    raisers = list(finding.raised_by or ([owner] if owner is not None else []))
    properties["raisedBy"] = raisers
    properties.update(agreement_properties(finding))
    if finding.origin is not None:
        properties["origin"] = finding.origin.kind
    miss = report.off_diff.get(finding.id) if finding.id is not None else None
    if miss is not None:
        properties["offDiff"] = miss
    if finding.id is not None and finding.id in seen:
        properties["seen"] = True
    if finding.evidence:
        properties["evidence"] = [verdict_json(v) for v in finding.evidence]
    if finding.severity_note:
        properties["severityNote"] = finding.severity_note
    if finding.id is not None and finding.id in report.unagreed:
        properties["belowMinAgreement"] = report.min_agreement
    return properties
