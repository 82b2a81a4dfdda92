"""The change under review is untrusted: a key in a file council SKIPS (lock, vendored,
generated, binary by an attribute) or a cap left out is not in the diff the scan of added
lines reads, but it is in the tree model reviewers' ``read_file`` and ``grep`` read.

Each test prepares a real round (:func:`~workers.coordinator.preparation.prepare`, as
``council review`` does), lays the masked copy of the head tree a worker gives model
tools, and calls the tools on it. Found by a hostile tester (its repository ``r15``: a
vendored ``creds.py`` and a ``package-lock.json`` with keys reached the tools verbatim).
Source: issue "The change under review is untrusted"; docs/security.md "Secrets in the
change".
"""

from __future__ import annotations

from pathlib import Path

from council.change.secret_masks import MASK
from reviewers.models.tools import ToolBox
from tests.fakes.review import MemorySink
from tests.gitrepo import commit, new_repo
from workers.app.settings import Settings
from workers.coordinator.preparation import ReviewOptions, Round, prepare
from workers.coordinator.secret_scan import EXCLUDED_FILE_MAX_BYTES
from workers.execution.backend_request import _masked_files
from workers.execution.unpacked_trees import TreeCache
from workers.git.repository import Repository

VENDORED_KEY = "AKIA" + "IOSFODNN7EXAMPLE"
LOCK_TOKEN = "ghp_" + "a1B2" * 9
GENERATED_KEY = "AKIA" + "T6WQ3ZP8NV2XKR5M"
ATTRIBUTE_KEY = "AKIA" + "H3KD8WQ5ZN2PRT7X"
CUT_KEY = "AKIA" + "B7XN4QR2WK9TZM5P"
BIG_KEY = "AKIA" + "P5MT2XQ8RW4NZK7D"
KEYS = (VENDORED_KEY, LOCK_TOKEN, GENERATED_KEY, ATTRIBUTE_KEY, CUT_KEY, BIG_KEY)

BIG = f'AWS_KEY = "{BIG_KEY}"\n' + "".join(
    f"# filler line {n:08d} of a vendored bundle\n" for n in range(EXCLUDED_FILE_MAX_BYTES // 40)
)

ROSTER = """\
[council]
backstop_ms = 60000
idle_ms = 30000
answer_ms = 0
[[reviewers]]
id = "owl"
backend = "replay"
model = "recorded"
answer = "empty.json"
"""


def _round(tmp_path: Path, pull: dict[str, str | bytes | None], **caps: int) -> Round:
    """The round of a pull request adding ``pull`` over a base that marks ``*.dat``
    binary; the roster (outside the repository) has one replay reviewer."""
    base = {"app.py": "x = 1\n", ".gitattributes": "*.dat binary\n"}
    repo = new_repo(tmp_path / "repo", base)
    commit(repo, pull, "the pull request")
    (tmp_path / "empty.json").write_text('{"findings": []}')
    (tmp_path / "roster.toml").write_text(ROSTER)
    options = ReviewOptions(repo=repo, base="HEAD~1", head="HEAD", roster=tmp_path / "roster.toml")
    return prepare(Settings(**caps), options, mode="embedded")


def _tools(tmp_path: Path, ready: Round) -> ToolBox:
    """The file tools of a model reviewer over the masked tree its worker lays."""
    assert ready.tree is not None
    cache = TreeCache(tmp_path / "work")
    tree = cache.tree("r1", lambda: ready.tree)
    assert tree is not None
    laid = cache.overlaid("r1", "masked", tree, lambda: _masked_files(tree, ready.secrets))
    return ToolBox(["read_file", "list_files", "grep"], laid, MemorySink())


def test_keys_in_skipped_files_are_masked_in_what_model_tools_read(tmp_path: Path) -> None:
    """The hostile tester's r15, and more: a vendored file, a lock file, a generated file
    and a text file the base's ``.gitattributes`` mark binary, each with a key, are
    skipped (not in the diff), yet scanned whole: ``read_file`` and ``grep`` serve them
    masked, and the note names their places, never a value. Before the fix the scan saw
    none of them and the tools served all four keys."""
    pull: dict[str, str | bytes | None] = {
        "app.py": "x = 2\n",
        "vendor/lib/creds.py": f'AWS_KEY = "{VENDORED_KEY}"\n',
        "package-lock.json": f'{{"t": "{LOCK_TOKEN}"}}\n',
        "api_pb2.py": f'KEY = "{GENERATED_KEY}"\n',
        "keys.dat": f'aws_access_key_id = "{ATTRIBUTE_KEY}"\n',
    }
    ready = _round(tmp_path, pull)
    skipped = {f.path: f.reason for f in ready.record.coverage.skipped}
    assert skipped == {
        "vendor/lib/creds.py": "vendored",
        "package-lock.json": "lock",
        "api_pb2.py": "generated",
        "keys.dat": "binary",
    }
    assert {s.path for s in ready.secrets} == set(skipped)
    tools = _tools(tmp_path, ready)
    read = [tools.call("read_file", {"path": p}) for p in skipped]
    assert all(MASK in reply for reply in read), read
    grepped = tools.call("grep", {"pattern": "AKIA|ghp_|KEY|key"})
    said = "\n".join([*read, grepped])
    assert not [k for k in KEYS if k in said], said
    assert 'vendor/lib/creds.py:1: AWS_KEY = "[masked secret]"' in grepped
    assert 'keys.dat:1: aws_access_key_id = "[masked secret]"' in grepped
    (note,) = [n for n in ready.notes if "likely secret(s)" in n]
    assert '"vendor/lib/creds.py":1' in note and '"package-lock.json":1' in note
    assert not [k for k in KEYS if k in " ".join(ready.notes)]


def test_a_file_a_cap_left_out_is_scanned_and_one_over_the_scan_cap_withheld(
    tmp_path: Path,
) -> None:
    """Past the hard cap of the change the docs file (least value) is left out of the diff:
    its key is masked in the tree all the same. A vendored file over the scan's 1 MiB cap
    is not read: the tools serve one line saying it is withheld, and the note names it
    with why (vendored, over the cap). Before the fix both keys reached the tools."""
    pull: dict[str, str | bytes | None] = {
        "app.py": "x = 2\n",
        "docs/setup.md": f"Set AWS_ACCESS_KEY_ID={CUT_KEY} first.\n" + "padding line\n" * 400,
        "vendor/bundle.py": BIG,
    }
    ready = _round(tmp_path, pull, max_change_bytes=2_000)
    cut = {f.path: f.reason for f in ready.record.coverage.unreviewed}
    assert cut == {"docs/setup.md": "change-cap"}
    tools = _tools(tmp_path, ready)
    docs = tools.call("read_file", {"path": "docs/setup.md"})
    big = tools.call("read_file", {"path": "vendor/bundle.py"})
    grepped = tools.call("grep", {"pattern": "AKIA|AWS"})
    for reply in (docs, big, grepped):
        assert not [k for k in KEYS if k in reply], reply
    assert f"AWS_ACCESS_KEY_ID={MASK}" in docs
    assert "withheld from reviewer models" in big and "filler" not in big
    (note,) = [n for n in ready.notes if "likely secret(s)" in n]
    assert '"docs/setup.md":1' in note
    assert "1 file(s) over the secret scan's caps were not scanned and are withheld" in note
    assert '"vendor/bundle.py" (not scanned: vendored; ' in note


def test_every_file_of_the_change_is_either_in_the_diff_or_scanned_whole(
    tmp_path: Path,
) -> None:
    """No file of the change escapes both scans: each path the head holds is either a
    text file of the diff reviewers read (its added lines scanned) or one of the files
    read whole from the head tree (:func:`~workers.coordinator.preparation._not_in_diff`)."""
    from workers.coordinator.preparation import _not_in_diff, _Refs

    pull: dict[str, str | bytes | None] = {
        "app.py": "x = 2\n",
        "vendor/a.py": "a = 1\n",
        "yarn.lock": "b\n",
        "web/app.min.js": "c\n",
        "gen/x.generated.ts": "d\n",
        "logo.png": b"\x89PNG\0\0",
        "notes.dat": "e\n",
        "long.js": "f" * 6_000 + "\n",
    }
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n", ".gitattributes": "*.dat binary\n"})
    commit(repo, pull, "the pull request")
    git = Repository(repo)
    from council.change.skipping import SkipPolicy

    read = git.read_within(
        "HEAD~1", "HEAD", attributes_from="HEAD~1", include=(), exclude=(),
        policy=SkipPolicy(), cap_bytes=50_000_000,
    )  # fmt: skip
    in_diff = {f.path for f in read.change.files if not f.binary}
    assert in_diff == {"app.py", "long.js"}  # a file minified by a line stays in the change
    base, head = git.resolve("HEAD~1"), git.resolve("HEAD")
    refs = _Refs(base=base, head=head, start=base)
    # A file minified by a line is in both (its added lines and the file whole: _once
    # counts a secret found twice once); none is in neither.
    assert set(pull) - in_diff <= set(_not_in_diff(read, git, refs)) <= set(pull)


def test_a_since_last_round_masks_the_keys_added_before_its_start(tmp_path: Path) -> None:
    """A ``--since-last`` round diffs only from the last reviewed commit, but its tree is
    the head's: a key an earlier commit of the pull request added (in a file this round
    touches again, in one it does not, and in a file's name) is masked in what the
    tools serve all the same, and counted once in the note."""
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    first = {
        "app.py": f'x = 1\nKEY = "{VENDORED_KEY}"\n',
        "conf.py": f'KEY = "{GENERATED_KEY}"\n',
        f"keys/{CUT_KEY}.txt": "staging\n",
    }
    start = commit(repo, first, "first push")
    commit(repo, {"app.py": f'x = 1\nKEY = "{VENDORED_KEY}"\nY = "{ATTRIBUTE_KEY}"\n'}, "second")
    (tmp_path / "empty.json").write_text('{"findings": []}')
    (tmp_path / "roster.toml").write_text(ROSTER)
    options = ReviewOptions(
        repo=repo, base="HEAD~2", head="HEAD", roster=tmp_path / "roster.toml", since=start
    )
    ready = prepare(Settings(), options, mode="embedded")
    tools = _tools(tmp_path, ready)
    said = "\n".join(
        [
            tools.call("read_file", {"path": "app.py"}),
            tools.call("read_file", {"path": "conf.py"}),
            tools.call("list_files", {}),
            tools.call("grep", {"pattern": "KEY|AKIA"}),
        ]
    )
    assert not [k for k in KEYS if k in said], said
    assert f"keys/{MASK}.txt" in said
    (note,) = [n for n in ready.notes if "likely secret(s)" in n]
    assert note.startswith("4 likely secret(s)"), note
