"""``council record`` rides out a short Redis outage instead of failing with exit 3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.faults.lab import Lab
from tests.services import ROOT
from workers.stores.journal import JournalStore
from workers.stores.keys import Keys

pytestmark = pytest.mark.integration


def test_record_waits_for_redis_to_come_back(lab: Lab) -> None:
    """Redis is down when the reviewer records and back 4 s later: the entry is stored,
    exit 0, "Recorded."."""
    client = lab.client()
    keys = Keys("council:")
    journals = JournalStore(client, keys)
    journals.next_attempt("run-1", "hawk")
    client.hset(keys.run("run-1"), mapping={"status": "open"})
    client.close()
    lab.stop_redis()
    entry = {"subject": "token is logged", "label": "issue"}
    record = subprocess.Popen(
        [sys.executable, "-m", "workers.cli", "record", "--json", json.dumps(entry)],
        cwd=ROOT,
        env={
            **os.environ,
            "COUNCIL_REDIS_URL": lab.url,
            "COUNCIL_RUN": "run-1",
            "COUNCIL_PARTICIPANT": "hawk",
            "COUNCIL_ATTEMPT": "1",
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(4)
    assert record.poll() is None, record.communicate()
    lab.start_redis()
    _, stderr = record.communicate(timeout=60)
    assert record.returncode == 0, stderr
    assert stderr.strip().endswith("Recorded.")
    client = lab.client()
    stored = JournalStore(client, keys).read("run-1", "hawk", 1)
    assert [json.loads(raw) for raw in stored] == [entry]
    client.close()
