"""``council consolidate [NAME=]FILE…``: merge findings from several sources into one
report, with no model and no Redis (docs/harvest.md §8; :mod:`council.sources`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from council.consolidation import consolidate, file_findings
from council.fingerprint import with_fingerprints
from council.gate import FAIL_ON, apply_min_agreement, exit_code, parse_fail_on
from council.report.model import CouncilReport, ParticipantSummary
from council.sources import SourceError, Told, carried_suppressions, read_source, with_reviewer
from workers.cli.context import UsageProblem
from workers.cli.outputs import FORMAT_OPTION, emit, json_option, output_option, plan_outputs

RUN_ID = "consolidate"
"""The run id of a consolidated report (no council run took place)."""


def _split(given: str) -> tuple[str | None, Path]:
    """``NAME=FILE`` → (NAME, FILE); ``FILE`` → (None, FILE). A ``=`` in a path that
    exists as given is part of the path."""
    name, sep, rest = given.partition("=")
    if not sep or not name or Path(given).exists() or "/" in name:
        return None, Path(given)
    return name, Path(rest)


@click.command("consolidate")
@click.argument("sources", nargs=-1, required=True, metavar="[NAME=]FILE...")
@json_option("Also write the consolidated JSON report (with each finding's members) here.")
@FORMAT_OPTION
@output_option("Write each --format into this directory (as council review does).")
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_ON),
    default="never",
    show_default=True,
    help="Exit 1 when a consolidated finding is at or above this severity.",
)
@click.option(
    "--min-agreement",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="K",
    help="A finding gates only when at least K of the sources raised it.",
)
def consolidate_command(
    sources: tuple[str, ...],
    json_out: Path | None,
    formats: tuple[str, ...],
    output: Path | None,
    fail_on: str,
    min_agreement: int,
) -> None:
    """Merge the findings of several sources into one report: one finding per problem,
    credited to every source that found it ("raised by hawk, owl (2 of 3)").

    Each FILE is a council JSON report (each participant a reviewer), a SARIF log (each
    run's tool a reviewer), a Harvest JSON (council harvest's output) or a reviewer's
    answer. The reviewer is NAME when given, else the participant or tool name, else the
    file's stem; the files' order is the roster order. A finding a source report
    dismissed, baselined or did not uphold stays so when no other source raised it. No
    model, no Redis. Exit 0 (or 1 with --fail-on), 2 when a file cannot be read.

    \b
    Examples:
      council consolidate hawk=hawk.json owl=owl.txt ruff.sarif
      council consolidate a/council.json b/council.json --json merged.json
    """
    outputs = plan_outputs(formats, output, json_out, None)
    told: list[Told] = []
    for given in sources:
        name, path = _split(given)
        try:
            text = path.read_bytes().decode("utf-8", errors="replace")
        except OSError as exc:
            raise UsageProblem(f"{given}: cannot be read ({exc.strerror})") from None
        try:
            told += read_source(text, path.stem or path.name, name)
        except SourceError as exc:
            raise UsageProblem(f"{given}: {exc}") from None
    per_reviewer = with_reviewer(told, RUN_ID)
    merged = file_findings(consolidate(per_reviewer), 1)
    kinds = {each.reviewer: each.kind for each in told}
    counts = {who: len(found) for who, found in per_reviewer}
    warnings = [
        w.model_copy(update={"at": f"{each.reviewer}: {w.at}"})
        for each in told
        for w in each.warnings
    ]
    report = CouncilReport(
        run_id=RUN_ID,
        session=RUN_ID,
        status="settled",
        participants=tuple(
            ParticipantSummary(
                id=who,
                backend=kinds[who],
                state="answered",
                findings=counts[who],
                warnings=sum(1 for w in warnings if w.at.startswith(f"{who}: ")),
            )
            for who, _ in per_reviewer
        ),
        findings=tuple(merged),
        warnings=tuple(warnings),
        notes=(f"consolidated from {len(sources)} file(s), {len(per_reviewer)} reviewer(s)",),
        suppressed=carried_suppressions(told, merged),
    )
    report = with_fingerprints(apply_min_agreement(report, min_agreement))
    emit(report, outputs, fail_on=fail_on, quorum=0, change=None)
    sys.exit(exit_code(report, parse_fail_on(fail_on), quorum=0))
