"""Consolidation by agreement (council.merging.consolidation.consolidate): one finding per
problem, every member kept, agreement k of n, deterministic, and odd input."""

from __future__ import annotations

import itertools
import json

from council.change.diff import parse_diff
from council.merging.consolidation import consolidate, covering_anchor, file_findings, with_origin
from council.merging.sameness import says_the_same
from council.model.backend_result import ReviewResult
from council.model.findings import (
    Anchor,
    ChangeAnchor,
    FileAnchor,
    Finding,
    LineAnchor,
    Origin,
    canonical,
)
from council.model.fingerprint import fingerprint, with_fingerprints
from council.model.participant import Participant
from council.rendering import CouncilReport, ParticipantSummary, render_json, render_markdown
from council.rendering.github_review import render_github_review
from council.rendering.gitlab import render_gitlab_codequality
from council.rendering.sarif import render_sarif
from council.round.filing import conclude_judge
from council.round.outcome import harvest_outcome
from council.session.earlier_rounds import mark_round

ROSTER = ("hawk", "owl", "lynx")


def _f(
    who: str,
    subject: str,
    discussion: str = "",
    anchor: Anchor | None = None,
    **extra: object,
) -> Finding:
    finding = Finding.model_validate(
        {
            "anchor": anchor if anchor is not None else LineAnchor(path="app.py", line=10),
            "label": "issue",
            "subject": subject,
            "discussion": discussion,
            **extra,
        }
    )
    return with_origin([finding], Origin(kind="reviewer", run_id="r", participant=who))[0]


HAWK = _f(
    "hawk",
    "`parse_limit` divides by zero when `page_size` is 0",
    "The division in parse_limit has no guard; page_size=0 raises ZeroDivisionError.",
    LineAnchor(path="app.py", line=12, start_line=11),
    severity="medium",
)
OWL = _f(
    "owl",
    "ZeroDivisionError in parse_limit for an empty page_size",
    "A request with page_size 0 crashes parse_limit (ZeroDivisionError).",
    LineAnchor(path="app.py", line=14, start_line=12),
    severity="critical",
    confidence=0.9,
)
LYNX = _f(
    "lynx",
    "Token compared with == leaks timing",
    "check_token compares secrets with ==; use hmac.compare_digest.",
    LineAnchor(path="auth.py", line=3),
)


def _per(*findings: Finding) -> list[tuple[str, list[Finding]]]:
    per: dict[str, list[Finding]] = {name: [] for name in ROSTER}
    for f in findings:
        assert f.origin is not None and f.origin.participant is not None
        per[f.origin.participant].append(f)
    return list(per.items())


def test_two_tellings_of_one_bug_become_one_finding_with_both_members() -> None:
    """Different words, different lines: not the same to says_the_same, one to agreement."""
    assert not says_the_same(HAWK, OWL)
    merged = consolidate(_per(HAWK, OWL, LYNX))
    assert len(merged) == 2
    one = merged[0]
    assert one.subject == HAWK.subject  # the first member in roster order
    assert one.raised_by == ("hawk", "owl")
    assert one.severity == "critical" and one.confidence == 0.9
    assert one.members is not None
    assert [m.participant for m in one.members] == ["hawk", "owl"]
    assert one.members[1].subject == OWL.subject and one.members[1].severity == "critical"
    assert one.agreement is not None and (one.agreement.k, one.agreement.n) == (2, 3)
    assert one.anchor == HAWK.anchor  # 11-12 covers 12-14 within 3 lines, and is narrower
    alone = merged[1]
    assert alone.members is None and alone.raised_by is None
    assert alone.agreement is not None and (alone.agreement.k, alone.agreement.n) == (1, 3)


def test_n_counts_the_reviewers_heard_in_full_and_any_raiser() -> None:
    """n: heard in full; a raiser not heard in full still counts (k <= n)."""
    merged = consolidate(_per(HAWK, OWL), heard=["hawk"])
    assert merged[0].agreement is not None
    assert (merged[0].agreement.k, merged[0].agreement.n) == (2, 2)


def test_one_reviewers_two_findings_never_merge() -> None:
    """Two findings of one reviewer stay two, however alike."""
    twin = HAWK.model_copy(update={"anchor": LineAnchor(path="app.py", line=13)})
    merged = consolidate(_per(HAWK, twin))
    assert len(merged) == 2 and all(f.members is None for f in merged)


def test_the_same_whatever_order_the_reviewers_answered_in() -> None:
    """Completion order never changes the result: the roster order does."""
    shown = None
    for perm in itertools.permutations([HAWK, OWL, LYNX]):
        got = json.dumps([canonical(f) for f in consolidate(_per(*perm))])
        assert shown is None or got == shown
        shown = got


def test_covering_anchor() -> None:
    """The narrowest member anchor covering the others (±3 lines), else a union within
    one hunk, else the first line anchor; a line beats a file beats the change."""
    wide = LineAnchor(path="a.py", line=20, start_line=10)
    narrow = LineAnchor(path="a.py", line=12)
    assert covering_anchor([narrow, wide]) == wide
    near = LineAnchor(path="a.py", line=11)
    assert covering_anchor([near, narrow]) == near  # each covers the other: the first
    far = LineAnchor(path="a.py", line=80)
    assert covering_anchor([narrow, far]) == narrow  # the union spans too much
    assert covering_anchor([ChangeAnchor(), FileAnchor(path="a.py")]) == FileAnchor(path="a.py")
    diff = parse_diff(
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,30 @@\n"
        + "".join(f"+l{k}\n" for k in range(27))
        + " x\n y\n z\n"
    )
    apart = [LineAnchor(path="a.py", line=2), LineAnchor(path="a.py", line=25)]
    assert covering_anchor(apart, diff) == LineAnchor(path="a.py", line=25, start_line=2)


def test_exact_repeats_far_apart_still_merge() -> None:
    """The first pass: the same subject on the same file, lines far apart (says_the_same)."""
    a = _f("hawk", "Leaks the handle", anchor=LineAnchor(path="a.py", line=5))
    b = _f("owl", "leaks the handle.", anchor=LineAnchor(path="a.py", line=300))
    (one,) = consolidate(_per(a, b))
    assert one.raised_by == ("hawk", "owl")


def _odd(name: str) -> list[tuple[str, list[Finding]]]:
    if name == "empty discussions":
        return _per(_f("hawk", "x"), _f("owl", "x y"), _f("lynx", "z"))
    if name == "only change anchors":
        return _per(*(_f(w, f"global {w} claim", anchor=ChangeAnchor()) for w in ROSTER))
    if name == "same subject, different files":
        return _per(
            _f("hawk", "Same words", anchor=FileAnchor(path="a.py")),
            _f("owl", "Same words", anchor=FileAnchor(path="b.py")),
        )
    if name == "one reviewer, 10,000 findings":
        many = [
            _f("hawk", f"claim {k} about `name_{k % 50}`", anchor=LineAnchor(path="a.py", line=1))
            for k in range(10_000)
        ]
        return [("hawk", many)]
    if name == "one reviewer only":
        return [("hawk", [HAWK])]
    return _per(HAWK)  # a reviewer with no finding


def test_odd_input_consolidates_the_same_way_every_run() -> None:
    """Bad input never raises, and gives the same result twice."""
    for name in (
        "empty discussions",
        "only change anchors",
        "same subject, different files",
        "one reviewer, 10,000 findings",
        "one reviewer only",
        "a reviewer with no finding",
    ):
        per = _odd(name)
        first = consolidate(per)
        assert first == consolidate(per), name
        total = sum(len(f) for _, f in per)
        assert sum(len(f.members or (f,)) for f in first) == total, name
        if name in ("same subject, different files", "one reviewer, 10,000 findings"):
            assert len(first) == total, name
        file_findings(first, 1)


def test_members_round_trip_in_canonical_json() -> None:
    """members and agreement are canonical JSON; a finding of one telling has no members."""
    merged = consolidate(_per(HAWK, OWL))
    data = [canonical(f) for f in merged]
    assert "members" in data[0] and data[0]["agreement"] == {"k": 2, "n": 3}
    assert [Finding.model_validate(d) for d in data] == merged


def _report_of(findings: list[Finding]) -> CouncilReport:
    people = tuple(
        ParticipantSummary(id=name, backend="replay", state="answered") for name in ROSTER
    )
    return CouncilReport(
        run_id="r", session="s", status="settled", participants=people, findings=tuple(findings)
    )


def test_every_format_carries_one_entry_per_consolidated_finding() -> None:
    """Markdown, SARIF, the GitHub review and GitLab Code Quality: one line, result or
    comment per consolidated finding, its agreement, the other telling folded in."""
    filed = file_findings(consolidate(_per(HAWK, OWL)), 1)
    report = _report_of(filed)
    text = render_markdown(report.gated(fail_on="never"))
    assert "raised by hawk, owl (2 of 3)" in text
    assert text.count("**issue") == 1 and "Also told by owl" in text and OWL.subject in text
    sarif = json.loads(render_sarif(report))
    results = [r for run in sarif["runs"] for r in run["results"]]
    assert len(results) == 1
    assert results[0]["properties"]["agreement"] == {"k": 2, "n": 3}
    assert results[0]["properties"]["raisedBy"] == ["hawk", "owl"]
    assert OWL.subject in results[0]["message"]["text"]
    review = json.loads(render_github_review(report.gated(fail_on="never")))
    assert len(review["comments"]) == 1
    assert "(2 of 3)" in review["comments"][0]["body"]
    assert OWL.subject in review["comments"][0]["body"]
    gitlab = json.loads(render_gitlab_codequality(report))
    assert len(gitlab) == 1 and "(2 of 3)" in gitlab[0]["description"]
    assert OWL.discussion in gitlab[0]["content"]["body"]
    data = json.loads(render_json(report))
    assert [m["participant"] for m in data["findings"][0]["members"]] == ["hawk", "owl"]


def test_markdown_orders_by_severity_then_agreement() -> None:
    """Among findings of one severity, the one more reviewers raised comes first."""
    a = _f("hawk", "alone claim", anchor=FileAnchor(path="z.py"), severity="medium")
    filed = file_findings(
        consolidate(_per(a, HAWK, OWL.model_copy(update={"severity": "medium"}))), 1
    )
    text = render_markdown(_report_of(filed).gated(fail_on="never"))
    assert text.index(HAWK.subject) < text.index("alone claim")


def _judged(verdicts: list[dict[str, object]]) -> CouncilReport:
    """The interim report of HAWK+OWL+LYNX, then a judge answering ``verdicts``."""
    filed = file_findings(consolidate(_per(HAWK, OWL, LYNX)), 1)
    interim = _report_of(filed).model_copy(update={"status": "judging"})
    judge = Participant(id="arbiter", role="judge", backend="replay")
    outcome = harvest_outcome(
        "arbiter", "judge", ReviewResult(answer=json.dumps({"findings": verdicts})), []
    )
    _, report = conclude_judge(interim, judge, outcome, 10, status="settled", settled_ms=1)
    return report


def test_a_judge_rewording_a_consolidated_finding_restates_it() -> None:
    """Matched by agreement, not only by subject: the judge's subject wins, id kept."""
    verdict = {
        "subject": "parse_limit crashes with ZeroDivisionError when page_size is 0",
        "label": "issue",
        "severity": "critical",
        "location": {"kind": "line", "file": "app.py", "start": 11, "end": 14},
        "raisedBy": ["hawk", "owl"],
    }
    report = _judged([verdict])
    first = report.findings[0]
    assert first.id == 1 and first.subject == verdict["subject"]
    assert first.raised_by == ("hawk", "owl") and first.members is not None
    assert 1 not in report.suppressed and 2 in report.suppressed  # LYNX not upheld
    assert len(report.findings) == 2


def test_a_judge_can_split_a_cluster() -> None:
    """raisedBy naming one member keeps it; the other goes to the judge's second finding."""
    hawk_part = {
        "subject": "parse_limit divides by zero",
        "label": "issue",
        "location": {"kind": "line", "file": "app.py", "start": 11, "end": 12},
        "raisedBy": ["hawk"],
    }
    owl_part = {
        "subject": "page_size of 0 is accepted by the API schema",
        "label": "issue",
        "location": {"kind": "file", "file": "schema.py"},
        "raisedBy": ["owl"],
    }
    report = _judged([hawk_part, owl_part])
    by_id = {f.id: f for f in report.findings}
    assert by_id[1].raised_by == ("hawk",) and by_id[1].members is None
    new = [f for f in report.findings if f.id is not None and f.id >= 10]
    assert len(new) == 1 and new[0].subject == owl_part["subject"]
    assert new[0].agreement is not None and new[0].agreement.k == 1


def test_a_reworded_finding_of_an_earlier_round_is_seen_by_agreement() -> None:
    """Another reviewer restates an open finding in other words: seen, not outdated, and
    the report says it was recognised by agreement (its fingerprint differs)."""
    earlier = file_findings(consolidate(_per(HAWK)), 5)
    now = file_findings(consolidate(_per(OWL, LYNX)), 9)
    report = _report_of(now)
    marked = mark_round(report, earlier, set(), parse_diff(""), recognizing=earlier)
    assert marked.seen_by_agreement == {9: 5}
    assert marked.seen == (9,)
    assert with_fingerprints(marked).fingerprints[9] == fingerprint(now[0])
    text = render_markdown(marked.gated(fail_on="never"))
    assert "restates finding 5 of an earlier round (recognised by agreement)" in text


def test_exact_repeats_do_not_depend_on_list_order() -> None:
    """One subject at lines 5 and 10 from one reviewer and at 32 from another: the exact
    pass (says_the_same ignores lines) joins 32 to the same telling whichever order the
    first reviewer listed its two in; at 12, the relation's pair (10, 12) wins in either
    order."""
    subject = "build_query lets cross-site scripting through"

    def told(lines: tuple[int, ...], other: int) -> list[list[tuple[str, int | None]]]:
        hawk = [
            _f("hawk", subject, anchor=LineAnchor(path="b.py", line=n), severity="medium")
            for n in lines
        ]
        owl = [_f("owl", subject, anchor=LineAnchor(path="b.py", line=other))]
        merged = consolidate([("hawk", hawk), ("owl", owl)])
        return sorted(
            sorted((m.participant, m.anchor.line) for m in f.members)  # type: ignore[union-attr]
            if f.members
            else [(f.origin.participant if f.origin else "", f.anchor.line)]  # type: ignore[union-attr]
            for f in merged
        )

    far = [[("hawk", 5), ("owl", 32)], [("hawk", 10)]]
    assert told((5, 10), 32) == told((10, 5), 32) == far
    near = [[("hawk", 5)], [("hawk", 10), ("owl", 12)]]
    assert told((5, 10), 12) == told((10, 5), 12) == near
