"""The smaller commands' contract: harvest, record, check, and the Redis read-backs."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tests.gitrepo import commit, new_repo
from workers.cli import main

ANSWER = {
    "findings": [
        {
            "subject": "token is logged",
            "label": "issue",
            "severity": "critical",
            "location": {"kind": "line", "file": "app.py", "start": 2},
        }
    ]
}


def council(*args: str, env: dict[str, str] | None = None) -> Result:
    """Run the ``council`` command line in this process."""
    return CliRunner().invoke(main, list(args), env=env)


def harvested(done: Result) -> dict[str, Any]:
    """The Harvest JSON printed by ``council harvest``, checked for its three keys."""
    data: dict[str, Any] = json.loads(done.stdout)
    assert set(data) >= {"findings", "warnings", "truncated"}
    return data


def codes(data: dict[str, Any]) -> set[str]:
    """The warning codes of a Harvest JSON."""
    return {w["code"] for w in data["warnings"]}


def test_harvest_reads_a_normal_answer(tmp_path: Path) -> None:
    """A well-formed answer: exit 0, its finding in the Harvest JSON."""
    path = tmp_path / "answer.txt"
    path.write_text(json.dumps(ANSWER))
    done = council("harvest", str(path))
    assert done.exit_code == 0
    data = harvested(done)
    assert [f["subject"] for f in data["findings"]] == ["token is logged"]
    assert data["truncated"] is False


def test_harvest_reads_random_bytes(tmp_path: Path) -> None:
    """Random binary bytes are still read: exit 0, no finding, a warning saying why."""
    path = tmp_path / "noise.bin"
    path.write_bytes(random.Random(7).randbytes(4096))
    done = council("harvest", str(path))
    assert done.exit_code == 0
    data = harvested(done)
    assert data["findings"] == []
    assert data["warnings"]


def test_harvest_reads_an_empty_file(tmp_path: Path) -> None:
    """An empty answer: exit 0, the said-nothing warning."""
    path = tmp_path / "empty.txt"
    path.write_bytes(b"")
    done = council("harvest", str(path))
    assert done.exit_code == 0
    assert "said-nothing" in codes(harvested(done))


def test_harvest_of_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    """A file that cannot be read: exit 2, the file named."""
    done = council("harvest", str(tmp_path / "nowhere.txt"))
    assert done.exit_code == 2
    assert "nowhere.txt" in done.output


def test_harvest_folds_a_recorded_journal_with_a_broken_line(tmp_path: Path) -> None:
    """--recorded: the journal's readable entries are folded in, the broken line is warned."""
    path = tmp_path / "answer.txt"
    path.write_text(json.dumps(ANSWER))
    recorded = tmp_path / "journal.jsonl"
    recorded.write_text(
        json.dumps({"subject": "retry loop never ends", "label": "issue"}) + "\n{this is not json\n"
    )
    done = council("harvest", str(path), "--recorded", str(recorded))
    assert done.exit_code == 0
    data = harvested(done)
    subjects = {f["subject"] for f in data["findings"]}
    assert subjects == {"token is logged", "retry loop never ends"}
    assert "journal-unreadable" in codes(data)
    assert any(w["at"] == "recorded[1]" for w in data["warnings"])


def test_harvest_stamps_the_witness(tmp_path: Path) -> None:
    """--witness: the anchors carry the given commit."""
    path = tmp_path / "answer.txt"
    path.write_text(json.dumps(ANSWER))
    done = council("harvest", str(path), "--witness", "0123abcd")
    assert done.exit_code == 0
    assert [f["anchor"]["witness"] for f in harvested(done)["findings"]] == ["0123abcd"]


def journal_lines(path: Path) -> list[Any]:
    """The JSON entries of a journal file."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_record_appends_an_object_to_the_journal_file(tmp_path: Path) -> None:
    """One finding object: exit 0, 'Recorded.' on stderr, one line in COUNCIL_JOURNAL."""
    path = tmp_path / "journal.jsonl"
    done = council(
        "record", "--json", '{"subject": "a", "label": "issue"}', env={"COUNCIL_JOURNAL": str(path)}
    )
    assert done.exit_code == 0, done.output
    assert done.stderr.strip() == "Recorded."
    assert journal_lines(path) == [{"subject": "a", "label": "issue"}]


def test_record_keeps_the_objects_of_a_list(tmp_path: Path) -> None:
    """A list with a non-object: the object is recorded, the reply counts what was not."""
    path = tmp_path / "journal.jsonl"
    done = council("record", "--json", '[{"subject": "b"}, 42]', env={"COUNCIL_JOURNAL": str(path)})
    assert done.exit_code == 0, done.output
    assert "1" in done.stderr and "not" in done.stderr
    assert journal_lines(path) == [{"subject": "b"}]


def test_record_leaves_stdout_to_the_reviewers_answer(tmp_path: Path) -> None:
    """A command reviewer's stdout is its answer: every reply of `council record`
    (recorded, nothing to record, not recorded) goes to stderr, stdout stays empty."""
    path = tmp_path / "journal.jsonl"
    env = {"COUNCIL_JOURNAL": str(path)}
    recorded = council("record", "--json", '{"subject": "a"}', env=env)
    nothing = council("record", "--json", "42", env=env)
    unwritable = {"COUNCIL_JOURNAL": str(tmp_path / "missing" / "journal.jsonl")}
    failed = council("record", "--json", '{"subject": "a"}', env=unwritable)
    assert [d.exit_code for d in (recorded, nothing, failed)] == [0, 2, 1]
    assert [d.stdout for d in (recorded, nothing, failed)] == ["", "", ""]
    assert recorded.stderr.strip() == "Recorded."
    assert nothing.stderr.startswith("Nothing was recorded")
    assert failed.stderr.startswith("Not recorded (cannot append to")


def test_record_reads_a_json_string_of_an_object(tmp_path: Path) -> None:
    """A JSON string holding a finding object is unwrapped and recorded."""
    path = tmp_path / "journal.jsonl"
    inner = json.dumps({"subject": "c", "label": "nit"})
    done = council("record", "--json", json.dumps(inner), env={"COUNCIL_JOURNAL": str(path)})
    assert done.exit_code == 0, done.output
    assert journal_lines(path) == [{"subject": "c", "label": "nit"}]


def test_record_refuses_invalid_json(tmp_path: Path) -> None:
    """Invalid JSON: exit 2, nothing written."""
    path = tmp_path / "journal.jsonl"
    done = council("record", "--json", "{subject: a", env={"COUNCIL_JOURNAL": str(path)})
    assert done.exit_code == 2
    assert "--json" in done.output
    assert not path.exists()


def test_record_without_redis_or_journal_says_where_it_runs() -> None:
    """Neither COUNCIL_REDIS_URL nor COUNCIL_JOURNAL: exit 2 naming what it needs."""
    done = council("record", "--json", '{"subject": "a"}')
    assert done.exit_code == 2
    assert "COUNCIL_JOURNAL" in done.output and "COUNCIL_REDIS_URL" in done.output


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose last commit changes app.py."""
    path = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(path, {"app.py": "x = 1\ntoken = 'abc'\n"}, "token")
    return path


def write_roster(tmp_path: Path, body: str) -> Path:
    """A roster file beside a replay answer."""
    (tmp_path / "a.json").write_text(json.dumps(ANSWER))
    path = tmp_path / "roster.toml"
    path.write_text(body)
    return path


TWO = (
    '[[reviewers]]\nid = "hawk"\nbackend = "replay"\nanswer = "a.json"\n'
    '[[reviewers]]\nid = "owl"\nbackend = "replay"\nanswer = "a.json"\n'
)


def test_check_prints_each_prompt(repo: Path, tmp_path: Path) -> None:
    """council check: every participant's prompt with the change, exit 0, nothing written."""
    state = tmp_path / "state.json"
    done = council(
        "check", "--repo", str(repo), "--roster", str(write_roster(tmp_path, TWO)),
        "--base", "HEAD~1", "--state", str(state),
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "===== hawk" in done.stdout and "===== owl" in done.stdout
    assert done.stdout.count("token = 'abc'") == 2
    assert "roster OK" in done.stdout
    assert not state.exists()


def test_check_refuses_a_bad_roster(repo: Path, tmp_path: Path) -> None:
    """council check with an unknown backend: exit 2 naming the field."""
    bad = '[[reviewers]]\nid = "hawk"\nbackend = "gpt-9"\n'
    done = council(
        "check", "--repo", str(repo), "--roster", str(write_roster(tmp_path, bad)),
        "--base", "HEAD~1", "--state", str(tmp_path / "state.json"),
    )  # fmt: skip
    assert done.exit_code == 2
    assert "reviewers[0].backend" in done.output


def test_check_refuses_a_claim_that_review_would_refuse(repo: Path, tmp_path: Path) -> None:
    """council check sees the findings of the state file: a re-pointed id is refused (exit 2)."""
    state = tmp_path / "state.json"
    common = ["--repo", str(repo), "--base", "HEAD~1", "--state", str(state), "--session", "s"]
    first = write_roster(tmp_path, TWO)
    reviewed = council(
        "review", *common, "--roster", str(first), "--no-progress", "--fail-on", "never"
    )
    assert reviewed.exit_code == 0, reviewed.output
    repointed = TWO.replace('id = "owl"\n', 'id = "owl"\nmodel = "m-two"\n')
    done = council("check", *common, "--roster", str(write_roster(tmp_path, repointed)))
    assert done.exit_code == 2, done.output
    assert "'owl'" in done.output and "model m-two" in done.output


@pytest.mark.parametrize("args", [["runs"], ["show", "abc"]])
def test_readbacks_without_redis_say_the_way_out(args: list[str]) -> None:
    """runs / show without Redis: exit 2 naming COUNCIL_REDIS_URL and --redis."""
    done = council(*args)
    assert done.exit_code == 2
    assert "COUNCIL_REDIS_URL" in done.output and "--redis" in done.output


def test_ledger_reads_the_embedded_state_file(tmp_path: Path) -> None:
    """Without Redis, `council ledger` lists the state file's identities (empty: says so)."""
    done = council("ledger", "some-session", "--state", str(tmp_path / "state.json"))
    assert done.exit_code == 0, done.output
    assert "holds no identities" in done.output
