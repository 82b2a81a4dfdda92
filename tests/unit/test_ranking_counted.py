"""What is counted into the track records, exactly once (docs/ranking.md "Track records"):
a settle delivered twice counts a round once; an answered ``confirm-finding`` ask counts
"yes" as confirmed and "no" as dismissed for the finding's raisers (read back through
``council outcomes``); an earlier finding gone outdated counts ``acted`` for its raisers
once, whichever round or redelivery files it again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest
from click.testing import CliRunner, Result

from council.model.backend_result import ReviewResult
from council.model.participant import Participant
from council.ranking.live import acted_records
from council.ranking.records import ID_ONLY, TrackRecord
from council.round.lifecycle import step
from council.round.outcome import harvest_outcome
from tests.forge_cases import finding, report
from tests.gitrepo import commit, git, new_repo
from tests.unit.test_cli_review import ROUND, answer, review, reviewer, roster
from workers.app.clock import now_ms
from workers.app.services import Runtime, build_runtime
from workers.app.settings import Settings
from workers.cli import main
from workers.settling.settle import settle_run
from workers.stores.run_record import RunRecord
from workers.stores.sessions import Filing
from workers.stores.track.records import FileRecords, RedisRecords

REP = Participant(id="rep", backend="replay", options={"answer": "a.json"})
DIFF = "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1,2 @@\n x = 1\n+y = 2\n"
SAID = (
    '{"findings": [{"subject": "y is never read", "label": "issue", "severity": "minor", '
    '"location": {"kind": "line", "file": "app.py", "line": 2}}]}'
)
CRITICAL = {
    "subject": "divides by zero",
    "label": "issue",
    "severity": "critical",
    "location": {"kind": "line", "file": "app.py", "line": 2},
}


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    yield build_runtime(
        Settings(work_dir=tmp_path / "work"), fakeredis.FakeRedis(server=fakeredis.FakeServer())
    )


def _open(rt: Runtime, run_id: str = "r1") -> RunRecord:
    """A run of session s1 whose one reviewer, rep, has answered with one finding."""
    record = RunRecord(
        run_id=run_id,
        session="s1",
        participants=(REP.id,),
        created_ms=now_ms(),
        deadline_ms=now_ms() + 600_000,
    )
    rt.sessions.open_run(record, [("reviewer", REP)], record.created_ms)
    rt.runs.put_inputs(run_id, [REP], {REP.id: "review"}, None, {}, change=DIFF)
    outcome = harvest_outcome(REP.id, "reviewer", ReviewResult(answer=SAID), [])
    assert rt.runs.put_outcome(run_id, outcome, SAID)
    return record


def _held(rt: Runtime) -> dict[str, TrackRecord]:
    return {p: r for (p, _), r in RedisRecords(rt.client, rt.keys).all().items()}


def test_a_settle_delivered_twice_counts_the_round_once(rt: Runtime) -> None:
    _open(rt)
    first = settle_run(rt, "r1")
    assert first.status == "settled"
    assert settle_run(rt, "r1") == first
    rep = _held(rt)["rep"]
    assert (rep.findings, rep.rounds) == (1, 1)


def test_a_filing_committed_twice_is_counted_once(rt: Runtime) -> None:
    """Two settles that both read the run open build one filing each: the compare-and-set
    files the first, the second writes nothing, its counts included."""
    record = _open(rt)
    transition = step("open", "reviewers_settled")
    counted = TrackRecord(participant="rep", identity=ID_ONLY, findings=1, rounds=1)
    acted = TrackRecord(participant="hawk", identity=ID_ONLY, acted=1)
    filing = Filing(
        first_id=1,
        findings=(),
        report=report(status="settled"),
        records=(counted,),
        acted={7: (acted,)},
    )
    for _ in range(2):
        assert rt.sessions.commit(record, transition, filing, now_ms()) is not None
    held = _held(rt)
    assert (held["rep"].findings, held["rep"].rounds, held["hawk"].acted) == (1, 1, 1)


def test_an_outdated_finding_counts_acted_once_per_session(rt: Runtime) -> None:
    """A later run of the session that finds finding 7 outdated again counts nothing more;
    another session's finding 7 is another finding."""
    acted = {7: (TrackRecord(participant="hawk", identity=ID_ONLY, acted=1),)}
    for run_id, session in (("r1", "s1"), ("r2", "s1"), ("r3", "s2")):
        record = _open(rt, run_id).model_copy(update={"session": session})
        filing = Filing(first_id=1, findings=(), report=report(status="settled"), acted=acted)
        assert rt.sessions.commit(record, step("open", "reviewers_settled"), filing, now_ms())
    assert _held(rt)["hawk"].acted == 2
    assert rt.client.hget(rt.keys.session_acted("s1"), "7") == b"r1"


def _cli(state: Path, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--state", str(state)])


@pytest.mark.parametrize(("said", "verdict"), [("yes", "confirmed"), ("no", "dismissed")])
def test_an_answered_confirmation_counts_for_the_findings_reviewers(
    tmp_path: Path, said: str, verdict: str
) -> None:
    """rep raises a critical, quiet raises nothing; ``[policy] confirm`` asks a person.
    "yes": rep confirmed, quiet missed it; "no": rep dismissed, quiet passed. Counted
    once: a later round of the session counts no verdict again."""
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(repo, {"app.py": "x = 1\ny = 1 / 0\n"}, "divide")
    tables = reviewer("rep", "replay", answer=answer(tmp_path, "a.json", CRITICAL))
    tables += reviewer("quiet", "replay", answer=answer(tmp_path, "q.json"))
    rp = roster(tmp_path, tables, head=ROUND + '[policy]\nconfirm = "critical"\n')
    state = tmp_path / "state.json"
    assert review(repo, state, roster_path=rp).exit_code == 4
    (ask,) = json.loads(_cli(state, "asks", "--json").stdout)
    assert ask["component"]["component_id"] == "confirm-finding"
    assert _cli(state, "answer", ask["id"], said, "--reason", "judged").exit_code == 0
    resumed = _cli(state, "resume", ask["run"])
    assert resumed.exit_code == (1 if said == "yes" else 0), resumed.output
    review(repo, state, roster_path=rp)
    cards = _cli(state, "outcomes")
    assert cards.exit_code == 0, cards.output
    confirmed, dismissed = (1, 0) if verdict == "confirmed" else (0, 1)
    (line,) = [x for x in cards.output.splitlines() if x.startswith("rep [")]
    assert f"findings, {confirmed} confirmed, {dismissed} dismissed" in line
    held = {p: r for (p, _), r in FileRecords(state).all().items()}
    rep, quiet = held["rep"], held["quiet"]
    assert (getattr(rep, verdict), getattr(rep, f"told_{verdict}")) == (1, 1)
    assert rep.confirmed + rep.dismissed == 1
    silent = "missed" if verdict == "confirmed" else "passed"
    assert (getattr(quiet, silent), quiet.confirmed, quiet.dismissed) == (1, 0, 0)


def _flag(subject: str, line: int) -> dict[str, Any]:
    at = {"kind": "line", "path": "app.py", "line": line}
    return {"subject": subject, "label": "issue", "severity": "minor", "location": at}


def test_a_finding_gone_outdated_counts_acted_for_its_raisers_once(tmp_path: Path) -> None:
    """hawk and owl flag line 1; the next push rewrites it: the finding is outdated and
    each raiser gets one ``acted``; a third push rewriting it again counts nothing more
    (the finding is no longer open, and its id is kept as counted in the state file)."""
    answers = {who: tmp_path / f"{who}.json" for who in ("hawk", "owl")}
    tables = "".join(
        f'[[reviewers]]\nid = "{who}"\nbackend = "replay"\nanswer = {json.dumps(str(p))}\n'
        for who, p in answers.items()
    )
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n", "council.toml": ROUND + tables})
    base, state = git(repo, "rev-parse", "HEAD"), tmp_path / "state.json"

    def round_(body: str, *said: dict[str, Any]) -> dict[str, Any]:
        for path in answers.values():
            path.write_text(json.dumps({"findings": list(said)}))
        commit(repo, {"app.py": body}, body)
        out = tmp_path / "r.json"
        argv = ["review", "--repo", str(repo), "--base", base, "--no-progress", "--json"]
        done = _cli(state, *argv, str(out), "--session", "s")
        assert out.exists(), done.output
        loaded: dict[str, Any] = json.loads(out.read_text())
        return loaded

    round_("a = 1\nb = 2\n", _flag("a is shadowed", 1))
    second = round_("a = 10\nb = 2\n")
    assert [f["subject"] for f in second["outdated"]] == ["a is shadowed"]
    round_("a = 11\nb = 2\n")

    held = {p: r for (p, ident), r in FileRecords(state).all().items() if ident != ID_ONLY}
    assert (held["hawk"].acted, held["owl"].acted) == (1, 1)
    saved = json.loads(state.read_text())["sessions"]["s"]
    assert list(saved["acted"]) == [str(second["outdated"][0]["id"])]
    assert "1 acted on" in _cli(state, "outcomes").output


def test_acted_goes_to_the_raisers_and_a_persons_own_finding_to_no_one() -> None:
    told = finding(3, subject="told", raised_by=("hawk", "owl"))
    mine = finding(4, subject="mine", origin=None)
    counted = acted_records(report(outdated=(told, mine)), lambda _who: None)
    assert list(counted) == [3]
    assert {(r.participant, r.acted, r.confirmed) for r in counted[3]} == {
        ("hawk", 1, 0),
        ("owl", 1, 0),
    }
