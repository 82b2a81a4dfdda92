"""The session store: the identity ledger, filed findings and their ids, across runs.

A *session* is one change under review over its life (a pull request, a branch). Its
keys (see :mod:`workers.stores.keys`) outlive runs:

* ``session:{s}:ledger`` — the ledger JSON. A round's claims and the opening of its run
  are ONE optimistic transaction (WATCH ledger, attributed ids and open runs; MULTI), so
  two coordinators claiming one id with different meanings cannot both win.
* ``session:{s}:open`` — open run → the ids it holds; those count as attributed.
* ``session:{s}:issued`` — finding ids, INCRBY only, never reset, never from a length.
* ``session:{s}:findings`` / ``:attributed`` — filed findings and who they credit.
* ``session:{s}:fingerprints`` / ``:reviewed`` — what completed rounds reported, and the
  last completed run (its head, for ``--since-last``, and the findings still open after
  it); written when a run settles.
* ``session:{s}:recall`` — the findings the session remembers for recognition (bounded,
  :data:`council.session.remembered.RECALL_CAP`): a later round's finding recognized as one of them
  keeps its id; written when a round completes.
* ``session:{s}:dismissed`` — fingerprints a person dismissed, with the reason (and the
  finding dismissed, when known).

Filing is one transaction too, compare-and-set on the run's state (WATCH the run record
and the id counter): a second consolidation of the same run sees it moved on and files
nothing. The store persists transitions; :mod:`council.round.lifecycle` says which exist.
Source: docs/architecture.md "State in Redis", docs/identity-and-clocks.md "Identity and the
ledger", docs/harvest.md §8.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import redis
from pydantic import BaseModel, ConfigDict, Field

from council.asks.pending import Answer
from council.model.findings import FINDING, FINDINGS, Finding
from council.model.fingerprint import fingerprint
from council.model.participant import Identity, Participant, Role
from council.model.report import CouncilReport
from council.round.lifecycle import Transition
from council.session.earlier_rounds import RoundMemory
from council.session.ledger import Ledger, attributed_ids
from workers.stores import RedisClient
from workers.stores.keys import Keys
from workers.stores.runs import RunRecord, dumps, wake

HEARD = "heard:"
"""Prefix of the ``session:{s}:reviewed`` fields that hold, per reviewer, the head of the
last completed round it was heard in full in (``heard:hawk`` → sha)."""


@dataclass(frozen=True)
class Filing:
    """What one transition writes, built by the workers from the domain's rules.

    ``findings``: new ones with ids from ``first_id`` on (``first_id`` is what
    :meth:`SessionStore.next_finding_id` said), and earlier ones of this run updated in
    place (a judge's restatements); ``report``: the run's report after the transition;
    ``memory``: for a completed round, what the session keeps of it (None otherwise).
    A transition to ``waiting`` also keeps the run's record and report in the session
    (``session:{s}:waiting``), so it can be finished once answered, in any process; the
    transition out of ``waiting`` removes them and the answers.
    """

    first_id: int
    findings: Sequence[Finding]
    report: CouncilReport
    memory: RoundMemory | None = None
    dismissals: Mapping[str, str] = field(default_factory=dict)
    """Content fingerprint → reason: findings a person rejected when asked (recorded as
    the session's dismissals, so later rounds keep them dismissed)."""


_EXPIRE_ALL = """
for _, key in ipairs(KEYS) do
  redis.call('EXPIRE', key, ARGV[1])
end
return #KEYS
"""
"""KEYS: the keys to expire; ARGV: the TTL in seconds. One command for a run's thousands
of keys (a pipelined EXPIRE each cost 21 ms of a 500-participant settle, py-spy)."""


RUNS_INDEX_MAX = 10_000
"""Most runs ``council:runs`` lists; older ones are trimmed at each opening (as are runs
older than the run retention, whose keys have expired)."""

OPEN_TTL_CAP_S = 30 * 24 * 3600
"""The longest a run's deadline counts toward its keys' TTL at opening (30 days)."""


class Waiting(BaseModel):
    """A run waiting on a person, as its session keeps it: its record and its report
    (the questions in ``report.asks``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record: RunRecord
    report: CouncilReport


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


class SessionStore:
    """Atomic steps over a session's ledger and findings."""

    def __init__(
        self,
        client: RedisClient,
        keys: Keys,
        *,
        session_retention_s: int,
        run_retention_s: int,
    ) -> None:
        self._r, self._keys = client, keys
        self._session_ttl, self._run_ttl = session_retention_s, run_retention_s

    def open_run(
        self, record: RunRecord, claims: Sequence[tuple[Role, Participant]], now_ms: int
    ) -> list[Identity]:
        """Claim every participant and write the run record ``open``, all or nothing.

        An id held by another still-open run (deadline not passed) counts as attributed.
        Raises :class:`~council.errors.IdentityRefused` (nothing written) when a claim is
        refused.
        """
        k, s = self._keys, record.session
        watched = [k.session_ledger(s), k.session_attributed(s), k.session_open(s)]
        with self._r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(*watched)
                    ledger = _load_ledger(pipe.get(k.session_ledger(s)))
                    attributed = {m.decode() for m in pipe.smembers(k.session_attributed(s))}
                    stale: list[bytes] = []
                    for rid, raw in pipe.hgetall(k.session_open(s)).items():
                        held = json.loads(raw)
                        if held.get("deadline_ms", 0) > now_ms:
                            attributed.update(held.get("ids", []))
                        else:
                            stale.append(rid)
                    identities = ledger.claim_round(list(claims), attributed)
                    pipe.multi()
                    pipe.set(k.session_ledger(s), ledger.to_json())
                    if stale:
                        pipe.hdel(k.session_open(s), *stale)
                    pipe.hset(
                        k.session_open(s),
                        record.run_id,
                        dumps(
                            {"ids": [p.id for _, p in claims], "deadline_ms": record.deadline_ms}
                        ),
                    )
                    pipe.hset(
                        k.run(record.run_id),
                        mapping={"record": record.model_dump_json(), "status": "open"},
                    )
                    pipe.expire(k.run(record.run_id), self.open_ttl_s(record, now_ms))
                    pipe.zremrangebyscore(
                        k.runs_index(), "-inf", f"({now_ms - self._run_ttl * 1000}"
                    )
                    pipe.zadd(k.runs_index(), {record.run_id: record.created_ms})
                    pipe.zremrangebyrank(k.runs_index(), 0, -(RUNS_INDEX_MAX + 1))
                    pipe.zadd(k.runs_open(), {record.run_id: record.deadline_ms})
                    pipe.zadd(k.runs_undispatched(), {record.run_id: now_ms})
                    pipe.zadd(k.session_runs(s), {record.run_id: record.created_ms})
                    for key in k.session_keys(s):
                        pipe.expire(key, self._session_ttl)
                    pipe.execute()
                    return identities
                except redis.WatchError:
                    continue

    def open_ttl_s(self, record: RunRecord, now_ms: int) -> int:
        """The TTL a run's keys get when it opens: until its deadline (at most
        :data:`OPEN_TTL_CAP_S` ahead), plus the run retention. A run that never settles
        still expires; settling sets the retention from then on."""
        until_deadline = max(0, record.deadline_ms - now_ms) // 1000 + 1
        return min(until_deadline, OPEN_TTL_CAP_S) + self._run_ttl

    def next_finding_id(self, session: str) -> int:
        """The id the session's next new finding gets (ids are issued once, never reused).

        A filing is built from it outside any transaction and committed with
        :meth:`commit`, which refuses it when the counter moved meanwhile.
        """
        return int(self._r.get(self._keys.session_issued(session)) or 0) + 1

    def commit(
        self,
        record: RunRecord,
        transition: Transition,
        filing: Filing,
        now_ms: int,
    ) -> CouncilReport | None:
        """Persist one lifecycle transition of the run and what it files, atomically.

        Compare-and-set: the run must still be in ``transition.source`` and the session's
        id counter where ``filing.first_id`` read it (WATCH on both, one MULTI). Returns
        the filed report; when the run has left ``source`` (someone else filed first),
        the report stored with its state, and nothing is written; None when the id
        counter moved (another run of the session filed first): rebuild the filing from
        :meth:`next_finding_id` and commit again. A final transition gives the run's keys
        their retention TTL and removes the run from the session's open runs.
        Raises :class:`RunNotSettled` when the run left ``source`` without a report.
        Which transitions exist and what they file is :mod:`council.round.lifecycle`'s; this
        method runs no domain rule.
        """
        k, s, rid = self._keys, record.session, record.run_id
        everyone = (*record.participants, *((record.judge,) if record.judge else ()))
        with self._r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(k.run(rid), k.session_issued(s))
                    current = pipe.hget(k.run(rid), "status")
                    if current is not None and current.decode() != transition.source:
                        stored = pipe.hget(k.run(rid), "report")
                        pipe.unwatch()
                        if stored is not None:
                            return CouncilReport.model_validate_json(stored)
                        raise RunNotSettled(rid, current.decode(), str(transition.source))
                    issued = int(pipe.get(k.session_issued(s)) or 0)
                    if issued != filing.first_id - 1:
                        pipe.unwatch()
                        return None
                    counts = pipe.mget([k.run_attempts(rid, p) for p in everyone])
                    attempts = {p: int(n or 0) for p, n in zip(everyone, counts, strict=True)}
                    pipe.multi()
                    self._file(pipe, record, filing)
                    fields = {
                        "status": transition.target,
                        "report": filing.report.model_dump_json(exclude_none=True),
                    }
                    if transition.final:
                        fields["settled_ms"] = str(now_ms)
                    if transition.parks:
                        pipe.hdel(k.session_open(s), rid)
                        pipe.zrem(k.runs_open(), rid)
                        pipe.zrem(k.runs_undispatched(), rid)
                    elif transition.target == "judging":
                        # The judge gets a round length of its own before a sweep steps in.
                        span = max(0, record.deadline_ms - record.created_ms)
                        pipe.zadd(k.runs_open(), {rid: now_ms + span})
                    if filing.memory is not None:
                        self._remember_round(pipe, record, filing.memory, now_ms)
                    self._wait_or_finish(pipe, record, transition, filing, now_ms)
                    pipe.hset(k.run(rid), mapping=fields)
                    wake(pipe, k, rid)
                    if transition.parks:
                        expiring = k.run_keys(rid, everyone, attempts)
                        pipe.eval(_EXPIRE_ALL, len(expiring), *expiring, self._run_ttl)
                    for key in k.session_keys(s):
                        pipe.expire(key, self._session_ttl)
                    pipe.execute()
                    return filing.report
                except redis.WatchError:
                    continue

    def _wait_or_finish(
        self,
        pipe: redis.client.Pipeline,
        record: RunRecord,
        transition: Transition,
        filing: Filing,
        now_ms: int,
    ) -> None:
        """Queue what a run waiting on a person keeps in its session (entering
        ``waiting``), or drop it with its answers and record the person's dismissals
        (leaving it)."""
        k, s, rid = self._keys, record.session, record.run_id
        if transition.target == "waiting":
            parked = Waiting(record=record, report=filing.report)
            pipe.hset(k.session_waiting(s), rid, parked.model_dump_json(exclude_none=True))
        elif transition.source == "waiting":
            pipe.hdel(k.session_waiting(s), rid)
            asked = [a.id for a in filing.report.asks]
            if asked:
                pipe.hdel(k.session_answers(s), *asked)
        # The finding each dismissal is for: the one the report suppressed as dismissed
        # (two findings may share a fingerprint, and a person may say "no" to one only).
        # (else, when the report suppressed none of them, the first with the fingerprint).
        held_back = filing.report.suppressed
        told: dict[str, Finding] = {}
        for f in filing.report.open_findings if filing.dismissals else ():
            rejected = held_back.get(f.id) if f.id is not None else None
            if rejected is not None and rejected.source == "dismissed":
                told[fingerprint(f)] = f
        for f in filing.report.open_findings if filing.dismissals else ():
            told.setdefault(fingerprint(f), f)
        for print_, reason in filing.dismissals.items():
            held = Dismissal(reason=reason, dismissed_ms=now_ms, finding=told.get(print_))
            pipe.hset(k.session_dismissed(s), print_, held.model_dump_json(exclude_none=True))

    def resume_run(
        self,
        record: RunRecord,
        transition: Transition,
        answers: Mapping[str, Answer],
        asked: Sequence[str],
        now_ms: int,
    ) -> bool:
        """Persist ``resumed`` (``waiting`` → ``open``) for a run whose reviewers asked a
        person: hand each asker its answer, so its next task goes on from its pause.

        ``record`` is the run's record with its new deadline (the reviewers get a round
        length of their own from now); ``answers`` maps each participant that asked to
        the answer to its question; ``asked`` are the ids of the questions answered.
        Compare-and-set on the run's state (WATCH, one MULTI): True when resumed here;
        False when the run is not ``waiting`` any more (another CLI resumed it first, or
        it expired). Written: the record and ``status`` ``open`` (the waiting report
        dropped), each asker's ``answer`` in its pause hash, its outcome, archived
        answer and progress dropped (its next attempt runs), the session's waiting entry
        and answers dropped, the run back in the open runs (a sweep settles it past its
        deadline) and every run key given the opening TTL again. Runs no domain rule.
        """
        k, s, rid = self._keys, record.session, record.run_id
        everyone = (*record.participants, *((record.judge,) if record.judge else ()))
        with self._r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(k.run(rid))
                    current = pipe.hget(k.run(rid), "status")
                    if current is None or current.decode() != transition.source:
                        pipe.unwatch()
                        return False
                    counts = pipe.mget([k.run_attempts(rid, p) for p in everyone])
                    attempts = {p: int(n or 0) for p, n in zip(everyone, counts, strict=True)}
                    pipe.multi()
                    pipe.hset(
                        k.run(rid),
                        mapping={"status": transition.target, "record": record.model_dump_json()},
                    )
                    pipe.hdel(k.run(rid), "report", "settled_ms")
                    for pid, answer in answers.items():
                        pipe.hset(k.run_pause(rid, pid), "answer", answer.model_dump_json())
                        pipe.delete(k.run_outcome(rid, pid), k.run_answer(rid, pid))
                        pipe.hdel(k.run_state(rid), pid)
                    pipe.hdel(k.session_waiting(s), rid)
                    if asked:
                        pipe.hdel(k.session_answers(s), *asked)
                    pipe.zadd(k.runs_open(), {rid: record.deadline_ms})
                    wake(pipe, k, rid)
                    expiring = k.run_keys(rid, everyone, attempts)
                    ttl = self.open_ttl_s(record, now_ms)
                    pipe.eval(_EXPIRE_ALL, len(expiring), *expiring, ttl)
                    for key in k.session_keys(s):
                        pipe.expire(key, self._session_ttl)
                    pipe.execute()
                    return True
                except redis.WatchError:
                    continue

    def drop_waiting(self, session: str, run_id: str) -> None:
        """Forget a waiting run whose keys expired (its questions went with it)."""
        self._r.hdel(self._keys.session_waiting(session), run_id)

    def waiting_sessions(self) -> list[str]:
        """Every session with a run waiting on a person (a SCAN over the session keys:
        for ``council asks`` and ``council answer ASK``, which are given no session)."""
        marker, tail = f"{self._keys.prefix}session:", ":waiting"
        found = {
            raw.decode()[len(marker) : -len(tail)]
            for raw in self._r.scan_iter(match=f"{marker}*{tail}", count=1000)
        }
        return sorted(found)

    def waiting(self, session: str) -> list[Waiting]:
        """The session's runs waiting on a person, oldest first."""
        raw = self._r.hvals(self._keys.session_waiting(session))
        parked = [Waiting.model_validate_json(v) for v in raw]
        return sorted(parked, key=lambda w: (w.record.created_ms, w.record.run_id))

    def answers(self, session: str) -> dict[str, Answer]:
        """The answers people gave to the session's pending asks (ask id → answer)."""
        raw = self._r.hgetall(self._keys.session_answers(session))
        return {key.decode(): Answer.model_validate_json(value) for key, value in raw.items()}

    def answer(self, session: str, ask: str, answer: Answer) -> None:
        """Record ``answer`` to ``ask`` (a later answer replaces an earlier one)."""
        key = self._keys.session_answers(session)
        with self._r.pipeline() as pipe:
            pipe.hset(key, ask, answer.model_dump_json(exclude_none=True))
            pipe.expire(key, self._session_ttl)
            pipe.execute()

    def _file(self, pipe: redis.client.Pipeline, record: RunRecord, filing: Filing) -> None:
        """Queue the filing's findings: new ids issued, findings written, raisers noted
        as attributed (so the ledger refuses to re-point them)."""
        k, s = self._keys, record.session
        new = sum(1 for f in filing.findings if (f.id or 0) >= filing.first_id)
        if new:
            pipe.incrby(k.session_issued(s), new)
        if filing.findings:
            pipe.hset(
                k.session_findings(s),
                mapping={str(f.id): f.model_dump_json(exclude_none=True) for f in filing.findings},
            )
            credited = attributed_ids(filing.findings)
            if credited:
                pipe.sadd(k.session_attributed(s), *sorted(credited))

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
            pipe.set(k.session_recall(s), recall)
        if memory.heard:
            heard = {HEARD + pid: record.head for pid in memory.heard}
            pipe.hset(k.session_reviewed(s), mapping=heard)
        if memory.still_open is None:
            return
        still = FINDINGS.dump_json(list(memory.still_open), exclude_none=True).decode()
        pipe.hset(
            k.session_reviewed(s),
            mapping={
                "run": record.run_id,
                "head": record.head,
                "settled_ms": str(now_ms),
                "open": still,
                "reviewers": json.dumps(list(memory.reviewers)),
            },
        )

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
        the head it reviewed (:func:`council.session.earlier_rounds.still_open`: its own findings, then
        those it carried, less those the judge did not uphold). Empty before the first
        completed run. A session written before the open findings were kept gives the
        run's own findings."""
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
    ) -> bool:
        """Record a dismissal of a fingerprint; True when it was not dismissed before.

        ``finding``: the finding dismissed, when known (kept so a rewording of it stays
        dismissed). Dismissing again replaces the reason (the latest decision is the one
        that holds).
        """
        key = self._keys.session_dismissed(session)
        held = Dismissal(reason=reason, dismissed_ms=now_ms, finding=finding)
        value = held.model_dump_json(exclude_none=True)
        with self._r.pipeline() as pipe:
            pipe.hset(key, print_, value)
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

    def ledger(self, session: str) -> Ledger:
        """The session's ledger (empty when none was written)."""
        return _load_ledger(self._r.get(self._keys.session_ledger(session)))

    def release(self, session: str, participant: str) -> bool:
        """Free a participant id in the session's ledger (True if it was held)."""
        key = self._keys.session_ledger(session)
        with self._r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(key)
                    ledger = _load_ledger(pipe.get(key))
                    released = ledger.release(participant)
                    pipe.multi()
                    pipe.set(key, ledger.to_json())
                    pipe.expire(key, self._session_ttl)
                    pipe.execute()
                    return released
                except redis.WatchError:
                    continue

    def runs(self, session: str, limit: int = 50) -> list[str]:
        """Run ids of the session, newest first."""
        return [
            r.decode() for r in self._r.zrevrange(self._keys.session_runs(session), 0, limit - 1)
        ]


class RunNotSettled(RuntimeError):
    """A run is in another state than a settling step expected, with no report to return."""

    def __init__(self, run_id: str, status: str, expected: str) -> None:
        super().__init__(
            f"run {run_id} is {status!r}, expected {expected!r}, and holds no report; "
            "inspect it with `council show RUN`"
        )


def _load_ledger(raw: bytes | None) -> Ledger:
    return Ledger.from_json(raw.decode()) if raw else Ledger()


def _ids_of(raw: bytes) -> tuple[int, ...]:
    """``b"3,7"`` → ``(3, 7)``: the ids a fingerprint was reported under (a bad entry:
    none)."""
    parts = raw.split(b",")
    if not all(part.isdigit() for part in parts):
        return ()
    return tuple(sorted(int(part) for part in parts))
