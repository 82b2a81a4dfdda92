"""A file the pull request ADDS under a path ``[paths]`` leaves out is named, with the
pattern, under the report's title (issue 24, part 5); the example roster's excludes are
anchored, so ``lib/vendor/`` is reviewed."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from council.change.diff import ChangedFile, selects
from tests.gitrepo import commit, new_repo
from tests.unit.test_cli_review import answer, review, reviewer, roster

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "council.toml"


def test_the_example_rosters_excludes_are_anchored() -> None:
    """`vendor/**` leaves out the root's vendor/ only; a lib/vendor/ file the change adds
    is reviewed; lock files and minified scripts stay out at any depth."""
    paths = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))["paths"]
    include, exclude = paths.get("include", []), paths["exclude"]

    def kept(path: str) -> bool:
        return selects(ChangedFile(path=path, status="added"), include, exclude)

    assert not kept("vendor/x.py") and not kept("vendor/deep/y.py")
    assert kept("lib/vendor/x.py") and kept("app.py")
    assert not kept("poetry.lock") and not kept("web/static/app.min.js")


def test_an_added_excluded_file_is_named_not_reviewed_under_the_title(tmp_path: Path) -> None:
    """The change adds lib/vendor/x.py and edits vendor/old.py, both left out by
    `**/vendor/**`: both are in the excluded note; only the added one is named "added,
    not reviewed" with its pattern, shown under the Markdown title. The gate is not
    tripped by it (documented: the roster chose to leave it out)."""
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n", "vendor/old.py": "a = 1\n"})
    files = {"app.py": "x = 2\n", "vendor/old.py": "a = 2\n", "lib/vendor/x.py": "b = 1\n"}
    commit(repo, files, "vendor a library")
    tables = reviewer("rep", "replay", answer=answer(tmp_path, "a.json"))
    head = '[council]\nbackstop_ms = 60000\nidle_ms = 60000\n[paths]\nexclude = ["**/vendor/**"]\n'
    out = tmp_path / "r.json"
    rp = roster(tmp_path, tables, head=head)
    done = review(repo, tmp_path / "s.json", "--json", str(out), roster_path=rp)
    assert done.exit_code == 0, done.output
    notes = json.loads(out.read_text())["notes"]
    said = 'added, not reviewed: "lib/vendor/x.py" (excluded by `**/vendor/**`)'
    assert said in notes
    (excluded,) = [n for n in notes if "excluded by [paths]" in n]
    assert '"vendor/old.py"' in excluded and '"lib/vendor/x.py"' in excluded
    title, _, rest = done.stdout.partition("| participant |")
    assert "**Not reviewed:** added, not reviewed: " in title and "lib/vendor/x.py" in title
    assert "vendor/old.py" not in title.split("**Not reviewed:**", 1)[1]
    assert "added, not reviewed" not in rest


def test_an_added_file_skipped_by_its_names_kind_is_named_under_the_title(
    tmp_path: Path,
) -> None:
    """The pull request chose the names: src/vendor/helper.py (vendored) and
    src/handlers_pb2.py (generated) are added with code; both are named "added, not
    reviewed" with why under the title; an EDITED lock file is not (it was there)."""
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n", "poetry.lock": "a\n"})
    shell = "import subprocess\nsubprocess.call(c, shell=True)\n"
    files = {
        "app.py": "x = 2\n",
        "poetry.lock": "b\n",
        "src/vendor/helper.py": shell,
        "src/handlers_pb2.py": shell,
    }
    commit(repo, files, "add helpers")
    tables = reviewer("rep", "replay", answer=answer(tmp_path, "a.json"))
    out = tmp_path / "r.json"
    rp = roster(tmp_path, tables)
    done = review(repo, tmp_path / "s.json", "--json", str(out), roster_path=rp)
    assert done.exit_code == 0, done.output
    (said,) = [n for n in json.loads(out.read_text())["notes"] if "added, not reviewed" in n]
    assert '"src/vendor/helper.py" (vendored' in said
    assert '"src/handlers_pb2.py" (generated' in said
    assert "poetry.lock" not in said
    title = done.stdout.partition("| participant |")[0]
    assert "**Not reviewed:** added, not reviewed: " in title and "helper.py" in title
