"""The ``council review`` contract, end to end in embedded mode: exit codes and key facts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tests.gitrepo import ROOT, commit, git, new_repo
from tests.services import review_argv
from workers.cli import main

CRITICAL = {"subject": "divides by zero", "label": "issue", "severity": "critical"}
UNRATED = {"subject": "name is vague", "label": "suggestion"}

ROUND = "[council]\nbackstop_ms = 60000\nidle_ms = 60000\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose last commit (HEAD~1..HEAD) adds one line to app.py."""
    path = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(path, {"app.py": "x = 1\ny = 1 / 0\n"}, "divide")
    return path


def answer(tmp_path: Path, name: str, *findings: dict[str, Any]) -> str:
    """Write a replay answer holding ``findings``; return its file name."""
    (tmp_path / name).write_text(json.dumps({"findings": list(findings)}), encoding="utf-8")
    return name


def journal(tmp_path: Path, name: str, count: int) -> str:
    """Write a replay journal of ``count`` distinct findings; return its file name."""
    lines = [
        json.dumps({"subject": f"recorded finding {i}", "label": "issue"}) for i in range(count)
    ]
    (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return name


def reviewer(pid: str, backend: str, **options: object) -> str:
    """One [[reviewers]] table of a roster."""
    lines = ["[[reviewers]]", f'id = "{pid}"', f'backend = "{backend}"']
    lines += [f"{key} = {json.dumps(value)}" for key, value in options.items()]
    return "\n".join(lines) + "\n"


def roster(tmp_path: Path, *tables: str, head: str = ROUND) -> Path:
    """Write roster.toml beside the recordings; return its path."""
    path = tmp_path / "roster.toml"
    path.write_text(head + "".join(tables), encoding="utf-8")
    return path


def review(
    repo: Path,
    state: Path,
    *args: str,
    base: str = "HEAD~1",
    roster_path: Path | None = None,
    env: dict[str, str] | None = None,
) -> Result:
    """Run ``council review`` in this process (embedded mode unless ``env`` says otherwise)."""
    argv = ["review", "--repo", str(repo), "--base", base, "--state", str(state), "--no-progress"]
    if roster_path is not None:
        argv += ["--roster", str(roster_path)]
    return CliRunner().invoke(main, [*argv, *args], env=env)


def report_of(path: Path) -> dict[str, Any]:
    """The JSON report written with --json."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def states(report: dict[str, Any]) -> dict[str, str]:
    """participant id → state."""
    return {p["id"]: p["state"] for p in report["participants"]}


def test_not_a_git_repository(tmp_path: Path) -> None:
    """A directory that is not a clone: exit 2, saying so and how to fix it."""
    plain = tmp_path / "plain"
    plain.mkdir()
    done = review(plain, tmp_path / "state.json", roster_path=roster(tmp_path))
    assert done.exit_code == 2
    assert "not a git repository" in done.output
    assert "--repo" in done.output


def test_unknown_ref_is_named(repo: Path, tmp_path: Path) -> None:
    """An unknown base ref: exit 2, the ref named."""
    done = review(repo, tmp_path / "state.json", base="no-such-branch")
    assert done.exit_code == 2
    assert "no-such-branch" in done.output
    assert not (tmp_path / "state.json").exists()


def test_empty_change_has_nothing_to_review(repo: Path, tmp_path: Path) -> None:
    """base == head: exit 0, nothing to review, no council started."""
    rp = roster(tmp_path, reviewer("rep", "replay", answer=answer(tmp_path, "a.json")))
    done = review(repo, tmp_path / "state.json", base="HEAD", roster_path=rp)
    assert done.exit_code == 0
    assert "nothing to review" in done.stdout
    assert not (tmp_path / "state.json").exists()


def test_every_file_excluded(repo: Path, tmp_path: Path) -> None:
    """[paths] exclude covers every changed file: exit 0, saying so."""
    rp = roster(
        tmp_path,
        '[paths]\nexclude = ["*.py"]\n',
        reviewer("rep", "replay", answer=answer(tmp_path, "a.json")),
    )
    done = review(repo, tmp_path / "state.json", roster_path=rp)
    assert done.exit_code == 0
    assert "nothing to review" in done.stdout
    assert "excluded" in done.stdout


def test_binary_and_latin1_files_are_noted(tmp_path: Path) -> None:
    """A binary and a Latin-1 file in the change: the review runs, the notes name both,
    the binary file once (the coverage note said it again)."""
    path = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(
        path,
        {"logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR", "menu.txt": b"caf\xe9\n"},
        "add",
    )
    rp = roster(tmp_path, reviewer("rep", "replay", answer=answer(tmp_path, "a.json", UNRATED)))
    out = tmp_path / "report.json"
    done = review(path, tmp_path / "state.json", "--json", str(out), roster_path=rp)
    assert done.exit_code == 0, done.output
    notes = report_of(out)["notes"]
    assert [n for n in notes if "logo.png" in n] == ['binary file "logo.png": not shown']
    assert any("UTF-8" in n and "menu.txt" in n for n in notes), notes
    assert "logo.png" in done.stdout and "menu.txt" in done.stdout


@pytest.mark.parametrize(
    ("text", "field"),
    [
        pytest.param(reviewer("rep", "gpt-9"), "reviewers[0].backend", id="unknown-backend"),
        pytest.param(
            '[[reviewers]]\nbackend = "replay"\nanswer = "a.json"\n',
            "reviewers[0].id",
            id="missing-id",
        ),
        pytest.param(
            reviewer("rep", "replay", answer="a.json", idle_ms=5),
            "reviewers[0].idle_ms",
            id="idle-in-seconds",
        ),
        pytest.param('[[reviewers]\nid = "rep"\n', "roster.toml:4", id="toml-syntax"),
        pytest.param(
            reviewer("rep", "replay", answer="a.json") * 2, "reviewers[1].id", id="duplicate-id"
        ),
    ],
)
def test_roster_error_names_the_field(repo: Path, tmp_path: Path, text: str, field: str) -> None:
    """A roster error: exit 2 before anything is sent (no state written), the field path named."""
    answer(tmp_path, "a.json", CRITICAL)
    state = tmp_path / "state.json"
    done = review(repo, state, roster_path=roster(tmp_path, text))
    assert done.exit_code == 2, done.output
    assert field in done.output
    assert "council: run" not in done.output
    assert not state.exists()


def test_no_roster_at_base_says_the_way_out(repo: Path, tmp_path: Path) -> None:
    """No council.toml at the base ref and no --roster: exit 2 naming both ways out."""
    done = review(repo, tmp_path / "state.json")
    assert done.exit_code == 2
    assert "council.toml" in done.output
    assert "--roster" in done.output


def test_roster_edited_by_the_change_uses_the_base_version(tmp_path: Path) -> None:
    """The head switches a reviewer off in council.toml: the base roster runs it anyway."""
    both = (
        ROUND
        + reviewer("keep", "replay", answer="a.json")
        + reviewer("other", "replay", answer="a.json")
    )
    files: dict[str, str | bytes] = {
        "app.py": "x = 1\n",
        "a.json": json.dumps({"findings": [UNRATED]}),
        "council.toml": both,
    }
    path = new_repo(tmp_path / "repo", files)
    only_other = ROUND + reviewer("other", "replay", answer="a.json")
    commit(path, {"council.toml": only_other, "app.py": "x = 2\n"}, "switch keep off")
    out = tmp_path / "report.json"
    done = review(path, tmp_path / "state.json", "--json", str(out))
    assert done.exit_code == 0, done.output
    report = report_of(out)
    assert states(report) == {"keep": "answered", "other": "answered"}
    assert any("council.toml" in n and "base" in n for n in report["notes"]), report["notes"]


def test_refused_identity_claim_leaves_the_ledger(repo: Path, tmp_path: Path) -> None:
    """A second run re-pointing an id that has findings: exit 2, both meanings, both ways out."""
    state = tmp_path / "state.json"
    name = answer(tmp_path, "a.json", UNRATED)
    first = roster(tmp_path, reviewer("hawk", "replay", answer=name))
    done = review(repo, state, "--session", "pr-7", roster_path=first)
    assert done.exit_code == 0, done.output
    before = json.loads(state.read_text())["sessions"]["pr-7"]
    assert before["findings"]
    second = roster(tmp_path, reviewer("hawk", "replay", answer=name, model="m-two"))
    done = review(repo, state, "--session", "pr-7", roster_path=second)
    assert done.exit_code == 2, done.output
    assert "'hawk'" in done.output
    assert "backend replay" in done.output and "model m-two" in done.output
    assert "new id" in done.output
    assert "council release pr-7 hawk" in done.output
    assert "council: run" not in done.output
    assert json.loads(state.read_text())["sessions"]["pr-7"] == before


def test_release_in_embedded_mode_lets_the_id_take_a_new_meaning(
    repo: Path, tmp_path: Path
) -> None:
    """The way out the refusal names works without Redis: release in the state file, run again."""
    state = tmp_path / "state.json"
    name = answer(tmp_path, "a.json", UNRATED)
    assert (
        review(
            repo,
            state,
            "--session",
            "s",
            roster_path=roster(tmp_path, reviewer("hawk", "replay", answer=name)),
        ).exit_code
        == 0
    )
    repointed = roster(tmp_path, reviewer("hawk", "replay", answer=name, model="m-two"))
    assert review(repo, state, "--session", "s", roster_path=repointed).exit_code == 2
    released = CliRunner().invoke(main, ["release", "s", "hawk", "--state", str(state)])
    assert released.exit_code == 0, released.output
    assert review(repo, state, "--session", "s", roster_path=repointed).exit_code == 0


def test_unreadable_state_file_is_a_usage_error(repo: Path, tmp_path: Path) -> None:
    """A state file that is not ours: exit 2 naming it, nothing run."""
    state = tmp_path / "state.json"
    state.write_text("{not json")
    rp = roster(tmp_path, reviewer("rep", "replay", answer=answer(tmp_path, "a.json")))
    done = review(repo, state, roster_path=rp)
    assert done.exit_code == 2
    assert str(state) in done.output
    assert state.read_text() == "{not json"


def test_json_into_a_missing_directory_is_refused_before_the_run(
    repo: Path, tmp_path: Path
) -> None:
    """--json in a directory that does not exist: exit 2 naming it, not a traceback (exit 1)."""
    rp = roster(tmp_path, reviewer("rep", "replay", answer=answer(tmp_path, "a.json")))
    out = tmp_path / "missing" / "report.json"
    done = review(repo, tmp_path / "state.json", "--json", str(out), roster_path=rp)
    assert done.exit_code == 2, done.output
    assert "--json" in done.output and str(out.parent) in done.output
    assert not (tmp_path / "state.json").exists()


def test_redis_unreachable_exits_3_without_the_password(repo: Path, tmp_path: Path) -> None:
    """An unreachable COUNCIL_REDIS_URL: exit 3 within 5 s, the URL named without its password."""
    rp = roster(tmp_path, reviewer("rep", "replay", answer=answer(tmp_path, "a.json")))
    started = time.monotonic()
    done = review(
        repo,
        tmp_path / "state.json",
        roster_path=rp,
        env={"COUNCIL_REDIS_URL": "redis://:s3cret@127.0.0.1:1/0"},
    )
    assert time.monotonic() - started < 5
    assert done.exit_code == 3, done.output
    assert "127.0.0.1:1" in done.output
    assert "s3cret" not in done.output


def test_a_crash_exits_3_not_the_gates_1(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception nothing turned into an exit code (a missing module, a bug) is "could
    not complete", exit 3, with a one-line reason after the traceback; never 1, which CI
    reads as "a finding tripped the gate"."""
    import workers.cli.review.running as review_module

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise ModuleNotFoundError("No module named 'packaging'")

    monkeypatch.setattr(review_module, "plan_round", broken)
    rp = roster(tmp_path, reviewer("rep", "replay", answer=answer(tmp_path, "a.json")))
    done = review(repo, tmp_path / "state.json", roster_path=rp)
    assert done.exit_code == 3, done.output
    assert "internal error (ModuleNotFoundError: No module named 'packaging')" in done.output


def _crash_script(tmp_path: Path) -> None:
    crash = tmp_path / "crash.sh"
    crash.write_text("#!/bin/sh\necho 'segfault in the reviewer' >&2\nexit 3\n")
    crash.chmod(0o755)


def test_failing_command_reviewers_make_the_run_partial(repo: Path, tmp_path: Path) -> None:
    """A crashing program fails with its reason; the rest is filed. By default that fails
    closed (exit 3); with --quorum 1 the run gates on what was filed (exit 1). A program
    that is nowhere to be found is refused before anything runs (exit 2), naming it."""
    _crash_script(tmp_path)
    rp = roster(
        tmp_path,
        reviewer("rep", "replay", answer=answer(tmp_path, "a.json", CRITICAL)),
        reviewer("crash", "command", program="./crash.sh"),
    )
    out = tmp_path / "report.json"
    done = review(repo, tmp_path / "state.json", "--json", str(out), roster_path=rp)
    assert done.exit_code == 3, done.output
    assert "crash failed" in done.stderr
    done = review(
        repo, tmp_path / "state.json", "--json", str(out), "--quorum", "1", roster_path=rp
    )
    assert done.exit_code == 1, done.output
    report = report_of(out)
    assert report["status"] == "partial"
    assert states(report) == {"rep": "answered", "crash": "failed"}
    failures = {p["id"]: p.get("failure", "") for p in report["participants"]}
    assert "status 3" in failures["crash"] and "segfault in the reviewer" in failures["crash"]
    assert [f["subject"] for f in report["findings"]] == [CRITICAL["subject"]]
    assert "PARTIAL" in done.stdout
    ghost = roster(
        tmp_path,
        reviewer("rep", "replay", answer=answer(tmp_path, "a.json", CRITICAL)),
        reviewer("ghost", "command", program="council-no-such-program"),
    )
    refused = review(repo, tmp_path / "state.json", roster_path=ghost)
    assert refused.exit_code == 2, refused.output
    assert "council-no-such-program" in refused.output and "nor on PATH" in refused.output


def test_secrets_a_failing_program_prints_are_masked_in_the_report(
    repo: Path, tmp_path: Path
) -> None:
    """A program's stderr goes into its failure reason, which is posted on pull requests:
    secret shapes in it (token=…, sk-…, Bearer …) are masked there."""
    leaky = tmp_path / "leaky.sh"
    leaky.write_text(
        "#!/bin/sh\necho 'broke: token=abc123 key sk-live0123456789abcdef "
        "Authorization: Bearer eyJhbGciOi' >&2\nexit 7\n"
    )
    leaky.chmod(0o755)
    rp = roster(tmp_path, reviewer("leaky", "command", program="./leaky.sh"))
    out = tmp_path / "report.json"
    done = review(repo, tmp_path / "state.json", "--json", str(out), roster_path=rp)
    failure = {p["id"]: p.get("failure", "") for p in report_of(out)["participants"]}["leaky"]
    assert "status 7" in failure and "broke" in failure
    for secret in ("abc123", "sk-live0123456789abcdef", "eyJhbGciOi"):
        assert secret not in failure and secret not in done.output


def test_a_failed_participants_progress_line_says_why(repo: Path, tmp_path: Path) -> None:
    """In a CI log (progress as plain lines) a failure's line carries its reason, so the
    log alone tells what went wrong."""
    crash = tmp_path / "crash.sh"
    crash.write_text("#!/bin/sh\necho 'segfault in the reviewer' >&2\nexit 3\n")
    crash.chmod(0o755)
    rp = roster(tmp_path, reviewer("crash", "command", program="./crash.sh"))
    argv = ["review", "--repo", str(repo), "--base", "HEAD~1", "--roster", str(rp)]
    done = CliRunner().invoke(main, [*argv, "--state", str(tmp_path / "state.json")])
    lines = [line for line in done.stderr.splitlines() if line.startswith("council: crash failed")]
    assert len(lines) == 1, done.stderr
    assert "exited with status 3" in lines[0] and "segfault in the reviewer" in lines[0]


@pytest.mark.parametrize(("fail_on", "code"), [("critical", 1), ("never", 0)])
def test_fail_on_gates_a_critical_finding(
    repo: Path, tmp_path: Path, fail_on: str, code: int
) -> None:
    """A critical finding trips --fail-on critical (exit 1), never with --fail-on never."""
    rp = roster(tmp_path, reviewer("rep", "replay", answer=answer(tmp_path, "a.json", CRITICAL)))
    done = review(repo, tmp_path / "state.json", "--fail-on", fail_on, roster_path=rp)
    assert done.exit_code == code, done.output


def test_finding_without_severity_never_trips(repo: Path, tmp_path: Path) -> None:
    """A finding without severity passes even --fail-on minor."""
    rp = roster(tmp_path, reviewer("rep", "replay", answer=answer(tmp_path, "a.json", UNRATED)))
    done = review(repo, tmp_path / "state.json", "--fail-on", "minor", roster_path=rp)
    assert done.exit_code == 0, done.output


def test_quorum_not_met_wins_over_a_tripped_gate(repo: Path, tmp_path: Path) -> None:
    """--quorum 2, one of two reviewers answering with a critical finding: exit 3."""
    _crash_script(tmp_path)
    rp = roster(
        tmp_path,
        reviewer("rep", "replay", answer=answer(tmp_path, "a.json", CRITICAL)),
        reviewer("crash", "command", program="./crash.sh"),
    )
    done = review(repo, tmp_path / "state.json", "--quorum", "2", roster_path=rp)
    assert done.exit_code == 3, done.output
    assert "quorum is 2" in done.stderr
    assert "incomplete" in done.stdout.splitlines()[0].lower()


def test_quorum_above_the_roster_is_refused_up_front(repo: Path, tmp_path: Path) -> None:
    """--quorum larger than the number of reviewers: exit 2 before anything is asked."""
    rp = roster(tmp_path, reviewer("rep", "replay", answer=answer(tmp_path, "a.json", CRITICAL)))
    done = review(repo, tmp_path / "state.json", "--quorum", "2", roster_path=rp)
    assert done.exit_code == 2, done.output
    assert "--quorum 2" in done.output


def test_unusable_state_path_is_a_usage_error(repo: Path, tmp_path: Path) -> None:
    """--state under a plain file: exit 2 naming the state file, never a traceback."""
    blocker = tmp_path / "afile"
    blocker.write_text("x", encoding="utf-8")
    rp = roster(tmp_path, reviewer("rep", "replay", answer=answer(tmp_path, "a.json", UNRATED)))
    done = review(repo, blocker / "state.json", roster_path=rp)
    assert done.exit_code == 2, done.output
    assert "state file" in done.output and "Traceback" not in done.output


def test_roster_quorum_is_the_default(repo: Path, tmp_path: Path) -> None:
    """[council] quorum = 2 with one of two reviewers failing: exit 3 without --quorum."""
    _crash_script(tmp_path)
    rp = roster(
        tmp_path,
        reviewer("rep", "replay", answer=answer(tmp_path, "a.json", UNRATED)),
        reviewer("crash", "command", program="./crash.sh"),
        head=ROUND + "quorum = 2\n",
    )
    done = review(repo, tmp_path / "state.json", roster_path=rp)
    assert done.exit_code == 3, done.output
    assert "quorum is 2" in done.stderr
    assert review(repo, tmp_path / "state.json", "--quorum", "1", roster_path=rp).exit_code == 0


def slow_roster(tmp_path: Path) -> Path:
    """One replay reviewer answering after 30 s, recording a finding every 500 ms."""
    return roster(
        tmp_path,
        reviewer(
            "slow",
            "replay",
            answer=answer(tmp_path, "a.json", CRITICAL),
            journal=journal(tmp_path, "j.jsonl", 59),
            latency_ms=30000,
        ),
    )


def test_timeout_settles_as_timeout_and_files_the_journal(repo: Path, tmp_path: Path) -> None:
    """--timeout 2 on a 30 s reviewer: exit 3, status timeout, what it recorded is filed."""
    out = tmp_path / "report.json"
    started = time.monotonic()
    done = review(
        repo,
        tmp_path / "state.json",
        "--timeout",
        "2",
        "--json",
        str(out),
        roster_path=slow_roster(tmp_path),
    )
    assert time.monotonic() - started < 6
    assert done.exit_code == 3, done.output
    report = report_of(out)
    assert report["status"] == "timeout"
    assert states(report) == {"slow": "stopped"}
    subjects = {f["subject"] for f in report["findings"]}
    assert subjects and all(s.startswith("recorded finding") for s in subjects)
    assert "timed out" in done.stderr
    (slow,) = report["participants"]
    assert slow["stop"] == {"limit": "cancelled", "budget_ms": 2000}, slow


def test_sigterm_cancels_and_files_the_journal(repo: Path, tmp_path: Path) -> None:
    """SIGTERM to a running review: settled cancelled, journal filed, exit 3, within seconds."""
    out = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    argv: Sequence[str] = [
        *review_argv(repo, "HEAD~1", slow_roster(tmp_path), out),
        "--state",
        str(tmp_path / "state.json"),
    ]
    proc = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    seen = []
    while line := proc.stderr.readline():
        seen.append(line)
        if line.startswith("council: run"):
            break
    assert proc.poll() is None, "".join(seen)
    time.sleep(1.5)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=30)
    assert time.monotonic() - sent < 3
    assert proc.returncode == 3, stderr
    report = report_of(out)
    assert report["status"] == "cancelled"
    assert states(report) == {"slow": "stopped"}
    assert any(f["subject"].startswith("recorded finding") for f in report["findings"])
    assert "cancelled" in stderr
    assert "council review" in stdout.lower()


def test_a_chord_that_cannot_be_sent_leaves_no_open_run(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The broker refuses the chord after the run was opened: the run is settled
    ``cancelled`` at once (not left ``open`` for a watchdog), and the error goes on up."""
    import fakeredis

    from workers.app.celery_config import create_app
    from workers.app.services import build_runtime
    from workers.app.settings import Settings
    from workers.coordinator import dispatch, preparation

    def refused(*_args: Any, **_kwargs: Any) -> Any:
        raise ConnectionError("the broker refused the connection")

    monkeypatch.setattr(dispatch, "chord", refused)
    rp = roster(tmp_path, reviewer("rep", "replay", answer=answer(tmp_path, "a.json")))
    settings = Settings(work_dir=tmp_path / "work")
    rt = build_runtime(settings, fakeredis.FakeRedis(server=fakeredis.FakeServer()))
    options = preparation.ReviewOptions(repo=repo, base="HEAD~1", roster=rp, session="s")
    round_ = preparation.prepare(settings, options, mode="embedded")
    app = create_app(settings, embedded=True)
    try:
        with pytest.raises(ConnectionError, match="refused"):
            dispatch.open_and_dispatch(app, rt, round_)
    finally:
        app.close()
    assert rt.runs.status(round_.record.run_id) == "cancelled"
    report = rt.runs.report(round_.record.run_id)
    assert report is not None and report.status == "cancelled"


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path) -> None:
    """``council check … | head -1`` on a prompt larger than a pipe holds: no traceback,
    no "internal error", exit 141 (as a command killed by SIGPIPE)."""
    big = new_repo(tmp_path / "big", {"app.py": "x = 1\n"})
    commit(big, {"app.py": "".join(f"y{i} = {i}\n" for i in range(20_000))}, "grow")
    rp = roster(tmp_path, reviewer("rep", "replay", answer=answer(tmp_path, "a.json")))
    argv = [sys.executable, "-m", "workers.cli", "check", "--repo", str(big)]
    argv += ["--base", "HEAD~1", "--roster", str(rp), "--state", str(tmp_path / "s.json")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline()
    proc.stdout.close()
    with proc.stderr:
        stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr


def test_a_shallow_clone_without_the_merge_base_says_to_fetch_the_history(
    tmp_path: Path,
) -> None:
    """CI's shallow clone of a pull request whose base moved on holds no common history:
    the way out is fetching it (--base-exact would show the base's new commits reversed)."""
    origin = new_repo(tmp_path / "origin", {"app.py": "x = 1\n"})
    git(origin, "checkout", "-q", "-b", "feature")
    commit(origin, {"app.py": "x = 1\ny = 2\n"}, "feature")
    git(origin, "checkout", "-q", "main")
    commit(origin, {"version.py": "V = 2\n"}, "main moves on")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "feature", origin.as_uri(), "clone")
    git(clone, "fetch", "-q", "--depth", "1", "origin", "main:refs/remotes/origin/main")
    rp = roster(tmp_path, reviewer("rep", "replay", answer=answer(tmp_path, "a.json")))
    done = review(clone, tmp_path / "state.json", base="origin/main", roster_path=rp)
    assert done.exit_code == 2, done.output
    assert "shallow clone" in done.output and "git fetch --unshallow" in done.output
    assert not (tmp_path / "state.json").exists()
