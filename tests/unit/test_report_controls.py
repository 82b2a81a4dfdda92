"""Control and bidirectional characters in a finding's text reach no output raw.

A hostile change writes them into a string literal; an analyzer's message echoes it (a
bandit B105 "possible hardcoded password"), a model quotes it. Every file council writes
shows them escaped (``\\x1b``, ``\\u202e``) wherever a forge shows text, and JSON keeps
the exact data (a path must still name its file) as ``\\u`` escapes, never raw.
Source: docs/architecture.md "Reports, the CLI and the gate".
"""

from __future__ import annotations

import json
from pathlib import Path

from council.change.commentable import land
from council.change.diff import parse_diff
from council.model.findings import ChangeAnchor, FileAnchor, LineAnchor
from council.model.report import CouncilReport, ParticipantSummary
from council.rendering import read_json
from tests.forge_cases import (
    CONTROLS_DIFF,
    CONTROLS_PATH,
    ESCAPED,
    EXTRA,
    HOSTILE,
    RAW,
    finding,
    forge_strings,
    people,
    report,
)
from workers.cli.options import FILE_NAMES, FORMATS
from workers.cli.outputs import OutputPlan, write_outputs
from workers.forge.manifest import MANIFEST_NAME


def hostile_report() -> CouncilReport:
    """Findings whose subject, discussion and path hold :data:`HOSTILE`: one on a changed
    line of ``CONTROLS_PATH``, one on a file whose name holds NUL too, one about the
    change; and a reviewer whose failure text holds it."""
    said = f"The literal\n\t'{HOSTILE}'\nlooks like a password.{EXTRA} Ask {HOSTILE}@owner."
    findings = (
        finding(
            1,
            LineAnchor(path=CONTROLS_PATH, line=2),
            severity="critical",
            subject=f"B105: Possible hardcoded password: '{HOSTILE}'",
            discussion=said,
        ),
        finding(2, FileAnchor(path=f"cfg{HOSTILE}.py"), severity="medium", subject=f"x{HOSTILE}"),
        finding(3, ChangeAnchor(), subject=f"whole {HOSTILE}", discussion=said),
    )
    failed = ParticipantSummary(id="rat", backend="replay", state="failed", failure=HOSTILE)
    return land(report(*findings, participants=(*people(), failed)), parse_diff(CONTROLS_DIFF))


GATE = {"fail_on": "never", "quorum": None}
"""The gate policy the hostile report is written under: every finding listed, none gating."""


def written(tmp_path: Path) -> dict[str, str]:
    """Every format of :func:`hostile_report` written as ``council review`` writes them,
    by file name (the manifest too)."""
    out = tmp_path / "out"
    out.mkdir()
    change = parse_diff(CONTROLS_DIFF)
    write_outputs(
        hostile_report().gated(**GATE),
        OutputPlan(FORMATS, out),
        change=change,
    )
    return {p.name: p.read_text(encoding="utf-8") for p in out.iterdir()}


def test_no_output_file_holds_a_raw_control(tmp_path: Path) -> None:
    """Not one of the characters is raw in any file's text, JSON or Markdown."""
    files = written(tmp_path)
    assert set(files) == {*FILE_NAMES.values(), MANIFEST_NAME}
    for name, text in files.items():
        assert [c for c in RAW if c in text] == [], name


def test_what_a_forge_shows_is_escaped_and_addresses_stay_exact(tmp_path: Path) -> None:
    """In every forge file, each string a forge shows holds none of the characters and
    the file shows their escapes; only a file's address keeps them (decoded)."""
    files = written(tmp_path)
    forge = [FILE_NAMES[f] for f in FORMATS if f not in ("markdown", "json")]
    for name in forge:
        shown, kept = forge_strings(files[name])
        for text in shown:
            assert [c for c in RAW if c in text] == [], (name, text)
        assert all(e in "\n".join(shown) for e in ESCAPED), name
        assert kept - {"."} <= {CONTROLS_PATH, f"cfg{HOSTILE}.py"}, name
    review = json.loads(files["github-review.json"])
    assert [c["path"] for c in review["comments"]] == [CONTROLS_PATH]
    threads = json.loads(files["gitlab-discussions.json"])["discussions"]
    assert [t["position"]["new_path"] for t in threads] == [CONTROLS_PATH]


def test_each_forge_text_shows_the_escapes(tmp_path: Path) -> None:
    """The review's line comment and body, the check run's summary, text and each
    annotation's title and message, the GitLab thread, Code Quality's description and
    body, SARIF's message text: each shows the escapes where the finding had controls
    (in Markdown the ``[`` after them is escaped too: it renders as ``[``)."""
    files = written(tmp_path)
    review = json.loads(files["github-review.json"])
    checks = json.loads(files["github-checks.json"])["output"]
    threads = json.loads(files["gitlab-discussions.json"])["discussions"]
    quality = json.loads(files["gl-code-quality-report.json"])
    sarif = json.loads(files["council.sarif"])
    results = [r for run in sarif["runs"] for r in run["results"]]
    notes = [
        n["message"]["text"]
        for run in sarif["runs"]
        for n in run["invocations"][0].get("toolExecutionNotifications", [])
    ]
    markdown = [
        review["comments"][0]["body"],
        review["body"],
        checks["text"],
        threads[0]["body"],
        files["council.md"],
    ]
    plain = [
        *(a[key] for a in checks["annotations"] for key in ("title", "message")),
        *(e["description"] for e in quality),
        quality[0]["content"]["body"],
        *(r["message"]["text"] for r in results),
        *notes,
    ]
    for text in markdown:
        assert "\\x1b\\[31m\\u202e\\u2066\\x00\\x9b" in text, text
    for text in plain:
        assert "\\x1b[31m\\u202e\\u2066\\x00\\x9b" in text, text
    message = checks["annotations"][0]["message"]
    assert "\t'" in message and "\n" in message
    assert "\\x09" not in review["comments"][0]["body"]
    assert "\\x9b@\u200downer" in review["comments"][0]["body"]


def test_json_report_keeps_the_exact_text(tmp_path: Path) -> None:
    """council.json holds no raw control, yet reads back into the same report."""
    files = written(tmp_path)
    assert read_json(files["council.json"]) == hostile_report().gated(**GATE)
    assert "\\u202e" in files["council.json"] and "\\u001b" in files["council.json"]
