"""The session store: the identity ledger, filed findings and their ids, across runs.

A session is one change under review over its life; its keys outlive runs: the ledger and
the ids open runs hold (claimed with the run's opening in ONE optimistic transaction,
:mod:`workers.stores.session_opening`), ``:issued`` (finding ids: only ever raised, by
the filing's SET of the count it read under WATCH plus the ids it issues, never reset,
never from a length; a writer that does not WATCH it would be overwritten), filed
findings and who they credit, what completed rounds leave for later ones
(:mod:`workers.stores.session_memory`), and runs waiting on a person with their
answers. Filing is one compare-and-set transaction (WATCH the run record and the id
counter): a second consolidation sees the run moved on and files nothing. Which
transitions exist is :mod:`council.round.lifecycle`'s. Source: docs/architecture.md "State
in Redis", docs/identity-and-clocks.md "Identity and the ledger", docs/harvest.md §8.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import redis
from pydantic import BaseModel, ConfigDict

from council.asks.pending import Answer
from council.model.findings import Finding
from council.model.fingerprint import fingerprint
from council.model.report import CouncilReport
from council.ranking.records import TrackRecord
from council.round.lifecycle import Transition
from council.session.earlier_rounds import RoundMemory
from council.session.ledger import attributed_ids
from workers.stores import RedisClient, server_ms
from workers.stores.keys import Keys
from workers.stores.run_progress import wake
from workers.stores.run_record import RunRecord
from workers.stores.session_memory import Dismissal, SessionMemory
from workers.stores.session_opening import OPEN_TTL_CAP_S, RETENTION_SLACK, SessionOpening
from workers.stores.track.records import add_acted, add_records


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
    backends: Mapping[str, str] | None = None
    """Participant → its backend, and ``scripting``: the participants that may run a
    script; when known, the run keys their backends never write are not expired
    (:meth:`Keys.run_keys <workers.stores.keys.Keys.run_keys>`)."""
    scripting: frozenset[str] | None = None
    records: Sequence[TrackRecord] = ()
    """What the transition adds to the reviewers' track records (``{prefix}records``): a
    completed round's counts, a person's answers. Written in the transition's MULTI, so
    a redelivered settle (refused by the compare-and-set) never counts them twice."""
    acted: Mapping[int, Sequence[TrackRecord]] = field(default_factory=dict)
    """Finding id → the ``acted`` counts of an earlier finding this round found outdated:
    counted in the same MULTI, once per finding id in the session (``session:{s}:acted``)."""


_EXPIRE_ALL = """
for _, key in ipairs(KEYS) do
  redis.call('EXPIRE', key, ARGV[1])
end
return #KEYS
"""
"""KEYS: the keys to expire; ARGV: the TTL in seconds. One command for a run's thousands
of keys (a pipelined EXPIRE each cost 21 ms of a 500-participant settle, py-spy)."""


class Waiting(BaseModel):
    """A run waiting on a person, as its session keeps it: its record and its report
    (the questions in ``report.asks``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record: RunRecord
    report: CouncilReport


class SessionStore(SessionOpening, SessionMemory):
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
        :meth:`next_finding_id` and commit again. A final transition (or one to
        ``waiting``) removes the run from the session's open runs, and gives the run's
        keys their retention TTL from now unless they already hold about that
        (:meth:`expiring_as_written`).
        Raises :class:`RunNotSettled` when the run left ``source`` without a report.
        Which transitions exist and what they file is :mod:`council.round.lifecycle`'s; this
        method runs no domain rule.
        """
        k, s, rid = self._keys, record.session, record.run_id
        everyone = (
            *record.participants,
            *record.units,
            *((record.judge,) if record.judge else ()),
        )
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
                    expire = transition.parks and not self.expiring_as_written(record, now_ms)
                    attempts: dict[str, int] = {}
                    if expire:
                        counts = pipe.mget([k.run_attempts(rid, p) for p in everyone])
                        attempts = {p: int(n or 0) for p, n in zip(everyone, counts, strict=True)}
                    fresh = self.freshness(pipe, s) == "fresh"
                    pipe.multi()
                    self._file(pipe, record, filing, issued)
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
                        pipe.zadd(k.runs_open(), {rid: server_ms(self._r) + span})
                    if filing.memory is not None:
                        self._remember_round(pipe, record, filing.memory, now_ms)
                    add_records(pipe, k, filing.records)
                    add_acted(pipe, k, s, rid, filing.acted)
                    self._wait_or_finish(pipe, record, transition, filing, now_ms)
                    pipe.hset(k.run(rid), mapping=fields)
                    wake(pipe, k, rid)
                    if expire:
                        expiring = k.run_keys(
                            rid, everyone, attempts, filing.backends, filing.scripting
                        )
                        pipe.eval(_EXPIRE_ALL, len(expiring), *expiring, self._run_ttl)
                    if fresh:
                        for key in self._written(record, transition, filing, issued):
                            pipe.expire(key, self._session_ttl)
                    else:
                        self.refresh(pipe, s)
                    pipe.execute()
                    return filing.report
                except redis.WatchError:
                    continue

    def _written(
        self, record: RunRecord, transition: Transition, filing: Filing, issued: int
    ) -> list[str]:
        """The session keys a commit of ``filing`` may write (and so make anew), and
        ``issued`` always: they get the session retention from now
        (:meth:`~workers.stores.session_opening.SessionOpening.freshness`). Not the
        recall, nor ``issued`` when the filing issues ids (``issued`` ids were issued
        before it): their ``SET`` carries the retention (``EX``)."""
        k, s = self._keys, record.session
        keys = [] if _issuing(filing, issued) else [k.session_issued(s)]
        if filing.findings:
            keys += [k.session_findings(s), k.session_attributed(s)]
        memory = filing.memory
        if memory is not None and memory.reported:
            keys.append(k.session_fingerprints(s))
        if memory is not None and (memory.heard or memory.still_open is not None):
            keys.append(k.session_reviewed(s))
        if filing.acted:
            keys.append(k.session_acted(s))
        if transition.target == "waiting":
            keys.append(k.session_waiting(s))
        if filing.dismissals:
            keys.append(k.session_dismissed(s))
        return keys

    def expiring_as_written(self, record: RunRecord, now_ms: int) -> bool:
        """Whether the run's keys, parked at ``now_ms`` (ms since the epoch), already
        expire about the run retention from now, so parking need not expire them again.

        Each key got its TTL as it was written: until the run's deadline plus the
        retention (:meth:`open_ttl_s`). Parked no later than its deadline, and at most
        :data:`RETENTION_SLACK` of the retention before it, every key outlives ``now_ms``
        by the retention and at most 1% (and a second) more. Else (a run parked past its
        deadline: the watchdog, a judge; long before its deadline; or one whose deadline
        was past the opening TTL's cap) one script expires each key.
        """
        left_ms = record.deadline_ms - now_ms
        span_ms = record.deadline_ms - record.created_ms
        return (
            0 <= left_ms <= self._run_ttl * 1000 * RETENTION_SLACK
            and span_ms <= OPEN_TTL_CAP_S * 1000
        )

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
        everyone = (
            *record.participants,
            *record.units,
            *((record.judge,) if record.judge else ()),
        )
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
                    left = max(0, record.deadline_ms - now_ms)
                    pipe.zadd(k.runs_open(), {rid: server_ms(self._r) + left})
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

    def _file(
        self, pipe: redis.client.Pipeline, record: RunRecord, filing: Filing, issued: int
    ) -> None:
        """Queue the filing's findings: new ids issued, findings written, raisers noted
        as attributed (so the ledger refuses to re-point them). ``issued``: the ids
        issued before, read under WATCH, so the new count is SET with the session
        retention (one command, where INCRBY then EXPIRE took two)."""
        k, s = self._keys, record.session
        total = _issuing(filing, issued)
        if total:
            pipe.set(k.session_issued(s), total, ex=self._session_ttl)
        if filing.findings:
            pipe.hset(
                k.session_findings(s),
                mapping={str(f.id): f.model_dump_json(exclude_none=True) for f in filing.findings},
            )
            credited = attributed_ids(filing.findings)
            if credited:
                pipe.sadd(k.session_attributed(s), *sorted(credited))


def _issuing(filing: Filing, issued: int) -> int:
    """The ids issued once ``filing`` is committed over ``issued`` before; 0 when it
    issues none."""
    new = sum(1 for f in filing.findings if (f.id or 0) >= filing.first_id)
    return issued + new if new else 0


class RunNotSettled(RuntimeError):
    """A run is in another state than a settling step expected, with no report to return."""

    def __init__(self, run_id: str, status: str, expected: str) -> None:
        super().__init__(
            f"run {run_id} is {status!r}, expected {expected!r}, and holds no report; "
            "inspect it with `council show RUN`"
        )
