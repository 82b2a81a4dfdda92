"""Entries Redis said it kept and then lost (a failover to a replica that had not
received them) make the reviewer heard in part (``journal-lost``): the run is partial,
never settled with their findings missing."""

from __future__ import annotations

from collections.abc import Iterator

import fakeredis
import pytest

from council.model.backend_result import ReviewResult
from council.model.report import ParticipantSummary
from council.round.gate import not_heard_why
from council.round.outcome import ParticipantOutcome, heard_in_full, read_in_part_code
from workers.app.services import Runtime, build_runtime
from workers.app.settings import Settings
from workers.execution.journal_sink import RedisJournal
from workers.execution.participant_attempt import journal_lost

ENTRY = '{"subject": "x", "label": "issue", "severity": "minor"}'


@pytest.fixture
def rt() -> Iterator[Runtime]:
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    yield build_runtime(Settings(), client, mode="embedded")


def test_the_journal_knows_the_fewest_entries_redis_may_hold(rt: Runtime) -> None:
    journal = RedisJournal(rt, "run1", "r0", 1)
    for _ in range(3):
        assert journal.append(ENTRY) == "Recorded."
    assert journal.least == 3
    rt.client.delete(rt.keys.journal("run1", "r0", 1))  # the failover lost them
    assert journal.append(ENTRY) == "Recorded."
    assert journal.least == 4  # Redis says 1; four were kept, one at least is left


def test_fewer_entries_than_kept_is_journal_lost() -> None:
    result = ReviewResult(answer="{}")
    lost = journal_lost(result, [[b"e"]], 1, least=4)
    assert lost.broke_off == "journal-lost"
    assert any("lost 3 of the 4" in note for note in lost.notes), lost.notes
    outcome = ParticipantOutcome(participant="r0", status="answered", broke_off=lost.broke_off)
    assert read_in_part_code(outcome) == "journal-lost"
    assert not heard_in_full(outcome)


def test_every_entry_kept_changes_nothing() -> None:
    result = ReviewResult(answer="{}")
    assert journal_lost(result, [[], [b"a", b"b"]], 2, least=2) is result
    assert journal_lost(result, [], 1, least=0) is result
    assert journal_lost(result, [], 1, least=1).broke_off == "journal-lost"


def test_the_gate_says_why_a_journal_lost_reviewer_was_not_heard() -> None:
    summary = ParticipantSummary(
        id="r0", backend="replay", state="answered", read_in_part="journal-lost"
    )
    assert not summary.heard_in_full
    assert "journal-lost" in not_heard_why(summary)
