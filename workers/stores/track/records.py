"""Where track records are kept: one Redis hash, or the embedded state file's ``records``.

Every count is a field ``participant␟identity␟count`` of ``{prefix}records`` (one key, no
expiry: session retention never prunes a reviewer's history), added to with HINCRBY, so
concurrent outcomes never lose one. The embedded state file keeps the same fields in its
``records`` object beside ``sessions``; an addition is read, added and written under the
file's lock (:func:`~workers.stores.state_file.lock_file`), atomically.
Source: docs/ranking.md "Track records".
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from council.ranking.records import COUNTS, TrackRecord, summed
from workers.stores.keys import Keys
from workers.stores.state_file import STATE_VERSION, StateFileError, lock_file
from workers.stores.state_shape import read_document

SEP = "\x1f"
"""Between a field's participant, identity and count name (never in an id)."""

Fields = dict[str, float]

NAMES: tuple[str, ...] = (*COUNTS, "cost_usd", "priced")
"""The count names a record's fields end in."""


def fields_of(records: Iterable[TrackRecord]) -> Fields:
    """Records as hash fields → amounts (zero amounts left out)."""
    out: Fields = {}
    for r in records:
        for name in (*COUNTS, "cost_usd"):
            value = getattr(r, name)
            if value:
                key = SEP.join((r.participant, r.identity, name))
                out[key] = out.get(key, 0) + value
        if r.priced:
            key = SEP.join((r.participant, r.identity, "priced"))
            out[key] = 1
    return out


def records_of(fields: dict[str, float]) -> dict[tuple[str, str], TrackRecord]:
    """Hash fields back as records; a field of another shape is skipped."""
    grouped: dict[tuple[str, str], dict[str, Any]] = {}
    for key, value in fields.items():
        parts = key.split(SEP)
        if len(parts) != 3 or parts[2] not in NAMES:
            continue
        entry = grouped.setdefault((parts[0], parts[1]), {})
        entry[parts[2]] = bool(value) if parts[2] == "priced" else value
    out: dict[tuple[str, str], TrackRecord] = {}
    for (who, ident), counts in grouped.items():
        ints = {k: int(v) for k, v in counts.items() if k in COUNTS}
        cost = float(counts.get("cost_usd", 0.0))
        out[(who, ident)] = TrackRecord(
            participant=who,
            identity=ident,
            cost_usd=cost,
            priced=bool(counts.get("priced")),
            **ints,
        )
    return out


class RecordStore(Protocol):
    """Add to track records; read them all."""

    def add(self, records: Iterable[TrackRecord]) -> None: ...

    def all(self) -> dict[tuple[str, str], TrackRecord]: ...


def add_records(pipe: Any, keys: Keys, records: Iterable[TrackRecord]) -> None:
    """Queue on ``pipe`` the additions of ``records`` to ``{prefix}records`` (HINCRBY,
    HINCRBYFLOAT for a cost; ``priced`` is set)."""
    key = keys.records()
    for field, amount in fields_of(summed(records).values()).items():
        if field.endswith(SEP + "priced"):
            pipe.hset(key, field, 1)
        elif isinstance(amount, int):
            pipe.hincrby(key, field, amount)
        else:
            pipe.hincrbyfloat(key, field, amount)


_ACTED = """
local counted = 0
local i = 1
while i <= #ARGV do
  local n = tonumber(ARGV[i + 2])
  if redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) == 1 then
    for j = i + 3, i + 2 + 2 * n, 2 do
      redis.call('HINCRBY', KEYS[2], ARGV[j], ARGV[j + 1])
    end
    counted = counted + 1
  end
  i = i + 3 + 2 * n
end
return counted
"""
"""KEYS: the session's acted hash, the track records; ARGV: per finding its id, the run,
the number of field, amount pairs, then the pairs: added only for an id not yet there."""


def add_acted(
    pipe: Any,
    keys: Keys,
    session: str,
    run_id: str,
    acted: Mapping[int, Sequence[TrackRecord]],
) -> None:
    """Queue on ``pipe`` the ``acted`` counts of findings gone outdated (finding id → what
    it adds), each counted only when the session's ``acted`` hash does not hold its id
    yet (one script: a later round or a redelivered settle never counts it again)."""
    args: list[str | int] = []
    for fid, records in sorted(acted.items()):
        pairs = [(f, int(v)) for f, v in fields_of(summed(records).values()).items()]
        if not pairs:
            continue
        args += [str(fid), run_id, len(pairs)]
        args += [x for pair in pairs for x in pair]
    if args:
        pipe.eval(_ACTED, 2, keys.session_acted(session), keys.records(), *args)


class RedisRecords:
    """The records in Redis (``{prefix}records``)."""

    def __init__(self, client: Any, keys: Keys) -> None:
        self.client, self.keys = client, keys
        self.key = keys.records()

    def add(self, records: Iterable[TrackRecord]) -> None:
        pipe = self.client.pipeline(transaction=True)
        add_records(pipe, self.keys, records)
        pipe.execute()

    def all(self) -> dict[tuple[str, str], TrackRecord]:
        raw = self.client.hgetall(self.key)
        return records_of({k.decode(): float(v) for k, v in raw.items()})

    def of(self, held: Iterable[tuple[str, str]]) -> dict[tuple[str, str], TrackRecord]:
        """The records of these (participant, identity) pairs only, in one ``HMGET``:
        settling reads what its reviewers bring, not every reviewer ever recorded."""
        names = [SEP.join((*pair, name)) for pair in dict.fromkeys(held) for name in NAMES]
        if not names:
            return {}
        values = self.client.hmget(self.key, names)
        return records_of({n: float(v) for n, v in zip(names, values, strict=True) if v})


def _file_data(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"version": STATE_VERSION, "sessions": {}}
    try:
        data = read_document(path)
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
            raise ValueError(f"version {data.get('version')!r}, expected {STATE_VERSION}")
        if not isinstance(data.get("records", {}), dict):
            raise TypeError("its records are not an object")
        return data
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise StateFileError(
            f"the embedded state file {path} cannot be read ({exc}); move it away to "
            f"start fresh, or pass --state PATH"
        ) from None


def file_records(path: Path) -> dict[str, float]:
    """The ``records`` object the state file at ``path`` holds now ({} when none)."""
    records = _file_data(path).get("records", {})
    return {k: float(v) for k, v in records.items() if isinstance(v, int | float)}


class FileRecords:
    """The records in the embedded state file's ``records`` object."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def add(self, records: Iterable[TrackRecord]) -> None:
        added = fields_of(summed(records).values())
        if not added:
            return
        lock = lock_file(self.path)
        try:
            data = _file_data(self.path)
            held = dict(data.get("records", {}))
            for field, amount in added.items():
                priced = field.endswith(SEP + "priced")
                held[field] = 1 if priced else held.get(field, 0) + amount
            data["records"] = held
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".state-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out)
            os.replace(tmp, self.path)
        finally:
            lock.close()

    def all(self) -> dict[tuple[str, str], TrackRecord]:
        return records_of(file_records(self.path))
