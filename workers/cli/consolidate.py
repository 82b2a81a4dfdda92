"""``council consolidate [NAME=]FILE…``: merge findings from several sources into one
report, with no model and no Redis (docs/harvest.md §8; :mod:`council.readers.report_files`)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import click

from council.model.fingerprint import with_fingerprints
from council.model.gate_choices import DEFAULT_FAIL_ON, FAIL_ON
from council.ranking.apply import ranked
from council.ranking.records import ID_ONLY, TrackRecord
from council.readers.report_files import (
    SOURCE_MAX_BYTES,
    SourceError,
    Told,
    about_notes,
    file_sources,
    name_clashes,
    read_source,
)
from council.round.gate import (
    apply_min_agreement,
    exit_code,
    min_agreement_problem,
    parse_fail_on,
)
from workers.cli.context import UsageProblem
from workers.cli.options import FORMAT_OPTION, json_option, output_option
from workers.cli.outputs import emit, plan_outputs

RUN_ID = "consolidate"
"""The run id of a consolidated report (no council run took place)."""


def _records(cli: object, state: Path | None) -> dict[str, TrackRecord]:
    """Each participant's id-only history (sources name no identity); {} without a
    store to read: every finding then ranks on priors alone."""
    from workers.cli.context import CliContext
    from workers.cli.ranking.outcomes import record_store

    if state is None and not (isinstance(cli, CliContext) and cli.distributed):
        return {}
    assert isinstance(cli, CliContext)
    held = record_store(cli, state).all()
    return {who: record for (who, ident), record in held.items() if ident == ID_ONLY}


def _split(given: str) -> tuple[str | None, Path]:
    """``NAME=FILE`` → (NAME, FILE); ``FILE`` → (None, FILE). A ``=`` in a path that
    exists as given is part of the path."""
    name, sep, rest = given.partition("=")
    if not sep or not name or Path(given).exists() or "/" in name:
        return None, Path(given)
    return name, Path(rest)


def _read(given: str, path: Path) -> str:
    """The text of a source file: a regular file (a FIFO or a device would block or never
    end), at most :data:`SOURCE_MAX_BYTES` bytes, decoded as UTF-8 (bad bytes replaced).
    Raises UsageProblem naming the file and what is wrong."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise UsageProblem(f"{given}: cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise UsageProblem(f"{given}: is not a regular file; give a file's path")
        data = file.read(SOURCE_MAX_BYTES + 1)
    if len(data) > SOURCE_MAX_BYTES:
        raise UsageProblem(
            f"{given}: is over {SOURCE_MAX_BYTES // (1024 * 1024)} MiB, the most read of one "
            "source; split it (one SARIF run or one reviewer's answer a file)"
        )
    return data.decode("utf-8", errors="replace")


@click.command("consolidate")
@click.argument("sources", nargs=-1, required=True, metavar="[NAME=]FILE...")
@json_option("Also write the consolidated JSON report (with each finding's members) here.")
@FORMAT_OPTION
@output_option("Write each --format into this directory (as council review does).")
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_ON),
    default=DEFAULT_FAIL_ON,
    show_default=True,
    help="Exit 1 when a consolidated finding is at or above this severity (as council review).",
)
@click.option(
    "--min-agreement",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="K",
    help="A finding gates only when at least K of the sources raised it.",
)
@click.option(
    "--state",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Rank findings with the track records kept here (embedded state file; with "
    "COUNCIL_REDIS_URL, Redis's). Without it, findings are ranked with priors only.",
)
@click.pass_obj
def consolidate_command(
    cli: object,
    sources: tuple[str, ...],
    json_out: Path | None,
    formats: tuple[str, ...],
    output: Path | None,
    fail_on: str,
    min_agreement: int,
    state: Path | None,
) -> None:
    """Merge the findings of several sources into one report: one finding per problem,
    credited to every source that found it ("raised by hawk, owl (2 of 3)").

    Each FILE is a council JSON report (each participant a reviewer), a SARIF log (each
    run's tool a reviewer), a Harvest JSON (council harvest's output) or a reviewer's
    answer. The reviewer is NAME when given, else the participant or tool name, else the
    file's stem (two files of one stem need a NAME each); the files' order is the roster
    order. A finding a source report dismissed, baselined or did not uphold stays so when
    no other source raised it. No model, no Redis.

    Each file: a regular file of at most 64 MiB; at most 10,000 findings
    of it are read. Exit 0 passed, 1 a finding at or above --fail-on, 2 a file that
    cannot be read (or a usage error), 3 incomplete: some source was not read whole (an
    answer with no findings list, cut off, over the cap; a SARIF run that says it did not
    analyze everything; a report's reviewer that was not heard in full).

    \b
    Examples:
      council consolidate hawk=hawk.json owl=owl.txt ruff.sarif
      council consolidate a/council.json b/council.json --json merged.json
    """
    outputs = plan_outputs(formats, output, json_out, None)
    read: list[tuple[str, list[Told]]] = []
    files: dict[str, str] = {}
    for given in sources:
        name, path = _split(given)
        key = os.path.realpath(path)
        if key in files:
            raise UsageProblem(f"{given}: is given twice (also as {files[key]}); give it once")
        files[key] = given
        try:
            read.append((given, read_source(_read(given, path), path.stem or path.name, name)))
        except SourceError as exc:
            raise UsageProblem(f"{given}: {exc}") from None
    clashes = name_clashes(read)
    if clashes:
        raise UsageProblem("; ".join(clashes))
    told = [each for _, listed in read for each in listed]
    reviewers = len(dict.fromkeys(each.reviewer for each in told))
    if problem := min_agreement_problem(min_agreement, reviewers, "the sources give", "sources"):
        raise UsageProblem(problem)
    report = file_sources(told, RUN_ID, len(sources))
    if noted := about_notes(told):
        report = report.model_copy(update={"notes": (*report.notes, *noted)})
    report = report.gated(fail_on=parse_fail_on(fail_on), min_agreement=min_agreement)
    report = with_fingerprints(apply_min_agreement(report))
    report = ranked(report, _records(cli, state))
    emit(report, outputs, change=None)
    sys.exit(exit_code(report))
