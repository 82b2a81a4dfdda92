"""Agreement as a gate (--min-agreement, [council] min_agreement) and a reviewer's own
raisedBy, which is not agreement (dropped at the round, with a note)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from council.merging.consolidation import member_of
from council.model.findings import Agreement, FileAnchor, Finding, LineAnchor, Origin
from council.model.report import CouncilReport, Suppression
from council.rendering import render_markdown
from council.round.gate import agreed_severity, apply_min_agreement, gate_summary, gate_tripped
from tests.forge_cases import finding, report
from tests.gitrepo import commit, new_repo
from tests.unit.test_cli_review import ROUND, answer, report_of, review, reviewer, roster

BUG_HAWK = {
    "subject": "`load_config` never closes the file it opens",
    "discussion": "open() in load_config has no with block, so the handle leaks.",
    "label": "issue",
    "severity": "critical",
    "location": {"kind": "line", "file": "app.py", "start": 2, "end": 3},
}
BUG_OWL = {
    "subject": "File handle leak in load_config",
    "discussion": "load_config opens the file and never closes the handle.",
    "label": "issue",
    "severity": "critical",
    "location": {"kind": "line", "file": "app.py", "start": 3},
}
LONE = {
    "subject": "Magic number 42 in the retry loop",
    "label": "nitpick",
    "severity": "critical",
    "location": {"kind": "file", "file": "app.py"},
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(path, {"app.py": "x = 1\nf = open('c')\ndata = f.read()\n"}, "config")
    return path


def _run(
    tmp_path: Path, repo: Path, *args: str, head: str = ROUND
) -> tuple[int, dict[str, Any], str]:
    path = roster(
        tmp_path,
        reviewer("hawk", "replay", answer=answer(tmp_path, "h.json", BUG_HAWK, LONE)),
        reviewer("owl", "replay", answer=answer(tmp_path, "o.json", BUG_OWL)),
        head=head,
    )
    out = tmp_path / "report.json"
    done = review(repo, tmp_path / "state.json", "--json", str(out), *args, roster_path=path)
    assert done.exit_code in (0, 1), done.output
    return done.exit_code, report_of(out), done.stdout


def test_without_min_agreement_a_lone_finding_gates(tmp_path: Path, repo: Path) -> None:
    code, report, _ = _run(tmp_path, repo)
    assert code == 1 and report.get("unagreed", {}) == {}
    assert len(report["findings"]) == 2


def test_min_agreement_keeps_a_lone_finding_from_gating(tmp_path: Path, repo: Path) -> None:
    """--min-agreement 2: the finding both raised gates; the lone one is listed, marked."""
    code, report, stdout = _run(tmp_path, repo, "--min-agreement", "2")
    agreed, lone = report["findings"]
    assert agreed["agreement"] == {"k": 2, "n": 2}
    assert report["unagreed"] == {str(lone["id"]): 1} and report["min_agreement"] == 2
    assert code == 1  # the agreed one still trips critical
    assert "Kept from gating by agreement" in stdout and LONE["subject"] in stdout


def test_roster_min_agreement(tmp_path: Path, repo: Path) -> None:
    """[council] min_agreement = 2 acts like --min-agreement 2."""
    _, report, _ = _run(tmp_path, repo, head=ROUND + "min_agreement = 2\n")
    assert report["min_agreement"] == 2 and len(report["unagreed"]) == 1


def test_min_agreement_above_the_roster_is_refused(tmp_path: Path, repo: Path) -> None:
    path = roster(tmp_path, reviewer("hawk", "replay", answer=answer(tmp_path, "h.json", LONE)))
    done = review(repo, tmp_path / "state.json", "--min-agreement", "3", roster_path=path)
    assert done.exit_code == 2 and "--min-agreement 3" in done.output


def test_a_reviewers_own_raised_by_is_dropped_with_a_note(tmp_path: Path, repo: Path) -> None:
    """raisedBy written by an ordinary reviewer credits no one; the report says so."""
    claimed = dict(LONE, raisedBy=["hawk", "owl", "lynx"])
    path = roster(
        tmp_path,
        reviewer("hawk", "replay", answer=answer(tmp_path, "h.json", claimed)),
        reviewer("owl", "replay", answer=answer(tmp_path, "o.json")),
    )
    out = tmp_path / "report.json"
    done = review(
        repo, tmp_path / "state.json", "--json", str(out), "--fail-on", "never", roster_path=path
    )
    assert done.exit_code == 0, done.output
    report = report_of(out)
    (only,) = report["findings"]
    assert "raised_by" not in only and only["agreement"] == {"k": 1, "n": 2}
    assert any(n.startswith("hawk: raisedBy on 1 finding(s) was dropped") for n in report["notes"])


def test_apply_min_agreement_in_the_domain() -> None:
    """k from the agreement; carried findings count too; below 1 is refused."""
    origin = Origin(kind="reviewer", participant="hawk")
    one = Finding(
        id=1,
        anchor=FileAnchor(path="a.py"),
        label="issue",
        subject="a",
        severity="critical",
        origin=origin,
        agreement=Agreement(k=1, n=3),
    )
    two = one.model_copy(update={"id": 2, "agreement": Agreement(k=2, n=3)})
    old = one.model_copy(update={"id": 3, "agreement": None})
    report = CouncilReport(
        run_id="r", session="s", status="settled", findings=(one, two), carried=(old,)
    )
    held = apply_min_agreement(report.gated(min_agreement=2))
    assert held.unagreed == {1: 1, 3: 1}
    assert [f.id for f in gate_tripped(held.gated(fail_on="critical"))] == [2]
    with pytest.raises(ValueError):
        apply_min_agreement(report.gated(min_agreement=0))


def test_the_gate_line_counts_what_min_agreement_kept_from_gating() -> None:
    """A critical raised by one reviewer under min_agreement 2: the gate passes, and its
    line says a critical was left ungated and why, not just "no finding"."""
    lone = finding(3, LineAnchor(path="app.py", line=2), subject="lone", severity="critical")
    kept = report(lone).model_copy(update={"unagreed": {3: 1}}).gated(min_agreement=2)
    line = gate_summary(kept.gated(fail_on="critical", quorum=0))
    assert line == (
        "gate: no finding at or above critical (1 more at or above critical raised by fewer "
        "than min_agreement = 2 reviewers, not gated) → exit 0"
    )
    assert gate_summary(report(lone).gated(fail_on="critical", quorum=0)).startswith(
        "gate: 1 finding(s) at or above critical →"
    )


def test_the_title_says_what_min_agreement_kept_from_gating() -> None:
    """The Markdown title of a passed gate with a critical held back by min_agreement
    does not read as "nothing at or above critical"."""
    lone = finding(3, LineAnchor(path="app.py", line=2), subject="lone", severity="critical")
    kept = report(lone).model_copy(update={"unagreed": {3: 1}}).gated(min_agreement=2)
    title = render_markdown(kept.gated(fail_on="critical", quorum=0)).splitlines()[0]
    assert title == (
        "## ✅ Council review: passed (nothing at or above critical that 2 reviewers "
        "raised; 1 finding at or above it raised by fewer)"
    )


def test_fail_on_never_counts_suppressed_findings_apart() -> None:
    """fail-on never: the gate line counts the open findings, the suppressed ones apart."""
    one = finding(1, LineAnchor(path="app.py", line=2), subject="a", severity="critical")
    two = finding(2, LineAnchor(path="app.py", line=9), subject="b", severity="minor")
    quiet = report(one, two).model_copy(update={"suppressed": {2: Suppression(source="baseline")}})
    assert gate_summary(quiet.gated(fail_on="never", quorum=0)) == (
        "gate: fail-on never, 1 finding(s) not gated (1 more suppressed: dismissed, baselined "
        "or not upheld) → exit 0"
    )


def test_the_gate_line_counts_what_the_filter_kept_from_gating() -> None:
    """A critical off the change's lines under --filter added: the gate passes, and its
    line says a critical was kept from gating by the filter."""
    off = finding(4, LineAnchor(path="app.py", line=90), subject="off", severity="critical")
    kept = report(off).model_copy(update={"filtered": {4: "not on an added line"}})
    kept = kept.gated(filter="added")
    assert gate_summary(kept.gated(fail_on="critical", quorum=0)) == (
        "gate: no finding at or above critical (1 more at or above critical kept from gating "
        "by --filter added) → exit 0"
    )


def test_min_agreement_is_decided_on_the_tellings() -> None:
    """A critical merged with a minor nit is "2 of 2", but only one telling is critical:
    under --min-agreement 2 it gates at minor, not at critical, and the Markdown says how
    many raised it at its severity."""
    injection = finding(None, FileAnchor(path="a.py"), severity="critical", subject="SQLi")
    nit = finding(None, FileAnchor(path="a.py"), severity="minor", subject="vague name")
    told = [member_of("hawk", injection), member_of("owl", nit)]
    update = {"id": 1, "raised_by": ("hawk", "owl"), "members": tuple(told)}
    merged = injection.model_copy(update={**update, "agreement": Agreement(k=2, n=2)})
    assert agreed_severity(merged, 1) == "critical" and agreed_severity(merged, 2) == "minor"
    assert agreed_severity(merged, 3) is None
    report = CouncilReport(run_id="r", session="s", status="settled", findings=(merged,))
    held = apply_min_agreement(report.gated(min_agreement=2, quorum=0))
    assert held.unagreed == {1: 1}
    assert gate_tripped(held.gated(fail_on="critical")) == []
    assert [f.id for f in gate_tripped(held.gated(fail_on="minor"))] == [1]
    text = render_markdown(held.gated(fail_on="critical"))
    assert "raised by 2 reviewers, 1 at critical" in text
