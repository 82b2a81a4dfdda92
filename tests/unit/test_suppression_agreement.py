"""Dismissals and the baseline matched by agreement (council.session.decisions.suppress): a
reworded dismissed or baselined finding at the same code stays so, and the report says the
match was made by agreement, not by fingerprint; a baseline entry without text matches by
fingerprint only."""

from __future__ import annotations

import json

from council.change.diff import Change
from council.model.findings import Finding, LineAnchor
from council.model.fingerprint import fingerprint, occurrence
from council.model.report import Reworded, Suppression
from council.rendering import read_json, render_json, render_markdown
from council.rendering.sarif import render_sarif
from council.round.gate import gate_tripped
from council.session.baseline import (
    Baseline,
    BaselineEntry,
    read_baseline,
    write_baseline,
)
from council.session.decisions import suppress
from council.session.earlier_rounds import carry, remembered
from tests.forge_cases import finding, report

CODE = "d1v0" * 8 + ":1"
"""The code hash of the division (council.model.occurrence): the same wherever it sits."""


def div0(ident: int, subject: str, discussion: str, line: int = 12, code: str = CODE) -> Finding:
    """A telling of the division-by-zero bug on app.py at the division's code, filed as
    ``ident``."""
    return finding(
        ident,
        LineAnchor(path="app.py", line=line, code=code),
        subject=subject,
        discussion=discussion,
        severity="critical",
    )


DISMISSED = div0(
    5,
    "`parse_limit` divides by zero when `page_size` is 0",
    "The division in parse_limit has no guard; page_size=0 raises ZeroDivisionError.",
)
REWORDED = div0(
    9,
    "ZeroDivisionError in parse_limit for an empty page_size",
    "A request with page_size 0 crashes parse_limit (ZeroDivisionError).",
    line=13,
)
OTHER = finding(
    10,
    LineAnchor(path="auth.py", line=3),
    subject="Token compared with == leaks timing",
    discussion="check_token compares secrets with ==; use hmac.compare_digest.",
    severity="critical",
)

DISMISSED_LINE = "stays dismissed: matches #5 by agreement (reworded), not by fingerprint"


def test_a_reworded_dismissed_finding_stays_dismissed_with_the_note() -> None:
    """Its fingerprint differs from the dismissal's; agreement matches it to the finding
    dismissed: suppressed with the dismissal's reason, the JSON and Markdown say how."""
    assert fingerprint(REWORDED) != fingerprint(DISMISSED)
    key = fingerprint(DISMISSED)
    done = suppress(
        report(REWORDED, OTHER), Baseline(), {key: "validated upstream"}, {key: DISMISSED}
    )
    held = done.suppressed[9]
    assert held == Suppression(
        source="dismissed",
        reason="validated upstream",
        by_agreement=Reworded(fingerprint=key, id=5, subject=DISMISSED.subject),
    )
    assert 10 not in done.suppressed
    assert [f.id for f in gate_tripped(done.gated(fail_on="critical"))] == [10]
    assert read_json(render_json(done)).suppressed[9].by_agreement == held.by_agreement
    text = render_markdown(done.gated(fail_on="never"))
    assert DISMISSED_LINE in text


def test_a_finding_that_kept_the_dismissed_id_stays_dismissed() -> None:
    """Filing gave the reworded finding the dismissed one's id: dismissed with it, by
    agreement, even with no other dismissed finding to compare."""
    kept = REWORDED.model_copy(update={"id": 5})
    key = fingerprint(DISMISSED)
    done = suppress(report(kept), Baseline(), {key: "upstream"}, {key: DISMISSED})
    assert done.suppressed[5].by_agreement == Reworded(
        fingerprint=key, id=5, subject=DISMISSED.subject
    )
    assert DISMISSED_LINE in render_markdown(done.gated(fail_on="never"))


def test_a_fingerprint_match_says_nothing_of_agreement() -> None:
    """The dismissed finding itself again: matched by fingerprint, no note."""
    key = fingerprint(DISMISSED)
    again = DISMISSED.model_copy(update={"id": 11})
    done = suppress(report(again), Baseline(), {key: "upstream"}, {key: DISMISSED})
    assert done.suppressed[11] == Suppression(source="dismissed", reason="upstream")
    assert "by agreement" not in render_markdown(done.gated(fail_on="never"))


def test_one_dismissal_is_claimed_by_one_reworded_finding() -> None:
    """Two findings agreeing with one dismissed finding: one stays dismissed, the other
    gates (a dismissal names one finding)."""
    twin = div0(12, "parse_limit crashes on page_size == 0", REWORDED.discussion, line=14)
    key = fingerprint(DISMISSED)
    done = suppress(report(REWORDED, twin), Baseline(), {key: "upstream"}, {key: DISMISSED})
    assert len(done.suppressed) == 1


def test_a_reworded_baselined_finding_stays_baselined_with_the_note() -> None:
    """A baseline entry written with the finding's text matches its rewording by
    agreement; the Markdown names the entry."""
    text = write_baseline([DISMISSED], "legacy")
    entry = json.loads(text)["entries"][0]
    assert entry["discussion"] == DISMISSED.discussion
    baseline = read_baseline(text)
    done = suppress(report(REWORDED, OTHER), baseline, {})
    held = done.suppressed[9]
    assert held.source == "baseline" and held.reason == "legacy"
    assert held.by_agreement == Reworded(
        fingerprint=fingerprint(DISMISSED), subject=DISMISSED.subject
    )
    assert 10 not in done.suppressed
    line = "stays baselined: matches the baseline entry"
    shown = render_markdown(done.gated(fail_on="never"))
    assert line in shown and "by agreement (reworded), not by fingerprint" in shown


def test_an_old_baseline_entry_without_text_matches_by_fingerprint_only() -> None:
    """An entry written without the discussion still reads; it matches its own
    fingerprint, never a rewording."""
    old = {
        "version": 1,
        "entries": [
            {
                "fingerprint": fingerprint(DISMISSED),
                "reason": "legacy",
                "subject": DISMISSED.subject,
                "path": "app.py",
                "occurrence": occurrence(DISMISSED),
            }
        ],
    }
    baseline = read_baseline(json.dumps(old))
    assert baseline.entries[0].discussion == "" and baseline.entries[0].as_finding() is None
    assert suppress(report(REWORDED), baseline, {}).suppressed == {}
    again = DISMISSED.model_copy(update={"id": 7})
    assert suppress(report(again), baseline, {}).suppressed == {
        7: Suppression(source="baseline", reason="legacy")
    }


def test_a_dismissal_wins_over_a_baseline_entry_by_agreement() -> None:
    """Both a dismissal and an entry agree with the finding: the dismissal (the more
    recent decision) holds."""
    key = fingerprint(DISMISSED)
    baseline = Baseline(
        entries=(
            BaselineEntry(
                fingerprint=key,
                reason="legacy",
                subject=DISMISSED.subject,
                path="app.py",
                discussion=DISMISSED.discussion,
            ),
        )
    )
    done = suppress(report(REWORDED), baseline, {key: "upstream"}, {key: DISMISSED})
    assert done.suppressed[9].source == "dismissed"


def test_sarif_says_a_suppression_was_matched_by_agreement() -> None:
    """The SARIF suppression of a reworded dismissed finding names what it matched."""
    key = fingerprint(DISMISSED)
    done = suppress(report(REWORDED), Baseline(), {key: "upstream"}, {key: DISMISSED})
    results = [r for run in json.loads(render_sarif(done))["runs"] for r in run["results"]]
    (held,) = results[0]["suppressions"]
    assert held["justification"] == "upstream"
    assert held["properties"]["matchedBy"] == "agreement"
    assert held["properties"]["matches"] == {
        "fingerprint": key,
        "id": 5,
        "subject": DISMISSED.subject,
    }


def test_a_graver_rewording_is_not_suppressed_by_agreement() -> None:
    """A person dismissed the bug as minor; a rewording filed critical (matched by
    agreement, by the kept id or among the dismissed findings) is not suppressed: it
    gates, and a note names it. So is the same claim by fingerprint raised to critical
    (the subject is all a fingerprint reads, and a hostile change can ask for it); at
    the severity dismissed it stays suppressed."""
    minor = DISMISSED.model_copy(update={"severity": "minor"})
    key = fingerprint(minor)
    done = suppress(report(REWORDED), Baseline(), {key: "cosmetic"}, {key: minor})
    assert 9 not in done.suppressed
    assert [f.id for f in gate_tripped(done.gated(fail_on="critical"))] == [9]
    assert any(
        n.startswith("#9 rewords #5, dismissed, by agreement, but is graver") for n in done.notes
    )
    kept = REWORDED.model_copy(update={"id": 5})
    done = suppress(report(kept), Baseline(), {key: "cosmetic"}, {key: minor})
    assert 5 not in done.suppressed
    same = DISMISSED.model_copy(update={"id": 7})
    done = suppress(report(same), Baseline(), {key: "cosmetic"}, {key: minor})
    assert 7 not in done.suppressed
    assert any(
        n.startswith("#7 makes the same claim as #5, dismissed but is graver") for n in done.notes
    )
    calm = DISMISSED.model_copy(update={"id": 7, "severity": "minor"})
    done = suppress(report(calm), Baseline(), {key: "cosmetic"}, {key: minor})
    assert done.suppressed[7].source == "dismissed"


def test_a_baseline_entry_accepts_the_occurrences_it_recorded() -> None:
    """The baseline written from one B602 on app.py accepts that occurrence: a second
    ``shell=True`` in the same file (the same rule at other code) gates with a note;
    written from both, it accepts both (one entry each). The same occurrence told twice
    is one entry counting two. Entries without a count accept one; a bad count is
    refused naming it."""
    one = div0(5, "B602: shell=True", "", line=12)
    two = div0(6, "B602: shell=True", "", line=30, code="5e11" * 8 + ":1")
    assert fingerprint(one) != fingerprint(two)
    written = read_baseline(write_baseline([one], "legacy"))
    assert [e.count for e in written.entries] == [1]
    done = suppress(report(one, two).model_copy(update={"seen": (5,)}), written, {})
    assert 5 in done.suppressed and 6 not in done.suppressed
    assert [f.id for f in gate_tripped(done.gated(fail_on="critical"))] == [6]
    assert any(
        n.startswith("#6 makes the same claim as a baseline entry") and "other code" in n
        for n in done.notes
    )
    both = read_baseline(write_baseline([one, two], "legacy"))
    assert [e.count for e in both.entries] == [1, 1]
    assert set(suppress(report(one, two), both, {}).suppressed) == {5, 6}
    told_twice = read_baseline(write_baseline([one, one.model_copy(update={"id": 7})], "r"))
    assert [e.count for e in told_twice.entries] == [2]
    old = json.dumps({"version": 1, "entries": [{"fingerprint": fingerprint(one)}]})
    assert read_baseline(old).entries[0].count == 1
    for bad in (0, "2", True):
        text = json.dumps(
            {"version": 1, "entries": [{"fingerprint": fingerprint(one), "count": bad}]}
        )
        try:
            read_baseline(text)
        except ValueError as error:
            assert "entries[0].count" in str(error)
        else:
            raise AssertionError(f"count {bad!r} was read")


def test_a_decision_used_by_fingerprint_covers_no_rewording_besides() -> None:
    """The dismissed finding raised again (same fingerprint, kept id) uses the dismissal;
    a rewording of it in the same round is not dismissed by it too, and gates. The same
    for a baseline entry that counted one finding."""
    key = fingerprint(DISMISSED)
    done = suppress(report(DISMISSED, REWORDED), Baseline(), {key: "upstream"}, {key: DISMISSED})
    assert set(done.suppressed) == {5}
    assert [f.id for f in gate_tripped(done.gated(fail_on="critical"))] == [9]
    baseline = read_baseline(write_baseline([DISMISSED], "legacy"))
    done = suppress(report(DISMISSED, REWORDED), baseline, {})
    assert set(done.suppressed) == {5}
    twice = read_baseline(write_baseline([DISMISSED, DISMISSED], "legacy"))
    assert twice.entries[0].count == 2
    done = suppress(report(DISMISSED, REWORDED), twice, {})
    assert set(done.suppressed) == {5, 9}


def test_a_graver_telling_merged_into_a_dismissed_finding_is_not_hidden() -> None:
    """A minor claim dismissed; next round it is consolidated with another reviewer's
    critical telling (one finding, severity critical, the minor's subject and so its
    fingerprint): not suppressed, it gates, and the note says why."""
    minor = DISMISSED.model_copy(update={"severity": "minor"})
    key = fingerprint(minor)
    merged = DISMISSED.model_copy(update={"severity": "critical"})
    done = suppress(report(merged), Baseline(), {key: "cosmetic"}, {key: minor})
    assert 5 not in done.suppressed
    assert [f.id for f in gate_tripped(done.gated(fail_on="critical"))] == [5]
    baseline = read_baseline(write_baseline([minor], "legacy"))
    done = suppress(report(merged), baseline, {})
    assert 5 not in done.suppressed
    assert any("in the baseline but is graver (critical over minor)" in n for n in done.notes)


def test_a_carried_finding_graver_than_its_dismissal_still_gates() -> None:
    """--since-last: an earlier critical whose subject a person dismissed as minor, its
    code untouched by the interdiff, is carried and not suppressed: it gates as it did
    in the full round (carrying it away by fingerprint made the gate go green)."""
    minor = DISMISSED.model_copy(update={"severity": "minor"})
    key = fingerprint(minor)
    carried = carry(report(), [DISMISSED], Change())
    assert [f.id for f in carried.carried] == [5]
    done = suppress(carried, Baseline(), {key: "cosmetic"}, {key: minor})
    assert [f.id for f in gate_tripped(done.gated(fail_on="critical"))] == [5]
    calm = carry(report(), [minor], Change())
    assert suppress(calm, Baseline(), {key: "cosmetic"}, {key: minor}).suppressed[5].source == (
        "dismissed"
    )


def test_a_round_remembers_the_ids_it_carried_with_its_own() -> None:
    """A --since-last round that raises #3 again and carries #7 (one occurrence told
    twice: the same code) remembers both ids for the fingerprint, so the next full round
    sees both; the claim at other code is another fingerprint."""
    three = DISMISSED.model_copy(update={"id": 3})
    seven = DISMISSED.model_copy(
        update={"id": 7, "anchor": LineAnchor(path="app.py", line=40, code=CODE)}
    )
    done = report(three).model_copy(update={"carried": (seven,)})
    memory = remembered(done)
    assert memory is not None and memory.reported == {fingerprint(three): "3,7"}
    other = seven.model_copy(
        update={"anchor": LineAnchor(path="app.py", line=40, code="07e4" * 8 + ":1")}
    )
    memory = remembered(report(three).model_copy(update={"carried": (other,)}))
    assert memory is not None and memory.reported == {
        fingerprint(three): "3",
        fingerprint(other): "7",
    }


def test_writing_the_baseline_again_accepts_what_stands_now() -> None:
    """A minor baselined, raised again as critical, gates; `council baseline` run again
    over the existing file keeps the entry's reason and text but takes the critical (and
    the larger count), so the finding is accepted again and stops gating."""
    minor = DISMISSED.model_copy(update={"severity": "minor"})
    first = read_baseline(write_baseline([minor], "legacy"))
    assert [
        f.id for f in gate_tripped(suppress(report(DISMISSED), first, {}).gated(fail_on="critical"))
    ] == [5]
    twin = DISMISSED.model_copy(
        update={"id": 6, "anchor": LineAnchor(path="app.py", line=40, code=CODE)}
    )
    again = read_baseline(write_baseline([DISMISSED, twin], "other words", existing=first))
    (entry,) = again.entries
    assert (entry.reason, entry.severity, entry.count) == ("legacy", "critical", 2)
    assert (
        gate_tripped(suppress(report(DISMISSED, twin), again, {}).gated(fail_on="critical")) == []
    )
