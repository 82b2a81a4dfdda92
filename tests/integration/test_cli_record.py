"""``council record`` against a real redis-server: the entry lands in the run's journal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis
from click.testing import CliRunner

from workers.cli import main
from workers.stores.journal import JournalStore
from workers.stores.keys import Keys

pytestmark = pytest.mark.integration


def test_record_appends_to_the_participants_journal(redis_url: str, tmp_path: Path) -> None:
    """With Redis, run and participant set, the entry lands in the latest attempt's journal."""
    client = redis.Redis.from_url(redis_url)
    journals = JournalStore(client, Keys("council:"))
    journals.next_attempt("run-1", "hawk")
    journals.next_attempt("run-1", "hawk")
    side_file = tmp_path / "journal.jsonl"
    entry = {"subject": "token is logged", "label": "issue"}
    done = CliRunner().invoke(
        main,
        ["record", "--json", json.dumps(entry)],
        env={
            "COUNCIL_REDIS_URL": redis_url,
            "COUNCIL_RUN": "run-1",
            "COUNCIL_PARTICIPANT": "hawk",
            "COUNCIL_JOURNAL": str(side_file),
        },
    )
    assert done.exit_code == 0, done.output
    assert done.stdout == "" and done.stderr.strip() == "Recorded."
    assert [json.loads(raw) for raw in journals.read("run-1", "hawk", 2)] == [entry]
    assert journals.read("run-1", "hawk", 1) == []
    assert not side_file.exists()
    client.close()


def _record(redis_url: str, entry: dict[str, object]) -> object:
    return CliRunner().invoke(
        main,
        ["record", "--json", json.dumps(entry)],
        env={
            "COUNCIL_REDIS_URL": redis_url,
            "COUNCIL_RUN": "run-1",
            "COUNCIL_PARTICIPANT": "hawk",
            "COUNCIL_ATTEMPT": "1",
        },
    )


@pytest.mark.parametrize("status", ["settled", "partial", "cancelled", "judging"])
def test_record_refuses_once_the_run_moved_on(redis_url: str, status: str) -> None:
    """A reviewer's entry after its run left ``open`` (an orphaned program, say) is
    refused: exit 1, the reason said, never "Recorded."; nothing is stored."""
    client = redis.Redis.from_url(redis_url)
    keys = Keys("council:")
    journals = JournalStore(client, keys)
    journals.next_attempt("run-1", "hawk")
    client.hset(keys.run("run-1"), mapping={"status": status})
    done = _record(redis_url, {"subject": "late", "label": "issue"})
    assert done.exit_code == 1, done.output  # type: ignore[attr-defined]
    said = done.stderr  # type: ignore[attr-defined]
    assert "Recorded." not in said and "moved on" in said
    assert journals.read("run-1", "hawk", 1) == []
    client.close()


def test_record_refuses_once_the_participant_was_settled(redis_url: str) -> None:
    """Once the participant's outcome is stored nobody reads its journal again: refused."""
    client = redis.Redis.from_url(redis_url)
    keys = Keys("council:")
    journals = JournalStore(client, keys)
    journals.next_attempt("run-1", "hawk")
    client.hset(keys.run("run-1"), mapping={"status": "open"})
    client.set(keys.run_outcome("run-1", "hawk"), b"{}")
    done = _record(redis_url, {"subject": "late", "label": "issue"})
    assert done.exit_code == 1, done.output  # type: ignore[attr-defined]
    assert "already settled" in done.stderr  # type: ignore[attr-defined]
    assert journals.read("run-1", "hawk", 1) == []
    client.close()
