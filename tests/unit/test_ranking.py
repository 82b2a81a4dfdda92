"""Ranking: the likelihood's invariants, outcomes lines, records and the report that leads
with what is likely (docs/ranking.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from council.model.findings import ChangeAnchor, Finding, Origin
from council.model.participant import Identity
from council.ranking.apply import ranked
from council.ranking.likelihood import rank, rank_finding
from council.ranking.outcomes import read_outcomes, records_from
from council.ranking.records import TrackRecord, identity_key, summed
from council.rendering import render_markdown
from council.rendering.sarif import render_sarif
from tests.forge_cases import finding, many_findings, report
from workers.stores.track.records import FileRecords

counts = st.integers(min_value=0, max_value=200)


def _record(who: str, c: int, d: int, m: int = 0, p: int = 0) -> TrackRecord:
    return TrackRecord(
        participant=who,
        identity="x",
        confirmed=c,
        dismissed=d,
        told_confirmed=c,
        told_dismissed=d,
        missed=m,
        passed=p,
    )


@settings(max_examples=200, deadline=None)
@given(counts, counts, counts, counts, st.integers(min_value=0, max_value=4), st.booleans())
def test_the_likelihood_is_a_probability(
    c: int, d: int, m: int, p: int, told: int, ev: bool
) -> None:
    records = {"hawk": _record("hawk", c, d, m, p), "owl": _record("owl", d, c, p, m)}
    value = rank(["hawk"], ["hawk", "owl", "cat"], records, evidence=ev, told={"hawk": told})
    assert 0.0 <= value.likelihood <= 1.0


@settings(max_examples=200, deadline=None)
@given(counts, counts, st.integers(min_value=1, max_value=50), counts, counts)
def test_more_confirmations_of_a_raiser_never_lower_the_likelihood(
    c: int, d: int, more: int, oc: int, od: int
) -> None:
    owl = _record("owl", oc, od)
    before = rank(["hawk"], ["hawk", "owl"], {"hawk": _record("hawk", c, d), "owl": owl})
    after = rank(["hawk"], ["hawk", "owl"], {"hawk": _record("hawk", c + more, d), "owl": owl})
    assert after.likelihood >= before.likelihood


texts = st.text(alphabet=st.sampled_from("ab `:.py line12L\n"), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(counts, counts, counts, counts, st.integers(min_value=0, max_value=40), texts)
def test_a_findings_likelihood_is_a_probability_whatever_it_says(
    c: int, d: int, m: int, p: int, told: int, text: str
) -> None:
    said = Finding(
        anchor=ChangeAnchor(),
        label="issue",
        subject=text.strip() or "x",
        discussion=text,
        origin=Origin(kind="reviewer", run_id="1", participant="hawk"),
    )
    records = {"hawk": _record("hawk", c, d, m, p), "owl": _record("owl", d, c, p, m)}
    value = rank_finding(said, ["hawk", "owl", "cat"], records, {"hawk": told, "owl": 1})
    assert 0.0 <= value.likelihood <= 1.0


@settings(max_examples=200, deadline=None)
@given(
    counts,
    counts,
    st.integers(min_value=1, max_value=50),
    st.lists(st.tuples(counts, counts, counts, counts), min_size=1, max_size=11),
    st.integers(min_value=1, max_value=3),
    st.integers(min_value=0, max_value=30),
)
def test_a_raisers_better_record_never_lowers_it_in_any_council(
    c: int, d: int, more: int, others: list[tuple[int, int, int, int]], raising: int, told: int
) -> None:
    names = [f"r{k}" for k in range(len(others))]
    records = {n: _record(n, *o) for n, o in zip(names, others, strict=True)}
    raisers = ["hawk", *names[: raising - 1]]
    heard = ["hawk", *names]
    said = {"hawk": told}
    before = rank(raisers, heard, {**records, "hawk": _record("hawk", c, d)}, told=said)
    after = rank(raisers, heard, {**records, "hawk": _record("hawk", c + more, d)}, told=said)
    worse = rank(raisers, heard, {**records, "hawk": _record("hawk", c, d + more)}, told=said)
    assert worse.likelihood <= before.likelihood <= after.likelihood


def test_agreement_raises_it_and_a_silent_reliable_reviewer_lowers_it() -> None:
    records = {w: _record(w, 30, 30, 10, 60) for w in ("hawk", "owl", "cat")}
    alone = rank(["hawk"], ["hawk", "owl", "cat"], records).likelihood
    pair = rank(["hawk", "owl"], ["hawk", "owl", "cat"], records).likelihood
    unheard = rank(["hawk"], ["hawk"], records).likelihood
    assert pair > alone
    assert unheard > alone


def test_a_reviewer_with_no_history_is_named_as_on_a_prior() -> None:
    value = rank(["hawk"], ["hawk"], {})
    assert value.prior == ("hawk",)
    assert "no track record yet" in value.why


def test_a_re_pointed_id_keeps_its_history_with_the_old_identity() -> None:
    old = Identity(id="hawk", backend="openai", model="a")
    new = Identity(id="hawk", backend="openai", model="b")
    assert identity_key(old) != identity_key(new)
    assert identity_key(old) == identity_key(old.model_copy(update={"id": "other"}))


def test_one_bad_line_costs_one_line() -> None:
    lines = [
        '{"participant": "hawk", "verdict": "confirmed", "silent": ["owl"], "round": 1}',
        "not json",
        '{"participant": "owl", "verdict": "maybe"}',
        '{"participant": ["hawk", "owl"], "verdict": "dismissed"}',
        "",
        "x" * (70 * 1024),
    ]
    reading = read_outcomes(lines)
    assert (len(reading.outcomes), reading.bad) == (2, 3)
    assert reading.reasons[0].startswith("line 2: not JSON")
    held = summed(records_from(reading.outcomes))
    hawk, owl = held[("hawk", "id")], held[("owl", "id")]
    assert (hawk.confirmed, hawk.dismissed, hawk.told_confirmed, hawk.rounds) == (1, 1, 1, 1)
    assert (owl.dismissed, owl.missed, owl.told_dismissed) == (1, 1, 0)


def test_file_records_add_up_and_survive_a_sessions_save(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    store = FileRecords(path)
    store.add([_record("hawk", 2, 1)])
    store.add([_record("hawk", 1, 0)])
    assert store.all()[("hawk", "x")].confirmed == 3
    data = json.loads(path.read_text())
    assert "records" in data and data["sessions"] == {}


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=1, max_value=25), st.floats(min_value=0.0, max_value=1.0))
def test_a_ranked_report_never_drops_a_finding(count: int, likely_at: float) -> None:
    records = {"hawk": _record("hawk", 1, 9), "owl": _record("owl", 9, 1)}
    shown = ranked(report(*many_findings(count)), records, likely_at=likely_at)
    text = render_markdown(shown)
    for f in shown.findings:
        assert len(re.findall(rf"\bid {f.id}\b", text)) == 1


def test_the_markdown_leads_with_the_likely_and_folds_the_rest() -> None:
    records = {"hawk": _record("hawk", 1, 30), "owl": _record("owl", 30, 1)}
    owl = finding(1, subject="owl says so", raised_by=None).model_copy(
        update={"origin": finding(1).origin.model_copy(update={"participant": "owl"})}  # type: ignore[union-attr]
    )
    hawk = finding(2, subject="hawk says so")
    text = render_markdown(ranked(report(owl, hawk), records))
    lead, _, folded = text.partition("<details>\n\n<summary>1 less likely finding")
    assert "owl says so" in lead and "hawk says so" not in lead
    assert "hawk says so" in folded and "less likely (" in folded


def test_when_none_leads_the_findings_heading_says_so_above_the_folded_list() -> None:
    """Every finding below ``likely_at``: the heading is not left over a closed list alone;
    a line says none reaches the likelihood and how many are below. With one leading,
    that line is not there."""
    records = {"hawk": _record("hawk", 1, 30), "owl": _record("owl", 30, 1)}
    hawk = finding(2, subject="hawk says so")
    text = render_markdown(ranked(report(hawk), records))
    heading = text.split("### Findings", 1)[1].split("<details>", 1)[0]
    assert "No finding reaches likelihood" in heading and "1 finding below" in heading
    owl = finding(1, subject="owl says so", raised_by=None).model_copy(
        update={"origin": finding(1).origin.model_copy(update={"participant": "owl"})}  # type: ignore[union-attr]
    )
    assert "No finding reaches" not in render_markdown(ranked(report(owl, hawk), records))


def test_sarif_carries_the_rank() -> None:
    records = {"hawk": _record("hawk", 30, 1)}
    log = json.loads(render_sarif(ranked(report(finding(1, subject="x")), records)))
    result = log["runs"][0]["results"][0]
    assert 0 <= result["rank"] <= 100
    assert result["rank"] == round(100 * result["properties"]["likelihood"], 1)


def test_the_why_says_a_raisers_counts_are_its_record_not_this_findings_fate() -> None:
    """"raised by bandit (dismissed 1 of 1)" read as if this finding had been dismissed:
    the counts are said to be the reviewer's record."""
    records = {
        "bandit": TrackRecord(participant="bandit", identity="i", dismissed=1, acted=2),
        "owl": TrackRecord(participant="owl", identity="j"),
    }
    why = rank(["bandit", "owl"], ["bandit", "owl", "hawk"], records).why
    assert why.startswith(
        "raised by bandit (its record: 1 of 3 judged dismissed, 2 acted on), "
        "owl (no track record yet: a prior)"
    )
    assert "; heard, not raised by hawk" in why
