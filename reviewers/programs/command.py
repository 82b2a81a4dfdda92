"""The ``command`` backend: any program that reads the prompt and prints its answer.

Prompt on stdin, answer on stdout (the answer contract of docs/harvest.md §1), findings
journalled as it goes to the JSONL file named by ``COUNCIL_JOURNAL``. Its options are
``program`` (a name on PATH, an absolute path, or roster-relative) and ``args``. The
process handling is :mod:`reviewers.programs.process` (own process group:
:mod:`~reviewers.programs.process_group`; clocks and journal following:
:mod:`~reviewers.programs.supervision`).

Source: docs/harvest.md §1 and §7, docs/identity-and-clocks.md "Clocks".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from council.errors import RosterError
from council.model.backend_result import ReviewResult, decode_answer
from council.roster.backend_options import check_program_options, where_of
from council.round.outcome import JOURNAL_CUT
from reviewers.base import ReviewRequest
from reviewers.programs.process import run_program


def check_options(options: Mapping[str, Any], where: str) -> None:
    """Refuse bad options of a ``command`` reviewer (``program``, ``args``).

    Raises :class:`RosterError` naming ``{where}.{option}``.
    """
    check_program_options(options, where, "command")


class CommandReviewer:
    """Runs the reviewer's program once per review; its stdout is the answer.

    Why the exit status rarely matters: a reviewer that printed its answer and then
    exited 1 (a linter that exits non-zero when it found something) still answered, so
    a non-zero exit with something on stdout is an answer, with a note. Only a non-zero
    exit with nothing on stdout is a failure ("exited with status 3: <stderr tail>"). A
    program that cannot be started is a failure naming the program and the fix. A stop
    (``wall-clock``, ``idle``, ``cancelled``, ``disk``) keeps the partial stdout and the
    journal. The soft deadline does not apply to a plain program (it cannot be asked to
    wrap up).
    Never raises for a reviewer fault.
    """

    def review(self, request: ReviewRequest) -> ReviewResult:
        """Run the program on ``request.prompt`` under the participant's clocks (ms)."""
        options = request.participant.options
        try:
            check_options(options, where_of(request.participant))
        except RosterError as error:
            return ReviewResult(failure=str(error))
        ran = run_program(request, [str(a) for a in options.get("args", [])])
        if ran.failure is not None:
            return ReviewResult(failure=ran.failure, duration_ms=ran.duration_ms)
        answer, decoding = decode_answer(ran.stdout)
        notes = (*decoding, *ran.notes)
        if ran.stop is None and ran.status != 0:
            if not answer.strip():
                return ReviewResult(
                    failure=ran.exit_reason(),
                    duration_ms=ran.duration_ms,
                    journal_entries=ran.journal_entries,
                    notes=notes,
                )
            notes = (f"the program {ran.exit_reason()}; its stdout was read as the answer",)
            notes += (*decoding, *ran.notes)
        ended_badly = ran.stop is None and ran.status != 0
        cut = (
            "cut-off"  # the middle of stdout was not read
            if ran.stdout_capped
            else JOURNAL_CUT  # a journal line over its cap, or refused by the store
            if ran.journal_lost
            else None
        )
        return ReviewResult(
            broke_off="exit-status" if ended_badly else cut,
            answer=answer,
            stop=ran.stop,
            duration_ms=ran.duration_ms,
            journal_entries=ran.journal_entries,
            notes=notes,
            paused=ran.asked,
        )
