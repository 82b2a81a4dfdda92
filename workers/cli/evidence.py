"""``council evidence``: check which blocks of an answer are programs that really ran.

Reads an answer and the turn's script rows from files, calls the matcher
(:func:`council.evidence.match_evidence`) and prints its verdicts as JSON. The rows
file is the shape of the shared evidence cases: a JSON list of rows, each with ``turn``
(``current`` rows are compared, ``earlier`` ones only counted).

Source: docs/evidence-and-asks.md §1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from council.evidence import ScriptRow, TurnSubmissions, evidence_json, match_evidence
from workers.cli.context import UsageProblem

TURNS = ("current", "earlier")
"""The values of a row's ``turn``."""

ROW_FIELDS = ("tool_call_id", "tool", "dispatch", "outcome", "exit_code", "text", "turn")
"""The keys a row of the rows file may have (``exit_code`` and ``text`` optional)."""

ROW_EXAMPLE = (
    '{"tool_call_id": "call_01", "tool": "run_script", "dispatch": 1, "outcome": "ok", '
    '"exit_code": 0, "text": "make test", "turn": "current"}'
)
"""One row as the rows file writes it, quoted by the error messages."""


@click.command("evidence")
@click.argument("answer", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--rows",
    "rows_file",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="ROWS.json",
    help="The script-tool calls: a JSON list of rows, each with tool_call_id, tool, "
    "dispatch, outcome, exit_code?, text?, and turn (current or earlier).",
)
def evidence_command(answer: Path, rows_file: Path) -> None:
    """Print which fenced blocks of ANSWER are programs a script-tool call of this turn ran.

    ANSWER is a reviewer's answer, or a finding's discussion (UTF-8; its bytes are
    compared as they are: CR LF stays CR LF). Each fenced block (``` or ~~~, CommonMark
    fences, at most 64 read) gets a verdict: the label of the call that submitted
    exactly that program this turn (ok, failed, error, timeout, not-run; the latest call
    by dispatch, the others counted in also_matches), or unmatched with a reason:
    no-submission-this-turn (nothing this turn submitted these exact bytes: near misses
    and earlier turns' runs do not count), over-size (over 64 KiB, never compared) or
    kept-out (a diff or suggestion block: a proposed change, not a run).

    \b
    Prints one JSON object:
      {"blocks": [{"block": 1, "label": "ok", "tool_call_id": "call_01", "tool":
        "run_script", "dispatch": 1, "also_matches": 0, "exit_code": 0}, ...],
       "regions_dropped": 0, "earlier_turn_rows": 0,
       "prose": "the answer without its matched blocks"}
    Exit 0 whatever the verdicts; 2 when a file cannot be read or a row is malformed.

    A row's text is the program exactly as submitted (absent: the row cannot match) and
    its exit_code must fit its outcome: ok 0 or none, failed non-zero, error and
    not-run none, timeout any or none. A call listed twice keeps its last row.

    \b
    Example:
      echo '[{"tool_call_id": "call_01", "tool": "run_script", "dispatch": 1,
              "outcome": "ok", "exit_code": 0, "text": "make test", "turn": "current"}]' > rows.json
      council evidence answer.md --rows rows.json
    """
    text = _read_utf8(answer, "ANSWER")
    turn = _turn(_rows(rows_file))
    evidence = match_evidence(text, turn)
    click.echo(json.dumps(evidence_json(evidence), indent=2, ensure_ascii=False))


def _read_utf8(path: Path, what: str) -> str:
    """The file's text, exactly (no newline translation); exit 2 when unreadable or not
    UTF-8 (a replaced byte could make a block equal a program it is not)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageProblem(f"{what} {path} cannot be read: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageProblem(
            f"{what} {path} is not UTF-8 (byte {exc.start} is {data[exc.start]:#04x}): "
            "blocks are compared byte for byte, so save the file as UTF-8"
        ) from None


def _rows(path: Path) -> list[Any]:
    """The decoded rows file; exit 2 unless it is a JSON list."""
    try:
        value = json.loads(_read_utf8(path, "--rows"))
    except ValueError as exc:
        raise UsageProblem(
            f"--rows {path} is not JSON ({exc}); write a JSON list of rows, e.g. [{ROW_EXAMPLE}]"
        ) from None
    if not isinstance(value, list):
        raise UsageProblem(
            f"--rows {path} holds a JSON {_kind(value)}, not a list: write a JSON list of "
            f"rows (one per script-tool call, [] for none), e.g. [{ROW_EXAMPLE}]"
        )
    return value


def _turn(rows: list[Any]) -> TurnSubmissions:
    """The rows as one turn's submissions; exit 2 naming the first malformed row."""
    current: list[ScriptRow] = []
    earlier: list[ScriptRow] = []
    for index, row in enumerate(rows):
        where = f"--rows: rows[{index}]"
        if not isinstance(row, dict):
            raise UsageProblem(
                f"{where} is a JSON {_kind(row)}: each row is an object, e.g. {ROW_EXAMPLE}"
            )
        turn = row.get("turn")
        if turn not in TURNS:
            said = "has no turn" if "turn" not in row else f"has turn {json.dumps(turn)}"
            raise UsageProblem(
                f'{where} {said}: give each row "turn": "current" (compared) or "earlier" '
                "(an earlier turn's call: only counted)"
            )
        try:
            parsed = ScriptRow.model_validate({k: v for k, v in row.items() if k != "turn"})
        except ValidationError as exc:
            raise UsageProblem(f"{where}{_problem(exc)}") from None
        (current if turn == "current" else earlier).append(parsed)
    return TurnSubmissions.of(current, earlier)


def _problem(exc: ValidationError) -> str:
    """The first problem of a row, in words, with the way to fix it."""
    error = exc.errors()[0]
    field = ".".join(str(part) for part in error["loc"])
    kind = error["type"]
    if kind == "missing":
        return f" has no {field}: every row needs tool_call_id, tool, dispatch and outcome"
    if kind == "extra_forbidden":
        return f" has an unknown field {field!r}: a row's fields are {', '.join(ROW_FIELDS)}"
    message = str(error["msg"]).removeprefix("Value error, ")
    if not field:  # the exit-code rule, checked across fields
        return f" is inconsistent: {message}"
    hints = {
        "dispatch": "a whole number from 1 (the call's position in the turn)",
        "outcome": "one of ok, failed, error, timeout, not-run",
        "exit_code": "a whole number, or absent when the runner reported none",
        "text": "the program as submitted, a string (absent when not kept)",
        "tool_call_id": "a non-empty string",
        "tool": "a non-empty string",
    }
    got = _kind(error["input"])
    return f".{field}: {message} (got a JSON {got}); give {hints.get(field, 'what --help says')}"


def _kind(value: object) -> str:
    """A JSON value's kind in words (object, list, string, number, true/false, null)."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"
