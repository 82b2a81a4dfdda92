"""The run store: one run's record, its inputs for workers, progress and outcomes.

Structures (see :mod:`workers.stores.keys`):

* ``run:{id}`` — a hash: ``record`` (:class:`RunRecord` JSON, written ``open`` before any
  task is sent), ``status``, ``report`` (the settled CouncilReport JSON), ``settled_ms``.
* ``run:{id}:roster`` / ``:prompt`` / ``:tree`` / ``:program:{p}`` / ``:args:{p}`` — what
  tasks read by key, so messages carry ids, never megabytes of diff. ``:prompt`` maps a
  participant to its prompt, and ``{p}#persona`` to the persona of one whose prompt is
  built later.
* ``run:{id}:state`` — participant → progress JSON, for the waiting CLI.
* ``run:{id}:outcome:{p}`` — the settled outcome, ``SET NX``: the first terminal result
  wins, so a redelivered task returns it instead of filing twice.

A batch of participants (``council.review_batch``) reads and writes them all at once:
:meth:`RunStore.batch_inputs`, :meth:`RunStore.start_attempts` and
:meth:`RunStore.put_outcomes` cost one round trip each, however many participants.

Source: docs/architecture.md "State in Redis", "Messages"; docs/celery.md §1.8.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import redis
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from council.asks.paused import Paused, Resumption
from council.asks.pending import Answer
from council.change.secret_masks import SPANS, SecretSpan
from council.model.backend_result import Stop
from council.model.participant import Participant
from council.model.report import CouncilReport, RunStatus
from council.roster.rate_limits import RateLimit
from council.round.cost import PriceTable
from council.round.outcome import ParticipantOutcome
from workers.stores import RedisClient
from workers.stores.keys import Keys

PROTOCOL = 1
"""Message protocol number carried by every task; a worker serving another refuses."""

_PARTICIPANTS: TypeAdapter[list[Participant]] = TypeAdapter(list[Participant])

_PERSONA_FIELD = "#persona"
"""Suffix of the prompt-hash field holding a participant's persona text (ids never
contain '#'). The field is where earlier versions kept the judge's persona, so runs and
workers of either version read each other's."""

_START_ATTEMPTS = """
local shown = string.sub(ARGV[1], 1, -2) .. ',"attempt":'
local numbers = {}
local lease = tonumber(ARGV[2])
for i = 3, #KEYS do
  local n = redis.call('INCR', KEYS[i])
  redis.call('HSET', KEYS[1], ARGV[i + 1], shown .. n .. '}')
  if lease > 0 then
    redis.call('ZADD', KEYS[2], lease, ARGV[3] .. '|' .. ARGV[i + 1] .. '|' .. n)
  end
  numbers[i - 2] = n
end
return numbers
"""
"""KEYS: the progress hash, the leases set, then each participant's attempts counter;
ARGV: the progress JSON object without ``attempt`` (each new attempt number is added to
it), the ms the attempts' leases lapse (0: no lease), the run id, then each participant
(ARGV[i + 1] goes with KEYS[i]). Returns the new attempt numbers, in order."""

_PUT_OUTCOME = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX') then
  redis.call('SET', KEYS[2], ARGV[2])
  redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
  return false
end
return redis.call('GET', KEYS[1])
"""
"""KEYS: the outcome, the answer, the progress hash; ARGV: the outcome JSON, the answer,
the participant, its progress JSON. Nil when stored, else the outcome already stored."""


class RunRecord(BaseModel):
    """What a run is about, written before dispatch (times in ms since the epoch)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    session: str
    repository: str = ""
    base: str = ""
    head: str = ""
    witness: str | None = None
    mode: Literal["embedded", "distributed"] = "embedded"
    participants: tuple[str, ...] = ()
    judge: str | None = None
    """The judge's id when the roster has one: it runs after the reviewers are filed."""
    limits: dict[str, RateLimit] = Field(default_factory=dict)
    """The roster's shared rate limits (``openai``, ``openai:MODEL`` → rpm/tpm)."""
    prices: PriceTable = Field(default_factory=PriceTable)
    """The roster's prices, for the cost in the report."""
    changed_paths: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    created_ms: int = 0
    deadline_ms: int = 0
    protocol: int = PROTOCOL
    fail_on: str = "critical"
    """The ``--fail-on`` the round was reviewed with: what ``council resume`` gates a run
    that waited on a person with, unless told otherwise."""
    filter: str = "added"
    """The ``--filter`` mode the round's findings are gated with
    (:mod:`council.change.diff_filter`); applied when the run settles."""
    confirm: str | None = None
    """``[policy] confirm``: the lowest severity a person must confirm before a finding
    may fail the gate (None: nobody is asked)."""
    unverified_scripts: Literal["demote", "keep"] = "demote"
    """``[policy] unverified_scripts``: whether a critical finding showing a script that
    did not run this turn is held at medium (:mod:`council.evidence.policy`)."""
    min_agreement: int = Field(default=1, ge=1)
    """``--min-agreement`` (else ``[council] min_agreement``): a finding gates only when
    at least this many reviewers raised it; applied when the run settles."""
    quorum: int | None = Field(default=1, ge=0)
    """Reviewers that must be heard in full for the round to count as a review of its
    head (``--quorum``, else the roster's); None: every reviewer not marked optional (the
    default, failing closed). An incomplete round does not move the session's reviewed
    head, so ``--since-last`` reviews its commits again. Records written before it was
    kept read as 1."""


class Progress(BaseModel):
    """One participant's progress as the waiting CLI sees it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state: Literal["pending", "running", "answered", "stopped", "failed", "asking"] = "pending"
    started_ms: int | None = None
    updated_ms: int | None = None
    findings: int = 0
    attempt: int = 0
    detail: str = ""
    """Why a participant failed or stopped, for the progress line (at most
    :data:`DETAIL_CHARS` characters; empty while it runs and once it answered)."""


DETAIL_CHARS = 300
"""The longest ``Progress.detail`` kept (the whole reason is in the report)."""


@dataclass(frozen=True)
class BatchInputs:
    """What a batch of participants of one run reads before it starts (one round trip).

    Each mapping holds only the participants found: a missing id has no participant,
    prompt, stored outcome or program under its key. ``change`` is the run's diff text
    ("" when none was stored); ``record`` is None when the run is unknown or expired;
    ``status`` is the run's status (None then too).
    """

    record: RunRecord | None
    change: str
    participants: dict[str, Participant]
    prompts: dict[str, str]
    outcomes: dict[str, ParticipantOutcome]
    programs: dict[str, bytes]
    status: RunStatus | None = None
    arg_files: dict[str, dict[str, bytes]] = field(default_factory=dict)
    """Participant → the base-tree files its ``args`` name (see :meth:`RunStore.arg_files`);
    only participants that have some."""
    secrets: tuple[SecretSpan, ...] = ()
    """The places of the likely secrets the change adds (see :meth:`RunStore.secrets`)."""


@dataclass(frozen=True)
class Settled:
    """One participant's terminal write: its outcome, the verbatim answer archived with
    it, and the progress shown once it is stored (see :meth:`RunStore.put_outcomes`)."""

    outcome: ParticipantOutcome
    answer: str
    progress: Progress


WAKE_TTL_S = 24 * 3600
"""Seconds a run's wake list lives after its last push (a waiter that never came)."""

_WAIT_READ = """
local status = redis.call('HGET', KEYS[1], 'status')
return {status or false, redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3])}
"""
"""KEYS: the run hash, its progress hash, its recorded counts. What the waiting CLI reads
after each wake, in one command: the status, every progress, every count."""


def wake(pipe: redis.client.Pipeline, keys: Keys, run_id: str) -> None:
    """Queue the push that wakes the run's waiting CLI (at most one element is kept)."""
    key = keys.run_wake(run_id)
    pipe.rpush(key, b"1")
    pipe.ltrim(key, -1, -1)
    pipe.expire(key, WAKE_TTL_S)


class RunStore:
    """Read and write one run's keys."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self._r, self._keys = client, keys

    # -- inputs written by the coordinator after the run is open -------------------------
    def put_inputs(
        self,
        run_id: str,
        participants: Sequence[Participant],
        prompts: dict[str, str],
        tree: bytes | None,
        programs: dict[str, bytes],
        change: str = "",
        *,
        personas: Mapping[str, str] | None = None,
        arg_files: Mapping[str, Mapping[str, bytes]] | None = None,
        config: Mapping[str, bytes] | None = None,
        secrets: Sequence[SecretSpan] = (),
        ttl_s: int | None = None,
    ) -> None:
        """Store the roster, prompts, head tree, base-tree programs and diff of a run.

        ``ttl_s``: the TTL every one of these keys gets (the run's opening TTL, see
        :meth:`SessionStore.open_ttl_s`), so a run that never settles leaves nothing
        behind for ever; settling sets the retention on them like on every run key.

        ``personas``: participant id → its persona charter's body, for a participant
        whose prompt is built later (the judge's, once the reviewers are filed); read
        back with :meth:`persona`. ``arg_files``: participant id → the base-tree files
        its ``args`` name (field → bytes, see :mod:`workers.coordinator.program_args`), read back with
        :meth:`arg_files`. ``config``: the base's side of the analyzer configuration the
        change edits (field → bytes, see :mod:`workers.coordinator.config_overlay`), read back with
        :meth:`config`. ``secrets``: the places of the likely secrets the change adds,
        read back with :meth:`secrets`.
        """
        k = self._keys
        pipe = self._r.pipeline(transaction=True)
        pipe.set(k.run_change(run_id), change.encode("utf-8", errors="surrogatepass"))
        pipe.set(k.run_roster(run_id), _PARTICIPANTS.dump_json(list(participants)))
        pipe.hset(
            k.run_participants(run_id),
            mapping={p.id: p.model_dump_json() for p in participants},
        )
        stored = {**prompts, **{p + _PERSONA_FIELD: text for p, text in (personas or {}).items()}}
        if stored:
            pipe.hset(k.run_prompt(run_id), mapping=stored)
        if tree is not None:
            pipe.set(k.run_tree(run_id), tree)
        for pid, blob in programs.items():
            pipe.set(k.run_program(run_id, pid), blob)
        for pid, files in (arg_files or {}).items():
            if files:
                pipe.hset(k.run_args(run_id, pid), mapping=dict(files))
        if config:
            pipe.hset(k.run_config(run_id), mapping=dict(config))
        if secrets:
            pipe.set(k.run_secrets(run_id), SPANS.dump_json(list(secrets)))
        pipe.hset(
            k.run_state(run_id),
            mapping={p.id: Progress().model_dump_json() for p in participants},
        )
        if ttl_s is not None:
            written = [
                k.run_change(run_id),
                k.run_roster(run_id),
                k.run_participants(run_id),
                k.run_state(run_id),
                *([k.run_prompt(run_id)] if stored else []),
                *([k.run_tree(run_id)] if tree is not None else []),
                *(k.run_program(run_id, pid) for pid in programs),
                *(k.run_args(run_id, pid) for pid, files in (arg_files or {}).items() if files),
                *([k.run_config(run_id)] if config else []),
                *([k.run_secrets(run_id)] if secrets else []),
            ]
            for key in written:
                pipe.expire(key, ttl_s)
        pipe.execute()

    def mark_dispatched(self, run_id: str) -> None:
        """The run's chord is about to be sent: it is no longer a run its CLI might have
        abandoned between opening and dispatch (``runs:undispatched``)."""
        self._r.zrem(self._keys.runs_undispatched(), run_id)

    def put_session_inputs(
        self,
        run_id: str,
        *,
        since: str | None,
        baseline: str | None,
        ttl_s: int,
        carry: bool = False,
        paths: Collection[str] | None = None,
        pull: str | None = None,
    ) -> None:
        """Store what settling marks the round with: the interdiff since the session's
        last reviewed head, the trusted baseline text (each absent when None), and
        whether the round reviews only the commits after that head (``carry``: the
        earlier findings still open it does not touch are carried).

        Written by the CLI before the run opens, so with ``ttl_s`` (the run retention):
        a run refused before it opened leaves nothing behind for long; settling sets the
        run's retention on them like on every run key.
        """
        k = self._keys
        pipe = self._r.pipeline(transaction=True)
        if since is not None:
            pipe.set(k.run_since(run_id), since.encode("utf-8", "surrogatepass"), ex=ttl_s)
        if baseline is not None:
            pipe.set(k.run_baseline(run_id), baseline.encode("utf-8"), ex=ttl_s)
        if carry:
            pipe.set(k.run_carry(run_id), b"1", ex=ttl_s)
        if pull is not None:
            pipe.set(k.run_pull(run_id), pull.encode("utf-8", "surrogatepass"), ex=ttl_s)
        if paths is not None:
            joined = "\0".join(sorted(paths)).encode("utf-8", "surrogateescape")
            pipe.set(k.run_paths(run_id), joined, ex=ttl_s)
        pipe.execute()

    def carry(self, run_id: str) -> bool:
        """Whether the run carries the earlier findings it does not touch (see
        :meth:`put_session_inputs`)."""
        return bool(self._r.exists(self._keys.run_carry(run_id)))

    def pull(self, run_id: str) -> str | None:
        """The pull request's diff of a ``--since-last`` run (see
        :meth:`put_session_inputs`), None otherwise."""
        raw = self._r.get(self._keys.run_pull(run_id))
        return raw.decode("utf-8", errors="replace") if raw is not None else None

    def paths(self, run_id: str) -> frozenset[str] | None:
        """The head tree's file paths (see :meth:`put_session_inputs`), None when not
        stored."""
        raw = self._r.get(self._keys.run_paths(run_id))
        if raw is None:
            return None
        text = raw.decode("utf-8", errors="surrogateescape")
        return frozenset(p for p in text.split("\0") if p)

    def since(self, run_id: str) -> str | None:
        """The interdiff since the session's last reviewed head, None when unknown."""
        raw = self._r.get(self._keys.run_since(run_id))
        return raw.decode("utf-8", errors="replace") if raw is not None else None

    def baseline(self, run_id: str) -> str | None:
        """The baseline text the run is suppressed by, None when there is none."""
        raw = self._r.get(self._keys.run_baseline(run_id))
        return raw.decode("utf-8", errors="replace") if raw is not None else None

    # -- reads ---------------------------------------------------------------------------
    def record(self, run_id: str) -> RunRecord | None:
        """The run record, or None when the run is unknown or expired."""
        raw = self._r.hget(self._keys.run(run_id), "record")
        return RunRecord.model_validate_json(raw) if raw is not None else None

    def status(self, run_id: str) -> RunStatus | None:
        """``open`` until settled; then settled | partial | cancelled | timeout."""
        raw = self._r.hget(self._keys.run(run_id), "status")
        if raw is None:
            return None
        status: RunStatus = raw.decode()
        return status

    def report(self, run_id: str) -> CouncilReport | None:
        """The settled report, or None while the run is open."""
        raw = self._r.hget(self._keys.run(run_id), "report")
        return CouncilReport.model_validate_json(raw) if raw is not None else None

    def participants(self, run_id: str) -> list[Participant]:
        """The checked participants of the run, in roster order."""
        raw = self._r.get(self._keys.run_roster(run_id))
        return _PARTICIPANTS.validate_json(raw) if raw is not None else []

    def participant(self, run_id: str, participant: str) -> Participant | None:
        """One participant of the run by id (one hash field: O(1) in the roster's size)."""
        raw = self._r.hget(self._keys.run_participants(run_id), participant)
        return Participant.model_validate_json(raw) if raw is not None else None

    def prompt(self, run_id: str, participant: str) -> str | None:
        """The prompt stored for the participant."""
        raw = self._r.hget(self._keys.run_prompt(run_id), participant)
        return raw.decode("utf-8", errors="replace") if raw is not None else None

    def persona(self, run_id: str, participant: str) -> str | None:
        """The persona charter body stored for a participant (see :meth:`put_inputs`),
        None when none was stored or it is empty (a run of an earlier version stored ""
        for a judge without a persona)."""
        raw = self._r.hget(self._keys.run_prompt(run_id), participant + _PERSONA_FIELD)
        text = raw.decode("utf-8", errors="replace") if raw is not None else ""
        return text or None

    def change(self, run_id: str) -> str:
        """The (filtered) diff text the run reviewed; "" when none was stored."""
        raw = self._r.get(self._keys.run_change(run_id))
        return raw.decode("utf-8", errors="replace") if raw is not None else ""

    def batch_inputs(self, run_id: str, participants: Sequence[str]) -> BatchInputs:
        """The record, the status, the diff, and each participant's checked entry,
        prompt, stored outcome, base-tree program and args files, and the places of the
        change's secrets, in ONE pipelined round trip (HMGET, GET ×2, HMGET ×2, MGET ×2,
        HGETALL per participant), however many participants. Ids not found are left out
        of the maps."""
        k, ids = self._keys, list(participants)
        pipe = self._r.pipeline(transaction=False)
        pipe.hmget(k.run(run_id), ["record", "status"])
        pipe.get(k.run_change(run_id))
        pipe.get(k.run_secrets(run_id))
        if ids:
            pipe.hmget(k.run_participants(run_id), ids)
            pipe.hmget(k.run_prompt(run_id), ids)
            pipe.mget([k.run_outcome(run_id, p) for p in ids])
            pipe.mget([k.run_program(run_id, p) for p in ids])
            for p in ids:
                pipe.hgetall(k.run_args(run_id, p))
        replies = pipe.execute()
        (record, status), change, secrets = replies[0], replies[1], replies[2]
        people, prompts, outcomes, programs = replies[3:7] if ids else ([], [], [], [])
        args = replies[7:] if ids else []
        return BatchInputs(
            record=RunRecord.model_validate_json(record) if record is not None else None,
            change=change.decode("utf-8", errors="replace") if change is not None else "",
            participants={
                p: Participant.model_validate_json(raw)
                for p, raw in zip(ids, people, strict=True)
                if raw is not None
            },
            prompts={
                p: raw.decode("utf-8", errors="replace")
                for p, raw in zip(ids, prompts, strict=True)
                if raw is not None
            },
            outcomes={
                p: ParticipantOutcome.model_validate_json(raw)
                for p, raw in zip(ids, outcomes, strict=True)
                if raw is not None
            },
            programs={p: raw for p, raw in zip(ids, programs, strict=True) if raw is not None},
            status=status.decode() if status is not None else None,
            arg_files={p: _fields(raw) for p, raw in zip(ids, args, strict=True) if raw},
            secrets=tuple(SPANS.validate_json(secrets)) if secrets is not None else (),
        )

    def put_prompt(self, run_id: str, participant: str, prompt: str) -> None:
        """Store (or replace) one participant's prompt (the judge's is built late)."""
        self._r.hset(self._keys.run_prompt(run_id), participant, prompt)

    def tree(self, run_id: str) -> bytes | None:
        """The packed head tree (tar.gz), or None when the run has none."""
        blob: bytes | None = self._r.get(self._keys.run_tree(run_id))
        return blob

    def program(self, run_id: str, participant: str) -> bytes | None:
        """A program read from the base tree for a command reviewer, if any."""
        blob: bytes | None = self._r.get(self._keys.run_program(run_id, participant))
        return blob

    def arg_files(self, run_id: str, participant: str) -> dict[str, bytes]:
        """The base-tree files a program reviewer's ``args`` name (field → bytes; empty
        when it names none)."""
        return _fields(self._r.hgetall(self._keys.run_args(run_id, participant)))

    def config(self, run_id: str) -> dict[str, bytes]:
        """The base's side of the analyzer configuration the change edits (field →
        bytes, see :mod:`workers.coordinator.config_overlay`; empty when it edits none)."""
        return _fields(self._r.hgetall(self._keys.run_config(run_id)))

    def secrets(self, run_id: str) -> list[SecretSpan]:
        """The places of the likely secrets the change adds (empty when none were
        found), see :mod:`council.change.secret_masks`."""
        raw = self._r.get(self._keys.run_secrets(run_id))
        return SPANS.validate_json(raw) if raw is not None else []

    def claim_judge(self, run_id: str) -> bool:
        """True for the one caller that may send the run's judge (SET NX), else False."""
        return bool(self._r.set(self._keys.run_judge_sent(run_id), b"1", nx=True, ex=7 * 24 * 3600))

    def cancelled(self, run_id: str) -> bool:
        """Whether the run was cancelled."""
        return bool(self._r.exists(self._keys.run_cancel(run_id)))

    def cancel(
        self, run_id: str, status: RunStatus = "cancelled", budget_ms: int | None = None
    ) -> None:
        """Mark the run cancelled; reviewers watching it stop as ``cancelled``.

        ``status`` (``cancelled``, or ``timeout`` for ``--timeout``) is what the run
        settles as, whoever settles it: the waiting CLI, or the consolidation that the
        stopped reviewers' tasks fire first. ``budget_ms`` is the ``--timeout`` that ran
        out (stored as ``timeout:MS``), so the stops say what cancelled them.
        """
        value = f"{status}:{budget_ms}" if budget_ms is not None else status
        self._r.set(self._keys.run_cancel(run_id), value.encode(), ex=7 * 24 * 3600)

    def cancelled_many(self, run_ids: Sequence[str]) -> list[bool]:
        """Whether each run is cancelled, in one pipelined round trip."""
        pipe = self._r.pipeline(transaction=False)
        for rid in run_ids:
            pipe.exists(self._keys.run_cancel(rid))
        return [bool(n) for n in pipe.execute()]

    def cancel_status(self, run_id: str) -> RunStatus | None:
        """The status a cancelled run settles as (None when it was not cancelled)."""
        raw = self._r.get(self._keys.run_cancel(run_id))
        if raw is None:
            return None
        return "timeout" if raw.partition(b":")[0] == b"timeout" else "cancelled"

    def cancel_stop(self, run_id: str) -> Stop | None:
        """The stop of a reviewer this run's cancellation stopped: ``cancelled`` with the
        ``--timeout`` in ms as its budget when that cancelled it (None: not cancelled)."""
        raw = self._r.get(self._keys.run_cancel(run_id))
        if raw is None:
            return None
        budget = raw.partition(b":")[2]
        return Stop(limit="cancelled", budget_ms=int(budget) if budget.isdigit() else None)

    # -- progress and outcomes --------------------------------------------------------------
    def set_progress(self, run_id: str, participant: str, progress: Progress) -> None:
        """Record a participant's progress (and wake the waiting CLI)."""
        pipe = self._r.pipeline(transaction=False)
        pipe.hset(self._keys.run_state(run_id), participant, progress.model_dump_json())
        wake(pipe, self._keys, run_id)
        pipe.execute()

    def set_progress_many(self, run_id: str, progress: Mapping[str, Progress]) -> None:
        """Record several participants' progress (participant → Progress) in one HSET
        (and wake the waiting CLI), one round trip."""
        if progress:
            pipe = self._r.pipeline(transaction=False)
            pipe.hset(
                self._keys.run_state(run_id),
                mapping={p: s.model_dump_json() for p, s in progress.items()},
            )
            wake(pipe, self._keys, run_id)
            pipe.execute()

    def wait_read(
        self, run_id: str
    ) -> tuple[RunStatus | None, dict[str, Progress], dict[str, int]]:
        """The status, every participant's progress and every recorded count, in ONE
        command (a script): what the waiting CLI reads after each wake."""
        k = self._keys
        status, states, counts = self._r.eval(
            _WAIT_READ, 3, k.run(run_id), k.run_state(run_id), k.run_recorded(run_id)
        )
        progress = {
            states[i].decode(): Progress.model_validate_json(states[i + 1])
            for i in range(0, len(states), 2)
        }
        recorded = {counts[i].decode(): int(counts[i + 1]) for i in range(0, len(counts), 2)}
        return (status.decode() if status else None), progress, recorded

    def wait_wake(self, run_id: str, timeout_s: float) -> bool:
        """Block until the run's wake list is pushed or ``timeout_s`` passes (BLPOP);
        whether it was pushed."""
        key = self._keys.run_wake(run_id)
        return self._r.blpop([key], timeout=max(timeout_s, 0.01)) is not None

    def poke(self, run_id: str) -> None:
        """Wake the run's waiting CLI (it reads the run again)."""
        pipe = self._r.pipeline(transaction=False)
        wake(pipe, self._keys, run_id)
        pipe.execute()

    def start_attempts(
        self, run_id: str, participants: Sequence[str], started_ms: int, lease_ms: int = 0
    ) -> dict[str, int]:
        """Start a new attempt of each participant, in one round trip (one script call).

        Per participant, atomically: INCR its attempts counter (the counter
        :meth:`JournalStore.next_attempt <workers.stores.journal.JournalStore.next_attempt>`
        counts) and record it ``running`` since ``started_ms`` (ms since the epoch) with
        that attempt number, and, when ``lease_ms`` > 0, give the attempt a lease lapsing
        at ``started_ms + lease_ms`` (:mod:`workers.execution.leases`). Returns participant → the
        attempt number (1, 2, …).
        """
        k = self._keys
        body = Progress(state="running", started_ms=started_ms, updated_ms=started_ms)
        shown = body.model_dump_json(exclude={"attempt"})
        ids = list(participants)
        if not ids:
            return {}
        keys = [k.run_state(run_id), k.leases(), *(k.run_attempts(run_id, p) for p in ids)]
        lapse = started_ms + lease_ms if lease_ms > 0 else 0
        pipe = self._r.pipeline(transaction=False)
        pipe.eval(_START_ATTEMPTS, len(keys), *keys, shown, lapse, run_id, *ids)
        wake(pipe, self._keys, run_id)
        numbers = pipe.execute()[0]
        return {p: int(n) for p, n in zip(ids, numbers, strict=True)}

    def progress(self, run_id: str) -> dict[str, Progress]:
        """Every participant's progress (participant → Progress)."""
        raw = self._r.hgetall(self._keys.run_state(run_id))
        return {k.decode(): Progress.model_validate_json(v) for k, v in raw.items()}

    def put_outcome(self, run_id: str, outcome: ParticipantOutcome, answer: str) -> bool:
        """Store the outcome if none is stored yet (first terminal result wins).

        Returns True when this call stored it. The verbatim answer is archived with it.
        """
        k = self._keys
        stored = self._r.set(
            k.run_outcome(run_id, outcome.participant), outcome.model_dump_json(), nx=True
        )
        if stored:
            self._r.set(k.run_answer(run_id, outcome.participant), answer.encode("utf-8"))
        return bool(stored)

    def put_outcomes(
        self, run_id: str, settled: Sequence[Settled], leases: Sequence[str] = ()
    ) -> dict[str, ParticipantOutcome]:
        """Store each outcome unless one is stored (first terminal result wins), in one
        pipelined round trip; the same rule as :meth:`put_outcome`.

        Per participant, atomically: SET NX the outcome; when this call stored it, also
        archive the answer and record ``progress``. Returns, for each participant whose
        outcome was ALREADY stored, that kept outcome (the caller shows its progress);
        participants absent from the result were stored by this call. ``leases``: lease
        members (:meth:`Keys.lease_member`) ended in the same round trip.
        """
        k = self._keys
        pipe = self._r.pipeline(transaction=False)
        if leases:
            pipe.zrem(k.leases(), *leases)
        for s in settled:
            p = s.outcome.participant
            pipe.eval(
                _PUT_OUTCOME,
                3,
                k.run_outcome(run_id, p),
                k.run_answer(run_id, p),
                k.run_state(run_id),
                s.outcome.model_dump_json(),
                s.answer.encode("utf-8", errors="replace"),
                p,
                s.progress.model_dump_json(),
            )
        wake(pipe, k, run_id)
        replies = pipe.execute()[1 if leases else 0 : -3]
        return {
            s.outcome.participant: ParticipantOutcome.model_validate_json(kept)
            for s, kept in zip(settled, replies, strict=True)
            if kept is not None
        }

    def outcome(self, run_id: str, participant: str) -> ParticipantOutcome | None:
        """The stored outcome of a participant, if it settled."""
        raw = self._r.get(self._keys.run_outcome(run_id, participant))
        return ParticipantOutcome.model_validate_json(raw) if raw is not None else None

    def outcomes_many(
        self, run_id: str, participants: Sequence[str]
    ) -> dict[str, ParticipantOutcome]:
        """The stored outcomes of ``participants`` (id → outcome; ids without one are
        left out), in ONE round trip (MGET), however many participants."""
        ids = list(participants)
        if not ids:
            return {}
        raws = self._r.mget([self._keys.run_outcome(run_id, p) for p in ids])
        return {
            p: ParticipantOutcome.model_validate_json(raw)
            for p, raw in zip(ids, raws, strict=True)
            if raw is not None
        }

    def put_pause(self, run_id: str, participant: str, paused: Paused) -> None:
        """Keep ``participant``'s conversation paused on a question (``run:{run}:pause:{p}``
        field ``pause``), dropping an answer an earlier pause was given; the hash gets
        the run hash's TTL (it lives as long as the run)."""
        key = self._keys.run_pause(run_id, participant)
        ttl = self._r.ttl(self._keys.run(run_id))
        with self._r.pipeline() as pipe:
            pipe.hset(key, "pause", paused.model_dump_json())
            pipe.hdel(key, "answer")
            if ttl > 0:
                pipe.expire(key, ttl)
            pipe.execute()

    def pauses(self, run_id: str, participants: Sequence[str]) -> dict[str, Paused]:
        """The paused conversations of ``participants`` (those that have one)."""
        pipe = self._r.pipeline(transaction=False)
        for p in participants:
            pipe.hget(self._keys.run_pause(run_id, p), "pause")
        found = pipe.execute()
        return {
            p: Paused.model_validate_json(raw)
            for p, raw in zip(participants, found, strict=True)
            if raw is not None
        }

    def resumption(self, run_id: str, participant: str) -> Resumption | None:
        """``participant``'s paused conversation with the answer it goes on with; None
        when it has no pause, or its pause has no answer yet."""
        key = self._keys.run_pause(run_id, participant)
        paused, answer = self._r.hmget(key, ["pause", "answer"])
        if paused is None or answer is None:
            return None
        return Resumption(
            paused=Paused.model_validate_json(paused), answer=Answer.model_validate_json(answer)
        )

    def answer(self, run_id: str, participant: str) -> str | None:
        """The archived verbatim answer of a participant."""
        raw = self._r.get(self._keys.run_answer(run_id, participant))
        return raw.decode("utf-8", errors="replace") if raw is not None else None

    def recent(self, limit: int = 20) -> list[RunRecord]:
        """The most recent runs still held, newest first (expired ones are pruned)."""
        ids = self._r.zrevrange(self._keys.runs_index(), 0, limit - 1)
        records: list[RunRecord] = []
        for raw_id in ids:
            rec = self.record(raw_id.decode())
            if rec is None:
                self._r.zrem(self._keys.runs_index(), raw_id)
            else:
                records.append(rec)
        return records

    def status_map(self, run_ids: Sequence[str]) -> dict[str, str]:
        """Status of several runs at once (run id → status)."""
        pipe = self._r.pipeline(transaction=False)
        for rid in run_ids:
            pipe.hget(self._keys.run(rid), "status")
        return {
            rid: (v.decode() if v is not None else "expired")
            for rid, v in zip(run_ids, pipe.execute(), strict=True)
        }


def dumps(value: object) -> str:
    """Compact JSON for small records."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _fields(raw: Mapping[bytes | str, bytes]) -> dict[str, bytes]:
    """A Redis hash of bytes values, with its field names as text."""
    return {(k.decode() if isinstance(k, bytes) else k): v for k, v in raw.items()}
