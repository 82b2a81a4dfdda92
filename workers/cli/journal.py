"""``council record`` (a reviewer journals a finding) and ``council harvest`` (read one answer)."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import click

from council.harvest import fold_journal, harvest, read_journal
from council.harvest.record_call import reply, split_recorded
from council.model.findings import Read, canonical
from workers.cli.context import CliContext, UsageProblem


@click.command("record")
@click.option(
    "--json",
    "text",
    required=True,
    metavar="JSON",
    help="One finding as a JSON object (a list of them, or a JSON string of either).",
)
@click.option("--run", envvar="COUNCIL_RUN", help="The run (env COUNCIL_RUN, set by the worker).")
@click.option(
    "--participant",
    envvar="COUNCIL_PARTICIPANT",
    help="Who records (env COUNCIL_PARTICIPANT, set by the worker).",
)
@click.option(
    "--attempt",
    envvar="COUNCIL_ATTEMPT",
    type=int,
    help="The task attempt (env COUNCIL_ATTEMPT, set by the worker).",
)
@click.option(
    "--journal-file",
    envvar="COUNCIL_JOURNAL",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The JSONL journal the worker follows (env COUNCIL_JOURNAL); used when "
    "there is no COUNCIL_REDIS_URL.",
)
@click.pass_obj
def record_command(
    cli: CliContext,
    text: str,
    run: str | None,
    participant: str | None,
    attempt: int | None,
    journal_file: Path | None,
) -> None:
    """Append a finding to the running reviewer's journal, as soon as you are sure of it.

    Prints the one-sentence reply ("Recorded." …) on stderr, never stdout: a command
    reviewer's stdout is its answer, so calling this from one leaves the answer clean.
    Exit 0 recorded, 1 not recorded (keep the finding for the answer), 2 nothing to
    record. Run inside a reviewer started by a council worker, which sets COUNCIL_RUN,
    COUNCIL_PARTICIPANT and COUNCIL_JOURNAL.

    \b
    Example:
      council record --json '{"subject": "Token is logged", "label": "issue",
        "location": {"kind": "line", "file": "app.py", "start": 12}}'
    """
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageProblem(
            f"--json is not JSON ({exc}); pass one finding as a JSON object, "
            'e.g. \'{"subject": "...", "label": "issue"}\''
        ) from None
    recording = split_recorded(value)
    if not recording.entries:
        click.echo(reply(0, recording.rejected), err=True)
        raise SystemExit(2)
    if cli.distributed and run and participant:
        failed = _record_in_redis(cli, run, participant, attempt, recording.entries)
        if failed:
            click.echo(failed, err=True)
            raise SystemExit(1)
    elif journal_file is not None:
        try:
            with journal_file.open("a", encoding="utf-8") as out:
                for entry in recording.entries:
                    out.write(entry + "\n")
                out.flush()
                os.fsync(out.fileno())
        except OSError as exc:
            click.echo(reply(0, 0, f"cannot append to {journal_file}: {exc.strerror}"), err=True)
            raise SystemExit(1) from None
    else:
        raise UsageProblem(
            "council record runs inside a reviewer: it needs COUNCIL_RUN, COUNCIL_PARTICIPANT "
            "and COUNCIL_REDIS_URL, or COUNCIL_JOURNAL (the worker sets them)"
        )
    click.echo(reply(len(recording.entries), recording.rejected), err=True)


RECORD_OUTAGE_S = 60.0
"""Seconds ``council record`` waits for an unreachable Redis (a restart, a failover)
before it gives up and says the entry was not recorded (exit 1)."""


def _record_in_redis(
    cli: CliContext, run: str, participant: str, attempt: int | None, entries: Sequence[str]
) -> str | None:
    """Store ``entries`` in the participant's journal, waiting out a Redis outage for up
    to :data:`RECORD_OUTAGE_S`; None when all were recorded, else the first refusal
    (the run moved on, the participant was settled, a cap) or the outage's reply."""
    import redis

    from workers.execution.outage_retry import held_back, patiently

    until = time.monotonic() + RECORD_OUTAGE_S
    rt = cli.runtime(check=False)
    try:
        found = patiently("record", lambda: rt.runs.participant(run, participant), until=until)
        live = "judging" if found is not None and found.role == "judge" else "open"
        n = attempt or max(
            1, patiently("record", lambda: rt.journals.attempts(run, participant), until=until)
        )
        call = uuid.uuid4().hex[:12]  # each entry's id: a retried store is kept once
        for i, entry in enumerate(entries):

            def store(entry: str = entry, i: int = i) -> int:
                return rt.journals.store(
                    run, participant, n, entry, live=live, entry_id=f"record-{call}-{i}"
                )

            code = patiently("record", store, until=until)
            reply = rt.journals.reply(code, len(entry.encode("utf-8", errors="replace")))
            if reply != "Recorded.":
                return reply
    except redis.RedisError as exc:
        if not held_back(exc):
            raise
        return (
            f"Not recorded (Redis did not answer or refused writes for {RECORD_OUTAGE_S:g} s: "
            f"{type(exc).__name__}); keep it for your final answer."
        )
    return None


@click.command("harvest")
@click.argument("answer_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--recorded",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A JSONL journal (one entry per line) to fold in, as the worker does.",
)
@click.option("--witness", metavar="SHA", help="Stamp anchors with this commit (the pinned tree).")
def harvest_command(answer_file: Path, recorded: Path | None, witness: str | None) -> None:
    """Print the canonical Harvest JSON of one reviewer answer: findings, warnings, truncated.

    Shows why an answer yielded what it did: findings, warnings with codes, truncation.
    Any bytes are read (UTF-8 with replacement); exit 0 whenever the file could be read.

    \b
    Example:
      council harvest answer.txt --recorded journal.jsonl
    """
    answer = _read_text(answer_file, "ANSWER_FILE")
    read = Read(witness=witness) if witness else None
    result = harvest(answer, read)
    if recorded is not None:
        lines = [ln for ln in _read_bytes(recorded, "--recorded").split(b"\n") if ln.strip()]
        result = fold_journal(result, read_journal(lines), read)
    click.echo(json.dumps(canonical(result), indent=2, ensure_ascii=False))


def _read_bytes(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UsageProblem(f"{what} {path} cannot be read: {exc.strerror}") from None


def _read_text(path: Path, what: str) -> str:
    return _read_bytes(path, what).decode("utf-8", errors="replace")
