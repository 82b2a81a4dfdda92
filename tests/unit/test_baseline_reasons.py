"""`council baseline` keeps the reason a person gave when dismissing a finding, instead of
the generic --reason (through the CLI, embedded mode, as tests/unit/test_cli_rounds.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from council.model.findings import FileAnchor
from council.model.fingerprint import fingerprint
from council.session.baseline import BASELINE_FILE, read_baseline, write_baseline
from tests.forge_cases import finding
from tests.unit.test_cli_rounds import Session, div0

GENERIC = "accepted when the baseline was written"


@pytest.fixture
def session(tmp_path: Path) -> Session:
    """A fresh session's repository."""
    return Session(tmp_path)


def reasons_by_subject(path: Path) -> dict[str, str]:
    """Subject → reason of each entry of the baseline file at ``path``."""
    return {e.subject: e.reason for e in read_baseline(path.read_text()).entries}


def two_findings(session: Session) -> int:
    """One round raising two findings; returns the id of the one about line 2."""
    other = {**div0(3), "subject": "shadows a builtin"}
    session.push({"app.py": "x = 1\ny = 1 / 0\nlist = 2\n"}, div0(), other)
    _, report = session.review()
    assert report is not None
    return next(f.id for f in report.findings if f.subject == "divides by zero" and f.id)


def test_a_dismissal_reason_carries_into_the_baseline(session: Session) -> None:
    """Dismissed with reason "fine", then `council baseline`: that entry says "fine"; the
    finding nobody dismissed gets the generic reason."""
    ident = two_findings(session)
    assert session.cli("dismiss", str(ident), "--reason", "fine").exit_code == 0
    target = session.tmp / BASELINE_FILE
    done = session.cli("baseline", "--output", str(target))
    assert done.exit_code == 0, done.output
    assert reasons_by_subject(target) == {"divides by zero": "fine", "shadows a builtin": GENERIC}


def test_a_dismissal_reason_wins_over_an_explicit_reason(session: Session) -> None:
    """--reason is for the findings nobody gave a reason for yet."""
    ident = two_findings(session)
    assert session.cli("dismiss", str(ident), "--reason", "fine").exit_code == 0
    target = session.tmp / BASELINE_FILE
    done = session.cli("baseline", "--output", str(target), "--reason", "legacy")
    assert done.exit_code == 0, done.output
    assert reasons_by_subject(target) == {"divides by zero": "fine", "shadows a builtin": "legacy"}


def test_from_json_carries_the_reports_dismissal_reason(session: Session) -> None:
    """--from-json: a finding the report lists as dismissed keeps the dismissal's reason."""
    ident = two_findings(session)
    assert session.cli("dismiss", str(ident), "--reason", "fine").exit_code == 0
    _, report = session.review()  # the next round lists it as dismissed, with the reason
    assert report is not None and [s.reason for s in report.suppressed.values()] == ["fine"]
    saved = session.tmp / "report.json"
    saved.write_text(json.dumps(report.model_dump(mode="json")))
    target = session.tmp / BASELINE_FILE
    done = session.cli("baseline", "--from-json", str(saved), "--output", str(target))
    assert done.exit_code == 0, done.output
    assert reasons_by_subject(target) == {"divides by zero": "fine", "shadows a builtin": GENERIC}


def test_write_baseline_reasons_for_new_entries_only() -> None:
    """A given reason names a new entry's reason; an existing entry keeps its own."""
    leak, other = finding(1, FileAnchor(path="a.py"), subject="leak"), finding(2)
    first = read_baseline(write_baseline([leak], "first reason"))
    given = {fingerprint(leak): "fine", fingerprint(other): "known"}
    again = read_baseline(write_baseline([leak, other], "generic", existing=first, reasons=given))
    assert again.reasons() == {fingerprint(leak): "first reason", fingerprint(other): "known"}
