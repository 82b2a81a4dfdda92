"""The ``sarif`` backend: a static analyzer whose SARIF 2.1.0 log becomes findings.

The analyzer runs like a ``command`` reviewer (:mod:`reviewers.programs.process`: own
process group, backstop and idle clocks, cwd = the pinned tree) and prints a SARIF log on
stdout. Each result on the change (by default: on an added line, or in the hunk or Python
statement around one, :mod:`council.readers.sarif_scope`) becomes one entry of the answer
contract (docs/harvest.md §1). :class:`~council.readers.sarif.SarifReading` gives the
answer text, which the ordinary harvest reads and the run archives, and the counts for the
notes. Options: ``program``, ``args``, ``scope`` (``"lines"``, or ``"files"``: anywhere in
a changed file) and ``levels`` (SARIF level → severity, or ``"none"``: a note).

Source: docs/harvest.md §1 and §7, docs/architecture.md "Reports, the CLI and the gate"
(``unanalyzed``); SARIF 2.1.0 (OASIS) §3.14 run, §3.27 result, §3.4 and
§3.14.14 artifactLocation / originalUriBaseIds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from council.errors import RosterError
from council.model.backend_result import ReviewResult
from council.readers.sarif import (
    SarifError,
    outside_note,
    read_sarif_output,
    unanalyzed_note,
    unplaced_note,
    unreadable_note,
)
from council.roster.backend_options import DEFAULT_SARIF_SCOPE, check_sarif_options, where_of
from council.round.outcome import JOURNAL_CUT
from reviewers.base import ReviewRequest
from reviewers.programs.process import run_program
from reviewers.programs.statements import python_statements


def check_options(options: Mapping[str, Any], where: str) -> None:
    """Refuse bad options of a ``sarif`` reviewer (``program``, ``args``, ``scope``, ``levels``).

    Raises :class:`RosterError` naming ``{where}.{option}``.
    """
    check_sarif_options(options, where)


class SarifReviewer:
    """Runs a SARIF-printing analyzer on the pinned tree; its results become findings.

    Why a separate backend and not a ``command`` wrapper: analyzers already speak SARIF,
    and converting it here keeps every analyzer's findings on the change only (its added
    lines, or its files with ``scope = "files"``), in the answer contract, with no script
    per tool. The exit status is not read when a
    SARIF log came out (analyzers exit 1 when they found something). Failures
    (verbatim): the program cannot start; output empty, not JSON or not SARIF (with the
    exit status and stderr tail when it exited non-zero). A stop keeps whatever complete
    log was printed (usually none: the answer is then empty) and the journal.
    """

    def review(self, request: ReviewRequest) -> ReviewResult:
        """Run the analyzer in ``request.workdir`` under the clocks (ms) and convert."""
        options = request.participant.options
        try:
            check_options(options, where_of(request.participant))
        except RosterError as error:
            return ReviewResult(failure=str(error))
        ran = run_program(request, [str(a) for a in options.get("args", [])])
        if ran.failure is not None:
            return ReviewResult(failure=ran.failure, duration_ms=ran.duration_ms)
        workdir = request.workdir if request.workdir is not None else Path.cwd()
        roots = [str(workdir.absolute()), str(workdir.resolve())]
        outcome = ReviewResult(
            duration_ms=ran.duration_ms, journal_entries=ran.journal_entries, notes=ran.notes
        )
        try:
            read = read_sarif_output(
                ran.answer,
                request.changed_paths,
                roots,
                changed_lines=request.changed_lines,
                pull_lines=request.pull_lines,
                scope=str(options.get("scope", DEFAULT_SARIF_SCOPE)),
                levels=options.get("levels"),
                statements=python_statements(workdir),
            )
        except SarifError as error:
            if ran.stop is not None:
                return replace(outcome, stop=ran.stop)
            reason = f"the analyzer's output could not be read: {error}"
            if ran.stdout_capped:
                reason += " (its stdout was cut at the size cap)"
            if ran.status != 0:
                reason += f"; the program {ran.exit_reason()}"
            return replace(outcome, failure=reason)
        notes = list(outcome.notes)
        if read.outside_change_errors:
            notes.append(outside_note(read.outside_change_errors))
        if read.unplaced_errors:
            notes.append(unplaced_note(read.unplaced_errors))
        if read.unreadable_results:
            notes.append(unreadable_note(read.unreadable_results))
        if read.unanalyzed:
            notes.append(unanalyzed_note(read.unanalyzed_files, read.execution_failed))
        return replace(
            outcome,
            answer=read.answer(),
            stop=ran.stop,
            notes=tuple(notes),
            broke_off=(
                "unanalyzed"
                if read.unanalyzed
                else "cut-off"
                if ran.stdout_capped
                else JOURNAL_CUT
                if ran.journal_lost
                else None
            ),
        )
