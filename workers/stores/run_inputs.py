"""A run's inputs: what the coordinator stores for workers before it sends any task,
and what settling marks the round with, read back by key.

Structures (see :mod:`workers.stores.keys`): ``run:{id}`` (its ``p:{p}…`` fields: each
participant's entry, prompt and args files), ``run:{id}:roster`` / ``:tree`` /
``:change`` / ``:program:{p}`` / ``:config`` / ``:secrets``, and the session inputs
``:since`` / ``:baseline`` / ``:carry`` / ``:pull`` / ``:paths``. Tasks read them by key,
so messages carry ids, never megabytes of diff; a batch of participants reads all it needs
in one round trip (:meth:`RunInputs.batch_inputs`).

Source: docs/architecture.md "State in Redis", "Messages"; docs/celery.md §1.8.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import TypeAdapter

from council.change.secret_masks import SPANS, SecretSpan
from council.model.findings import FINDINGS, Finding
from council.model.participant import Participant, working
from council.model.report import RunStatus
from council.roster.prompt import Prompt
from council.round.outcome import ParticipantOutcome
from workers.stores import RedisClient
from workers.stores.keys import Keys
from workers.stores.run_record import Progress, RunRecord

_PARTICIPANTS: TypeAdapter[list[Participant]] = TypeAdapter(list[Participant])

_ENTRY = "p:"
"""Prefix of the run-hash fields of a participant (``p:{id}``: its entry; ``p:{id}#…``:
its prompt, shared length, persona, args files), apart from the run's own fields
(``record``, ``status``, ``report``, ``settled_ms``)."""

_PROMPT_FIELD = "#prompt"
"""Suffix of the run-hash field holding the prompt a participant is sent (ids never
contain '#'): the run's record, a participant's entry and its prompt are read by one
HMGET."""

_PERSONA_FIELD = "#persona"
"""Suffix of the run-hash field holding a participant's persona text (the
judge's: its prompt is built once the reviewers are filed)."""

_ARGS_FIELD = "#args"
"""Suffix of the run-hash field holding the base-tree files a program
reviewer's ``args`` name: a JSON object, field → the file's bytes in base64 (absent when
it names none)."""

_ARGS: TypeAdapter[dict[str, bytes]] = TypeAdapter(
    dict[str, bytes], config={"ser_json_bytes": "base64", "val_json_bytes": "base64"}
)

_SHARED_FIELD = "#shared"
"""Suffix of the run-hash field holding how many leading characters of a
participant's prompt every reviewer of the run shares
(:class:`~council.roster.prompt.Prompt`): where a provider's cache breakpoint goes. Absent
(a judge): 0."""


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
    shared: dict[str, int] = field(default_factory=dict)
    """Participant → how many leading characters of its prompt every reviewer shares
    (see :meth:`RunInputs.shared`); only participants whose prompt has such a part."""


@dataclass(frozen=True)
class SettleInputs:
    """What settling reads of a run's stored strings, and of its session's, in one MGET
    (:meth:`RunInputs.settle_inputs`); each as its own reader returns it."""

    participants: list[Participant]
    change: str
    since: str | None
    baseline: str | None
    carry: bool
    pull: str | None
    paths: frozenset[str] | None
    cancelled: RunStatus | None = None
    """As :meth:`RunStore.cancel_status <workers.stores.runs.RunStore.cancel_status>`."""
    secrets: tuple[SecretSpan, ...] | None = ()
    """As :meth:`secrets`; None when the stored value does not parse (the head tree's
    reader reads it again, fails, and notes the tree unread, as it did alone)."""
    recall: list[Finding] | None = None
    """As :meth:`SessionStore.recall <workers.stores.session_memory.SessionMemory.recall>`
    (None too when no session was given)."""
    next_id: int | None = None
    """As :meth:`SessionStore.next_finding_id
    <workers.stores.sessions.SessionStore.next_finding_id>` said then (None when no session
    was given): a filing built from it is refused if the counter moved since."""
    outcomes: dict[str, ParticipantOutcome] = field(default_factory=dict)
    """As :meth:`RunStore.outcomes_many
    <workers.stores.run_progress.RunProgress.outcomes_many>` of ``read``."""
    read: frozenset[str] = frozenset()
    """The participants whose outcomes were read (``outcomes`` holds those stored)."""


class RunInputs:
    """Write a run's inputs once, read them by key (a part of
    :class:`~workers.stores.runs.RunStore`, whose client and keys it uses)."""

    _r: RedisClient
    _keys: Keys

    # -- inputs written by the coordinator after the run is open -------------------------
    def put_inputs(
        self,
        run_id: str,
        participants: Sequence[Participant],
        prompts: Mapping[str, str | Prompt],
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

        A :class:`~council.roster.prompt.Prompt` is stored as its text, and where its
        shared part ends (read back by :meth:`shared`).
        Every key gets ``ttl_s`` (the run's opening TTL, :meth:`SessionStore.open_ttl_s`), so a
        run that never settles leaves nothing behind for ever. Read back by :meth:`persona`,
        :meth:`arg_files`, :meth:`config` and :meth:`secrets`: ``personas`` (participant → its
        charter's body, for a prompt built later: the judge's), ``arg_files`` (participant →
        field → bytes, :mod:`workers.coordinator.program_args`), ``config`` (field → bytes,
        :mod:`workers.coordinator.config_overlay`), ``secrets`` (the places of the likely
        secrets the change adds).
        """
        k = self._keys
        ex = ttl_s  # strings get it as they are written (SET EX); hashes by one EXPIRE each
        pipe = self._r.pipeline(transaction=True)
        pipe.set(k.run_change(run_id), change.encode("utf-8", errors="surrogatepass"), ex=ex)
        pipe.set(k.run_roster(run_id), _PARTICIPANTS.dump_json(list(participants)), ex=ex)
        stored = {
            **{_ENTRY + p.id: p.model_dump_json() for p in participants},
            **{
                _ENTRY + p + _PROMPT_FIELD: text if isinstance(text, str) else text.text
                for p, text in prompts.items()
            },
            **{
                _ENTRY + p + _SHARED_FIELD: str(len(text.shared))
                for p, text in prompts.items()
                if isinstance(text, Prompt) and text.shared
            },
            **{_ENTRY + p + _PERSONA_FIELD: text for p, text in (personas or {}).items()},
            **{
                _ENTRY + pid + _ARGS_FIELD: _ARGS.dump_json(dict(files))
                for pid, files in (arg_files or {}).items()
                if files
            },
        }
        if stored:
            pipe.hset(k.run(run_id), mapping=stored)
        if tree is not None:
            pipe.set(k.run_tree(run_id), tree, ex=ex)
        for pid, blob in programs.items():
            pipe.set(k.run_program(run_id, pid), blob, ex=ex)
        if config:
            pipe.hset(k.run_config(run_id), mapping=dict(config))
        if secrets:
            pipe.set(k.run_secrets(run_id), SPANS.dump_json(list(secrets)), ex=ex)
        pipe.hset(  # a reviewer sent in slices is shown by its slices
            k.run_state(run_id),
            mapping={p.id: Progress().model_dump_json() for p in working(participants)},
        )
        if ttl_s is not None:
            hashes = [
                *([k.run(run_id)] if stored else []),
                k.run_state(run_id),
                *([k.run_config(run_id)] if config else []),
            ]
            for key in hashes:
                pipe.expire(key, ttl_s)
        pipe.execute()

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
        return _text(self._r.get(self._keys.run_pull(run_id)))

    def paths(self, run_id: str) -> frozenset[str] | None:
        """The head tree's file paths (see :meth:`put_session_inputs`), None when not
        stored."""
        return _paths(self._r.get(self._keys.run_paths(run_id)))

    def since(self, run_id: str) -> str | None:
        """The interdiff since the session's last reviewed head, None when unknown."""
        return _text(self._r.get(self._keys.run_since(run_id)))

    def baseline(self, run_id: str) -> str | None:
        """The baseline text the run is suppressed by, None when there is none."""
        return _text(self._r.get(self._keys.run_baseline(run_id)))

    def settle_inputs(
        self, run_id: str, session: str | None = None, outcomes_of: Sequence[str] = ()
    ) -> SettleInputs:
        """The roster, the diff, the session inputs (:meth:`put_session_inputs`), the
        cancellation and the secrets' places, given ``session`` its recall and id
        counter, and the stored outcomes of ``outcomes_of``, in ONE command (MGET), as
        :meth:`participants`, :meth:`change`, :meth:`since`, :meth:`baseline`,
        :meth:`carry`, :meth:`pull`, :meth:`paths`, :meth:`secrets`, the session store
        and :meth:`RunStore.outcomes_many` read them."""
        k = self._keys
        keys = [
            k.run_roster(run_id),
            k.run_change(run_id),
            k.run_since(run_id),
            k.run_baseline(run_id),
            k.run_carry(run_id),
            k.run_pull(run_id),
            k.run_paths(run_id),
            k.run_cancel(run_id),
            k.run_secrets(run_id),
        ]
        if session is not None:
            keys += [k.session_recall(session), k.session_issued(session)]
        ids = list(dict.fromkeys(outcomes_of))
        keys += [k.run_outcome(run_id, p) for p in ids]
        found = self._r.mget(keys)
        raws = found[len(found) - len(ids) :]
        roster, change, since, baseline, carry, pull, paths, cancel, secrets, *told = found[
            : len(found) - len(ids)
        ]
        recall, issued = told if told else (None, None)
        return SettleInputs(
            cancelled=cancel_status(cancel),
            secrets=_spans_or_none(secrets),
            recall=FINDINGS.validate_json(recall) if recall is not None else None,
            next_id=int(issued or 0) + 1 if told else None,
            participants=_PARTICIPANTS.validate_json(roster) if roster is not None else [],
            change=_text(change) or "",
            since=_text(since),
            baseline=_text(baseline),
            carry=carry is not None,
            pull=_text(pull),
            paths=_paths(paths),
            outcomes={
                p: ParticipantOutcome.model_validate_json(raw)
                for p, raw in zip(ids, raws, strict=True)
                if raw is not None
            },
            read=frozenset(ids),
        )

    # -- reads ---------------------------------------------------------------------------
    def participants(self, run_id: str) -> list[Participant]:
        """The checked participants of the run, in roster order."""
        raw = self._r.get(self._keys.run_roster(run_id))
        return _PARTICIPANTS.validate_json(raw) if raw is not None else []

    def participant(self, run_id: str, participant: str) -> Participant | None:
        """One participant of the run by id (one hash field: O(1) in the roster's size)."""
        raw = self._r.hget(self._keys.run(run_id), _ENTRY + participant)
        return Participant.model_validate_json(raw) if raw is not None else None

    def prompt(self, run_id: str, participant: str) -> str | None:
        """The prompt stored for the participant."""
        raw = self._r.hget(self._keys.run(run_id), _ENTRY + participant + _PROMPT_FIELD)
        return raw.decode("utf-8", errors="replace") if raw is not None else None

    def shared(self, run_id: str, participant: str) -> int:
        """How many leading characters of the participant's prompt every reviewer of the
        run shares (where a provider's cache breakpoint goes); 0 when none was stored."""
        k = self._keys.run(run_id)
        fields = [_ENTRY + participant + _PROMPT_FIELD, _ENTRY + participant + _SHARED_FIELD]
        prompt, shared = self._r.hmget(k, fields)
        return _split_at(shared, prompt)

    def persona(self, run_id: str, participant: str) -> str | None:
        """The persona charter body stored for a participant (see :meth:`put_inputs`),
        None when none was stored or it is empty."""
        raw = self._r.hget(self._keys.run(run_id), _ENTRY + participant + _PERSONA_FIELD)
        text = raw.decode("utf-8", errors="replace") if raw is not None else ""
        return text or None

    def change(self, run_id: str) -> str:
        """The (filtered) diff text the run reviewed; "" when none was stored."""
        raw = self._r.get(self._keys.run_change(run_id))
        return raw.decode("utf-8", errors="replace") if raw is not None else ""

    def batch_inputs(self, run_id: str, participants: Sequence[str]) -> BatchInputs:
        """The record, the status, the diff, and each participant's checked entry,
        prompt, stored outcome, base-tree program and args files, and the places of the
        change's secrets, in ONE pipelined round trip of two commands (HMGET of the run
        hash, which holds the participants' fields too, and MGET of every string key),
        however many participants. Ids not found are left out of the maps."""
        k, ids = self._keys, list(participants)
        pipe = self._r.pipeline(transaction=False)
        pipe.hmget(
            k.run(run_id),
            [
                "record",
                "status",
                *(_ENTRY + p for p in ids),
                *(_ENTRY + p + _PROMPT_FIELD for p in ids),
                *(_ENTRY + p + _SHARED_FIELD for p in ids),
                *(_ENTRY + p + _ARGS_FIELD for p in ids),
            ],
        )
        pipe.mget(
            [
                k.run_change(run_id),
                k.run_secrets(run_id),
                *(k.run_outcome(run_id, p) for p in ids),
                *(k.run_program(run_id, p) for p in ids),
            ]
        )
        fields, strings = pipe.execute()
        record, status, n = fields[0], fields[1], len(ids)
        people, prompts = fields[2 : 2 + n], fields[2 + n : 2 + 2 * n]
        shared, args = fields[2 + 2 * n : 2 + 3 * n], fields[2 + 3 * n :]
        change, secrets = strings[0], strings[1]
        outcomes, programs = strings[2 : 2 + n], strings[2 + n :]
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
            arg_files={
                p: _ARGS.validate_json(raw)
                for p, raw in zip(ids, args, strict=True)
                if raw is not None
            },
            secrets=tuple(SPANS.validate_json(secrets)) if secrets is not None else (),
            shared={
                p: n
                for p, raw, text in zip(ids, shared, prompts, strict=True)
                if (n := _split_at(raw, text))
            },
        )

    def put_prompt(self, run_id: str, participant: str, prompt: str) -> None:
        """Store (or replace) one participant's prompt (the judge's is built late)."""
        self._r.hset(self._keys.run(run_id), _ENTRY + participant + _PROMPT_FIELD, prompt)

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
        raw = self._r.hget(self._keys.run(run_id), _ENTRY + participant + _ARGS_FIELD)
        return _ARGS.validate_json(raw) if raw is not None else {}

    def config(self, run_id: str) -> dict[str, bytes]:
        """The base's side of the analyzer configuration the change edits (field →
        bytes, see :mod:`workers.coordinator.config_overlay`; empty when it edits none)."""
        return _fields(self._r.hgetall(self._keys.run_config(run_id)))

    def secrets(self, run_id: str) -> list[SecretSpan]:
        """The places of the likely secrets the change adds (empty when none were
        found), see :mod:`council.change.secret_masks`."""
        raw = self._r.get(self._keys.run_secrets(run_id))
        return SPANS.validate_json(raw) if raw is not None else []


def entry_field(participant: str) -> str:
    """The run-hash field holding a participant's checked entry (JSON)."""
    return _ENTRY + participant


def cancel_status(raw: bytes | None) -> RunStatus | None:
    """The status a run whose ``run:{id}:cancel`` holds ``raw`` settles as (None: not
    cancelled): ``timeout`` for ``timeout:MS``, else ``cancelled``."""
    if raw is None:
        return None
    return "timeout" if raw.partition(b":")[0] == b"timeout" else "cancelled"


def _split_at(raw: bytes | None, prompt: bytes | None) -> int:
    """A stored shared length, held to the prompt it belongs to: 0 when absent, not a
    number, or beyond the prompt (a field written by something else)."""
    text = raw.decode("ascii", errors="replace") if raw is not None else ""
    if not text.isdecimal() or prompt is None:
        return 0
    n = int(text)
    return n if n <= len(prompt.decode("utf-8", errors="replace")) else 0


def _text(raw: bytes | None) -> str | None:
    """A stored text (undecodable bytes replaced), None when absent."""
    return raw.decode("utf-8", errors="replace") if raw is not None else None


def _paths(raw: bytes | None) -> frozenset[str] | None:
    """The NUL-separated paths of ``run:{id}:paths``, None when absent."""
    if raw is None:
        return None
    text = raw.decode("utf-8", errors="surrogateescape")
    return frozenset(p for p in text.split("\0") if p)


def _fields(raw: Mapping[bytes | str, bytes]) -> dict[str, bytes]:
    """A Redis hash of bytes values, with its field names as text."""
    return {(k.decode() if isinstance(k, bytes) else k): v for k, v in raw.items()}


def _spans_or_none(raw: bytes | None) -> tuple[SecretSpan, ...] | None:
    """The stored secret places (``()`` when none were stored); None when they do not
    parse: settling's one read must not fail a run its head-tree reader only notes."""
    if raw is None:
        return ()
    try:
        return tuple(SPANS.validate_json(raw))
    except ValueError:
        return None
