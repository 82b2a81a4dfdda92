"""Reading a SARIF 2.1.0 log into findings: the results on the change, and what was not read.

The ``sarif`` backend (:mod:`reviewers.programs.sarif`) runs an analyzer and hands its
stdout here; ``council consolidate`` reads a SARIF file here too. Each result located on
the change (by default on an added line, or in the hunk or Python statement around one:
:mod:`council.readers.sarif_scope`) becomes one entry of the answer contract
(docs/harvest.md §1); what was not read is counted (``outside_change_results``,
``unplaced_errors``, ``unreadable_results``, ``unanalyzed_files``). Both come back as one
typed :class:`SarifReading`. Pure: the statement spans of a file come in as a function.

Source: docs/harvest.md §1 and §7; SARIF 2.1.0 (OASIS) §3.14 run, §3.27 result, §3.4 and
§3.14.14 artifactLocation / originalUriBaseIds.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any
from urllib.parse import unquote, urlsplit

from council.readers.sarif_scope import (
    Spans,
    StatementLines,
    edit_windows,
    line_number,
    reach_edit,
    statement_edit,
    statement_lines,
    touches,
)
from council.roster.backend_options import DEFAULT_SARIF_SCOPE

SEVERITY_OF_LEVEL: dict[str, str | None] = {
    "error": "critical",
    "warning": "medium",
    "note": "minor",
    "none": None,
}
"""SARIF ``level`` → our severity. ``none`` (informational) gets no severity."""

DEFAULT_LEVEL = "warning"
"""SARIF's default level when neither the result nor its rule gives one (§3.27.10)."""


class SarifError(ValueError):
    """The analyzer's output is not a SARIF log we can read (the reason is the message)."""


@dataclass
class SarifReading:
    """What one SARIF log came to (:func:`read_sarif`, which fills it as it reads): its
    results on the change as answer-contract entries (docs/harvest.md §1), and the counts
    of those left out.

    Why typed: the backend and ``council consolidate`` read the counts from here; only
    the harvest reads the entries as an answer (:meth:`answer`), never a JSON text we
    wrote just to read it back.
    """

    findings: list[dict[str, Any]] = field(default_factory=list)
    """One entry per result kept (``location``, ``label``, ``subject``, ``discussion``,
    ``severity`` when it has one), in log order."""
    ignored_results: int = 0
    """Results on no changed file, or with no location at all."""
    outside_change_results: int = 0
    """Results on a changed file but away from its edit (``scope = "lines"``)."""
    outside_change_errors: int = 0
    """Those of :attr:`outside_change_results` at SARIF level ``error``."""
    unplaced_errors: int = 0
    """Results at level ``error`` naming no readable place (left out)."""
    unreadable_results: int = 0
    """Results that are not objects."""
    unanalyzed_files: list[str] = field(default_factory=list)
    """Changed files the log's invocations say were not analyzed (:func:`unanalyzed`)."""
    execution_failed: bool = False
    """An invocation says ``executionSuccessful: false``."""

    @property
    def unanalyzed(self) -> bool:
        """Whether the log says the analyzer did not analyze all of the change."""
        return bool(self.unanalyzed_files) or self.execution_failed

    def answer(self) -> str:
        """The reading as a backend's answer text: a JSON object of the entries under
        ``findings`` and every count beside them: what the harvest reads, and what the
        run archives and shows."""
        shown = {each.name: getattr(self, each.name) for each in fields(self)}
        return json.dumps(shown, ensure_ascii=False, indent=2)


def severities(levels: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """SARIF level → severity: :data:`SEVERITY_OF_LEVEL` with a roster's ``levels`` over it.

    A ``levels`` value of ``"none"`` means no severity (the result becomes a note).
    """
    table = dict(SEVERITY_OF_LEVEL)
    for level, severity in (levels or {}).items():
        table[level] = None if severity == "none" else severity
    return table


def normalize_path(path: str) -> str:
    """A repository-relative path in one spelling: no ``./``, no ``..``, no ``//``.

    A backslash is kept: on POSIX it is part of a file name (``src/evil\\x.py`` is one
    file, not ``src/evil/x.py``), and rewriting it let a change file an analyzer's
    result on a path that is not in the change (:class:`ChangedPaths` tries the
    slash form only as a fallback).
    """
    normal = posixpath.normpath(path) if path else path
    return "" if normal == "." else normal


def slash_form(path: str) -> str:
    """``path`` with every backslash read as a separator (a Windows analyzer's spelling)."""
    return normalize_path(path.replace("\\", "/"))


class ChangedPaths:
    """The change's new-side paths, matched against the paths a SARIF log names.

    Why exact first: a change names its files in git's POSIX spelling, where ``\\`` is
    an ordinary character; an analyzer on POSIX prints them so too (bandit percent-
    encodes it, ``src/evil%5Cx.py``). Only a path that names no changed file exactly is
    read with backslashes as separators, and then only when that names exactly one
    changed file (an analyzer run on Windows); two candidates are ambiguous and match
    none.
    """

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = {normalize_path(p) for p in paths}
        self._by_slash: dict[str, list[str]] = {}
        for path in sorted(self.paths):
            self._by_slash.setdefault(slash_form(path), []).append(path)

    def match(self, path: str) -> str | None:
        """The changed path a SARIF path names, or None when it names none."""
        if path in self.paths:
            return path
        candidates = self._by_slash.get(slash_form(path), [])
        return candidates[0] if len(candidates) == 1 else None


def _uri_path(uri: str) -> str:
    """A SARIF URI (``file:///abs``, ``src/a%20b.py``) as a file-system path."""
    if uri.startswith("file:"):
        return unquote(urlsplit(uri).path)
    return unquote(uri)


def _resolve_uri(uri: str, base_id: Any, bases: Mapping[str, Any], depth: int = 0) -> str:
    """Join a relative URI to its ``uriBaseId`` (recursively, as §3.14.14 allows).

    An undefined base (``%SRCROOT%`` with no ``originalUriBaseIds``) is taken as the
    analyzer's working directory, so the URI stays relative to the tree.
    """
    if uri.startswith(("file:", "/")) or not isinstance(base_id, str) or depth > 8:
        return uri
    base = bases.get(base_id)
    if not isinstance(base, Mapping) or not isinstance(base.get("uri"), str):
        return uri
    parent = _resolve_uri(base["uri"], base.get("uriBaseId"), bases, depth + 1)
    if parent and not parent.endswith("/"):
        parent += "/"
    return parent + uri


def _relative(path: str, roots: Sequence[str]) -> str:
    """``path`` relative to the first root it lies under; relative paths as they are."""
    if not path.startswith("/"):
        return normalize_path(path)
    normal = posixpath.normpath(path)
    for root in roots:
        prefix = root.rstrip("/") + "/"
        if normal.startswith(prefix):
            return normalize_path(normal[len(prefix) :])
    return normal


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


class _Run:
    """One SARIF run: its rules, artifacts and URI bases, for reading its results."""

    def __init__(self, run: Mapping[str, Any], roots: Sequence[str]) -> None:
        tool = run.get("tool")
        driver = tool.get("driver") if isinstance(tool, Mapping) else None
        rules = driver.get("rules") if isinstance(driver, Mapping) else None
        self.rules: list[Any] = rules if isinstance(rules, list) else []
        artifacts = run.get("artifacts")
        self.artifacts: list[Any] = artifacts if isinstance(artifacts, list) else []
        bases = run.get("originalUriBaseIds")
        self.bases: Mapping[str, Any] = bases if isinstance(bases, Mapping) else {}
        self.roots = roots

    def rule(self, result: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
        """The result's rule id and its rule object ({} when not described)."""
        given = result.get("rule")
        ref: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        rule_id = _text(result.get("ruleId")) or _text(ref.get("id"))
        index = result.get("ruleIndex", ref.get("index"))
        if isinstance(index, int) and 0 <= index < len(self.rules):
            found = self.rules[index]
            if isinstance(found, Mapping):
                return rule_id or _text(found.get("id")), found
        for found in self.rules:
            if isinstance(found, Mapping) and rule_id and found.get("id") == rule_id:
                return rule_id, found
        return rule_id, {}

    def _artifact(self, index: Any) -> Any:
        """The location of ``run.artifacts[index]``, or None."""
        if isinstance(index, int) and 0 <= index < len(self.artifacts):
            artifact = self.artifacts[index]
            return artifact.get("location") if isinstance(artifact, Mapping) else None
        return None

    def path(self, location: Any) -> tuple[str, Mapping[str, Any]] | None:
        """The tree-relative path of a location and its region, or None without one."""
        if not isinstance(location, Mapping):
            return None
        physical = location.get("physicalLocation")
        if not isinstance(physical, Mapping):
            return None
        artifact = physical.get("artifactLocation")
        if not isinstance(artifact, Mapping):
            return None
        uri, base_id = artifact.get("uri"), artifact.get("uriBaseId")
        index = artifact.get("index")
        listed = self._artifact(index) if not isinstance(uri, str) else None
        if isinstance(listed, Mapping):
            uri, base_id = listed.get("uri"), listed.get("uriBaseId", base_id)
        if not isinstance(uri, str) or not uri:
            return None
        path = _relative(_uri_path(_resolve_uri(uri, base_id, self.bases)), self.roots)
        region = physical.get("region")
        return path, region if isinstance(region, Mapping) else {}


def _message(result: Mapping[str, Any], rule: Mapping[str, Any]) -> str:
    """The result's message text (text, else markdown, else the rule's message string)."""
    message = result.get("message")
    if not isinstance(message, Mapping):
        return ""
    text = _text(message.get("text")) or _text(message.get("markdown"))
    strings = rule.get("messageStrings")
    if not text and isinstance(strings, Mapping) and isinstance(message.get("id"), str):
        template = strings.get(message["id"])
        text = _text(template.get("text")) if isinstance(template, Mapping) else ""
        arguments = message.get("arguments")
        for position, argument in enumerate(arguments if isinstance(arguments, list) else []):
            text = text.replace("{" + str(position) + "}", str(argument))
    return text.strip()


def _level(run: _Run, result: Mapping[str, Any]) -> str:
    """The result's SARIF level: its own, else its rule's default, else ``warning``."""
    rule = run.rule(result)[1]
    level = _text(result.get("level"))
    if not level:
        configuration = rule.get("defaultConfiguration")
        if isinstance(configuration, Mapping):
            level = _text(configuration.get("level"))
    return level or DEFAULT_LEVEL


def _entry(
    run: _Run,
    result: Mapping[str, Any],
    path: str | None,
    region: Mapping[str, Any],
    severity_of: Mapping[str, str | None],
) -> dict[str, Any]:
    """One answer-contract entry for a result located at ``path`` (None: about the whole
    change, for a result that names no place)."""
    rule_id, rule = run.rule(result)
    severity = severity_of.get(_level(run, result), "medium")
    text = _message(result, rule)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    named = bool(rule_id) and first.startswith(f"{rule_id}:")  # council's own SARIF
    subject = first if named else f"{rule_id}: {first}" if rule_id and first else rule_id or first
    discussion = text
    help_uri = _text(rule.get("helpUri"))
    if help_uri:
        discussion = f"{discussion}\n\n{help_uri}" if discussion else help_uri
    start = line_number(region.get("startLine"))
    location: dict[str, Any] = {"kind": "file", "file": path}
    if path is None:
        location = {"kind": "global"}
    elif start is not None:
        end = line_number(region.get("endLine"))
        location = {"kind": "line", "file": path, "start": start}
        location["end"] = end if end is not None and end >= start else start
    entry: dict[str, Any] = {
        "location": location,
        "label": "issue" if severity is not None else "note",
        "subject": subject or "an analyzer result without a message",
        "discussion": discussion,
    }
    if severity is not None:
        entry["severity"] = severity
    return entry


UNANALYZED_SHOWN = 20
"""Most unanalyzed changed files a note names (the rest are counted)."""


def unanalyzed(
    run: _Run, raw_run: Mapping[str, Any], changed: ChangedPaths
) -> tuple[list[str], bool]:
    """What one run's ``invocations`` say the analyzer did NOT analyze: the changed files
    an ``error``-level tool notification names (``toolExecutionNotifications`` or
    ``toolConfigurationNotifications``, SARIF §3.20.21–22: bandit reports a file it could
    not parse there), and whether an invocation says ``executionSuccessful: false``
    (§3.20.14). Why: such a file was never scanned, so the analyzer's silence on it is not
    a pass. Never raises; a malformed invocation is skipped."""
    files: list[str] = []
    failed = False
    invocations = raw_run.get("invocations")
    for invocation in invocations if isinstance(invocations, list) else ():
        if not isinstance(invocation, Mapping):
            continue
        failed = failed or invocation.get("executionSuccessful") is False
        for key in ("toolExecutionNotifications", "toolConfigurationNotifications"):
            notes = invocation.get(key)
            for note in notes if isinstance(notes, list) else ():
                if not isinstance(note, Mapping) or note.get("level") != "error":
                    continue
                locations = note.get("locations")
                for location in locations if isinstance(locations, list) else ():
                    place = run.path(location)
                    path = changed.match(place[0]) if place is not None else None
                    if path is not None and path not in files:
                        files.append(path)
    return files, failed


def unanalyzed_note(files: Sequence[str], failed: bool) -> str:
    """The reviewer's note for what :func:`unanalyzed` found (files JSON-quoted)."""
    if files:
        named = ", ".join(json.dumps(f, ensure_ascii=False) for f in files[:UNANALYZED_SHOWN])
        more = f" and {len(files) - UNANALYZED_SHOWN} more" if len(files) > UNANALYZED_SHOWN else ""
        return (
            f"the analyzer could not analyze {len(files)} changed file(s): {named}{more} "
            "(an error in its SARIF log's invocation notifications); its silence on them "
            "is not a pass"
        )
    return (
        "the analyzer's SARIF log says its execution did not succeed "
        "(invocations[].executionSuccessful is false); what it did not analyze is unknown"
    )


def outside_note(errors: int) -> str:
    """The reviewer's note for ``errors`` error-level results left out as off the change."""
    return (
        f"{errors} result(s) at SARIF level error lie on changed files but away from the "
        'lines the change edits, and were left out (scope = "lines"); scope = "files" '
        "files every result on a changed file"
    )


def unplaced_note(errors: int) -> str:
    """The reviewer's note for ``errors`` error-level results that name no place at all."""
    return (
        f"{errors} result(s) at SARIF level error name no file (no readable location), so "
        "none of them could be tied to the change, and they were left out; run the "
        "analyzer by hand to see them"
    )


def unreadable_note(results: int) -> str:
    """The note for ``results`` SARIF results that are not objects (nothing to read)."""
    return f"{results} result(s) of its SARIF log are not objects and could not be read"


def read_sarif(
    log: Any,
    changed_paths: Sequence[str],
    roots: Sequence[str] = (),
    *,
    changed_lines: Mapping[str, frozenset[int]] | None = None,
    pull_lines: Mapping[str, frozenset[int]] | None = None,
    scope: str = DEFAULT_SARIF_SCOPE,
    levels: Mapping[str, str] | None = None,
    statements: Callable[[str], Spans] | None = None,
    unplaced: bool = False,
) -> SarifReading:
    """Read a parsed SARIF log: its results on the change as entries, the rest counted.

    An analyzer run on the whole tree reports every old problem too, so only results on a
    changed file count (paths normalized by :class:`ChangedPaths`, an absolute one made
    relative to the first of ``roots`` it lies under). With ``scope="lines"`` a result must
    also touch the edit (:func:`council.readers.sarif_scope.touches`: ``changed_lines``, new
    path → added lines, empty when unknown; ``statements``, path → statement spans); one kept
    for the hunk or statement is filed at the nearest added line, unless its own lines
    are ones the pull request wrote (``pull_lines``, a ``--since-last`` round's whole
    change): it keeps them, as the round that filed it there did. ``levels`` overrides
    :func:`severities`; with ``unplaced`` (``council consolidate``) a result with no readable
    location is about the whole change. Counts: :class:`SarifReading`. Raises
    :class:`SarifError` when ``log`` is not a SARIF log (no ``runs`` list, wrong types).
    """
    if not isinstance(log, Mapping) or not isinstance(log.get("runs"), list):
        raise SarifError("it printed JSON that is not a SARIF log (no 'runs' list)")
    changed = ChangedPaths(changed_paths)
    added = {normalize_path(p): n for p, n in (changed_lines or {}).items()}
    if scope != "lines":
        added = {}
    windows = {path: edit_windows(lines) for path, lines in added.items()}
    pull = {normalize_path(p): n for p, n in (pull_lines or {}).items()} if added else {}
    lines_of: dict[str, StatementLines] = {}
    severity_of = severities(levels)
    reading = SarifReading()
    for number, raw_run in enumerate(log["runs"]):
        if not isinstance(raw_run, Mapping):
            raise SarifError(f"runs[{number}] of its SARIF log is not an object")
        results = raw_run.get("results")
        results = [] if results is None else results
        if not isinstance(results, list):
            raise SarifError(f"runs[{number}].results of its SARIF log is not a list")
        run = _Run(raw_run, roots)
        files, run_failed = unanalyzed(run, raw_run, changed)
        skipped = reading.unanalyzed_files
        skipped.extend(f for f in files if f not in skipped)
        reading.execution_failed = reading.execution_failed or run_failed
        for result in results:
            if not isinstance(result, Mapping):
                reading.unreadable_results += 1
                continue
            locations = result.get("locations")
            places = [run.path(loc) for loc in locations] if isinstance(locations, list) else []
            on_changed = [
                (path, p[1])
                for p in places
                if p is not None and (path := changed.match(p[0])) is not None
            ]
            if not on_changed:
                if not any(p is not None for p in places):
                    if unplaced:
                        reading.findings.append(_entry(run, result, None, {}, severity_of))
                        continue
                    reading.unplaced_errors += _level(run, result) == "error"
                reading.ignored_results += 1
                continue
            place = next((p for p in on_changed if touches(p, added)), None)
            near = None
            if place is None:
                near = next((p for p in on_changed if touches(p, added, windows)), None)
                place = near and (near[0], reach_edit(near[1], added[near[0]]))
            if place is None and statements is not None:
                for p in on_changed:
                    if p[0] not in lines_of:
                        lines_of[p[0]] = statement_lines(statements(p[0]))
                    edit = statement_edit(p, added, lines_of[p[0]])
                    if edit:
                        near, place = p, (p[0], reach_edit(p[1], edit))
                        break
            if near is not None and near[0] in pull and touches(near, pull):
                place, near = near, None  # the pull request wrote its lines: keep them
            if place is None:
                reading.outside_change_results += 1
                reading.outside_change_errors += _level(run, result) == "error"
                continue
            entry = _entry(run, result, *place, severity_of)
            if near is not None:
                marked = _entry(run, result, *near, severity_of)["location"]
                entry["discussion"] += (
                    f"\n\n(The analyzer marked lines {marked['start']}–{marked['end']}; the "
                    "finding reaches the nearest line the change wrote in the same hunk or "
                    "statement.)"
                )
            reading.findings.append(entry)
    return reading


def every_path(log: Any) -> list[str]:
    """Every path the results of a SARIF log name (normalized, first seen first): what to
    pass as ``changed_paths`` to :func:`read_sarif` to read every result, when
    there is no change to keep them to (``council consolidate``). Never raises."""
    if not isinstance(log, Mapping) or not isinstance(log.get("runs"), list):
        return []
    found: dict[str, None] = {}
    for raw_run in log["runs"]:
        if not isinstance(raw_run, Mapping) or not isinstance(raw_run.get("results"), list):
            continue
        run = _Run(raw_run, ())
        for result in raw_run["results"]:
            locations = result.get("locations") if isinstance(result, Mapping) else None
            for location in locations if isinstance(locations, list) else ():
                place = run.path(location)
                if place is not None:
                    found.setdefault(normalize_path(place[0]))
    return list(found)


def read_sarif_output(
    stdout: str,
    changed_paths: Sequence[str],
    roots: Sequence[str] = (),
    *,
    changed_lines: Mapping[str, frozenset[int]] | None = None,
    pull_lines: Mapping[str, frozenset[int]] | None = None,
    scope: str = DEFAULT_SARIF_SCOPE,
    levels: Mapping[str, str] | None = None,
    statements: Callable[[str], Spans] | None = None,
) -> SarifReading:
    """The reading of an analyzer's stdout (:func:`read_sarif` of the log it printed).

    Raises :class:`SarifError` for empty output, non-JSON output or a non-SARIF log, with
    a reason fit for a failure.
    """
    if not stdout.strip():
        raise SarifError("it printed nothing on stdout, where its SARIF log must go")
    try:
        log = json.loads(stdout)
    except json.JSONDecodeError as error:
        raise SarifError(
            f"its stdout is not JSON ({error.msg} at line {error.lineno} column "
            f"{error.colno}); the analyzer must print a SARIF log there"
        ) from error
    except RecursionError:  # a hostile log nested past Python's recursion limit
        raise SarifError(
            "its stdout is JSON nested too deeply to read; the analyzer must print a "
            "SARIF log there"
        ) from None
    return read_sarif(
        log,
        changed_paths,
        roots,
        changed_lines=changed_lines,
        pull_lines=pull_lines,
        scope=scope,
        levels=levels,
        statements=statements,
    )
