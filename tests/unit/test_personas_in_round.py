"""Personas in a round: the charter becomes the lens; an unknown one refuses the round."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from council.roster.personas import load_persona
from tests.gitrepo import commit, new_repo
from workers.cli import main


def _repo(tmp_path: Path) -> Path:
    path = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(path, {"app.py": "x = 1\ny = 2\n"}, "change")
    return path


def _roster(tmp_path: Path, persona: str, extra: str = "") -> Path:
    (tmp_path / "a.json").write_text(json.dumps({"findings": []}), encoding="utf-8")
    path = tmp_path / "roster.toml"
    path.write_text(
        extra
        + '[[reviewers]]\nid = "sec"\nbackend = "replay"\nanswer = "a.json"\n'
        + f'persona = "{persona}"\n',
        encoding="utf-8",
    )
    return path


def _check(tmp_path: Path, roster: Path) -> tuple[int, str]:
    result = CliRunner().invoke(
        main,
        [
            "check",
            "--repo",
            str(_repo(tmp_path)),
            "--roster",
            str(roster),
            "--state",
            str(tmp_path / "state.json"),
        ],
    )
    return result.exit_code, result.output


def test_persona_charter_is_the_prompt_lens(tmp_path: Path) -> None:
    """A participant with persona = "security" is prompted with the security charter."""
    code, out = _check(tmp_path, _roster(tmp_path, "security"))
    assert code == 0, out
    body_line = next(line for line in load_persona("security").body.splitlines() if line.strip())
    assert body_line in out


def test_unknown_persona_refuses_the_round(tmp_path: Path) -> None:
    """A persona no charter carries: exit 2 naming it; nothing is asked under its name."""
    code, out = _check(tmp_path, _roster(tmp_path, "astrologer"))
    assert code == 2
    assert "astrologer" in out


def test_roster_persona_dir_overrides_the_builtin(tmp_path: Path) -> None:
    """A charter in the roster's persona_dirs (beside --roster) wins over council's own."""
    lenses = tmp_path / "lenses"
    lenses.mkdir()
    (lenses / "security.md").write_text(
        "---\nname: Our security\ndescription: house rules\n---\nCheck every SQL string twice.\n",
        encoding="utf-8",
    )
    roster = _roster(tmp_path, "security", extra='[council]\npersona_dirs = ["lenses"]\n\n')
    code, out = _check(tmp_path, roster)
    assert code == 0, out
    assert "Check every SQL string twice." in out


def test_the_judges_persona_travels_with_the_round_into_its_late_prompt(tmp_path: Path) -> None:
    """A judge with persona = "security": its charter is the round's ``judge_persona``, not
    an entry of the reviewers' prompts, and the judge's prompt, built once the reviewers
    are filed, reads it from the run's inputs."""
    from workers.app.settings import Settings
    from workers.coordinator.dispatch import open_and_dispatch
    from workers.coordinator.embedded import embedded_council
    from workers.coordinator.preparation import ReviewOptions, prepare
    from workers.coordinator.waiting import Waiter

    roster = _roster(tmp_path, "tests")
    with roster.open("a", encoding="utf-8") as out:
        out.write('\n[judge]\nid = "arbiter"\nbackend = "replay"\nanswer = "a.json"\n')
        out.write('persona = "security"\n')
    settings = Settings(work_dir=tmp_path / "work", state_path=tmp_path / "state.json")
    options = ReviewOptions(repo=_repo(tmp_path), base="HEAD~1", roster=roster, session="s")
    round_ = prepare(settings, options, mode="embedded")
    charter = load_persona("security").body
    assert round_.judge_persona == charter
    assert set(round_.prompts) == {"sec"}
    with embedded_council(settings, 1) as (app, rt):
        open_and_dispatch(app, rt, round_)
        report = Waiter(rt, round_.record, lambda _s: None, lambda: False).wait()
        judged = rt.runs.prompt(round_.record.run_id, "arbiter")
    assert report.status == "settled"
    body_line = next(line for line in charter.splitlines() if line.strip())
    assert judged is not None and body_line in judged
