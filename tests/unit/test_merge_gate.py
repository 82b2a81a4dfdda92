"""Merges that cannot lie about the gate, played end to end (issue 20, situations 4 to 6):
``council review`` in embedded mode on real repositories, replay model reviewers, real
bandit and ruff as sarif reviewers, a replay judge.

* a critical and a minor nit on one line stay two findings, however the discussions
  quote the line; a line finding does not join a file-level nit, nor ruff's rule;
* bandit's critical keeps the gate: apart from a model's nit, and merged with a model's
  telling of the same problem;
* a judge naming only the model as raiser of an agreed analyzer finding does not split
  it: under ``--min-agreement 2`` the critical still gates.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.gitrepo import commit, new_repo
from tests.sandboxing import bwrap_or_skip
from tests.unit.test_cli_review import answer, report_of, review, reviewer, roster
from tests.unit.test_untrusted_change import RUFF

BANDIT = reviewer(
    "bandit", "sarif", program="bandit", args=["-r", ".", "-f", "sarif", "--exit-zero", "-q"]
)
"""Real bandit, as the example roster runs it (B602: shell=True, level error: critical)."""

SHELL = "import subprocess\n\n\ndef run(cmd):\n    return subprocess.call(cmd, shell=True)\n"
"""What the pull request adds: bandit's B602 on line 5."""

SQL = (
    "def get_user(cursor, name):\n"
    '    cursor.execute("SELECT * FROM users WHERE name = \'" + name + "\'")\n'
    "    return cursor.fetchone()\n"
)
"""What the pull request adds: an SQL injection on line 2."""

QUOTED = 'cursor.execute("SELECT * FROM users WHERE name = \'" + name + "\'")'
"""Line 2 of :data:`SQL`, as both reviewers quote it."""


def _line(path: str, start: int) -> dict[str, Any]:
    return {"kind": "line", "file": path, "start": start}


def _council(
    tmp_path: Path, files: dict[str, str], tables: list[str]
) -> Callable[..., tuple[int, dict[str, Any], str]]:
    """A repository whose last commit adds ``files`` and a roster of ``tables``; returns
    a function running ``council review`` of it with some options (a new state file each
    time): the exit code, the JSON report and stdout."""
    repo = new_repo(tmp_path / "repo", {"README": "x\n"})
    commit(repo, files, "the pull request")
    path = roster(tmp_path, *tables)
    runs = iter(range(1_000))

    def run(*args: str) -> tuple[int, dict[str, Any], str]:
        k = next(runs)
        out = tmp_path / f"report{k}.json"
        state = tmp_path / f"state{k}.json"
        done = review(repo, state, "--json", str(out), *args, roster_path=path)
        assert done.exit_code in (0, 1), done.output
        return done.exit_code, report_of(out), done.stdout

    return run


def _tellings(report: dict[str, Any]) -> list[list[str]]:
    """Each finding's raisers (its members', else its origin's), in filing order."""
    return [
        [m["participant"] for m in f["members"]]
        if f.get("members")
        else [f["origin"]["participant"]]
        for f in report["findings"]
    ]


# -- situation 5: distinct problems stay apart ------------------------------------------


def _quote(style: str) -> str:
    if style == "fenced":
        return f"\n\n```python\n{QUOTED}\n```\n\n"
    if style == "span":
        return f" `{QUOTED}` "
    return f" {QUOTED} "


@pytest.mark.parametrize("style", ["fenced", "span", "plain"])
def test_an_injection_and_a_naming_nit_on_one_line_stay_two_findings(
    tmp_path: Path, style: str
) -> None:
    """m1's critical SQL injection and m2's minor naming nit, both on line 2, both quoting
    it (in a fenced block, a code span, or plainly); m3 reports an unrelated problem on
    line 3. Three findings, each one reviewer's; under --min-agreement 2 the lone critical
    does not gate as if two had raised it, and it is listed as kept from gating."""
    injection = {
        "subject": "SQL injection in get_user",
        "discussion": f"The query{_quote(style)}concatenates the caller's input into the "
        "SQL text, so a crafted value runs arbitrary statements. Bind it as a parameter.",
        "label": "issue",
        "severity": "critical",
        "location": _line("db.py", 2),
    }
    nit = {
        "subject": "Rename `name` to `username`",
        "discussion": f"In{_quote(style)}`name` is ambiguous next to the table's columns; "
        "`username` reads better.",
        "label": "nitpick",
        "severity": "minor",
        "location": _line("db.py", 2),
    }
    other = {
        "subject": "get_user returns None for an unknown user",
        "discussion": "fetchone() gives None when no row matches; callers never check it.",
        "label": "issue",
        "severity": "medium",
        "location": _line("db.py", 3),
    }
    tables = [
        reviewer(who, "replay", answer=answer(tmp_path, f"{who}.json", told))
        for who, told in (("m1", injection), ("m2", nit), ("m3", other))
    ]
    run = _council(tmp_path, {"db.py": SQL}, tables)
    code, report, stdout = run("--min-agreement", "2")
    assert _tellings(report) == [["m1"], ["m2"], ["m3"]]
    assert all(f["agreement"] == {"k": 1, "n": 3} for f in report["findings"])
    critical = next(f for f in report["findings"] if f["severity"] == "critical")
    assert report["unagreed"][str(critical["id"])] == 1
    assert code == 0 and "Kept from gating by agreement" in stdout
    assert run()[0] == 1  # without --min-agreement the critical gates, alone


CLIENT = (
    "from typing import List\n\nimport requests\n\n\n"
    "def fetch(urls: List[str]) -> list[bytes]:\n"
    "    return [requests.get(u, verify=False).content for u in urls]\n"
)
"""What the pull request adds: ruff's UP006 on line 6, ``verify=False`` on line 7."""


def test_a_line_finding_joins_neither_a_file_nit_nor_an_analyzers_rule(tmp_path: Path) -> None:
    """m1: TLS verification disabled on line 7 (critical); m2: a file-level annotation nit
    on client.py; ruff's UP006 on line 6. Three findings: the file-level nit shares the
    file, the annotation words and ruff's rule, but no line with ruff and no problem with
    the line finding; ruff's rule keeps its own title."""
    bwrap_or_skip()
    if not RUFF.is_file():
        pytest.skip("ruff is not installed beside this interpreter")
    tls = {
        "subject": "TLS certificate verification is disabled",
        "discussion": "requests.get(u, verify=False) accepts any certificate: a machine in "
        "the middle reads and alters every response. Drop verify=False.",
        "label": "issue",
        "severity": "critical",
        "confidence": 0.9,
        "location": {"kind": "line", "file": "client.py", "start": 6, "end": 7},
    }
    annotations = {
        "subject": "Use builtin list instead of typing.List for annotations",
        "discussion": "The type annotation List[str] can be the builtin list[str] on "
        "Python 3.9 and later; annotations in this file mix both.",
        "label": "nitpick",
        "severity": "minor",
        "confidence": 0.99,
        "location": {"kind": "file", "file": "client.py"},
    }
    args = ["check", "--no-cache", "--select", "UP006", "--output-format", "sarif"]
    ruff = reviewer("ruff", "sarif", program=str(RUFF), args=[*args, "--exit-zero", "."])
    ruff += 'levels = { error = "minor" }\n'
    tables = [
        reviewer("m1", "replay", answer=answer(tmp_path, "m1.json", tls)),
        reviewer("m2", "replay", answer=answer(tmp_path, "m2.json", annotations)),
        ruff,
    ]
    code, report, _ = _council(tmp_path, {"client.py": CLIENT}, tables)("--fail-on", "never")
    assert code == 0
    assert _tellings(report) == [["m1"], ["m2"], ["ruff"]]
    (up006,) = [f for f in report["findings"] if f["subject"].startswith("UP006")]
    assert up006["anchor"]["line"] == 6 and "confidence" not in up006
    assert all(f["agreement"]["k"] == 1 for f in report["findings"])


# -- situation 4 (the merge): bandit's critical keeps the gate -------------------------


def test_bandits_critical_and_a_models_nit_on_its_line_stay_apart_and_gate(
    tmp_path: Path,
) -> None:
    """bandit's B602 (critical) and m1's minor naming nit on line 5: two findings, and the
    critical gates (exit 1)."""
    bwrap_or_skip()
    nit = {
        "subject": "Rename `cmd` to `command_line`",
        "discussion": "`cmd` is terse; a descriptive name reads better.",
        "label": "nitpick",
        "severity": "minor",
        "location": _line("app.py", 5),
    }
    tables = [reviewer("m1", "replay", answer=answer(tmp_path, "m1.json", nit)), BANDIT]
    code, report, _ = _council(tmp_path, {"app.py": SHELL}, tables)()
    (b602,) = [f for f in report["findings"] if f["subject"].startswith("B602")]
    assert b602["severity"] == "critical" and "members" not in b602
    assert ["m1"] in _tellings(report) and code == 1


def test_a_models_telling_merged_with_bandits_critical_keeps_the_critical(
    tmp_path: Path,
) -> None:
    """m1 (first in the roster) tells the shell call itself at medium; it merges with
    bandit's B602: one finding "2 of 2" whose severity is bandit's critical, each telling
    keeping its own severity; it gates at critical, and under --min-agreement 2 it does
    not (only bandit's telling is critical), while at medium it does."""
    bwrap_or_skip()
    shell = {
        "subject": "Shell injection: cmd reaches subprocess.call with shell=True",
        "discussion": "run() hands cmd to a shell; any caller-controlled text runs as a "
        "command. Pass an argument list and drop shell=True.",
        "label": "issue",
        "severity": "medium",
        "location": _line("app.py", 5),
    }
    tables = [reviewer("m1", "replay", answer=answer(tmp_path, "m1.json", shell)), BANDIT]
    run = _council(tmp_path, {"app.py": SHELL}, tables)
    code, report, _ = run()
    (merged,) = [f for f in report["findings"] if f.get("members")]
    assert [(m["participant"], m["severity"]) for m in merged["members"]] == [
        ("m1", "medium"),
        ("bandit", "critical"),
    ]
    assert merged["severity"] == "critical" and merged["agreement"] == {"k": 2, "n": 2}
    assert code == 1
    assert run("--min-agreement", "2")[0] == 0
    assert run("--min-agreement", "2", "--fail-on", "medium")[0] == 1


# -- situation 6: a judge cannot make an agreed analyzer finding lonely -----------------


def _judge(tmp_path: Path, *verdicts: dict[str, Any], **options: object) -> str:
    return (
        '[judge]\nid = "arbiter"\nbackend = "replay"\n'
        + f"answer = {json.dumps(answer(tmp_path, 'judge.json', *verdicts))}\n"
        + "".join(f"{key} = {json.dumps(value)}\n" for key, value in options.items())
    )


SHELL_CRITICAL = {
    "subject": "Command injection through subprocess.call with shell=True",
    "discussion": "cmd comes from the caller and runs in a shell: any text in it runs as "
    "a command. Use an argument list without shell=True.",
    "label": "issue",
    "severity": "critical",
    "location": _line("app.py", 5),
}


def test_a_judge_naming_only_the_model_does_not_split_bandits_agreed_critical(
    tmp_path: Path,
) -> None:
    """bandit and m1 both flag line 5 at critical (2 of 2); the judge restates it with
    raisedBy ["m1"] and a lower severity. The finding keeps both tellings and bandit's
    critical, and under --min-agreement 2 it still gates (it was refiled alone: exit 0)."""
    bwrap_or_skip()
    verdict = {**SHELL_CRITICAL, "severity": "minor", "raisedBy": ["m1"]}
    tables = [
        reviewer("m1", "replay", answer=answer(tmp_path, "m1.json", SHELL_CRITICAL)),
        BANDIT,
        _judge(tmp_path, verdict),
    ]
    code, report, _ = _council(tmp_path, {"app.py": SHELL}, tables)("--min-agreement", "2")
    (shared,) = [f for f in report["findings"] if f.get("members")]
    assert [m["participant"] for m in shared["members"]] == ["m1", "bandit"]
    assert shared["raised_by"] == ["m1", "bandit"] and shared["agreement"]["k"] == 2
    assert shared["severity"] == "critical" and str(shared["id"]) not in report["suppressed"]
    assert not any(f["origin"]["kind"] == "judge" for f in report["findings"])
    assert code == 1


def test_a_judge_allowed_to_overrule_analyzers_may_split(tmp_path: Path) -> None:
    """With ``[judge] overrule = "all"`` (the roster's choice) the same restatement splits
    the finding: bandit's telling is refiled alone, one raiser, and under
    --min-agreement 2 nothing gates (the roster gave the judge that power)."""
    bwrap_or_skip()
    verdict = {**SHELL_CRITICAL, "raisedBy": ["m1"]}
    tables = [
        reviewer("m1", "replay", answer=answer(tmp_path, "m1.json", SHELL_CRITICAL)),
        BANDIT,
        _judge(tmp_path, verdict, overrule="all"),
    ]
    code, report, _ = _council(tmp_path, {"app.py": SHELL}, tables)("--min-agreement", "2")
    assert not any(f.get("members") for f in report["findings"])
    (alone,) = [f for f in report["findings"] if f["subject"].startswith("B602")]
    assert report["unagreed"][str(alone["id"])] == 1 and code == 0


# -- situation 4 (the re-run): a --since-last round cannot turn the gate green ---------


@pytest.mark.parametrize(
    "telling",
    [
        {  # a naming nit on bandit's line: kept apart from B602 from the start
            "subject": "Rename `cmd` to `command_line`",
            "discussion": "`cmd` is terse; a descriptive name reads better.",
            "label": "nitpick",
            "severity": "minor",
        },
        {  # the shell call itself, at medium: merged with B602 ("2 of 2")
            "subject": "Shell injection: cmd reaches subprocess.call with shell=True",
            "discussion": "run() hands cmd to a shell; any caller-controlled text runs as a "
            "command. Pass an argument list and drop shell=True.",
            "label": "issue",
            "severity": "medium",
        },
    ],
    ids=["nit-apart", "merged-medium"],
)
def test_a_since_last_round_on_another_file_keeps_bandits_critical_gating(
    tmp_path: Path, telling: dict[str, Any]
) -> None:
    """Round 1: bandit's critical B602 and m1's telling on line 5, exit 1. A commit to
    another file only, then --since-last: bandit reviews only the new commit and does not
    raise B602 again; m1 raises its telling again. The critical must still gate (carried,
    exit 1): before, m1's re-raise took the finding's id as a lesser finding, "seen", and
    the round passed with no fix."""
    bwrap_or_skip()
    told = {**telling, "location": _line("app.py", 5)}
    tables = [reviewer("m1", "replay", answer=answer(tmp_path, "m1.json", told)), BANDIT]
    repo = new_repo(tmp_path / "repo", {"README": "x\n"})
    base = commit(repo, {"app.py": SHELL}, "the pull request")
    path = roster(tmp_path, *tables)
    state = tmp_path / "state.json"
    first_out, second_out = tmp_path / "r1.json", tmp_path / "r2.json"
    first = review(repo, state, "--json", str(first_out), base="HEAD~1", roster_path=path)
    assert first.exit_code == 1, first.output
    (b602,) = [f for f in report_of(first_out)["findings"] if f["severity"] == "critical"]
    commit(repo, {"docs.md": "notes\n"}, "another file only")
    second = review(
        repo,
        state,
        "--since-last",
        "--json",
        str(second_out),
        base=f"{base}~1",
        roster_path=path,
    )
    assert second.exit_code == 1, second.output
    report = report_of(second_out)
    gating = [
        f
        for f in (*report["findings"], *report["carried"])
        if f["severity"] == "critical" and f["id"] not in report["suppressed"]
    ]
    assert [f["id"] for f in gating] == [b602["id"]]
    assert any(f["id"] == b602["id"] for f in report["carried"])
