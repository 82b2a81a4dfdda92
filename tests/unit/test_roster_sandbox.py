"""The roster's sandbox settings, the worker's sandbox policy, and the run's private dirs.

``env`` names the worker's variables a program gets (never a key nor council's Redis),
``network`` lets one keep the network, ``[council] sandbox = "required"`` refuses to run
one unsandboxed; the worker's policy comes from ``CI`` and the run's mode; each run's
files live in a private directory of its own.
"""

from __future__ import annotations

import stat
from pathlib import Path

import fakeredis
import pytest
from pydantic import ValidationError

from council.errors import RosterError
from council.model.participant import Participant
from council.roster import parse_roster
from workers.app.settings import Settings
from workers.coordinator.program_args import repository_path
from workers.execution.backend_request import sandbox_policy
from workers.execution.unpacked_trees import TreeCache
from workers.stores.keys import Keys
from workers.stores.runs import RunStore

HEAD = "[council]\nbackstop_ms = 60000\n"


def program(extra: str = "", backend: str = "command") -> str:
    """One program reviewer table with ``extra`` lines."""
    return f'[[reviewers]]\nid = "lint"\nbackend = "{backend}"\nprogram = "mylint"\n{extra}'


def refusal(text: str) -> RosterError:
    with pytest.raises(RosterError) as caught:
        parse_roster(text, "council.toml")
    return caught.value


def test_env_and_network_are_kept_as_written() -> None:
    """``env`` (names) and ``network`` (a boolean) of command and sarif reviewers."""
    for backend in ("command", "sarif"):
        roster = parse_roster(
            HEAD + program('env = ["SSL_CERT_FILE", "LINT_LEVEL"]\nnetwork = true\n', backend),
            "council.toml",
        )
        (lint,) = roster.reviewers
        assert lint.options["env"] == ["SSL_CERT_FILE", "LINT_LEVEL"]
        assert lint.options["network"] is True
        assert roster.sandbox == "auto" and "sandbox" not in lint.options


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("OPENAI_API_KEY", "model provider's API key"),
        ("ANTHROPIC_API_KEY", "model provider's API key"),
        ("COUNCIL_REDIS_URL", "council's Redis"),
        ("COUNCIL_STATE_PATH", "council setting of the worker"),
        ("HOME", "council sets HOME itself"),
        ("PATH", "council sets PATH itself"),
    ],
)
def test_env_never_passes_a_key_or_councils_redis(name: str, why: str) -> None:
    """Listed or not, these never reach a program: the roster says so, naming why."""
    error = refusal(HEAD + program(f'env = ["{name}"]\n'))
    assert error.path == "reviewers[0].env"
    assert name in str(error) and why in str(error)


def test_env_naming_another_reviewers_api_key_env_is_refused() -> None:
    """A model reviewer's ``api_key_env`` is a provider key too, whatever its name."""
    model = '[[reviewers]]\nid = "hawk"\nbackend = "openai"\nmodel = "m"\n'
    error = refusal(HEAD + model + 'api_key_env = "HAWK_KEY"\n' + program('env = ["HAWK_KEY"]\n'))
    assert error.path == "reviewers[1].env"
    assert "HAWK_KEY" in str(error) and "'hawk'" in str(error)


@pytest.mark.parametrize(
    ("extra", "path"),
    [
        ('env = "SSL_CERT_FILE"\n', "reviewers[0].env"),
        ('env = ["not a name"]\n', "reviewers[0].env"),
        ('network = "yes"\n', "reviewers[0].network"),
        ('sandbox = "required"\n', "reviewers[0].sandbox"),
    ],
)
def test_bad_sandbox_settings_are_refused_with_their_field(extra: str, path: str) -> None:
    """A list of names, a boolean; ``sandbox`` belongs to ``[council]``."""
    assert refusal(HEAD + program(extra)).path == path


def test_council_sandbox_required_reaches_every_program_reviewer() -> None:
    """``[council] sandbox = "required"``: carried into each program reviewer's options
    (workers read it there), not into a model's."""
    model = '[[reviewers]]\nid = "hawk"\nbackend = "openai"\nmodel = "m"\n'
    roster = parse_roster(HEAD + 'sandbox = "required"\n' + program() + model, "council.toml")
    lint, hawk = roster.reviewers
    assert roster.sandbox == "required"
    assert lint.options["sandbox"] == "required" and "sandbox" not in hawk.options
    assert refusal(HEAD + 'sandbox = "strict"\n' + program()).path == "council.sandbox"


@pytest.mark.parametrize(
    ("ci", "mode", "redis", "required"),
    [
        (None, "embedded", None, None),
        ("true", "embedded", None, "in CI (CI is set)"),
        ("false", "embedded", None, None),
        (None, "distributed", "redis://127.0.0.1:6379/0", "on a distributed worker"),
    ],
)
def test_the_workers_policy(
    monkeypatch: pytest.MonkeyPatch,
    ci: str | None,
    mode: str,
    redis: str | None,
    required: str | None,
) -> None:
    """Unsandboxed is allowed only in embedded mode outside CI; COUNCIL_BWRAP names bwrap."""
    monkeypatch.setenv("COUNCIL_BWRAP", "/opt/bwrap")
    for name, value in (("CI", ci), ("COUNCIL_REDIS_URL", redis)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    policy = sandbox_policy(Settings(), mode)
    assert policy.bwrap == "/opt/bwrap" and policy.required == required


def test_the_workers_storage_cap_reaches_its_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    """COUNCIL_PROGRAM_STORAGE_BYTES is each program's storage cap (default 64 MiB); a cap
    under 1 MiB is refused when the worker starts."""
    monkeypatch.delenv("COUNCIL_PROGRAM_STORAGE_BYTES", raising=False)
    assert sandbox_policy(Settings(), "embedded").storage_bytes == 64 * 1024 * 1024
    monkeypatch.setenv("COUNCIL_PROGRAM_STORAGE_BYTES", str(8 * 1024 * 1024))
    assert sandbox_policy(Settings(), "embedded").storage_bytes == 8 * 1024 * 1024
    monkeypatch.setenv("COUNCIL_PROGRAM_STORAGE_BYTES", "4096")
    with pytest.raises(ValidationError, match="program_storage_bytes"):
        Settings()


@pytest.mark.parametrize(
    ("arg", "path"),
    [
        ("tools/rev.py", "tools/rev.py"),
        ("./tools/rev.py", "tools/rev.py"),
        ("./check", "check"),
        ("setup.cfg", "setup.cfg"),
        ("check", None),
        ("--output-format", None),
        ("/usr/share/rules.yml", None),
        (".", None),
        ("../outside.py", None),
        ("a/../../outside.py", None),
    ],
)
def test_which_args_entries_may_name_a_repository_file(arg: str, path: str | None) -> None:
    """A relative entry with a / or a . (not a flag, not leaving the tree) may name a
    file of the repository; a bare word is taken for a subcommand."""
    assert repository_path(arg) == path


def test_each_run_has_a_private_directory(tmp_path: Path) -> None:
    """0700, named with random characters, one per run; no shared council-trees."""
    trees = TreeCache(tmp_path)
    one, two = trees.run_dir("r1"), trees.run_dir("r2")
    assert one != two and trees.run_dir("r1") == one
    for path in (one, two):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
        assert path.parent == tmp_path and path.name.startswith("council-run-")
    assert not (tmp_path / "council-trees").exists()
    program = trees.program("r1", "lint", b"#!/bin/sh\n")
    files = trees.arg_files("r1", "lint", {"0:644:tools/rev.py": b"print(1)\n", "bad": b""})
    assert program.parent.parent == one and stat.S_IMODE(program.stat().st_mode) == 0o755
    assert list(files) == [0] and files[0].name == "rev.py" and one in files[0].parents
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o644


def test_args_files_travel_with_the_run_and_expire_with_it() -> None:
    """Stored with the run's inputs, read by one review and by a batch (same round
    trip), and listed among the run's keys for expiry."""
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    runs = RunStore(client, Keys("council:"))
    people = [
        Participant(id=pid, backend="command", options={"program": "python3", "args": ["a.py"]})
        for pid in ("lint", "rev")
    ]
    files = {"rev": {"0:755:tools/rev.py": b"print(1)\n"}}
    runs.put_inputs("r1", people, {"lint": "p", "rev": "p"}, None, {}, arg_files=files)
    assert runs.arg_files("r1", "rev") == files["rev"] and runs.arg_files("r1", "lint") == {}
    assert runs.batch_inputs("r1", ["lint", "rev"]).arg_files == files
    assert client.hexists("council:run:r1", "p:rev#args")  # the args ride in the run hash
