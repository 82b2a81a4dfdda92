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
