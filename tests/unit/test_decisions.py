"""Dismissals and baseline entries are decisions about occurrences
(council.session.decisions): what each covers, what it never covers (another occurrence of
the rule, another kind of reviewer, another file), and what an entry written before
occurrences were kept covers. The bad inputs of issue 20 each get a defined result and a
note; a property test plays random files and decisions."""

from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from council.change.diff import parse_diff
from council.model.findings import (
    ChangeAnchor,
    FileAnchor,
    Finding,
    LineAnchor,
    Member,
    Origin,
)
from council.model.fingerprint import claim, fingerprint
from council.model.occurrence import stamp
from council.model.report import CouncilReport, ParticipantSummary
from council.round.gate import gate_tripped
from council.session.baseline import Baseline, read_baseline, write_baseline
from council.session.decisions import suppress
from tests.forge_cases import finding, report

B602 = "B602: subprocess call with shell=True identified, security issue."

BANDIT = Origin(kind="reviewer", run_id="r1", participant="bandit", program=True)
MODEL = Origin(kind="reviewer", run_id="r1", participant="m1", program=False)

PEOPLE = (
    ParticipantSummary(id="bandit", backend="sarif", state="answered"),
    ParticipantSummary(id="m1", backend="replay", state="answered"),
)

SVC = [
    "import subprocess",
    "",
    "def listing():",
    "    return subprocess.call(CMD, shell=True)",
    "",
    "def grep(pattern):",
    "    return subprocess.call('grep ' + pattern, shell=True)",
]


def told(
    ident: int | None,
    line: int,
    origin: Origin = BANDIT,
    path: str = "svc.py",
    subject: str = B602,
    tree: list[str] | None = None,
) -> Finding:
    """A critical finding on ``path``'s line, stamped with its code in ``tree``."""
    raw = finding(
        ident,
        LineAnchor(path=path, line=line),
        subject=subject,
        severity="critical",
        origin=origin,
    )
    files = {path: tree if tree is not None else SVC}
    (stamped,) = stamp([raw], files.get)
    return stamped


def round_of(*findings: Finding, **update: object) -> CouncilReport:
    """A report of this round's findings, bandit and m1 its reviewers."""
    return report(*findings).model_copy(update={"participants": PEOPLE, **update})


def gating(done: CouncilReport) -> list[int | None]:
    return [f.id for f in gate_tripped(done.gated(fail_on="critical"))]


def test_a_model_dismissal_never_suppresses_the_analyzers_finding_at_that_code() -> None:
    """A model copied bandit's subject onto the very line bandit flags (so the
    fingerprints are equal) and a person dismissed it: bandit's finding gates, with a
    note; the model's stays dismissed; a finding merging both tellings gates too."""
    copied = told(5, 4, MODEL)
    real = told(6, 4, BANDIT)
    assert fingerprint(copied) == fingerprint(real)
    key = fingerprint(copied)
    done = suppress(round_of(real), Baseline(), {key: "false alarm"}, {key: copied})
    assert gating(done) == [6]
    assert any(n.startswith("#6 is a program reviewer's finding") for n in done.notes)
    again = suppress(round_of(copied), Baseline(), {key: "false alarm"}, {key: copied})
    assert gating(again) == []
    members = tuple(
        Member(
            participant=o.participant or "", **f.model_dump(include={"anchor", "label", "subject"})
        ).model_copy(update={"origin": o})
        for f, o in ((copied, MODEL), (real, BANDIT))
    )
    merged = copied.model_copy(update={"id": 7, "members": members, "raised_by": ("m1", "bandit")})
    assert gating(suppress(round_of(merged), Baseline(), {key: "x"}, {key: copied})) == [7]


def test_a_programs_own_decision_covers_its_finding() -> None:
    """Bandit's finding dismissed, or baselined, is covered at that occurrence; the
    baseline entry lists bandit's telling, and one written from the model's copy lists
    none and does not cover bandit's."""
    real = told(6, 4, BANDIT)
    key = fingerprint(real)
    assert gating(suppress(round_of(real), Baseline(), {key: "trusted"}, {key: real})) == []
    text = write_baseline([real], "legacy")
    (entry,) = json.loads(text)["entries"]
    assert entry["programs"] == [key] and entry["occurrence"].startswith("line:")
    assert gating(suppress(round_of(real), read_baseline(text), {})) == []
    copied = read_baseline(write_baseline([told(5, 4, MODEL)], "legacy"))
    assert "programs" not in json.loads(write_baseline([told(5, 4, MODEL)], "x"))["entries"][0]
    done = suppress(round_of(real), copied, {})
    assert gating(done) == [6]


def test_a_dismissal_whose_code_was_deleted_and_re_added_elsewhere_does_not_hold() -> None:
    """The dismissed call deleted and added again, verbatim, in another function: another
    occurrence, which gates with a note; moved together with its function it is the
    occurrence dismissed, and stays dismissed."""
    dismissed = told(3, 4, BANDIT)
    key = fingerprint(dismissed)
    elsewhere = [
        "import subprocess",
        "",
        "def listing():",
        "    return 0",
        "",
        "def grep(pattern):",
        "    return subprocess.call(CMD, shell=True)",
    ]
    readded = told(9, 7, BANDIT, tree=elsewhere)
    done = suppress(round_of(readded), Baseline(), {key: "a constant"}, {key: dismissed})
    assert gating(done) == [9]
    assert any(n.startswith("#9 makes the same claim as #3, dismissed") for n in done.notes)
    moved = ["import subprocess", "", *SVC[5:], "", *SVC[2:4]]
    kept = told(9, 7, BANDIT, tree=moved)
    assert gating(suppress(round_of(kept), Baseline(), {key: "a constant"}, {key: dismissed})) == []


RENAME = (
    "diff --git a/svc.py b/tools.py\n"
    "similarity index 90%\n"
    "rename from svc.py\n"
    "rename to tools.py\n"
    "index 1111111..2222222 100644\n"
    "--- a/svc.py\n"
    "+++ b/tools.py\n"
    "@@ -1,1 +1,2 @@\n"
    " import subprocess\n"
    "+import os\n"
)


def test_a_file_renamed_and_edited_takes_no_decision_with_it() -> None:
    """The dismissed finding's file renamed and edited in one round: the same code on the
    new path is another occurrence (a decision does not follow a path), which gates,
    and the note says the file was renamed; without the rename, that it moved."""
    dismissed = told(3, 4, BANDIT)
    key = fingerprint(dismissed)
    tree = ["import subprocess", "import os", *SVC[1:]]
    moved = told(8, 5, BANDIT, path="tools.py", tree=tree)
    done = suppress(
        round_of(moved), Baseline(), {key: "ok"}, {key: dismissed}, change=parse_diff(RENAME)
    )
    assert gating(done) == [8]
    assert any("at the same code, but the file was renamed (svc.py then)" in n for n in done.notes)
    plain = suppress(round_of(moved), Baseline(), {key: "ok"}, {key: dismissed})
    assert any("the code is in another file (svc.py then)" in n for n in plain.notes)


def test_findings_with_no_place_or_only_a_file() -> None:
    """A finding about the change as a whole is one occurrence (the change); a file-level
    finding one per file: a decision covers that one, never a line finding of the claim
    on the file, nor the claim on another file."""
    whole = finding(1, ChangeAnchor(), subject="no tests", severity="critical")
    on_file = finding(2, FileAnchor(path="a.py"), subject="no docstring", severity="critical")
    keys = {fingerprint(whole): "later", fingerprint(on_file): "style"}
    known = {fingerprint(whole): whole, fingerprint(on_file): on_file}
    again = [whole.model_copy(update={"id": 5}), on_file.model_copy(update={"id": 6})]
    assert gating(suppress(round_of(*again), Baseline(), keys, known)) == []
    line = finding(
        7,
        LineAnchor(path="a.py", line=3, code="c0de" * 8 + ":1"),
        subject="no docstring",
        severity="critical",
    )
    other = finding(8, FileAnchor(path="b.py"), subject="no docstring", severity="critical")
    assert gating(suppress(round_of(line, other), Baseline(), keys, known)) == [7, 8]


def test_identical_subjects_on_different_files_are_different_occurrences() -> None:
    """Two files holding the very same code and the same finding: deciding on one covers
    only that file's."""
    here, there = told(1, 4, BANDIT), told(2, 4, BANDIT, path="copy.py")
    key = fingerprint(here)
    done = suppress(round_of(here, there), Baseline(), {key: "ok"}, {key: here})
    assert gating(done) == [2]


def test_five_hundred_hits_of_one_rule_in_one_file() -> None:
    """The same rule on 500 identical lines: one dismissal covers one of them; the
    baseline written from all covers all 500 (one entry each), and a 501st identical
    line is a new occurrence that gates."""
    tree = ["import os", *["os.system(cmd)"] * 500]
    hits = [told(n, n + 1, BANDIT, path="run.py", subject="B605", tree=tree) for n in range(1, 501)]
    key = fingerprint(hits[41])
    done = suppress(round_of(*hits), Baseline(), {key: "ok"}, {key: hits[41]})
    assert sorted(done.suppressed) == [42] and len(gating(done)) == 499
    baseline = read_baseline(write_baseline(hits, "legacy"))
    assert len(baseline.entries) == 500 and {e.count for e in baseline.entries} == {1}
    assert gating(suppress(round_of(*hits), baseline, {})) == []
    longer = [*tree, "os.system(cmd)"]
    more = [
        told(n, n + 1, BANDIT, path="run.py", subject="B605", tree=longer) for n in range(1, 502)
    ]
    # Top-level code: each block is its line and the 20 above, which the 501st line
    # (below them all) leaves alone: only the new occurrence gates.
    assert gating(suppress(round_of(*more), baseline, {})) == [501]


ADDS_LINE_3 = (
    "diff --git a/db.py b/db.py\n"
    "index 1111111..2222222 100644\n"
    "--- a/db.py\n"
    "+++ b/db.py\n"
    "@@ -2,0 +3,1 @@\n"
    "+os.system(user_input)\n"
)


def test_a_baseline_written_by_the_previous_version() -> None:
    """An entry keyed by the claim (what earlier versions called the fingerprint), no
    occurrence: it still reads, and covers a finding of its claim whose code the change
    did not touch (noted), never one on the change's own lines (noted), up to its count,
    whatever kind told it; without a change to show it, nothing."""
    tree = ["import os", "os.system(legacy)", "os.system(user_input)"]
    legacy = told(1, 2, BANDIT, path="db.py", subject="B605", tree=tree)
    new = told(2, 3, BANDIT, path="db.py", subject="B605", tree=tree)
    old = {
        "version": 1,
        "entries": [
            {"fingerprint": claim(legacy), "reason": "legacy", "subject": "B605", "path": "db.py"}
        ],
    }
    baseline = read_baseline(json.dumps(old))
    assert baseline.entries[0].legacy
    done = suppress(round_of(legacy, new), baseline, {}, change=parse_diff(ADDS_LINE_3))
    assert done.suppressed[1].source == "baseline" and gating(done) == [2]
    assert any(n.startswith("#1 is covered by a baseline entry written before") for n in done.notes)
    assert any(
        n.startswith("#2 makes the claim of a baseline entry written before") for n in done.notes
    )
    twice = [legacy, legacy.model_copy(update={"id": 3})]
    done = suppress(round_of(*twice), baseline, {}, change=parse_diff(ADDS_LINE_3))
    assert gating(done) == [3]
    assert any(n.startswith("#3 is a further finding of the claim") for n in done.notes)
    assert gating(suppress(round_of(legacy), baseline, {})) == [1]


def test_a_dismissal_recorded_by_the_previous_version() -> None:
    """A dismissal keyed by the claim, holding the finding without its code: it covers a
    finding of its claim on code the change did not touch, never one on the change's
    lines, and (a model's) never an analyzer's."""
    tree = ["import os", "os.system(legacy)", "os.system(user_input)"]
    earlier = finding(
        4, LineAnchor(path="db.py", line=2), subject="B605", severity="critical", origin=MODEL
    )
    key = claim(earlier)
    change = parse_diff(ADDS_LINE_3)
    base_line = told(4, 2, MODEL, path="db.py", subject="B605", tree=tree)
    added = told(5, 3, MODEL, path="db.py", subject="B605", tree=tree)
    done = suppress(round_of(base_line), Baseline(), {key: "ok"}, {key: earlier}, change=change)
    assert gating(done) == [] and "written before council kept occurrences" in done.notes[-1]
    done = suppress(round_of(added), Baseline(), {key: "ok"}, {key: earlier}, change=change)
    assert gating(done) == [5]
    analyzer = told(6, 2, BANDIT, path="db.py", subject="B605", tree=tree)
    done = suppress(round_of(analyzer), Baseline(), {key: "ok"}, {key: earlier}, change=change)
    assert gating(done) == [6]


FUNCTIONS = st.lists(
    st.tuples(
        st.from_regex(r"[a-z]{1,6}", fullmatch=True),
        st.lists(
            st.sampled_from(["os.system(cmd)", "x = 1", "eval(s)", "y = 2"]), min_size=1, max_size=4
        ),
    ),
    min_size=1,
    max_size=5,
    unique_by=lambda f: f[0],
)


def _tree(functions: list[tuple[str, list[str]]]) -> list[str]:
    return [
        line
        for name, body in functions
        for line in (f"def {name}():", *(f"    {b}" for b in body), "")
    ]


def _raised(tree: list[str]) -> list[Finding]:
    """What an analyzer raises on ``tree``: B605 on each os.system, B307 on each eval."""
    rules = {"os.system(cmd)": "B605", "eval(s)": "B307"}
    out: list[Finding] = []
    for at, line in enumerate(tree, start=1):
        rule = rules.get(line.strip())
        if rule is not None:
            raw = finding(
                len(out) + 1,
                LineAnchor(path="a.py", line=at),
                subject=rule,
                severity="critical",
                origin=BANDIT,
            )
            out.extend(stamp([raw], {"a.py": tree}.get))
    return out


@settings(max_examples=80, deadline=None)
@given(before=FUNCTIONS, after=FUNCTIONS, order=st.randoms(use_true_random=False), data=st.data())
def test_no_decision_covers_an_occurrence_no_person_decided_on(
    before: list[tuple[str, list[str]]],
    after: list[tuple[str, list[str]]],
    order: random.Random,
    data: st.DataObject,
) -> None:
    """Random files: some findings of the first are dismissed, some baselined; the next
    version keeps some functions (shuffled, so lines move) and adds others. Every finding
    suppressed then is one a decision recorded (the same path, rule and code), each
    decision covering at most one finding; everything else gates."""
    first = _raised(_tree(before))
    chosen = data.draw(
        st.lists(st.sampled_from(first), unique_by=lambda f: f.id) if first else st.just([])
    )
    dismissed = chosen[: len(chosen) // 2]
    baselined = chosen[len(chosen) // 2 :]
    kept = [f for f in before if data.draw(st.booleans())]
    merged = {name: body for name, body in [*after, *kept]}
    functions = list(merged.items())
    order.shuffle(functions)
    second = _raised(_tree(functions))
    decided = {(f.anchor.path, f.subject, getattr(f.anchor, "code", None)) for f in chosen}
    done = suppress(
        round_of(*second),
        read_baseline(write_baseline(baselined, "legacy")),
        {fingerprint(f): "ok" for f in dismissed},
        {fingerprint(f): f for f in dismissed},
    )
    covered = [f for f in second if f.id in done.suppressed]
    assert all(
        (f.anchor.path, f.subject, getattr(f.anchor, "code", None)) in decided for f in covered
    )
    assert len(covered) <= len(chosen)
    assert len({fingerprint(f) for f in covered}) == len(covered)
    assert sorted(i for i in gating(done) if i is not None) == sorted(
        f.id for f in second if f.id not in done.suppressed and f.id is not None
    )
