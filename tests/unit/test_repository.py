"""Tests for reading git repositories (workers.git.repository), on throwaway repos in tmp_path."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from council.change.diff import decode_diff, parse_diff
from council.errors import ChangeTooLarge, RepositoryError
from tests.gitrepo import commit, new_repo
from workers.git import tree_packing
from workers.git.refs import url_without_credentials
from workers.git.repository import Repository
from workers.git.tree_unpacking import unpack_tree


def git(repo: Path, *args: str) -> str:
    """Run a real git command in ``repo`` and return its stdout."""
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        capture_output=True,
        check=True,
    )
    return done.stdout.decode()


def commit_all(repo: Path, message: str) -> str:
    """Stage everything, commit, and return the new commit's sha."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point git's global config at an empty file so a developer's config cannot leak in."""
    config = tmp_path / "gitconfig"
    config.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)
    return config


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository on branch main with one commit holding a few text files."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "src").mkdir()
    (path / "src" / "app.py").write_text("".join(f"line {i}\n" for i in range(1, 31)))
    (path / "README.md").write_text("hello\n")
    commit_all(path, "base")
    return path


def test_not_a_repository(tmp_path: Path) -> None:
    """A plain directory is refused with the way out."""
    with pytest.raises(RepositoryError) as caught:
        Repository(tmp_path)
    assert "is not a git repository" in caught.value.problem
    assert "--repo PATH" in caught.value.fix
    assert ". Run council inside a clone of the repository" in str(caught.value)


def test_missing_directory(tmp_path: Path) -> None:
    """A path that does not exist is refused the same way."""
    with pytest.raises(RepositoryError, match="is not a git repository"):
        Repository(tmp_path / "nowhere")


def test_subdirectory_opens_the_top_level(repo: Path) -> None:
    """Opening a subdirectory reads the whole repository from its top level."""
    assert Repository(repo / "src").path == repo.resolve()


def test_a_bare_repository_opens_at_its_git_directory(repo: Path, tmp_path: Path) -> None:
    """A bare clone has no top level: it is read from its git directory."""
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    assert Repository(bare).path == bare.resolve()


def test_resolve_branch_and_short_sha(repo: Path) -> None:
    """Branches, HEAD and short shas resolve to the full commit sha."""
    sha = git(repo, "rev-parse", "HEAD").strip()
    r = Repository(repo)
    assert r.resolve("main") == sha == r.resolve("HEAD") == r.resolve(sha[:8])


def test_unknown_ref(repo: Path) -> None:
    """An unknown branch is refused naming it, with git fetch and git log as the way out;
    the sentence after the full stop starts with a capital."""
    with pytest.raises(RepositoryError) as caught:
        Repository(repo).resolve("no-such-branch")
    assert repr("no-such-branch") in caught.value.problem
    assert "`git fetch origin no-such-branch`" in caught.value.fix
    assert "git log --oneline" in caught.value.fix
    assert ". Fetch it (" in str(caught.value)


def test_a_mistyped_ref_is_answered_with_the_refs_it_is_close_to(repo: Path) -> None:
    """A typo of a branch here is met with "did you mean", then the usual way out."""
    git(repo, "branch", "feature-login")
    with pytest.raises(RepositoryError) as caught:
        Repository(repo).resolve("featur-login")
    assert caught.value.fix.startswith("Did you mean 'feature-login'? Otherwise: Fetch it (")
    with pytest.raises(RepositoryError) as caught:
        Repository(repo).resolve("release-candidate")
    assert "Did you mean" not in caught.value.fix


@pytest.mark.parametrize("ref", ["HEAD~5", "main^^", "main~1^2"])
def test_relative_ref_beyond_the_history(repo: Path, ref: str) -> None:
    """A relative ref past the (shallow) history says the history is too short and how
    to deepen it; it never suggests fetching the relative ref itself."""
    with pytest.raises(RepositoryError) as caught:
        Repository(repo).resolve(ref)
    assert repr(ref) in caught.value.problem
    fix = caught.value.fix
    assert "history here is too short" in fix and "--deepen" in fix
    assert f"git fetch origin {ref}" not in fix


def test_relative_ref_on_a_missing_branch(repo: Path) -> None:
    """``feature~2`` without ``feature``: fetch the branch, not ``feature~2``."""
    with pytest.raises(RepositoryError) as caught:
        Repository(repo).resolve("feature~2")
    assert "'feature' names no commit here either" in caught.value.fix
    assert "`git fetch origin feature`" in caught.value.fix


@pytest.mark.parametrize("ref", ["", "  "])
def test_empty_ref(repo: Path, ref: str) -> None:
    """An empty ref is said to be empty; nothing is offered to fetch."""
    with pytest.raises(RepositoryError) as caught:
        Repository(repo).resolve(ref)
    assert "the ref is empty" in caught.value.problem
    assert "git fetch" not in caught.value.fix
    assert caught.value.fix.startswith("Pass a branch")


@pytest.mark.parametrize("ref", ["--output=/tmp/x", "a b", "x:y"])
def test_malformed_ref(repo: Path, ref: str) -> None:
    """A ref git cannot read (an option, a space, a colon) is refused without a fetch."""
    with pytest.raises(RepositoryError) as caught:
        Repository(repo).resolve(ref)
    assert repr(ref) in caught.value.problem
    assert "git fetch" not in caught.value.fix


def test_fetch_hint_names_the_remote_and_the_branch(repo: Path) -> None:
    """``origin/main`` is fetched as ``git fetch origin main``; an abbreviated sha is not
    offered to fetch (git cannot fetch one by its abbreviation)."""
    git(repo, "remote", "add", "upstream", "https://example.invalid/x.git")
    r = Repository(repo)
    with pytest.raises(RepositoryError) as caught:
        r.resolve("upstream/feature")
    assert "`git fetch upstream feature`" in caught.value.fix
    with pytest.raises(RepositoryError) as caught:
        r.resolve("origin/feature")
    assert "`git fetch origin feature`" in caught.value.fix
    with pytest.raises(RepositoryError) as caught:
        r.resolve("abc1234")
    assert "abbreviated sha" in caught.value.fix
    assert "git fetch origin abc1234" not in caught.value.fix


def test_diff_rename_binary_non_utf8_and_odd_paths(repo: Path) -> None:
    """A real diff with a rename, a binary, a Latin-1 file and odd names reads correctly."""
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "logo.png").write_bytes(b"\x89PNG\x00\x01")
    (repo / "latin.txt").write_bytes(b"caf\xe9\n")
    commit_all(repo, "more")
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "mv", "src/app.py", "src/main.py")
    lines = (repo / "src" / "main.py").read_text().replace("line 20\n", "LINE 20\n")
    (repo / "src" / "main.py").write_text(lines)
    (repo / "logo.png").write_bytes(b"\x89PNG\x00\x02")
    (repo / "latin.txt").write_bytes(b"caf\xe9s\n")
    (repo / "my notes.md").write_text("spaced\n")
    (repo / "ä ö.py").write_text("x = 1\n")
    head = commit_all(repo, "head")

    r = Repository(repo)
    text, non_utf8 = decode_diff(r.diff(base, head))
    assert non_utf8 == ("latin.txt",)
    files = {f.path: f for f in parse_diff(text).files}
    assert set(files) == {"src/main.py", "logo.png", "latin.txt", "my notes.md", "ä ö.py"}
    assert files["src/main.py"].status == "renamed"
    assert files["src/main.py"].old_path == "src/app.py"
    assert files["logo.png"].binary
    assert files["ä ö.py"].status == "added" and files["my notes.md"].status == "added"
    assert all(f.note is None for f in files.values())


def test_diff_ignores_the_users_git_config(repo: Path, isolated_git: Path) -> None:
    """noprefix, colour, external diff, order file and context settings change nothing."""
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "src" / "app.py").write_text((repo / "src" / "app.py").read_text() + "more\n")
    (repo / "README.md").write_text("changed\n")
    head = commit_all(repo, "edit")
    clean = Repository(repo).diff(base, head)
    order = repo.parent / "order"
    order.write_text("src/*\n")
    isolated_git.write_text(
        "[diff]\n\tnoprefix = true\n\tmnemonicPrefix = true\n\texternal = false\n"
        f"\torderFile = {order}\n\tcontext = 9\n\trelative = true\n\tsuppressBlankEmpty = true\n"
        "[color]\n\tui = always\n\tdiff = always\n[core]\n\tquotePath = false\n"
    )
    assert Repository(repo).diff(base, head) == clean
    assert clean.startswith(b"diff --git a/README.md b/README.md\n")


def test_git_dir_in_the_environment_does_not_redirect(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GIT_DIR set by a hook for another repository is not followed."""
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    sha = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "main"],
        capture_output=True,
        env={k: v for k, v in os.environ.items() if k != "GIT_DIR"},
        check=True,
    ).stdout.decode()
    assert Repository(repo).resolve("main") == sha.strip()


def test_read_file(repo: Path) -> None:
    """A file at a ref is its bytes; an absent path or a directory is None."""
    r = Repository(repo)
    assert r.read_file("main", "README.md") == b"hello\n"
    assert r.read_file("main", "missing.txt") is None
    assert r.read_file("main", "src") is None
    with pytest.raises(RepositoryError, match="unknown ref"):
        r.read_file("nope", "README.md")


def test_read_file_at_an_older_ref(repo: Path) -> None:
    """read_file reads the ref's version, not the working tree."""
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "README.md").write_text("new\n")
    commit_all(repo, "edit")
    (repo / "README.md").write_text("dirty\n")
    r = Repository(repo)
    assert r.read_file(base, "README.md") == b"hello\n"
    assert r.read_file("HEAD", "README.md") == b"new\n"


def test_changed_paths_lists_both_sides_of_a_rename(repo: Path) -> None:
    """Renames give old and new paths; added and deleted files are listed once."""
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "mv", "src/app.py", "src/main.py")
    git(repo, "rm", "-q", "README.md")
    (repo / "new file.txt").write_text("n\n")
    head = commit_all(repo, "moves")
    paths = Repository(repo).changed_paths(base, head)
    assert sorted(paths) == ["README.md", "new file.txt", "src/app.py", "src/main.py"]


def test_a_repository_lists_a_change_once(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The files of one change are listed by git once per Repository (a round asks a
    dozen times), and a sha found to name a commit is not asked again; a branch is."""
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "README.md").write_text("changed\n")
    head = commit_all(repo, "change")
    r = Repository(repo)
    first = r.changed_entries(base, head)
    runs: list[list[str]] = []
    real = subprocess.Popen.__init__

    def counted(
        self: subprocess.Popen[bytes], args: list[str], *rest: object, **kw: object
    ) -> None:
        runs.append(list(args))
        real(self, args, *rest, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(subprocess.Popen, "__init__", counted)
    again = r.changed_entries(base, head)
    assert again == first and again is not first
    again.clear()
    assert r.changed_paths(base, head) == ["README.md"]
    assert runs == []
    assert r.resolve("main") == head
    assert [a[-1] for a in runs] == ["main^{commit}"]
    assert Repository(repo).changed_entries(base, head) == first


def test_archive_round_trip_and_determinism(repo: Path, tmp_path: Path) -> None:
    """The packed head tree unpacks to the commit's files, and packs identically twice."""
    os.symlink("README.md", repo / "link")
    head = commit_all(repo, "link")
    (repo / "README.md").write_text("dirty working tree\n")
    r = Repository(repo)
    packed = r.archive(head, 1_000_000)
    tree_packing._packed.clear()  # packed anew, not the process's copy
    assert packed == r.archive("HEAD", 1_000_000)
    dest = tmp_path / "out" / "tree"
    unpack_tree(packed, dest)
    assert (dest / "README.md").read_text() == "hello\n"
    assert (dest / "src" / "app.py").read_text().startswith("line 1\n")
    assert os.readlink(dest / "link") == "README.md"


def test_a_head_is_packed_once_per_process(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rounds of one head in one process pack its tree once; another cap packs anew
    (it may refuse what the first allowed)."""
    packs: list[str] = []
    real = tree_packing.TreePacking._pack

    def counted(self: tree_packing.TreePacking, sha: str, cap: int, most: int) -> bytes:
        packs.append(sha)
        return real(self, sha, cap, most)

    monkeypatch.setattr(tree_packing.TreePacking, "_pack", counted)
    head = Repository(repo).resolve("HEAD")
    first = Repository(repo).archive(head, 1_000_000)
    assert Repository(repo).archive("HEAD", 1_000_000) == first
    assert len(packs) == 1
    Repository(repo).archive(head, 2_000_000)
    assert len(packs) == 2


def test_archive_over_the_cap(repo: Path) -> None:
    """A tree packing larger than the cap is refused with the knob to raise it."""
    (repo / "noise.bin").write_bytes(os.urandom(300_000))
    head = commit_all(repo, "noise")
    with pytest.raises(ChangeTooLarge) as caught:
        Repository(repo).archive(head, 100_000)
    error = caught.value
    assert (error.what, error.cap, error.knob) == (
        "packed head tree",
        100_000,
        "COUNCIL_MAX_TREE_BYTES",
    )
    assert error.size > error.cap


def test_default_session_key_strips_credentials(repo: Path) -> None:
    """The session key is the origin URL without its token, and the branch."""
    git(repo, "remote", "add", "origin", "https://bot:s3cret@github.com/org/repo.git")
    key = Repository(repo).default_session_key("HEAD")
    assert key == "https://github.com/org/repo.git#main"
    assert "s3cret" not in key


def test_default_session_key_without_a_remote(repo: Path) -> None:
    """Without origin the absolute path stands for the repository."""
    git(repo, "checkout", "-q", "-b", "feature/x")
    assert Repository(repo).default_session_key("HEAD") == f"{repo.resolve()}#feature/x"
    assert Repository(repo).default_session_key("main") == f"{repo.resolve()}#main"


def test_default_session_key_remote_branch_and_detached(repo: Path) -> None:
    """A remote-tracking ref names its branch; a detached head names its commit."""
    git(repo, "remote", "add", "origin", "git@github.com:org/repo.git")
    git(repo, "update-ref", "refs/remotes/origin/topic", "HEAD")
    r = Repository(repo)
    assert r.default_session_key("origin/topic") == "github.com:org/repo.git#topic"
    sha = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "--detach")
    assert r.default_session_key("HEAD") == f"github.com:org/repo.git#detached-{sha[:12]}"


@pytest.mark.parametrize(
    ("url", "clean"),
    [
        ("https://user:tok@host.example/o/r.git", "https://host.example/o/r.git"),
        ("https://tok@host.example/o/r.git?private_token=x#f", "https://host.example/o/r.git"),
        ("ssh://git@host.example:2222/o/r.git", "ssh://host.example:2222/o/r.git"),
        ("git@github.com:org/repo.git", "github.com:org/repo.git"),
        ("https://host.example/o/r.git", "https://host.example/o/r.git"),
        ("/srv/git/repo.git", "/srv/git/repo.git"),
    ],
)
def test_url_without_credentials(url: str, clean: str) -> None:
    """User names, passwords, tokens and query strings are removed from remote URLs."""
    assert url_without_credentials(url) == clean


def _tar(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    """A tar.gz archive built by hand from (member, content) pairs."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    """A regular file member."""
    return tarfile.TarInfo(name), data


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, None]:
    """A symbolic (or hard) link member."""
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


def _special(name: str, kind: bytes) -> tuple[tarfile.TarInfo, None]:
    """A device or fifo member."""
    info = tarfile.TarInfo(name)
    info.type = kind
    return info, None


@pytest.mark.parametrize(
    ("evil", "why"),
    [
        (_file("/etc/evil"), "absolute path"),
        (_file("../evil"), "'..'"),
        (_file("a/../../evil"), "'..'"),
        (_link("link", "/etc/passwd"), "absolute path"),
        (_link("a/link", "../../outside"), "outside the tree"),
        (_link("hard", "../outside", tarfile.LNKTYPE), "outside the tree"),
        (_special("dev", tarfile.CHRTYPE), "device"),
        (_special("blk", tarfile.BLKTYPE), "device"),
        (_special("pipe", tarfile.FIFOTYPE), "pipe"),
    ],
)
def test_unpack_refuses_malicious_archives(
    tmp_path: Path, evil: tuple[tarfile.TarInfo, bytes | None], why: str
) -> None:
    """An unsafe member refuses the whole archive; nothing is written anywhere."""
    dest = tmp_path / "tree"
    with pytest.raises(RepositoryError) as caught:
        unpack_tree(_tar(_file("ok.txt"), evil), dest)
    assert why in caught.value.problem
    assert not dest.exists()
    assert not (tmp_path / "evil").exists() and not (tmp_path / "outside").exists()


@pytest.mark.parametrize(
    ("links", "named", "why"),
    [
        ((("d", "."), ("a", "d/d/../..")), "'a'", "once the tree's links are followed"),
        ((("d", "."), ("a", "d/d/.."), ("r", "a/x")), "'a'", "outside the tree"),
        ((("s/l", "../t"), ("t", "s/l")), "'s/l'", "loops"),
    ],
)
def test_unpack_resolves_links_through_the_trees_links(
    tmp_path: Path, links: tuple[tuple[str, str], ...], named: str, why: str
) -> None:
    """Links that stay inside by their text but leave (or loop) once the archive's other
    links are followed refuse the archive, naming the first such link; nothing is
    written."""
    dest = tmp_path / "tree"
    with pytest.raises(RepositoryError) as caught:
        unpack_tree(_tar(_file("ok.txt"), *(_link(n, t) for n, t in links)), dest)
    assert named in caught.value.problem and why in caught.value.problem
    assert not dest.exists()


def test_unpack_refuses_two_members_of_one_name(tmp_path: Path) -> None:
    """A name given twice (a link, then a file there) could unpack to something no
    check saw: refused."""
    with pytest.raises(RepositoryError, match="same name"):
        unpack_tree(_tar(_link("d", "."), _file("./d", b"x")), tmp_path / "t")
    assert not (tmp_path / "t").exists()


def test_unpack_allows_links_inside_the_tree(tmp_path: Path) -> None:
    """Relative links that stay inside the tree are unpacked."""
    archive = _tar(_file("a/f.txt", b"hi"), _link("a/l", "f.txt"), _link("up", "a/f.txt"))
    unpack_tree(archive, tmp_path / "t")
    assert (tmp_path / "t" / "up").read_bytes() == b"hi"


def test_unpack_refuses_garbage(tmp_path: Path) -> None:
    """Bytes that are not a tar.gz are a RepositoryError, not a crash."""
    with pytest.raises(RepositoryError, match="cannot be read"):
        unpack_tree(b"not a tarball", tmp_path / "t")


def test_unpack_caps_the_unpacked_size(tmp_path: Path) -> None:
    """A highly compressible archive larger than max_bytes unpacked is refused."""
    archive = _tar(_file("zeros", bytes(200_000)))
    assert len(archive) < 10_000
    with pytest.raises(RepositoryError, match="over the cap"):
        unpack_tree(archive, tmp_path / "t", max_bytes=100_000)
    assert not (tmp_path / "t").exists()


def test_tree_mode_reads_a_tree_entrys_git_mode(tmp_path: Path) -> None:
    """tree_mode gives the git mode at a ref: executable, plain file, directory, none."""
    path = new_repo(tmp_path / "r", {"tools/run.sh": "#!/bin/sh\n", "README": "x\n"})
    (path / "tools" / "run.sh").chmod(0o755)
    commit(path, {"tools/run.sh": "#!/bin/sh\necho\n"}, "exec")
    repo = Repository(path)
    assert repo.tree_mode("HEAD", "tools/run.sh") == "100755"
    assert repo.tree_mode("HEAD~1", "tools/run.sh") == "100644"
    assert repo.tree_mode("HEAD", "README") == "100644"
    assert repo.tree_mode("HEAD", "tools") == "040000"
    assert repo.tree_mode("HEAD", "missing") is None
    assert repo.tree_mode("HEAD", "") is None
