"""Personas in a round: the charter becomes the lens; an unknown one refuses the round."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from council.personas import load_persona
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
