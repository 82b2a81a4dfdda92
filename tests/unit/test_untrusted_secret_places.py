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
from workers.cli.options import FILE_NAMES
from workers.coordinator.secret_scan import EXCLUDED_FILE_MAX_BYTES
from workers.git.repository import Repository

LOCK_KEY = "AKIA" + "Q3EGRMZ7XK5TBN2W"
"""In ``deps.lock``, a file ``[paths]`` excludes (the diff shows only its header)."""

NAME_KEY = "AKIA" + "J7WQ2NV4XR8TLM3P"
"""In a file's name: ``keys/<NAME_KEY>.txt``."""

BIG_KEY = "AKIA" + "Z5HK9QP2WD6RYN4C"
"""In ``vendor.lock``, an excluded file over the scan's cap (withheld, never read)."""

LINK_KEY = "AKIA" + "M4TX8RC2VN6QJW9B"
"""The target of ``docs/key``, a symbolic link the diff shows."""

LOCK_LINK_KEY = "AKIA" + "R2NB7WK5QX3MZT8H"
"""The target of ``pin.lock``, an excluded symbolic link."""

VALUES = (LOCK_KEY, NAME_KEY, BIG_KEY, LINK_KEY, LOCK_LINK_KEY)

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
    "label": "issue", "severity": "medium",
    "location": {{"kind": "line", "file": "keys/" + name, "start": 1}},
}}]}}))
"""

KEY_RULE = "SEC001"

SARIF_SCANNER = f"""\
#!{sys.executable}
# A SARIF analyzer naming the key file as it is in the real tree.
import json, os
uri = "keys/" + os.listdir("keys")[0]
print(json.dumps({{"version": "2.1.0", "runs": [{{
    "tool": {{"driver": {{"name": "keyscan"}}}},
    "results": [{{
        "ruleId": "{KEY_RULE}", "level": "error",
        "message": {{"text": "a key file in the tree"}},
        "locations": [{{"physicalLocation": {{
            "artifactLocation": {{"uri": uri}}, "region": {{"startLine": 1}}}}}}],
    }}],
}}]}}))
"""


def test_secrets_in_excluded_files_and_file_names_reach_no_model_and_no_report(
    tmp_path: Path,
) -> None:
    """The pull request adds an AWS key in an excluded ``deps.lock``, one in a file's
    name, one in an excluded lock file too big to scan, and a shell injection in
    ``app.py``. The model reviewer lists, greps and reads the tree: no request holds any
    of the keys (the named file goes by its masked name, the big one is withheld); two
    analyzers reading the real tree (one answering SARIF) name the key file, and their
    findings land on its masked name in the diff; a replay reviewer quotes the two
    keys council read. No output holds a key, the notes name the files masked,
    and the injection is still reviewed."""
    from tests.fakes import FakeOpenAI, Scenario, ToolCall
    from tests.fakes.review import BACKENDS

    bwrap_or_skip()
    tools = {"tools/scan.py": SCANNER, "tools/sarif.py": SARIF_SCANNER}
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n", **tools})
    for tool in tools:
        (repo / tool).chmod(0o755)
    commit(repo, tools, "executable")
    named = f"keys/{NAME_KEY}.txt"
    pull = {"app.py": APP, "deps.lock": LOCK, named: "staging\n", "vendor.lock": BIG}
    (repo / "docs").mkdir()
    (repo / "docs" / "key").symlink_to(LINK_KEY)
    (repo / "pin.lock").symlink_to(LOCK_LINK_KEY)
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
        ToolCall("read_file", {"path": "docs/key"}),
        ToolCall("read_file", {"path": "pin.lock"}),
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
            + f'[[reviewers]]\nid = "sarif"\nbackend = "sarif"\nprogram = "{repo}/tools/sarif.py"\n'
        )
        out = tmp_path / "out"
        formats = [a for f in FILE_NAMES for a in ("--format", f)]
        argv = ["review", "--repo", str(repo), "--base", "HEAD~1", "--no-progress"]
        argv += ["--state", str(tmp_path / "state.json"), "--roster", str(roster)]
        argv += ["--fail-on", "never", "--post", "all", "--output", str(out), *formats]
        done = CliRunner().invoke(main, argv, env={"OPENAI_API_KEY": "sk-test-0123456789abcdef"})
        sent = json.dumps([r.body for r in server.requests])
        replies = BACKENDS[0].tool_replies(server.requests[1].body)
    assert done.exit_code == 0, done.output
    assert len(server.requests) == 2
    assert not [v for v in VALUES if v in sent]
    listing, grepped, lock, big, renamed, missing, *_ = replies
    assert "keys/[masked secret].txt" in listing and "deps.lock" in listing
    assert 'deps.lock:2: aws_access_key_id = "[masked secret]"' in grepped
    assert 'aws_access_key_id = "[masked secret]"' in lock
    assert "withheld from reviewer models" in big and "sha512" not in big
    assert "staging" in renamed and "keys/missing.txt" in missing
    assert "keys/[masked secret].txt" in server.requests[0].body["messages"][-1]["content"]
    written = {p.name: p.read_text() for p in out.iterdir()}
    state = (tmp_path / "state.json").read_text()
    for name, text in {**written, "stdout": done.output, "state": state}.items():
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
    assert subjects["sarif"] == f"{KEY_RULE}: a key file in the tree"
    assert report["off_diff"] == {}  # the findings on the key file land on the masked diff
    review = json.loads(written["github-review.json"])  # GitHub knows no masked path:
    assert [c["path"] for c in review["comments"]] == ["app.py"]  # those stay in the body
    assert "keys/[masked secret].txt" in review["body"]
    checks = json.loads(written["github-checks.json"])
    assert {a["path"] for a in checks["output"]["annotations"]} == {"app.py"}
    threads = json.loads(written["gitlab-discussions.json"])["discussions"]
    assert [t["position"]["new_path"] for t in threads] == ["app.py"]
    (excluded,) = [n for n in report["notes"] if "file(s) excluded by [paths]" in n]
    assert "deps.lock" in excluded and "vendor.lock" in excluded
    (note,) = [n for n in report["notes"] if "likely secret(s)" in n]
    assert note.startswith("4 likely secret(s)")
    assert '"docs/key":1' in note and '"pin.lock":1' in note
    assert '"deps.lock":2' in note and '"keys/[masked secret].txt" (file name' in note
    assert "1 file(s) over the secret scan's caps were not scanned and are withheld" in note
    assert '"vendor.lock" (not scanned: excluded by [paths]; ' in note


def test_a_key_in_a_directory_name_is_masked_in_the_diff_and_the_tree(tmp_path: Path) -> None:
    """The change adds ``creds/<key>/id.txt`` (which names its own directory) and an
    executable ``creds/<key>/run.sh``, and renames ``old.txt`` into the directory: the
    diff reviewers read names only ``creds/[masked secret]/…``, headers and lines alike;
    the tree models read has the directory under its masked name (the files' modes and
    other contents kept, the key masked inside them), and nothing else moved; the masker
    a worker builds knows the value."""
    from council.change.diff import read_change
    from council.change.secret_masks import MASK, Masker, mask_change, values_from
    from workers.coordinator.secret_scan import find_secrets
    from workers.execution.backend_request import _masked_files
    from workers.execution.unpacked_trees import TreeCache

    folder = f"creds/{NAME_KEY}"
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n", "old.txt": "old\n"})
    commit(
        repo,
        {f"{folder}/id.txt": f"see {folder}\n", f"{folder}/run.sh": "echo\n", "old.txt": None},
        "keys",
    )
    (repo / folder / "old.txt").write_text("old\n")
    (repo / folder / "run.sh").chmod(0o755)
    commit(repo, {}, "rename")
    git_repo = Repository(repo)
    raw = git_repo.diff("HEAD~2", "HEAD")
    change = read_change(raw, (), ())[0]
    spans = find_secrets(change, paths=git_repo.changed_paths("HEAD~2", "HEAD"))
    assert {(s.place, s.kind) for s in spans} == {(p, "AWS Access Key") for p in ("line", "path")}
    masked = mask_change(change, spans)
    assert NAME_KEY not in masked.text and NAME_KEY not in " ".join(masked.paths)
    assert f"rename to creds/{MASK}/old.txt" in masked.text
    assert f"+see creds/{MASK}" in masked.text
    assert values_from(spans, lambda path: None) == (NAME_KEY,)
    assert Masker(values_from(spans, lambda path: None)).text(folder) == f"creds/{MASK}"
    cache = TreeCache(tmp_path / "work")
    tree = cache.tree("r1", lambda: git_repo.archive("HEAD", 50_000_000))
    assert tree is not None
    laid = cache.overlaid("r1", "masked", tree, lambda: _masked_files(tree, spans))
    shown = sorted(p.relative_to(laid).as_posix() for p in laid.rglob("*") if p.is_file())
    assert shown == ["app.py", *(f"creds/{MASK}/{n}" for n in ("id.txt", "old.txt", "run.sh"))]
    assert (laid / "creds" / MASK / "id.txt").read_text() == f"see creds/{MASK}\n"
    assert (laid / "creds" / MASK / "run.sh").stat().st_mode & 0o111
    assert (tree / folder / "id.txt").read_text() == f"see {folder}\n"  # the tree untouched


def test_the_secret_plugins_are_set_up_once_per_process() -> None:
    """Every scan of a process uses the same plugin instances (set up on first use)."""
    from workers.coordinator import secret_scan

    assert secret_scan._plugins() is secret_scan._plugins()
    assert {type(p).__name__ for p in secret_scan._plugins()} & secret_scan.LEFT_OUT == set()


def test_a_key_in_a_file_whose_name_is_not_utf8_is_masked_in_the_tools_tree(
    tmp_path: Path,
) -> None:
    """The change adds ``latin\\xe9.txt`` (a name that is not UTF-8) holding a key: the
    diff and the spans name it ``latin\\ufffd.txt``, the tree keeps the raw byte. The
    tools' copy of the tree holds the file masked under its own name, and a worker's
    masker knows the value. Two more such files showing alike (``dup\\xe8``, ``dup\\xe9``)
    one holding a key: both are withheld, as which one the span means is unknown."""
    import os

    from council.change.diff import read_change
    from council.change.secret_masks import MASK
    from workers.coordinator.secret_scan import find_secrets
    from workers.execution.backend_request import _masked_files, tree_lines
    from workers.execution.unpacked_trees import TreeCache

    latin, twin, other = (os.fsdecode(n) for n in (b"latin\xe9.txt", b"dup\xe8", b"dup\xe9"))
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    (repo / latin).write_text(f'aws_access_key_id = "{NAME_KEY}"\n')
    (repo / twin).write_text("nothing here\n")
    (repo / other).write_text(f'aws_access_key_id = "{LOCK_KEY}"\n')
    commit(repo, {}, "keys under odd names")
    git_repo = Repository(repo)
    change = read_change(git_repo.diff("HEAD~1", "HEAD"), (), ())[0]
    spans = find_secrets(change, paths=git_repo.changed_paths("HEAD~1", "HEAD"))
    assert {s.path for s in spans} == {"latin\ufffd.txt", "dup\ufffd"}
    cache = TreeCache(tmp_path / "work")
    tree = cache.tree("r1", lambda: git_repo.archive("HEAD", 50_000_000))
    assert tree is not None
    laid = cache.overlaid("r1", "masked", tree, lambda: _masked_files(tree, spans))
    assert (laid / latin).read_text() == f'aws_access_key_id = "{MASK}"\n'
    for name in (twin, other):
        assert "withheld from reviewer models" in (laid / name).read_text()
    held = [p.read_bytes() for p in laid.rglob("*") if p.is_file()]
    assert not [b for b in held if NAME_KEY.encode() in b or LOCK_KEY.encode() in b]
    assert tree_lines(tree, "latin\ufffd.txt") == [f'aws_access_key_id = "{NAME_KEY}"', ""]
    assert tree_lines(tree, "dup\ufffd") is None  # two files: neither is read as this one


def test_a_decoy_named_with_u_fffd_cannot_stand_for_the_file_with_the_bad_byte(
    tmp_path: Path,
) -> None:
    """``k\\xe8.txt`` holds a key; a decoy literally named ``k\\ufffd.txt`` (valid UTF-8)
    shows alike: both are withheld from the models' copy, and the masker learns the key
    from whichever of them holds it. A file whose name holds a key AND a bad byte keeps
    its contents masked under its masked name."""
    import os

    from council.change.diff import read_change
    from council.change.secret_masks import MASK
    from workers.coordinator.secret_scan import find_secrets
    from workers.execution.backend_request import _masked_files, tree_values
    from workers.execution.unpacked_trees import TreeCache

    keyed, decoy = os.fsdecode(b"k\xe8.txt"), "k\ufffd.txt"
    named = os.fsdecode(f"{NAME_KEY}\xe8".encode("latin-1")) + "/x.txt"
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    (repo / keyed).write_text(f'aws_access_key_id = "{LOCK_KEY}"\n')
    (repo / decoy).write_text("nothing to see\n")
    (repo / named.split("/")[0]).mkdir()
    (repo / named).write_text(f'aws_access_key_id = "{BIG_KEY}"\n')
    commit(repo, {}, "a key, a decoy, a keyed name")
    git_repo = Repository(repo)
    change = read_change(git_repo.diff("HEAD~1", "HEAD"), (), ())[0]
    spans = find_secrets(change, paths=git_repo.changed_paths("HEAD~1", "HEAD"))
    cache = TreeCache(tmp_path / "work")
    tree = cache.tree("r1", lambda: git_repo.archive("HEAD", 50_000_000))
    assert tree is not None
    laid = cache.overlaid("r1", "masked", tree, lambda: _masked_files(tree, spans))
    for name in (keyed, decoy):
        assert "withheld from reviewer models" in (laid / name).read_text()
    held = {p.relative_to(laid).as_posix(): p.read_bytes() for p in laid.rglob("*") if p.is_file()}
    assert not [n for n, b in held.items() if any(k.encode() in b for k in VALUES)]
    assert not [n for n in held if NAME_KEY in n]
    masked_dir = [n for n in held if n.startswith(MASK) and n.endswith("/x.txt")]
    (inside,) = masked_dir
    assert held[inside] == f'aws_access_key_id = "{MASK}"\n'.encode()
    assert {LOCK_KEY, BIG_KEY, NAME_KEY} <= set(tree_values(tree, spans))
