"""End to end: a repository, three replay reviewers telling the same two bugs in their own
words and line ranges; one finding per bug, with its agreement, in every output format."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path
from typing import Any

from council.harvest import harvest
from council.merging.sameness import says_the_same
from council.model.findings import FINDING
from tests.gitrepo import commit, new_repo
from tests.unit.test_cli_review import answer, review, reviewer, roster

CODE = "".join(f"line_{k} = {k}\n" for k in range(1, 31))
CHANGED = CODE.replace(
    "line_10 = 10\n",
    "def parse_limit(total, page_size):\n    return total / page_size\n",
).replace(
    "line_25 = 25\n",
    "def check_token(given, secret):\n    return given == secret\n",
)

TELLINGS: dict[str, list[dict[str, Any]]] = {
    "hawk": [
        {
            "subject": "`parse_limit` divides by zero when `page_size` is 0",
            "discussion": "parse_limit divides total by page_size with no guard.",
            "label": "issue",
            "severity": "critical",
            "location": {"kind": "line", "file": "app.py", "start": 10, "end": 11},
        },
        {
            "subject": "`check_token` compares secrets with ==",
            "discussion": "A plain == on the secret leaks timing; use hmac.compare_digest.",
            "label": "issue",
            "severity": "medium",
            "location": {"kind": "line", "file": "app.py", "start": 27},
        },
    ],
    "owl": [
        {
            "subject": "ZeroDivisionError in parse_limit for an empty page",
            "discussion": "A request with page_size=0 makes parse_limit divide by zero.",
            "label": "issue",
            "severity": "medium",
            "location": {"kind": "line", "file": "app.py", "start": 11},
        },
    ],
    "lynx": [
        {
            "subject": "Timing attack: check_token uses == on the secret",
            "discussion": "check_token should use hmac.compare_digest, not ==.",
            "label": "issue",
            "severity": "critical",
            "location": {"kind": "line", "file": "app.py", "start": 26, "end": 27},
        },
        {
            "subject": "page_size of 0 makes parse_limit raise ZeroDivisionError",
            "discussion": "parse_limit has no check for page_size == 0: it divides by zero.",
            "label": "issue",
            "location": {"kind": "line", "file": "app.py", "start": 9, "end": 11},
        },
    ],
}


def _council(tmp_path: Path) -> tuple[Path, Path]:
    repo = new_repo(tmp_path / "repo", {"app.py": CODE})
    commit(repo, {"app.py": CHANGED}, "limits and tokens")
    tables = [
        reviewer(who, "replay", answer=answer(tmp_path, f"{who}.json", *told))
        for who, told in TELLINGS.items()
    ]
    return repo, roster(tmp_path, *tables)


def test_says_the_same_alone_would_merge_none_of_them() -> None:
    """The tellings differ in words: the exact rule sees five findings."""
    found = [
        f for told in TELLINGS.values() for f in harvest(json.dumps({"findings": told})).findings
    ]
    assert len(found) == 5
    assert not any(says_the_same(a, b) for a, b in combinations(found, 2))


def test_one_finding_per_bug_with_its_agreement_in_every_format(tmp_path: Path) -> None:
    repo, path = _council(tmp_path)
    out = tmp_path / "out"
    formats = [
        "markdown",
        "json",
        "sarif",
        "github-review",
        "gitlab-codequality",
        "gitlab-discussions",
    ]
    args = [arg for name in formats for arg in ("--format", name)]
    done = review(
        repo,
        tmp_path / "state.json",
        *args,
        "--output",
        str(out),
        "--fail-on",
        "never",
        roster_path=path,
    )
    assert done.exit_code == 0, done.output
    report = json.loads((out / "council.json").read_text(encoding="utf-8"))
    findings = [FINDING.validate_python(f) for f in report["findings"]]
    assert len(findings) == 2
    division, token = findings
    assert division.raised_by == ("hawk", "owl", "lynx")
    assert division.agreement is not None and (division.agreement.k, division.agreement.n) == (3, 3)
    assert division.members is not None and [m.participant for m in division.members] == [
        "hawk",
        "owl",
        "lynx",
    ]
    assert division.severity == "critical"
    assert token.raised_by == ("hawk", "lynx") and token.severity == "critical"
    assert token.agreement is not None and (token.agreement.k, token.agreement.n) == (2, 3)

    markdown = (out / "council.md").read_text(encoding="utf-8")
    assert "raised by hawk, owl, lynx (3 of 3)" in markdown
    assert "raised by hawk, lynx (2 of 3)" in markdown
    sarif = json.loads((out / "council.sarif").read_text(encoding="utf-8"))
    results = [r for run in sarif["runs"] for r in run["results"]]
    assert len(results) == 2
    assert sorted(r["properties"]["agreement"]["k"] for r in results) == [2, 3]
    assert all("Also told by" in r["message"]["text"] for r in results)
    github = json.loads((out / "github-review.json").read_text(encoding="utf-8"))
    assert len(github["comments"]) == 2
    bodies = " ".join(c["body"] for c in github["comments"])
    assert "(3 of 3)" in bodies and "(2 of 3)" in bodies and "Also told by owl" in bodies
    gitlab = json.loads((out / "gl-code-quality-report.json").read_text(encoding="utf-8"))
    assert len(gitlab) == 2
    assert any("(3 of 3)" in e["description"] for e in gitlab)
    threads = json.loads((out / "gitlab-discussions.json").read_text(encoding="utf-8"))
    assert len(threads["discussions"]) == 2


def test_the_same_report_whatever_the_run(tmp_path: Path) -> None:
    """Two runs of the same council give the same findings (roster order decides)."""
    repo, path = _council(tmp_path)
    got = []
    for k in range(2):
        out = tmp_path / f"r{k}.json"
        done = review(
            repo,
            tmp_path / f"state{k}.json",
            "--json",
            str(out),
            "--fail-on",
            "never",
            roster_path=path,
        )
        assert done.exit_code == 0, done.output
        text = out.read_text(encoding="utf-8")
        run_id = json.loads(text)["run_id"]
        findings = json.loads(text.replace(run_id, "RUN"))["findings"]
        keys = ("subject", "anchor", "raised_by", "members", "agreement")
        got.append([{key: f.get(key) for key in keys} for f in findings])
    assert got[0] == got[1]
