"""Folding a participant's slice outcomes into its one outcome (council.round.slice_outcomes):
answered only if every slice answered, failed or stopped slices named, every finding kept."""

from __future__ import annotations

from council.model.backend_result import ReviewResult, Stop, Usage
from council.round.outcome import ParticipantOutcome, harvest_outcome, heard_in_full
from council.round.slice_outcomes import fold_slices


def _answer(subject: str) -> str:
    return (
        '{"findings": [{"location": {"kind": "global"}, "label": "issue", "severity": '
        f'"minor", "subject": "{subject}"}}]}}'
    )


def _slice(k: int, result: ReviewResult) -> ParticipantOutcome:
    return harvest_outcome(f"hawk@{k}", "reviewer", result, [])


def test_every_slice_answering_is_one_answered_participant_with_all_findings() -> None:
    outcomes = [
        _slice(
            k,
            ReviewResult(
                answer=_answer(f"s{k}"), duration_ms=100 * k, usage=Usage(input=10, requests=1)
            ),
        )
        for k in (1, 2, 3)
    ]
    folded = fold_slices("hawk", outcomes)
    assert folded.participant == "hawk" and folded.status == "answered" and folded.slices == 3
    assert [f.subject for f in folded.harvest.findings] == ["s1", "s2", "s3"]
    assert folded.duration_ms == 300
    assert folded.usage == Usage(input=30, requests=3)
    assert heard_in_full(folded)


def test_a_failed_slice_fails_the_participant_naming_it_and_keeps_the_others_findings() -> None:
    outcomes = [
        _slice(1, ReviewResult(answer=_answer("kept"))),
        _slice(2, ReviewResult(failure="context length exceeded")),
        _slice(3, ReviewResult(answer=_answer("also kept"))),
    ]
    folded = fold_slices("hawk", outcomes)
    assert folded.status == "failed"
    assert folded.failure == "slice 2 of 3 failed: context length exceeded"
    assert [f.subject for f in folded.harvest.findings] == ["kept", "also kept"]
    assert not heard_in_full(folded)
    assert all(w.at == "hawk" for w in folded.harvest.warnings if w.code == "failed")


def test_a_stopped_slice_stops_the_participant_and_is_named() -> None:
    outcomes = [
        _slice(1, ReviewResult(answer=_answer("kept"))),
        _slice(2, ReviewResult(answer="", stop=Stop(limit="idle"))),
    ]
    folded = fold_slices("hawk", outcomes)
    assert folded.status == "stopped" and folded.stop == Stop(limit="idle")
    assert any(n.startswith("slice 2 of 2 was stopped") for n in folded.notes)
    assert [f.subject for f in folded.harvest.findings] == ["kept"]


def test_a_lost_slice_made_from_its_journal_stops_the_participant() -> None:
    lost = harvest_outcome(
        "hawk@2",
        "reviewer",
        None,
        [[b'{"location": {"kind": "global"}, "label": "issue", "subject": "journaled"}']],
    )
    folded = fold_slices("hawk", [_slice(1, ReviewResult(answer=_answer("kept"))), lost])
    assert folded.status == "stopped" and folded.stop is not None
    assert folded.stop.limit == "worker-lost"
    assert {f.subject for f in folded.harvest.findings} == {"kept", "journaled"}
