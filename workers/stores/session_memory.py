"""What a session remembers of its completed rounds, and what people dismissed.

``session:{s}:fingerprints``, ``:reviewed`` (the last completed run: its head, the findings
still open, and per reviewer the head it was last heard in full at), ``:recall`` (at most
:data:`council.session.remembered.RECALL_CAP`), ``:findings`` and ``:dismissed``. Written when
a round completes, inside the filing transaction (:meth:`SessionMemory._remember_round`),
and read by later rounds, so a finding keeps its id and a dismissal holds across rounds.

Source: docs/architecture.md "State in Redis", docs/identity-and-clocks.md "Identity and the
ledger".
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import redis
from pydantic import BaseModel, ConfigDict, Field

from council.model.findings import FINDING, FINDINGS, Finding
from council.ranking.records import TrackRecord
from council.session.earlier_rounds import RoundMemory
from workers.stores import RedisClient
from workers.stores.keys import Keys
from workers.stores.run_record import RunRecord
from workers.stores.track.records import fields_of

HEARD = "heard:"
"""Prefix of the ``session:{s}:reviewed`` fields that hold, per reviewer, the head of the
last completed round it was heard in full in (``heard:hawk`` → sha)."""


class Reviewed(BaseModel):
    """The session's last completed run: which run, the head it reviewed, when."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run: str
    head: str
    settled_ms: int = 0
    heard: dict[str, str] = Field(default_factory=dict)
    """Reviewer id → the head of the last completed round it was heard in full in."""
    reviewers: tuple[str, ...] | None = None
    """The reviewers of that run (None: written before they were kept)."""


class Dismissal(BaseModel):
    """A person's decision that a finding (by content fingerprint) is not to be acted on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: str
    dismissed_ms: int = 0
    finding: Finding | None = None
    """The finding dismissed, when it was known (dismissed by id, by the fingerprint of
    a finding of the session, or when asked): a rewording of it stays dismissed, matched
    by agreement (:func:`council.session.baseline.suppress`). Absent in dismissals recorded
    before it was kept, and for a fingerprint no round had reported."""


_DISMISS = """
local added = redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if added == 1 then
  for i = 3, #ARGV, 2 do
    redis.call('HINCRBY', KEYS[2], ARGV[i], ARGV[i + 1])
  end
end
return added
"""
"""KEYS: the session's dismissals, the track records; ARGV: the fingerprint, the
dismissal, then record field, whole amount pairs, added only for a new dismissal."""


class SessionMemory:
    """Write and read what a session remembers (a part of
    :class:`~workers.stores.sessions.SessionStore`, whose client, keys and retention it
    uses)."""

    _r: RedisClient
    _keys: Keys
    _session_ttl: int

    def _remember_round(
        self, pipe: redis.client.Pipeline, record: RunRecord, memory: RoundMemory, now_ms: int
    ) -> None:
        """Queue what a completed round leaves for later ones: the fingerprints it
        reported and, when the gate found it complete, its head as reviewed with the
        findings still open after it (:func:`council.session.earlier_rounds.remembered` decides)."""
        k, s = self._keys, record.session
        if memory.reported:
            pipe.hset(k.session_fingerprints(s), mapping=dict(memory.reported))
        if memory.recall:
            recall = FINDINGS.dump_json(list(memory.recall), exclude_none=True).decode()
            pipe.set(k.session_recall(s), recall, ex=self._session_ttl)  # retention from now
        reviewed = {HEARD + pid: record.head for pid in memory.heard}
        if memory.still_open is not None:
            still = FINDINGS.dump_json(list(memory.still_open), exclude_none=True).decode()
            reviewed |= {
                "run": record.run_id,
                "head": record.head,
                "settled_ms": str(now_ms),
                "open": still,
                "reviewers": json.dumps(list(memory.reviewers)),
            }
        if reviewed:  # one HSET for the heard heads and the round reviewed
            pipe.hset(k.session_reviewed(s), mapping=reviewed)

    def reviewed(self, session: str) -> Reviewed | None:
        """The session's last completed run, or None before its first one."""
        raw = {
            key.decode(): value.decode()
            for key, value in self._r.hgetall(self._keys.session_reviewed(session)).items()
        }
        if not raw.get("run") or not raw.get("head"):
            return None
        heard = {k.removeprefix(HEARD): v for k, v in raw.items() if k.startswith(HEARD)}
        reviewers = tuple(json.loads(raw["reviewers"])) if raw.get("reviewers") else None
        return Reviewed(
            run=raw["run"],
            head=raw["head"],
            settled_ms=int(raw.get("settled_ms", 0)),
            heard=heard,
            reviewers=reviewers,
        )

    def open_findings(self, session: str) -> list[Finding]:
        """The findings still open after the session's last completed run, anchored on
        the head it reviewed (:func:`council.session.earlier_rounds.still_open`: its own
        findings, then those it carried, less those the judge did not uphold). Empty before
        the first completed run. A session written before the open findings were kept gives
        the run's own findings."""
        key = self._keys.session_reviewed(session)
        run, still = self._r.hmget(key, ["run", "open"])
        if still is not None:
            return FINDINGS.validate_json(still)
        return self.run_findings(session, run.decode()) if run else []

    def recall(self, session: str) -> list[Finding] | None:
        """The findings the session remembers for recognition, newest first
        (:func:`council.session.remembered.recalled`); None when no round wrote them yet (a session
        older than the memory: the caller falls back to :meth:`open_findings`)."""
        raw = self._r.get(self._keys.session_recall(session))
        return FINDINGS.validate_json(raw) if raw is not None else None

    def fingerprints(self, session: str) -> set[str]:
        """Every content fingerprint a completed round of the session reported."""
        return {f.decode() for f in self._r.hkeys(self._keys.session_fingerprints(session))}

    def reported_ids(self, session: str) -> dict[str, tuple[int, ...]]:
        """Every content fingerprint a completed round of the session reported → the ids
        of the findings that last reported it, ascending (empty for an unreadable entry;
        an entry written before several were kept holds one id)."""
        found = self._r.hgetall(self._keys.session_fingerprints(session))
        return {k.decode(): _ids_of(v) for k, v in found.items()}

    def reported_id(self, session: str, print_: str) -> int | None:
        """The id of the latest finding a completed round reported with fingerprint
        ``print_`` (the highest of its ids; None when none did): an older telling's
        fingerprint still names the finding after a rewording replaced it under its id."""
        raw = self._r.hget(self._keys.session_fingerprints(session), print_)
        ids = _ids_of(raw) if raw is not None else ()
        return ids[-1] if ids else None

    def run_findings(self, session: str, run_id: str) -> list[Finding]:
        """The findings one run filed in the session (by their origin), by id."""
        return [
            f for f in self.findings(session) if f.origin is not None and f.origin.run_id == run_id
        ]

    def dismiss(
        self,
        session: str,
        print_: str,
        reason: str,
        now_ms: int,
        finding: Finding | None = None,
        records: Iterable[TrackRecord] = (),
    ) -> bool:
        """Record a dismissal of a fingerprint; True when it was not dismissed before.

        ``finding``: the finding dismissed, when known (kept so a rewording of it stays
        dismissed). Dismissing again replaces the reason (the latest decision is the one
        that holds). ``records``: what the dismissal adds to the raisers' track records,
        added in the same script only when the fingerprint was not dismissed before (a
        repeated dismissal never counts twice).
        """
        key = self._keys.session_dismissed(session)
        held = Dismissal(reason=reason, dismissed_ms=now_ms, finding=finding)
        value = held.model_dump_json(exclude_none=True)
        counts = [str(x) for pair in fields_of(records).items() for x in pair]
        with self._r.pipeline() as pipe:
            pipe.eval(_DISMISS, 2, key, self._keys.records(), print_, value, *counts)
            for name in self._keys.session_keys(session):
                pipe.expire(name, self._session_ttl)
            added = pipe.execute()[0]
        return bool(added)

    def dismissals(self, session: str) -> dict[str, Dismissal]:
        """Fingerprint → dismissal, for every finding dismissed in the session."""
        raw = self._r.hgetall(self._keys.session_dismissed(session))
        return {k.decode(): Dismissal.model_validate_json(v) for k, v in raw.items()}

    def findings(self, session: str) -> list[Finding]:
        """Every finding filed in the session, by id."""
        raw = self._r.hgetall(self._keys.session_findings(session))
        found = [FINDING.validate_json(v) for v in raw.values()]
        return sorted(found, key=lambda f: f.id or 0)


def _ids_of(raw: bytes) -> tuple[int, ...]:
    """``b"3,7"`` → ``(3, 7)``: the ids a fingerprint was reported under (a bad entry:
    none)."""
    parts = raw.split(b",")
    if not all(part.isdigit() for part in parts):
        return ()
    return tuple(sorted(int(part) for part in parts))
