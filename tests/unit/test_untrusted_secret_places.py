"""The change under review is untrusted: it may not slip a secret past the masking by
putting it where the diff does not show it (a file the roster's ``[paths]`` exclude, a
file's name).

Each test plays the attacker on a real git repository: the BASE commit holds the code,
the head is the pull request, the roster (outside the repository, as CI passes
``--roster``) excludes ``*.lock``. ``council review`` runs (embedded mode, in this
process) as CI runs it; the model reviewer is the fake OpenAI server, which records every
request. Source: issue "The change under review is untrusted".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner

from tests.gitrepo import commit, new_repo
from tests.sandboxing import bwrap_or_skip
from workers.cli import main
from workers.secret_scan import EXCLUDED_FILE_MAX_BYTES

LOCK_KEY = "AKIA" + "Q3EGRMZ7XK5TBN2W"
"""In ``deps.lock``, a file ``[paths]`` excludes (the diff shows only its header)."""

NAME_KEY = "AKIA" + "J7WQ2NV4XR8TLM3P"
"""In a file's name: ``keys/<NAME_KEY>.txt``."""

BIG_KEY = "AKIA" + "Z5HK9QP2WD6RYN4C"
"""In ``vendor.lock``, an excluded file over the scan's cap (withheld, never read)."""

VALUES = (LOCK_KEY, NAME_KEY, BIG_KEY)

LOCK = f'resolved "https://registry.example/left-pad"\naws_access_key_id = "{LOCK_KEY}"\n'

BIG = f'aws_access_key_id = "{BIG_KEY}"\n' + "".join(
    f"pkg-{n} 1.0.{n} sha512-{n:064d}\n" for n in range(EXCLUDED_FILE_MAX_BYTES // 80 + 10)
)

APP = "import subprocess\n\n\ndef run(cmd):\n    return subprocess.call(cmd, shell=True)\n"

SCANNER = f"""\
#!{sys.executable}
# An analyzer that reads the real tree and names what it finds, as scanners do.
import json, os
name = os.listdir("keys")[0]
print(json.dumps({{"findings": [{{
    "subject": "a key file is committed: keys/" + name,
    "label": "issue", "severity": "major",
    "location": {{"kind": "line", "file": "keys/" + name, "start": 1}},
}}]}}))
"""


def test_secrets_in_excluded_files_and_file_names_reach_no_model_and_no_report(
    tmp_path: Path,
) -> None:
    """The pull request adds an AWS key in an excluded ``deps.lock``, one in a file's
    name, one in an excluded lock file too big to scan, and a shell injection in
    ``app.py``. The model reviewer lists, greps and reads the tree: no request holds any
    of the keys (the named file goes by its masked name, the big one is withheld); an
    analyzer reading the real tree names the key file; a replay reviewer quotes the two
    keys council read. No output holds a key, the notes name the files masked, and the injection is
    still reviewed."""
    from tests.fakes import FakeOpenAI, Scenario, ToolCall
    from tests.fakes.review import BACKENDS

    bwrap_or_skip()
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n", "tools/scan.py": SCANNER})
    (repo / "tools" / "scan.py").chmod(0o755)
    commit(repo, {"tools/scan.py": SCANNER}, "executable")
    named = f"keys/{NAME_KEY}.txt"
    pull = {"app.py": APP, "deps.lock": LOCK, named: "staging\n", "vendor.lock": BIG}
    commit(repo, pull, "the pull request")
    quoting = {
        "subject": f"credentials committed: {LOCK_KEY}, {NAME_KEY}",
        "label": "issue",
        "severity": "critical",
        "location": {"kind": "file", "file": named},
    }
    (tmp_path / "quote.json").write_text(json.dumps({"findings": [quoting]}))
    injection = {
        "subject": "shell injection in run",
        "label": "issue",
        "severity": "critical",
        "location": {"kind": "line", "file": "app.py", "start": 5},
    }
    calls = (
        ToolCall("list_files", {}),
        ToolCall("grep", {"pattern": "AKIA|aws_access_key_id"}),
        ToolCall("read_file", {"path": "deps.lock"}),
        ToolCall("read_file", {"path": "vendor.lock"}),
        ToolCall("read_file", {"path": "keys/[masked secret].txt"}),
        ToolCall("read_file", {"path": "keys/missing.txt"}),
    )
    with FakeOpenAI(api_key="sk-test-0123456789abcdef") as server:
        server.script(
            Scenario(tool_calls=calls), Scenario(text=json.dumps({"findings": [injection]}))
        )
        roster = tmp_path / "roster.toml"
        roster.write_text(
            "[council]\nbackstop_ms = 60000\nidle_ms = 60000\n"
            + '[paths]\nexclude = ["*.lock"]\n'
            + '[[reviewers]]\nid = "hawk"\nbackend = "openai"\nmodel = "fake-model"\n'
            + f'base_url = "{server.base_url}"\n'
            + 'tools = ["read_file", "list_files", "grep"]\n'
            + '[[reviewers]]\nid = "quoter"\nbackend = "replay"\nanswer = "quote.json"\n'
            + f'[[reviewers]]\nid = "scan"\nbackend = "command"\nprogram = "{repo}/tools/scan.py"\n'
        )
        out = tmp_path / "out"
        formats = [
            a
            for f in ("markdown", "json", "sarif", "github-review", "gitlab-codequality")
            for a in ("--format", f)
        ]
        argv = ["review", "--repo", str(repo), "--base", "HEAD~1", "--no-progress"]
        argv += ["--state", str(tmp_path / "state.json"), "--roster", str(roster)]
        argv += ["--fail-on", "never", "--output", str(out), *formats]
        done = CliRunner().invoke(main, argv, env={"OPENAI_API_KEY": "sk-test-0123456789abcdef"})
        sent = json.dumps([r.body for r in server.requests])
        replies = BACKENDS[0].tool_replies(server.requests[1].body)
    assert done.exit_code == 0, done.output
    assert len(server.requests) == 2
    assert not [v for v in VALUES if v in sent]
    listing, grepped, lock, big, renamed, missing = replies
    assert "keys/[masked secret].txt" in listing and "deps.lock" in listing
    assert 'deps.lock:2: aws_access_key_id = "[masked secret]"' in grepped
    assert 'aws_access_key_id = "[masked secret]"' in lock
    assert "withheld from reviewer models" in big and "sha512" not in big
    assert "staging" in renamed and "keys/missing.txt" in missing
    assert "keys/[masked secret].txt" in server.requests[0].body["messages"][-1]["content"]
    written = {p.name: p.read_text() for p in out.iterdir()}
    for name, text in {**written, "stdout": done.output}.items():
        assert not [v for v in VALUES if v in text], name
    report = json.loads(written["council.json"])
    subjects = {
        m.get("participant", f["origin"]["participant"]): m["subject"]
        for f in report["findings"]
        for m in f.get("members") or [f]
    }
    assert subjects["hawk"] == "shell injection in run"  # the rest is still reviewed
    assert subjects["quoter"] == "credentials committed: [masked secret], [masked secret]"
    assert subjects["scan"] == "a key file is committed: keys/[masked secret].txt"
    (excluded,) = [n for n in report["notes"] if "excluded by [paths]" in n]
    assert "deps.lock" in excluded and "vendor.lock" in excluded
    (note,) = [n for n in report["notes"] if "likely secret(s)" in n]
    assert note.startswith("2 likely secret(s) the change adds were masked")
    assert '"deps.lock":2' in note and '"keys/[masked secret].txt" (file name' in note
    assert '1 excluded file(s) were not scanned for secrets and are withheld' in note
    assert '"vendor.lock"' in note
