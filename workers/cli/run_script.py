"""``council run-script``: a command reviewer runs a script in the sandbox, and it counts.

Inside a reviewer program a council worker started (``$COUNCIL_JOURNAL`` set), the
script is handed to the worker (:mod:`reviewers.sandbox.script_desk`): the worker runs it
in a script sandbox and records its row for the running reviewer's attempt in Redis.
Outside one, with ``COUNCIL_REDIS_URL`` and ``COUNCIL_RUN`` / ``COUNCIL_PARTICIPANT`` /
``COUNCIL_ATTEMPT``, it runs the script itself (the current directory as the tree) and
appends the row to that attempt's key. With neither, it runs it and records nothing
(saying so on stderr).

Output: the reply a model's ``run_script`` gets (``--json``: the run as JSON) on stdout;
exit status the script's own when it exited, 124 when a time limit stopped it, 125 when
it could not run or was not run. Source: docs/evidence-and-asks.md §1.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from pathlib import Path

import click

from council.evidence import SCRIPT_MAX_BYTES
from council.roster.script_limits import LANGUAGES, ScriptLimits
from reviewers.sandbox.script_desk import (
    REPLY_SUFFIX,
    REQUEST_SUFFIX,
    TOOL,
    scripts_dir,
    write_whole,
)
from reviewers.sandbox.scripts import (
    ScriptRun,
    ScriptRunner,
    check_submission,
    reply_text,
)
from workers.cli.context import CliContext, UsageProblem

WAIT_MAX_S = 3600
"""Longest wait for the worker's reply, in seconds (the reviewer's own clocks end it
sooner)."""


@click.command("run-script")
@click.option("--language", required=True, type=click.Choice(list(LANGUAGES)))
@click.option(
    "--file",
    "file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="The program's file (read as UTF-8).",
)
@click.option("--program", metavar="TEXT", help="The program's text.")
@click.option("--json", "as_json", is_flag=True, help="Print the run as a JSON object.")
@click.option("--run", envvar="COUNCIL_RUN", help="The run (env COUNCIL_RUN).")
@click.option("--participant", envvar="COUNCIL_PARTICIPANT", help="env COUNCIL_PARTICIPANT")
@click.option("--attempt", envvar="COUNCIL_ATTEMPT", type=int, help="env COUNCIL_ATTEMPT")
@click.option(
    "--journal-file",
    envvar="COUNCIL_JOURNAL",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The worker's journal file (env COUNCIL_JOURNAL): its scripts/ directory is "
    "where the script is handed to the worker.",
)
@click.pass_obj
def run_script_command(
    cli: CliContext,
    language: str,
    file: Path | None,
    program: str | None,
    as_json: bool,
    run: str | None,
    participant: str | None,
    attempt: int | None,
    journal_file: Path | None,
) -> None:
    """Run a script once in the sandbox, recorded as evidence for the running reviewer.

    A finding that shows the exact program (byte for byte) is reported as "ran this
    turn"; a block nobody ran this way is "not run this turn". The program's own runs,
    outside this command, are never counted.

    \b
    Example (inside a command reviewer):
      council run-script --language python --program 'print(len("abc"))'
    """
    if (file is None) == (program is None):
        raise UsageProblem("give the program with exactly one of --file and --program")
    if file is not None:
        data = file.read_bytes()
        if len(data) > SCRIPT_MAX_BYTES:
            raise UsageProblem(f"--file {file} is over {SCRIPT_MAX_BYTES} bytes")
        program = data.decode("utf-8", errors="surrogateescape")
    assert program is not None  # one of the two was given
    checked = check_submission({"language": language, "program": program})
    if isinstance(checked, str):
        raise UsageProblem(checked)
    limits = ScriptLimits()
    if journal_file is not None and scripts_dir(journal_file).is_dir():
        reply = _ask_worker(scripts_dir(journal_file), language, program)
        ran = _from_json(reply)
        note = None if reply.get("recorded") else str(reply.get("not_recorded", "not recorded"))
    else:
        ran = ScriptRunner(Path.cwd(), limits).run(language, program)
        note = _record_by_hand(cli, ran, program, run, participant, attempt)
    if note is not None:
        click.echo(f"council run-script: the run was {note}", err=True)
    click.echo(
        json.dumps(ran.as_json(), ensure_ascii=False) if as_json else reply_text(ran, limits)
    )
    sys.exit(_status(ran))


def _ask_worker(folder: Path, language: str, program: str) -> dict[str, object]:
    """Hand the script to the worker's desk and wait for its reply."""
    name = uuid.uuid4().hex
    try:
        write_whole(folder / f"{name}{REQUEST_SUFFIX}", {"language": language, "program": program})
    except OSError as exc:
        raise UsageProblem(f"cannot hand the script to the worker: {exc.strerror}") from None
    reply_path = folder / f"{name}{REPLY_SUFFIX}"
    deadline = time.monotonic() + WAIT_MAX_S
    while time.monotonic() < deadline:
        try:
            value = json.loads(reply_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            time.sleep(0.02)
            continue
        reply_path.unlink(missing_ok=True)
        if isinstance(value, dict):
            return value
        break
    return {"outcome": "error", "reason": "the worker gave no reply", "recorded": False}


def _from_json(value: dict[str, object]) -> ScriptRun:
    outcome = value.get("outcome")
    if outcome not in ("ok", "failed", "error", "timeout", "not-run"):
        return ScriptRun(outcome="error", reason="the worker's reply was not readable")
    code = value.get("exit_code")
    duration = value.get("duration_ms")
    return ScriptRun(
        outcome=outcome,
        exit_code=code if isinstance(code, int) else None,
        output=str(value.get("output", "")),
        output_capped=bool(value.get("output_capped", False)),
        limit=str(value["limit"]) if isinstance(value.get("limit"), str) else None,
        reason=str(value.get("reason", "")),
        duration_ms=duration if isinstance(duration, int) else 0,
    )


def _record_by_hand(
    cli: CliContext,
    ran: ScriptRun,
    program: str,
    run: str | None,
    participant: str | None,
    attempt: int | None,
) -> str | None:
    """Append the row to the attempt's Redis key; None when recorded, else why not."""
    if not (cli.distributed and run and participant):
        return "not recorded: no worker's journal (COUNCIL_JOURNAL) nor COUNCIL_REDIS_URL"
    rt = cli.runtime()
    n = attempt or max(1, rt.journals.attempts(run, participant))
    dispatch = len(rt.scripts.read(run, participant, n).rows) + 1
    row = ran.row(f"{TOOL}-{dispatch}", TOOL, dispatch, program)
    stored = rt.scripts.append(run, participant, n, row)
    return None if stored == "Recorded." else stored


def _status(ran: ScriptRun) -> int:
    if ran.outcome == "timeout":
        return 124
    if ran.outcome in ("error", "not-run") or ran.exit_code is None:
        return 125
    return min(ran.exit_code, 255) if ran.exit_code >= 0 else 125
