"""``COUNCIL_DURABILITY`` read and checked (workers.app.durability): the values, and the
one-line refusals of a Redis that cannot give it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from tests.gitrepo import commit, new_repo
from workers.app.durability import Durability, refusal
from workers.app.settings import Settings
from workers.cli import main


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("", None),
        ("aof", Durability(aof=True, replicas=0)),
        ("replicas:2", Durability(aof=False, replicas=2)),
        ("aof+replicas:1", Durability(aof=True, replicas=1)),
    ],
)
def test_the_values(text: str, wanted: Durability | None) -> None:
    assert Durability.parse(Settings(durability=text).durability) == wanted


@pytest.mark.parametrize("text", ["fsync", "replicas:0", "replicas:", "aof+", "aof replicas:1"])
def test_other_values_are_refused(text: str) -> None:
    with pytest.raises(ValidationError):
        Settings(durability=text)


class _Info:
    def __init__(self, **info: Any) -> None:
        self._info = info

    def info(self) -> dict[str, Any]:
        return self._info


def test_waitaof_needs_redis_7_2() -> None:
    old = _Info(redis_version="7.0.15", aof_enabled=1, connected_slaves=0)
    why = refusal(old, Durability(aof=True, replicas=0), "aof")
    assert why is not None and "Redis 7.2 or later" in why and "7.0.15" in why
    assert "\n" not in why
    new = _Info(redis_version="7.2.4", aof_enabled=1, connected_slaves=0)
    assert refusal(new, Durability(aof=True, replicas=0), "aof") is None
    no_aof = _Info(redis_version="7.2.4", aof_enabled=0, connected_slaves=0)
    assert "appendonly yes" in str(refusal(no_aof, Durability(aof=True, replicas=0), "aof"))


def test_replicas_must_be_connected() -> None:
    one = _Info(redis_version="7.0.15", aof_enabled=1, connected_slaves=1)
    assert refusal(one, Durability(aof=False, replicas=1), "replicas:1") is None
    why = refusal(one, Durability(aof=False, replicas=2), "replicas:2")
    assert why is not None and "has 1 connected" in why


def test_embedded_mode_says_durability_has_no_effect(tmp_path: Path) -> None:
    """Embedded mode has no Redis to confirm COUNCIL_DURABILITY: the review runs and says
    so, instead of leaving the user to believe a WAITAOF was confirmed."""
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(repo, {"app.py": "x = 1\ny = 2\n"}, "two")
    (tmp_path / "a.json").write_text('{"findings": []}', encoding="utf-8")
    rp = tmp_path / "roster.toml"
    rp.write_text('[[reviewers]]\nid = "rep"\nbackend = "replay"\nanswer = "a.json"\n')
    argv = ["review", "--repo", str(repo), "--base", "HEAD~1", "--no-progress"]
    argv += ["--state", str(tmp_path / "state.json"), "--roster", str(rp)]
    env = {"COUNCIL_DURABILITY": "AOF", "COUNCIL_REDIS_URL": ""}
    done = CliRunner().invoke(main, argv, env=env)
    assert done.exit_code == 0, done.output
    assert "COUNCIL_DURABILITY=aof has no effect in embedded mode" in done.output
