"""Programs and recordings a roster names are checked where they are read, up front.

``council check`` refuses (exit 2) what cannot run on this machine in embedded mode; the
coordinator refuses (exit 2, nothing sent) a relative program it reads that is missing,
a directory, a link, or not executable there; the program runner says a directory is a
directory; a run abandoned at the second interrupt says what it leaves in each mode.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import fakeredis
import pytest
from click.testing import CliRunner, Result

from council.model.participant import Participant
from reviewers.base import ReviewRequest
from reviewers.programs.command import CommandReviewer
from tests.gitrepo import commit, git, new_repo
from workers.app.services import Runtime, build_runtime
from workers.cli import main
from workers.cli.context import CliContext

ROUND = "[council]\nbackstop_ms = 60000\nidle_ms = 60000\n"

REVIEWER = '#!/bin/sh\ntouch "$0.ran"\necho \'{"findings": []}\'\n'
"""A command reviewer that leaves ``<itself>.ran`` behind when it runs, and answers."""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose last commit (HEAD~1..HEAD) adds one line to app.py."""
    path = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(path, {"app.py": "x = 1\ny = 2\n"}, "grow")
    return path


@pytest.fixture(autouse=True)
def _embedded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Embedded mode unless a test says otherwise."""
    for name in [k for k in os.environ if k.startswith("COUNCIL_")]:
        monkeypatch.delenv(name)


def reviewer(pid: str, backend: str, **options: object) -> str:
    """One [[reviewers]] table of a roster."""
    lines = ["[[reviewers]]", f'id = "{pid}"', f'backend = "{backend}"']
    lines += [f"{key} = {json.dumps(value)}" for key, value in options.items()]
    return "\n".join(lines) + "\n"


def roster(folder: Path, *tables: str) -> Path:
    """Write roster.toml in ``folder``; return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "roster.toml"
    path.write_text(ROUND + "".join(tables), encoding="utf-8")
    return path


def script(path: Path, mode: int) -> Path:
    """Write :data:`REVIEWER` at ``path`` with ``mode``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(REVIEWER, encoding="utf-8")
    path.chmod(mode)
    return path


def council(*args: str, env: dict[str, str] | None = None) -> Result:
    """Run the CLI in this process."""
    return CliRunner().invoke(main, list(args), env=env)


def check(repo: Path, tmp_path: Path, rp: Path | None = None) -> Result:
    """``council check`` of HEAD~1..HEAD, with ``--roster rp`` when given."""
    argv = ["check", "--repo", str(repo), "--state", str(tmp_path / "state.json")]
    return council(*argv, *(["--roster", str(rp)] if rp else []))


def review(repo: Path, tmp_path: Path, rp: Path | None = None) -> Result:
    """``council review`` of HEAD~1..HEAD, with ``--roster rp`` when given."""
    argv = ["review", "--repo", str(repo), "--base", "HEAD~1", "--no-progress"]
    argv += ["--state", str(tmp_path / "state.json")]
    return council(*argv, *(["--roster", str(rp)] if rp else []))


# council check: what cannot run here, in embedded mode


def test_check_refuses_an_absolute_program_that_is_missing(repo: Path, tmp_path: Path) -> None:
    """An absolute program that does not exist: exit 2 naming the id, the path, the fix."""
    missing = tmp_path / "nowhere" / "prog"
    done = check(
        repo, tmp_path, roster(tmp_path, reviewer("ghost", "command", program=str(missing)))
    )
    assert done.exit_code == 2, done.output
    assert f"ghost: program '{missing}' does not exist" in done.output
    assert "set program to the path of an executable" in done.output
    assert "roster OK" not in done.output


def test_embedded_review_refuses_what_check_refuses(repo: Path, tmp_path: Path) -> None:
    """In embedded mode `council review` runs every reviewer here: an absolute program
    that is missing, or a replay file that is not there, is exit 2 before anything runs
    (it was exit 3, "participant failed", after the run)."""
    missing = tmp_path / "nowhere" / "prog"
    rp = roster(
        tmp_path,
        reviewer("ghost", "command", program=str(missing)),
        reviewer("rep", "replay", answer="absent.json"),
    )
    done = review(repo, tmp_path, rp)
    assert done.exit_code == 2, done.output
    assert "cannot run on this machine" in done.output
    assert f"ghost: program '{missing}' does not exist" in done.output
    assert "rep: replay answer file" in done.output
    assert not (tmp_path / "state.json").exists()  # no run was opened


def test_check_refuses_a_directory_as_program(repo: Path, tmp_path: Path) -> None:
    """``program = "/some/dir"``: exit 2 saying it is a directory, not a program."""
    folder = tmp_path / "tools"
    folder.mkdir()
    done = check(repo, tmp_path, roster(tmp_path, reviewer("lint", "sarif", program=str(folder))))
    assert done.exit_code == 2, done.output
    assert f"lint: program '{folder}' is a directory, not a program" in done.output
    assert "roster OK" not in done.output


def test_check_refuses_an_absolute_program_that_is_not_executable(
    repo: Path, tmp_path: Path
) -> None:
    """An absolute program without an execute bit: exit 2 saying to chmod +x it."""
    prog = script(tmp_path / "rev.sh", 0o644)
    done = check(repo, tmp_path, roster(tmp_path, reviewer("rev", "command", program=str(prog))))
    assert done.exit_code == 2, done.output
    assert f"rev: program '{prog}' is not executable; run chmod +x {prog}" in done.output


def test_check_refuses_a_missing_replay_recording(repo: Path, tmp_path: Path) -> None:
    """A replay answer file missing beside the roster: exit 2 naming the id and the path."""
    rp = roster(tmp_path, reviewer("rep", "replay", answer="nope.json"))
    done = check(repo, tmp_path, rp)
    assert done.exit_code == 2, done.output
    assert f"rep: replay answer file '{tmp_path / 'nope.json'}' does not exist" in done.output
    assert "write it there, or set answer to its path" in done.output


def test_check_names_every_reviewer_that_cannot_run(repo: Path, tmp_path: Path) -> None:
    """Two troubles at once: both are named in one refusal."""
    (tmp_path / "a.json").write_text('{"findings": []}', encoding="utf-8")
    rp = roster(
        tmp_path,
        reviewer("rep", "replay", answer="a.json", journal="j.jsonl"),
        reviewer("ghost", "command", program=str(tmp_path / "nowhere")),
    )
    done = check(repo, tmp_path, rp)
    assert done.exit_code == 2, done.output
    assert "rep: replay journal file" in done.output
    assert "ghost: program" in done.output


def test_check_accepts_programs_and_recordings_that_are_there(repo: Path, tmp_path: Path) -> None:
    """An executable absolute program and a present recording: roster OK, exit 0."""
    prog = script(tmp_path / "rev.sh", 0o755)
    (tmp_path / "a.json").write_text('{"findings": []}', encoding="utf-8")
    rp = roster(
        tmp_path,
        reviewer("rev", "command", program=str(prog)),
        reviewer("rep", "replay", answer="a.json"),
    )
    done = check(repo, tmp_path, rp)
    assert done.exit_code == 0, done.output
    assert "roster OK" in done.output


def _fake_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    """Distributed mode on an in-process fake Redis."""
    server = fakeredis.FakeServer()

    def runtime(self: CliContext) -> Runtime:
        return build_runtime(self.settings, fakeredis.FakeRedis(server=server))

    monkeypatch.setattr(CliContext, "runtime", runtime)


def test_check_in_distributed_mode_only_warns_about_this_machine(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Distributed: workers may hold an absolute program this machine lacks, so it is a
    warning, and the roster is OK."""
    _fake_runtime(monkeypatch)
    missing = tmp_path / "nowhere" / "prog"
    rp = roster(tmp_path, reviewer("ghost", "command", program=str(missing)))
    done = council(
        "check", "--repo", str(repo), "--roster", str(rp),
        env={"COUNCIL_REDIS_URL": "redis://127.0.0.1:1/0"},
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert f"warning: ghost: program '{missing}' does not exist on this machine" in done.output
    assert "roster OK" in done.output


# the coordinator: relative programs where it reads them


def test_a_missing_program_beside_the_roster_is_refused_before_anything_runs(
    repo: Path, tmp_path: Path
) -> None:
    """``--roster`` with a relative program that is not beside it: exit 2 at configuration
    time, in the same words as for the base tree."""
    rp = roster(tmp_path / "conf", reviewer("rel", "command", program="./missing.sh"))
    done = review(repo, tmp_path, rp)
    assert done.exit_code == 2, done.output
    assert "reviewers[0].program: './missing.sh' (reviewer 'rel') is not beside the roster" in (
        done.output
    )
    assert "or name a program on PATH or an absolute path" in done.output


def test_a_non_executable_program_beside_the_roster_is_refused(repo: Path, tmp_path: Path) -> None:
    """A 0644 program beside ``--roster`` is refused (exit 2, chmod +x) and never run,
    though the worker would write its copy executable."""
    prog = script(tmp_path / "conf" / "noexec.sh", 0o644)
    rp = roster(tmp_path / "conf", reviewer("nx", "command", program="./noexec.sh"))
    done = review(repo, tmp_path, rp)
    assert done.exit_code == 2, done.output
    assert f"'./noexec.sh' (reviewer 'nx') beside the roster ({prog}) is not executable" in (
        done.output
    )
    assert f"chmod +x {prog}" in done.output
    assert not list(tmp_path.rglob("*.ran"))
    assert check(repo, tmp_path, rp).exit_code == 2


def test_a_directory_beside_the_roster_is_not_a_program(repo: Path, tmp_path: Path) -> None:
    """A relative program naming a directory beside ``--roster``: exit 2 saying so."""
    (tmp_path / "conf" / "tools").mkdir(parents=True)
    rp = roster(tmp_path / "conf", reviewer("dir", "command", program="./tools"))
    done = review(repo, tmp_path, rp)
    assert done.exit_code == 2, done.output
    assert "is a directory beside the roster" in done.output


def test_an_executable_program_beside_the_roster_runs(repo: Path, tmp_path: Path) -> None:
    """The same program with its execute bit: the review runs it and passes."""
    script(tmp_path / "conf" / "rev.sh", 0o755)
    rp = roster(tmp_path / "conf", reviewer("rev", "command", program="./rev.sh"))
    done = review(repo, tmp_path, rp)
    assert done.exit_code == 0, done.output


def based(tmp_path: Path, files: dict[str, str], *, modes: dict[str, str] | None = None) -> Path:
    """A repository whose base commit holds ``files`` (a council.toml among them), with
    each ``modes`` path's git mode set (``+x`` / ``-x``), and HEAD one commit on."""
    path = new_repo(tmp_path / "based", {"app.py": "x = 1\n", **files})
    for name, flip in (modes or {}).items():
        git(path, "update-index", f"--chmod={flip}", name)
    git(path, "commit", "-q", "--allow-empty", "-m", "modes")
    commit(path, {"app.py": "x = 1\ny = 2\n"}, "grow")
    return path


BASE_ROSTER = ROUND + reviewer("rev", "command", program="./tools/rev.sh")


def test_a_program_committed_without_its_executable_bit_is_refused(tmp_path: Path) -> None:
    """Base-tree program of git mode 100644 (though executable in the working tree):
    exit 2 saying to commit the mode with git update-index --chmod=+x."""
    repo = based(
        tmp_path,
        {"council.toml": BASE_ROSTER, "tools/rev.sh": REVIEWER},
        modes={"tools/rev.sh": "-x"},
    )
    (repo / "tools" / "rev.sh").chmod(0o755)
    done = review(repo, tmp_path)
    assert done.exit_code == 2, done.output
    assert "'./tools/rev.sh' (reviewer 'rev') is not executable in the base tree" in done.output
    assert "git mode 100644" in done.output
    assert "git update-index --chmod=+x tools/rev.sh" in done.output
    assert not list(tmp_path.rglob("*.ran"))


def test_a_program_committed_executable_runs(tmp_path: Path) -> None:
    """The same program committed with git mode 100755: the review runs it and passes."""
    repo = based(
        tmp_path,
        {"council.toml": BASE_ROSTER, "tools/rev.sh": REVIEWER},
        modes={"tools/rev.sh": "+x"},
    )
    done = review(repo, tmp_path)
    assert done.exit_code == 0, done.output


def test_a_missing_program_in_the_base_tree_is_refused(tmp_path: Path) -> None:
    """The base-tree counterpart of the --roster case: exit 2, same fix."""
    repo = based(tmp_path, {"council.toml": BASE_ROSTER})
    done = review(repo, tmp_path)
    assert done.exit_code == 2, done.output
    assert "'./tools/rev.sh' (reviewer 'rev') is not in the base tree" in done.output
    assert "or name a program on PATH or an absolute path" in done.output


def test_a_directory_or_a_link_in_the_base_tree_is_refused(tmp_path: Path) -> None:
    """A directory, and a symbolic link (whose bytes are only the target's name)."""
    text = ROUND + reviewer("dir", "command", program="./tools")
    repo = based(tmp_path, {"council.toml": text, "tools/rev.sh": REVIEWER})
    done = review(repo, tmp_path)
    assert done.exit_code == 2, done.output
    assert "'./tools' (reviewer 'dir') is a directory in the base tree" in done.output

    text = ROUND + reviewer("link", "command", program="./link.sh")
    linked = tmp_path / "linked"
    (linked / "based").mkdir(parents=True)
    (linked / "based" / "link.sh").symlink_to("rev.sh")
    repo = based(linked, {"council.toml": text, "rev.sh": REVIEWER}, modes={"rev.sh": "+x"})
    done = review(repo, linked)
    assert done.exit_code == 2, done.output
    assert "'./link.sh' (reviewer 'link') is a symbolic link in the base tree" in done.output


def test_a_judge_program_is_named_as_the_judges(repo: Path, tmp_path: Path) -> None:
    """A judge's missing relative program is named at ``judge.program``."""
    text = reviewer("rev", "command", program="true")
    text += '[judge]\nid = "arbiter"\nbackend = "command"\nprogram = "./judge.sh"\n'
    done = review(repo, tmp_path, roster(tmp_path, text))
    assert done.exit_code == 2, done.output
    assert "judge.program: './judge.sh' (reviewer 'arbiter') is not beside" in done.output


# the program runner


class _NoJournal:
    """A journal sink for a program that never starts."""

    def append(self, raw: str) -> str:
        raise AssertionError(f"nothing should be journalled: {raw}")


def test_a_directory_program_is_said_to_be_a_directory(tmp_path: Path) -> None:
    """At run time, ``program = "/some/dir"`` fails saying it is a directory, not "not found"."""
    participant = Participant(id="p", backend="command", options={"program": str(tmp_path)})
    request = ReviewRequest(participant=participant, prompt="", journal=_NoJournal())
    result = CommandReviewer().review(request)
    assert result.failure is not None
    assert f"program '{tmp_path}' is a directory, not a program" in result.failure
    assert "not found" not in result.failure


# the second interrupt


def _interrupted(*_args: Any, **_kwargs: Any) -> Any:
    raise KeyboardInterrupt


def test_second_interrupt_in_embedded_mode_names_no_workers(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Embedded: exit 3; no workers and no `council show` (it needs Redis)."""
    import workers.cli.review.running as review_module

    monkeypatch.setattr(review_module, "_run", _interrupted)
    script(tmp_path / "conf" / "rev.sh", 0o755)
    done = review(
        repo, tmp_path, roster(tmp_path / "conf", reviewer("rev", "command", program="./rev.sh"))
    )
    assert done.exit_code == 3, done.output
    assert "abandoned at the second interrupt" in done.output
    assert "in embedded mode its reviewers ran in this process" in done.output
    assert "workers" not in done.output and "council show" not in done.output


def test_second_interrupt_in_distributed_mode_points_at_the_run(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Distributed: exit 3; reviewers on workers may still run, `council show <the run>`."""
    import workers.cli.review.running as review_module

    _fake_runtime(monkeypatch)
    monkeypatch.setattr(review_module, "_run", _interrupted)
    script(tmp_path / "conf" / "rev.sh", 0o755)
    rp = roster(tmp_path / "conf", reviewer("rev", "command", program="./rev.sh"))
    done = council(
        "review", "--repo", str(repo), "--base", "HEAD~1", "--roster", str(rp), "--no-progress",
        env={"COUNCIL_REDIS_URL": "redis://127.0.0.1:1/0"},
    )  # fmt: skip
    assert done.exit_code == 3, done.output
    assert "reviewers on workers may still be running" in done.output
    run_id = done.output.split("run ", 1)[1].split(" ", 1)[0]
    assert f"`council show {run_id}`" in done.output
    assert "council show RUN" not in done.output
