"""``council dismiss`` and ``council baseline``: false positives, accepted and recorded.

Two ways to stop a finding from gating and posting while keeping it listed:

* ``council dismiss FINGERPRINT --reason …`` — a person's decision in one session (one
  pull request), kept in the session (Redis, or the embedded state file). It applies
  from the next round on, and wins over the baseline (the more recent decision).
* ``council baseline`` — write ``.council-baseline.json`` from the session's latest
  completed run (or a JSON report); committed to the base branch, a review reads it
  from the BASE ref (trusted, like the roster).

Both are decisions about an occurrence, applied by :mod:`council.session.decisions`.
Source: issue "CI outputs that forges accept"; :mod:`council.session.baseline`;
docs/identity-and-clocks.md "Occurrences".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from council.errors import ConfigurationError
from council.model.findings import Finding, LineAnchor
from council.model.fingerprint import claim, fingerprint
from council.model.participant import PROGRAM_BACKENDS
from council.model.report import CouncilReport
from council.ranking.live import as_records
from council.ranking.records import outcome_counts, raisers_of
from council.rendering import read_json
from council.rendering.jsonreport import UnreadableReport
from council.session.baseline import (
    BASELINE_FILE,
    Baseline,
    UnreadableBaseline,
    read_baseline,
)
from council.session.baseline import write_baseline as baseline_text
from council.session.decisions import suppress
from workers.app.clock import now_ms
from workers.cli.context import CliContext, UsageProblem, session_store
from workers.git.repository import Repository
from workers.stores.sessions import SessionStore

_PRINT = re.compile(r"([0-9a-f]{64})(?::\d+)?")
"""A content fingerprint, with GitLab's occurrence suffix ``:n`` allowed (and dropped)."""

FC = TypeVar("FC", bound=Callable[..., Any])

_SESSION_OPTIONS = (
    click.option("--session", help="Session key (default: the repository and the head branch)."),
    click.option(
        "--repo",
        type=click.Path(path_type=Path, file_okay=False),
        default=Path("."),
        show_default=True,
        help="The repository whose default session key is used when --session is not given.",
    ),
    click.option("--head", default="HEAD", show_default=True, help="The branch of the session."),
    click.option(
        "--state",
        type=click.Path(path_type=Path, dir_okay=False),
        help="Embedded mode: the file sessions are kept in (default: the cache directory).",
    ),
)


def _session_options(command: FC) -> FC:
    """The options naming a session: --session, or --repo and --head; --state."""
    for option in reversed(_SESSION_OPTIONS):
        command = option(command)
    return command


@click.command("dismiss")
@click.argument("finding")
@click.option("--reason", required=True, help="Why it is not to be acted on (shown in reports).")
@_session_options
@click.pass_obj
def dismiss_command(
    cli: CliContext,
    finding: str,
    reason: str,
    session: str | None,
    repo: Path,
    head: str,
    state: Path | None,
) -> None:
    """Dismiss a finding in a session: listed from the next round on, never gating,
    never posted.

    FINDING is its fingerprint (64 hex digits, as in the JSON report's fingerprints, the
    SARIF partialFingerprints or the Code Quality fingerprint) or its id in the session
    (`id 12` in the report). The dismissal covers that occurrence (the code it flagged,
    wherever it moves), never another place the same rule is raised.

    \b
    Example:
      council dismiss 12 --reason "the input is validated upstream" --session pr-42
    """
    if not reason.strip():
        raise UsageProblem("--reason must say why (it is shown in every later report)")
    key = session_key(session, repo, head)
    with session_store(cli, state, save=True, session=key) as store:
        value, found = _resolve(store, key, finding)
        ledger = store.ledger(key)
        raisers = raisers_of(found) if found is not None else ()
        counts = outcome_counts("dismissed", raisers, None)
        records = as_records(counts, {who: ledger.get(who) for who in raisers})
        added = store.dismiss(key, value, reason.strip(), now_ms(), finding=found, records=records)
        reported = value in store.fingerprints(key)
    what = f"finding {found.id} ({found.subject!r})" if found else f"fingerprint {value[:12]}…"
    verb = "dismissed" if added else "dismissed again (reason replaced)"
    click.echo(f"{verb} {what} in session {key!r}: listed, never gating, never posted")
    anchor = found.anchor if found is not None else None
    if isinstance(anchor, LineAnchor) and anchor.side == "new" and anchor.code is None:
        click.echo(
            f"council: warning: the code of {what} was not read when it was filed (its "
            "file is over 4 MiB, or the head tree could not be read): at or above the "
            "gate's --fail-on, no decision covers it while the pull request edits its file",
            err=True,
        )
    if found is None and not reported:
        click.echo(
            "council: warning: no completed round of this session reported this fingerprint "
            "yet; the dismissal applies when one does",
            err=True,
        )


@click.command("baseline")
@click.option(
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path(BASELINE_FILE),
    show_default=True,
    help="The baseline file to write (merged with it when it exists).",
)
@click.option(
    "--from-json",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Accept the findings of this JSON report instead of the session's latest run.",
)
@click.option(
    "--reason",
    default="accepted when the baseline was written",
    show_default=True,
    help="The reason recorded for the new entries; a finding dismissed in the session "
    "(or in the report) keeps its dismissal's reason.",
)
@_session_options
@click.pass_obj
def baseline_command(
    cli: CliContext,
    output: Path,
    from_json: Path | None,
    reason: str,
    session: str | None,
    repo: Path,
    head: str,
    state: Path | None,
) -> None:
    """Write the baseline (.council-baseline.json) from the findings still open after the
    latest completed run of the session (its own and those it carried), or from a JSON
    report (its findings and carried ones): one entry per occurrence (the code each
    flagged, wherever it moves; never another place of the same rule). Entries already
    in the file keep their reason, and a finding dismissed in the session keeps the
    reason it was dismissed for.

    Commit the file to the base branch: `council review` reads it from the BASE ref.

    \b
    Examples:
      council baseline --session pr-42
      council baseline --from-json council-out/council.json --output .council-baseline.json
    """
    findings, reasons, programs = (
        _report_findings(from_json) if from_json else _latest_run(cli, session, repo, head, state)
    )
    existing = _existing(output)
    text = baseline_text(findings, reason, existing=existing, reasons=reasons, programs=programs)
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageProblem(f"--output {output} cannot be written ({exc.strerror})") from None
    before = len(existing.entries) if existing else 0
    after = len(read_baseline(text).entries)
    click.echo(
        f"wrote {output}: {after} entr{'y' if after == 1 else 'ies'} ({after - before} new); "
        "commit it to the base branch, where reviews read it"
    )


def _report_findings(path: Path) -> tuple[list[Finding], dict[str, str], frozenset[str]]:
    """A report's open findings, fingerprint → reason for those it lists as dismissed or
    baselined (the reason a person gave carries into the baseline), and the ids of its
    program reviewers (whose tellings an entry lists: :mod:`council.session.kinds`)."""
    try:
        report = read_json(path.read_bytes())
    except OSError as exc:
        raise UsageProblem(f"--from-json {path} cannot be read ({exc.strerror})") from None
    except UnreadableReport as exc:
        raise UsageProblem(f"--from-json {path}: {exc}") from None
    findings = list(report.open_findings)
    reasons = {
        fingerprint(f): held.reason
        for f in findings
        if f.id is not None
        and (held := report.suppressed.get(f.id)) is not None
        and held.source in ("dismissed", "baseline")
        and held.reason
    }
    programs = frozenset(p.id for p in report.participants if p.backend in PROGRAM_BACKENDS)
    return findings, reasons, programs


def _latest_run(
    cli: CliContext, session: str | None, repo: Path, head: str, state: Path | None
) -> tuple[list[Finding], dict[str, str], frozenset[str]]:
    """The findings still open after the session's latest completed run, fingerprint →
    reason for each finding dismissed in the session, by its fingerprint or as a
    rewording of a dismissed finding (:func:`council.session.decisions.suppress`): its
    reason carries into the baseline instead of the generic --reason; and no program
    reviewer ids (the findings' origins say which tellings were programs')."""
    key = session_key(session, repo, head)
    with session_store(cli, state, save=False) as store:
        reviewed = store.reviewed(key)
        if reviewed is None:
            raise UsageProblem(
                f"session {key!r} has no completed run; run `council review` first, or pass "
                "--from-json REPORT"
            )
        held = store.dismissals(key)
        findings = store.open_findings(key)
    reasons = {print_: d.reason for print_, d in held.items()}
    known = {print_: d.finding for print_, d in held.items() if d.finding is not None}
    shell = CouncilReport(run_id="none", session=key, status="settled", findings=tuple(findings))
    marked = suppress(shell, Baseline(), reasons, known)
    for f in findings:
        why = marked.suppressed.get(f.id) if f.id is not None else None
        if why is not None and why.source == "dismissed" and why.reason:
            reasons.setdefault(fingerprint(f), why.reason)
    return findings, reasons, frozenset()


def _existing(output: Path) -> Baseline | None:
    if not output.exists():
        return None
    try:
        return read_baseline(output.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, UnreadableBaseline) as exc:
        raise UsageProblem(f"{output} exists and cannot be read ({exc}); move it away") from None


def _resolve(store: SessionStore, session: str, text: str) -> tuple[str, Finding | None]:
    """The fingerprint to key a dismissal by, from FINDING (fingerprint or session id), and
    the finding if known: the one filed with that fingerprint, else the latest telling of
    the id a completed round reported it under (a rewording kept the id and replaced the
    telling), else the one finding whose claim an older fingerprint names (several:
    refused, the person names one by its id). A known finding is keyed by its own
    fingerprint, its occurrence."""
    match = _PRINT.fullmatch(text.strip().lower())
    if match is not None:
        value = match.group(1)
        filed = store.findings(session)
        found = next((f for f in filed if fingerprint(f) == value), None)
        if found is None:
            ident = store.reported_id(session, value)
            found = next((f for f in filed if ident is not None and f.id == ident), None)
        if found is None:
            named = [f for f in filed if claim(f) == value]
            if len(named) > 1:
                ids = ", ".join(str(f.id) for f in named[:10])
                raise UsageProblem(
                    f"{value[:12]}… is a fingerprint of an earlier council that names "
                    f"{len(named)} findings of session {session!r} (ids {ids}): a dismissal "
                    "covers one occurrence; pass the id of the one to dismiss"
                )
            found = named[0] if named else None
        if found is None:
            return value, None
        found = _as_open(store, session, found)
        return fingerprint(found), found
    if text.strip().isdigit():
        ident = int(text)
        filed = store.findings(session)
        found = next((f for f in filed if f.id == ident), None)
        if found is None and not filed:
            raise UsageProblem(
                f"session {session!r} has no findings at all (no round of it was filed "
                "here, or it expired): pass the right --session (a review prints its "
                "session on stderr), or --repo/--head to name it as the review did"
            )
        if found is None:
            raise UsageProblem(
                f"session {session!r} has no finding {ident}; pass its fingerprint, or the "
                "right --session"
            )
        found = _as_open(store, session, found)
        return fingerprint(found), found
    raise UsageProblem(
        f"{text!r} is neither a fingerprint (64 hexadecimal digits) nor a finding id"
    )


def _as_open(store: SessionStore, session: str, found: Finding) -> Finding:
    """The finding as the session's last round left it open, when it did: a finding
    carried into a later round is anchored at that round's head, its block read there, so
    a dismissal decides on the occurrence the person saw (the filed telling keeps the
    block of the round that filed it, and a decision on it would not carry)."""
    return next((f for f in store.open_findings(session) if f.id == found.id), found)


def session_key(session: str | None, repo: Path, head: str) -> str:
    """``session``, else the default key of ``repo``'s ``head`` (exit 2 when it has none)."""
    if session:
        return session
    try:
        return Repository(repo).default_session_key(head)
    except ConfigurationError as exc:
        raise UsageProblem(f"{exc} (or pass --session KEY)") from None
