"""Identity of a finding across rounds (council.session.remembered, council.merging.recognition): a
reworded finding keeps its id, a new one takes a new id, one earlier id per finding,
deterministic whatever the order."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from council.change.diff import parse_diff
from council.merging.agreement import recognize
from council.merging.consolidation import with_origin
from council.model.backend_result import ReviewResult
from council.model.findings import Finding, LineAnchor, Member, Origin
from council.model.fingerprint import fingerprint
from council.model.participant import Participant, Role
from council.model.report import CouncilReport
from council.round.filing import RoundFacts, conclude_judge, conclude_round
from council.round.outcome import ParticipantOutcome, harvest_outcome
from council.session.earlier_rounds import mark_round, remembered
from council.session.remembered import RECALL_CAP, file_recalled, recalled

ROSTER = [Participant(id=name, backend="replay") for name in ("hawk", "owl")]


def told(subject: str, discussion: str, line: int = 12, path: str = "app.py") -> dict[str, Any]:
    """One entry of a reviewer's answer (the wire form)."""
    return {
        "subject": subject,
        "discussion": discussion,
        "label": "issue",
        "severity": "critical",
        "location": {"kind": "line", "path": path, "line": line},
    }


DIV0 = [
    told(
        "`parse_limit` divides by zero when `page_size` is 0",
        "The division in parse_limit has no guard; page_size=0 raises ZeroDivisionError.",
    ),
    told(
        "ZeroDivisionError in parse_limit for an empty page_size",
        "A request with page_size 0 crashes parse_limit (ZeroDivisionError).",
        line=13,
    ),
    told(
        "parse_limit crashes on page_size == 0",
        "Nothing stops page_size from being 0 before parse_limit divides by it: a "
        "ZeroDivisionError on every such request.",
        line=11,
    ),
]
"""One bug told three ways (the rounds reword it)."""

TIMING = told(
    "Token compared with == leaks timing",
    "check_token compares secrets with ==; use hmac.compare_digest.",
    path="auth.py",
    line=3,
)
"""Another bug."""


def outcome(who: str, *entries: dict[str, Any], role: Role = "reviewer") -> ParticipantOutcome:
    """A replayed participant's answer holding ``entries``."""
    answer = ReviewResult(answer=json.dumps({"findings": list(entries)}))
    return harvest_outcome(who, role, answer, [])


def one_round(
    run: str,
    outcomes: Mapping[str, ParticipantOutcome],
    first_id: int,
    recall: Sequence[Finding],
    code: Mapping[str, list[str]] | None = None,
) -> tuple[list[Finding], CouncilReport]:
    """File one round of the session as settling does, against the session's recall
    (``code``: the head tree's files, path → lines, when the round reads them)."""
    return conclude_round(
        RoundFacts(run_id=run, session="s"),
        ROSTER,
        outcomes,
        first_id,
        status="settled",
        settled_ms=1,
        remembered=recall,
        code=code.get if code is not None else None,
    )


def test_a_reworded_bug_keeps_its_id_over_three_rounds() -> None:
    """5, 5, 5 — not 5, 28, 47: each rewording (by hawk, then owl) is recognized by
    agreement, keeps the earlier id, is listed as such, and takes no id from the counter."""
    issued = 4
    recall: tuple[Finding, ...] = ()
    ids: list[int | None] = []
    for n, (who, entry) in enumerate([("hawk", DIV0[0]), ("hawk", DIV0[1]), ("owl", DIV0[2])]):
        outcomes = {p.id: outcome(p.id, *([entry] if p.id == who else [])) for p in ROSTER}
        filed, report = one_round(f"r{n}", outcomes, issued + 1, recall)
        issued += sum(1 for f in filed if (f.id or 0) > issued)
        ids.append(filed[0].id)
        if n:
            assert report.seen_by_agreement == {5: 5}
        memory = remembered(report, recall)
        assert memory is not None
        recall = memory.recall
    assert ids == [5, 5, 5]
    assert issued == 5  # the counter advanced once, for the first round's finding


def test_a_different_bug_takes_a_new_id() -> None:
    """Beside the reworded bug, a bug no round raised before gets the next id."""
    _, report = one_round("r1", {"hawk": outcome("hawk", DIV0[0]), "owl": outcome("owl")}, 5, ())
    memory = remembered(report)
    assert memory is not None
    outcomes = {"hawk": outcome("hawk", DIV0[1]), "owl": outcome("owl", TIMING)}
    second, _ = one_round("r2", outcomes, 6, memory.recall)
    assert [(f.id, f.subject) for f in second] == [
        (5, DIV0[1]["subject"]),
        (6, TIMING["subject"]),
    ]


def test_an_exact_repeat_keeps_its_id_by_fingerprint() -> None:
    """The same subject on the same code, moved 28 lines down: recognized by fingerprint,
    not listed as reworded."""
    division = "ratio = total / page_size"
    then = {"app.py": [f"line{n} = {n}" for n in range(1, 12)] + [division]}
    now = {"app.py": [f"line{n} = {n}" for n in range(1, 40)] + [division]}
    hawk = {"hawk": outcome("hawk", DIV0[0]), "owl": outcome("owl")}
    _, report = one_round("r1", hawk, 1, (), then)
    moved = {**DIV0[0], "location": {"kind": "line", "path": "app.py", "line": 40}}
    memory = remembered(report)
    assert memory is not None
    filed, again = one_round(
        "r2", {"hawk": outcome("hawk", moved), "owl": outcome("owl")}, 2, memory.recall, now
    )
    assert [f.id for f in filed] == [1] and again.seen_by_agreement == {}


def _earlier(entry: dict[str, Any], ident: int, who: str = "hawk") -> Finding:
    """A finding of an earlier round, filed as ``ident``."""
    got = outcome(who, entry).harvest.findings[0]
    origin = Origin(kind="reviewer", run_id="r0", participant=who)
    return with_origin([got], origin)[0].model_copy(update={"id": ident})


def _new(entry: dict[str, Any], who: str) -> Finding:
    got = outcome(who, entry).harvest.findings[0]
    return with_origin([got], Origin(kind="reviewer", run_id="r1", participant=who))[0]


def test_two_new_findings_cannot_take_one_id() -> None:
    """Two findings of the round agree with the same earlier one: the better takes its
    id, the other a new one; no two findings of the round share an id."""
    earlier = [_earlier(DIV0[0], 5)]
    merged = [_new(DIV0[2], "hawk"), _new(DIV0[1], "owl")]
    filed, reworded = file_recalled(merged, 9, earlier, ["hawk", "owl"])
    ids = [f.id for f in filed]
    assert sorted(ids, key=lambda i: i or 0) == [5, 9] and len(set(ids)) == 2
    found = recognize(merged, earlier, ["hawk", "owl"])
    assert len(found) == 1 and reworded == {5: 5}
    (taker,) = found
    scores = [recognize([m], earlier)[0].score for m in merged]
    assert scores[taker] == max(scores)


def test_the_same_whatever_order_the_findings_come_in() -> None:
    """Earlier findings in any order, and a tie between two reviewers' equal tellings:
    the tie goes to the first in ROSTER order, whichever is listed first."""
    earlier = [_earlier(DIV0[0], 5), _earlier(TIMING, 6), _earlier(DIV0[2], 7, "owl")]
    twin_hawk, twin_owl = _new(DIV0[1], "hawk"), _new(DIV0[1], "owl")
    shown = None
    for order in itertools.permutations(earlier):
        for merged in ([twin_hawk, twin_owl], [twin_owl, twin_hawk]):
            found = recognize(merged, list(order), ["hawk", "owl"])
            got = sorted(
                (
                    merged[i].origin.participant if merged[i].origin else None,
                    r.earlier.id,
                    r.by,
                )
                for i, r in found.items()
            )
            assert shown is None or got == shown
            shown = got
    assert shown is not None and shown[0][0] == "hawk"


def test_marking_a_round_keeps_the_filed_recognition_and_marks_it_seen() -> None:
    """The filing's ``seen_by_agreement`` survives marking (twice alike); the finding is
    seen; its earlier self is not outdated though the interdiff touched its line."""
    _, first = one_round("r1", {"hawk": outcome("hawk", DIV0[0]), "owl": outcome("owl")}, 5, ())
    memory = remembered(first)
    assert memory is not None and memory.still_open is not None
    _, second = one_round(
        "r2", {"hawk": outcome("hawk"), "owl": outcome("owl", DIV0[1])}, 6, memory.recall
    )
    edit = "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -12 +12 @@\n-a\n+b\n"
    marked = mark_round(
        second, memory.still_open, set(memory.reported), parse_diff(edit), memory.still_open
    )
    assert marked.seen == (5,) and marked.seen_by_agreement == {5: 5}
    assert marked.outdated == ()
    again = mark_round(
        marked, memory.still_open, set(memory.reported), parse_diff(edit), memory.still_open
    )
    assert again == marked


def test_recall_is_bounded_and_newest_first() -> None:
    """The memory keeps the latest telling of each id, newest first, at most RECALL_CAP,
    without members or evidence."""
    before = [_earlier(TIMING, i) for i in range(1, RECALL_CAP + 10)]
    now = _earlier(DIV0[1], 3)
    kept = recalled([now], before)
    assert len(kept) == RECALL_CAP
    assert kept[0].subject == DIV0[1]["subject"] and kept[0].id == 3
    assert [f.id for f in kept].count(3) == 1
    assert fingerprint(kept[1]) == fingerprint(before[0])


def test_an_earlier_finding_on_another_file_is_never_recognized() -> None:
    """The same words about another file are another problem."""
    elsewhere = {**DIV0[1], "location": {"kind": "line", "path": "other.py", "line": 13}}
    assert recognize([_new(elsewhere, "owl")], [_earlier(DIV0[0], 5)]) == {}


def test_a_consolidated_finding_is_recognized_by_any_of_its_tellings() -> None:
    """The finding's own words need not agree: one member's telling that agrees with the
    remembered finding is enough (a pair scores its best telling)."""
    earlier = [_earlier(DIV0[0], 5)]
    lead = _new(told("Magic constant eight", "Name the hard-coded count.", line=12), "hawk")
    assert recognize([lead], earlier) == {}
    other = _new(DIV0[1], "owl")
    members = tuple(
        Member(
            participant=p,
            anchor=f.anchor,
            label=f.label,
            subject=f.subject,
            discussion=f.discussion,
        )
        for p, f in (("hawk", lead), ("owl", other))
    )
    merged = lead.model_copy(update={"members": members, "raised_by": ("hawk", "owl")})
    found = recognize([merged], earlier)
    assert [(r.earlier.id, r.by) for r in found.values()] == [(5, "agreement")]


def test_a_judges_new_finding_that_rewords_a_remembered_one_keeps_its_id() -> None:
    """The judge files a finding none of the round's reviewers raised, in other words
    than an earlier round's: it takes that earlier id, not one from the counter."""
    remembered_timing = _earlier(TIMING, 3)
    outcomes = {"hawk": outcome("hawk", DIV0[0]), "owl": outcome("owl")}
    filed, interim = one_round("r1", outcomes, 7, [remembered_timing])
    assert [f.id for f in filed] == [7]
    judge = Participant(id="arbiter", role="judge", backend="replay")
    reworded = told(
        "Secret comparison is not constant-time",
        "`token == secret` in check returns early on the first differing byte; "
        "hmac.compare_digest compares the token in constant time.",
        path="auth.py",
        line=3,
    )
    verdict = outcome("arbiter", DIV0[0], reworded, role="judge")
    written, report = conclude_judge(
        interim.model_copy(update={"status": "judging"}),
        judge,
        verdict,
        8,
        status="settled",
        settled_ms=2,
        remembered=[remembered_timing],
    )
    assert sorted(f.id or 0 for f in written) == [3, 7]
    assert report.seen_by_agreement == {3: 3}


def test_a_different_bug_on_the_same_lines_takes_a_new_id() -> None:
    """Another problem told next to the remembered one, sharing none of its words, is
    not recognized: it gets the next id."""
    sql = told(
        "SQL built by string formatting in build_query",
        "build_query interpolates the user's filter into the SQL text; use parameters.",
        line=13,
    )
    filed, reworded = file_recalled([_new(sql, "owl")], 9, [_earlier(DIV0[0], 5)])
    assert [f.id for f in filed] == [9] and reworded == {}


def test_two_findings_both_led_by_an_analyzer_are_one_only_by_fingerprint() -> None:
    """bandit's fixed B307 (eval), told by hawk beside it, and next round a new B301
    (pickle), told by hawk beside it, on the same lines: their words agree, but an
    analyzer's rule is its subject, so the new one is not the old one (it takes a new id
    and is not seen). The same B307 again keeps its id."""

    def led(subject: str, hawk_says: str, ident: int | None = None) -> Finding:
        origin = Origin(kind="reviewer", run_id="r", participant="bandit")
        members = (
            Member(participant="bandit", anchor=anchor, label="issue", subject=subject),
            Member(participant="hawk", anchor=anchor, label="issue", subject=hawk_says),
        )
        return Finding(
            id=ident,
            anchor=anchor,
            label="issue",
            subject=subject,
            discussion="untrusted input reaches a dangerous call in load_blob",
            severity="critical",
            origin=origin,
            raised_by=("bandit", "hawk"),
            members=members,
        )

    anchor = LineAnchor(path="app.py", line=12)
    fixed = led(
        "B307: Use of possibly insecure function - consider using safer ast.literal_eval.",
        "load_blob evaluates untrusted input",
        ident=8,
    )
    new = led(
        "B301: Pickle and modules that wrap it can be unsafe to deserialize untrusted data.",
        "load_blob deserializes untrusted input",
    )
    assert recognize([new], [fixed], ["bandit", "hawk"], programs={"bandit"}) == {}
    assert set(recognize([new], [fixed], ["bandit", "hawk"])) == {0}
    again = fixed.model_copy(update={"id": None})
    assert (
        recognize([again], [fixed], ["bandit", "hawk"], programs={"bandit"})[0].by == "fingerprint"
    )
