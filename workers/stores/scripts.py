"""The script-row store: one Redis list per participant and attempt, like the journal.

Structure: ``run:{run_id}:scripts:{participant}:{attempt}`` is a list of JSON
:class:`~council.evidence.ScriptRow` objects, RPUSH only: a row is written the moment its
script ends, so a worker that dies afterwards loses nothing, and a redelivered task (a
new attempt, numbered by the journal's INCR) writes a new list. A list gets the run
hash's TTL when its first row makes it: it expires with the run's other keys.

A turn is one attempt: the evidence matcher compares a finding's blocks with the rows of
the attempt that produced it and only counts the earlier attempts' rows.

Source: docs/evidence-and-asks.md §1, docs/architecture.md "State in Redis".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import redis
from pydantic import ValidationError

from council.evidence import ScriptRow
from workers.stores import RedisClient
from workers.stores.keys import Keys

STORE_MAX_ROWS = 1000
"""Rows stored per attempt before further appends are refused."""


@dataclass(frozen=True)
class AttemptRows:
    """The rows of one attempt that could be read, and how many stored ones could not."""

    rows: tuple[ScriptRow, ...] = ()
    unreadable: int = 0


class ScriptStore:
    """Append and read participants' script rows in Redis."""

    def __init__(self, client: RedisClient, keys: Keys, *, max_rows: int = STORE_MAX_ROWS) -> None:
        self._r, self._keys, self._max = client, keys, max_rows

    def append(self, run_id: str, participant: str, attempt: int, row: ScriptRow) -> str:
        """Store one row of attempt ``attempt``; ``"Recorded."`` or why not. Never raises."""
        key = self._keys.scripts(run_id, participant, attempt)
        try:
            if int(self._r.llen(key)) >= self._max:
                return f"not recorded: the attempt already holds {self._max} script rows"
            if int(self._r.rpush(key, row.model_dump_json(exclude_none=True))) == 1:
                ttl = int(self._r.pttl(self._keys.run(run_id)))  # it expires with its run
                if ttl > 0:
                    self._r.pexpire(key, ttl)
        except redis.RedisError as exc:
            return f"not recorded ({type(exc).__name__}: the script store failed)"
        return "Recorded."

    def read(self, run_id: str, participant: str, attempt: int) -> AttemptRows:
        """The rows of one attempt, in the order they were written."""
        raw = self._r.lrange(self._keys.scripts(run_id, participant, attempt), 0, -1)
        return _parse(raw)

    def read_all(self, run_id: str, participant: str, attempts: int) -> list[AttemptRows]:
        """The rows of attempts 1..``attempts``, in attempt order, in one round trip."""
        pipe = self._r.pipeline(transaction=False)
        for attempt in range(1, attempts + 1):
            pipe.lrange(self._keys.scripts(run_id, participant, attempt), 0, -1)
        return [_parse(raw) for raw in pipe.execute()]


def _parse(raw: Sequence[bytes]) -> AttemptRows:
    rows: list[ScriptRow] = []
    unreadable = 0
    for value in raw:
        try:
            rows.append(ScriptRow.model_validate(json.loads(value), strict=True))
        except (ValueError, ValidationError):
            unreadable += 1
    return AttemptRows(tuple(rows), unreadable)
