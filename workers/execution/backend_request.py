"""What a backend is asked: one participant's :class:`ReviewRequest`, from the run's inputs.

:func:`run_share` is what a run's participants share on this worker (the head tree, unpacked
once per run, see :class:`~workers.execution.unpacked_trees.TreeCache`, and the change's added
lines, parsed once), so a batch (``council.review_batch``) pays for it once and a single
review for itself, with the same code and result; :func:`build_request` adds one
participant's journal sink, program, environment, key, rate limiter, cancel event and log
events.

Source: docs/architecture.md "The shape" (the worker unpacks the pinned tree, the journal
survives a dying worker), reviewers/base.py (``ReviewRequest``).
"""

from __future__ import annotations

import functools
import os
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import redis
import structlog

from council.change.diff import added_lines, parse_diff
from council.change.secret_masks import (
    MASK,
    Masker,
    SecretSpan,
    masked_file,
    masked_path,
    name_values,
    values_from,
    withheld,
    withheld_text,
)
from council.evidence import ScriptRow
from council.model.participant import Participant
from council.model.report import UNSANDBOXED
from council.roster.backend_options import SANDBOX_OPTION
from council.roster.provider_rules import for_worker
from reviewers import key_env
from reviewers.base import TROUBLE_EVENTS, ReviewRequest
from reviewers.sandbox.bubblewrap import Bubblewrap, SandboxPolicy
from workers.app.services import Runtime
from workers.app.settings import Settings
from workers.coordinator.config_overlay import PROGRAM_BACKENDS, reads_base_config
from workers.execution.outage_retry import held_back, note_refusal, patiently
from workers.stores.budget import RedisBudget
from workers.stores.ratelimit import RedisRateLimiter
from workers.stores.run_record import RunRecord

log = structlog.get_logger("council.review")

BASE_CONFIG_TREE = "tree-base-config"
"""The run directory's name for the head tree with the base's analyzer configuration."""


MASKED_TREE = "tree-masked"
"""The run directory's name for the head tree with the change's likely secrets masked."""


ASKING_BACKENDS = frozenset({"openai", "anthropic", "command"})
"""Backends whose review can wait on a person's question and go on later: a model's
conversation is kept (:mod:`council.asks.paused`); a command reviewer is run again, its
question answered at once (:mod:`reviewers.sandbox.ask_desk`)."""

HEARD_EVERY_S = 1.0
"""Seconds between two reads of an attempt's journal length for the idle clock."""

HELD = (
    "Recorded by this worker, not yet in Redis (Redis is unreachable or refuses writes; "
    "the worker stores it as soon as Redis answers, before your review is settled)."
)
"""The reply to an entry held in memory during a Redis outage or refusal (see
:class:`RedisJournal`)."""


class RedisJournal:
    """The JournalSink of one attempt: appends go straight to Redis, the change's secret
    values masked first (``masker``, or :meth:`mask_with`).

    During a Redis outage an entry is held in this process, in order, and the reply says
    so (:data:`HELD`); the next append tries the held ones first, and :meth:`flush`
    stores them, waiting for Redis, before the attempt is folded. ``live`` is the status
    the run must still be in for an entry to be stored (``open`` for a reviewer,
    ``judging`` for the judge, see :meth:`JournalStore.store`).

    Every entry recorded (stored or held) is also kept here, with an id of its own
    (``{sink}-{n}``, stored with it), for the attempt's life (those the fold would read:
    within the reading caps): Redis may forget its last
    second (a host crash under ``appendfsync everysec``), and :meth:`reconcile` stores
    again, before the fold, what it no longer holds; an entry it kept is not stored twice.
    """

    def __init__(
        self,
        rt: Runtime,
        run_id: str,
        participant: str,
        attempt: int,
        live: str = "",
        masker: Masker | None = None,
    ) -> None:
        self._rt, self._run, self._p, self._attempt = rt, run_id, participant, attempt
        self._live = live
        self._masker = masker or Masker()
        self._sink, self._n = uuid.uuid4().hex[:12], 0
        self._kept: list[tuple[str, str]] = []
        self._held: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._heard, self._heard_at = 0, float("-inf")
        self._least = 0
        """The fewest entries the journal may hold now: each entry stored adds one, and
        Redis's count after a store is a floor (``council record`` appends there too)."""

    def heard(self) -> int:
        """Entries this attempt's journal holds in Redis, those a program's ``council
        record`` stored straight there included (the idle clock hears them), plus those
        held here; asked at most once per :data:`HEARD_EVERY_S` (the last count is
        answered meanwhile, and during an outage). Never raises."""
        now = time.monotonic()
        if now - self._heard_at >= HEARD_EVERY_S:
            self._heard_at = now
            try:
                key = self._rt.keys.journal(self._run, self._p, self._attempt)
                self._heard = int(self._rt.client.llen(key))
            except redis.RedisError:
                pass
        return self._heard + self.held

    def mask_with(self, masker: Masker) -> None:
        """Mask entries with ``masker`` from now on (the run's share is made after the
        sink: see :func:`build_request`)."""
        self._masker = masker

    @property
    def least(self) -> int:
        """The fewest entries the attempt's journal in Redis may hold: fewer means Redis
        lost entries it had said it kept (a failover to a replica that lagged)."""
        with self._lock:
            return self._least

    @property
    def held(self) -> int:
        """Entries held in this process, waiting for Redis."""
        with self._lock:
            return len(self._held)

    @property
    def recorded(self) -> int:
        """Entries recorded through this sink (stored or held) and kept for
        :meth:`reconcile` (within the reading caps)."""
        with self._lock:
            return len(self._kept)

    def append(self, raw: str) -> str:
        """Store one raw entry; return the reply sentence (never raises)."""
        raw = self._masker.text(raw)
        with self._lock:
            self._n += 1
            entry = (f"{self._sink}-{self._n}", raw)
            if self._held and not self._store_held():
                self._hold(entry)
                log.warning("journal_held", held=len(self._held))
                return HELD
            try:
                n = self._store(entry)
            except redis.RedisError as exc:
                if held_back(exc):
                    note_refusal(exc)
                    self._hold(entry)
                    log.warning("journal_held", held=len(self._held), error=str(exc))
                    return HELD
                reply = (
                    f"Not recorded ({type(exc).__name__}: the journal store failed); "
                    "keep it for your final answer."
                )
            else:
                size = len(entry[1].encode("utf-8", errors="replace"))
                reply = self._rt.journals.reply(n, size)
                if n >= 0:
                    self._keep(entry)
        log.info("journal_appended", stored=reply == "Recorded.")
        return reply

    def flush(self, until: float) -> None:
        """Store every held entry, in order, waiting for Redis until ``until`` (a
        ``time.monotonic()`` value); raises the outage error past it."""
        with self._lock:
            while self._held:
                patiently("journal_flush", self._store_first, until=until)
                self._held.pop(0)
                log.info("journal_stored_after_outage", left=len(self._held))

    def reconcile(self, until: float) -> int:
        """:func:`reconcile` for this sink alone."""
        return reconcile(self._rt, self._run, [self], until)

    def kept_ids(self) -> tuple[str, int, list[str]]:
        """``(participant, attempt, ids of the entries kept here)``."""
        with self._lock:
            return self._p, self._attempt, [i for i, _ in self._kept]

    def restore(self, gone: Sequence[str], until: float) -> int:
        """Store again, in their order, the kept entries whose ids are in ``gone``,
        waiting for Redis until ``until``; return how many could not be kept (refused:
        the run moved on). Logs ``journal_forgotten`` at warning."""
        if not gone:
            return 0
        forgotten = set(gone)
        with self._lock:
            lost = 0
            for entry in self._kept:
                if entry[0] in forgotten:
                    n = patiently(
                        "journal_restore", functools.partial(self._store, entry, fresh=False), until=until
                    )
                    lost += n < 0
        log.warning(
            "journal_forgotten", forgotten=len(forgotten), restored=len(forgotten) - lost, lost=lost
        )
        return lost

    def _hold(self, entry: tuple[str, str]) -> None:
        self._held.append(entry)
        self._keep(entry)

    def _keep(self, entry: tuple[str, str]) -> None:
        """Keep ``entry`` for :meth:`reconcile` if the fold would read it: the first
        ``journal_max_entries``, each within ``journal_max_entry_bytes`` (docs/harvest.md
        §5's reading caps), so an attempt keeps a few MiB at most."""
        settings = self._rt.settings
        small = len(entry[1].encode("utf-8", errors="replace")) <= settings.journal_max_entry_bytes
        if small and len(self._kept) < settings.journal_max_entries:
            self._kept.append(entry)

    def _store_first(self) -> int:
        return self._store(self._held[0])

    def _store(self, entry: tuple[str, str], *, fresh: bool = True) -> int:
        """Store ``entry`` (its id and text); the journal's length, or a refusal code.
        A ``fresh`` entry (recorded now, or held) counts once towards :attr:`least` even
        when Redis already held it (a retry whose first reply was lost); one stored
        again (:meth:`restore`) was counted when first recorded."""
        n = self._rt.journals.store(
            self._run, self._p, self._attempt, entry[1], live=self._live, entry_id=entry[0]
        )
        if n > 0:  # kept: the list is n long, and one longer than before at least
            self._least = max(self._least + 1, n) if fresh else max(self._least, n)
        return n

    def _store_held(self) -> bool:
        """Try once to store the held entries in order; False when Redis still fails."""
        while self._held:
            try:
                self._store(self._held[0])
            except redis.RedisError as exc:
                if not held_back(exc):
                    raise
                note_refusal(exc)
                return False
            self._held.pop(0)
        return True


def reconcile(rt: Runtime, run_id: str, sinks: Sequence[RedisJournal], until: float) -> int:
    """Store again what the attempts' journals no longer hold of the entries ``sinks``
    (attempts of the run ``run_id``) recorded (Redis restarted and forgot its last
    second), in their order, and make each attempts counter count its attempt again;
    waiting for Redis until ``until``. ONE round trip for all the sinks that kept an
    entry (none when none did), more only for what was forgotten. Returns how many could
    not be kept (refused: the run moved on). Call after each sink's
    :meth:`RedisJournal.flush`, before the fold."""
    asks = [(sink, sink.kept_ids()) for sink in sinks]
    asks = [(sink, ask) for sink, ask in asks if ask[2]]
    if not asks:
        return 0
    gone = patiently(
        "journal_check",
        lambda: rt.journals.missing(run_id, [ask for _, ask in asks]),
        until=until,
    )
    return sum(sink.restore(ids, until) for (sink, _), ids in zip(asks, gone, strict=True))


class RedisScripts:
    """The ScriptSink of one attempt: each row goes straight to Redis, the change's
    secret values masked in its text first (``masker``): a script run on the real tree
    (a command reviewer's ``council run-script``) may print a file holding one."""

    def __init__(
        self, rt: Runtime, run_id: str, participant: str, attempt: int, masker: Masker | None = None
    ) -> None:
        self._rt, self._run, self._p, self._attempt = rt, run_id, participant, attempt
        self._masker = masker or Masker()

    def append(self, row: ScriptRow) -> str:
        """Store one row (its text masked); ``"Recorded."`` or why not (never raises)."""
        if row.text is not None and self._masker.values:
            row = row.model_copy(update={"text": self._masker.text(row.text)})
        reply = self._rt.scripts.append(self._run, self._p, self._attempt, row)
        log.info("script_row_stored", stored=reply == "Recorded.", outcome=row.outcome)
        return reply


@dataclass(frozen=True)
class RunShare:
    """What every participant of one run shares on this worker.

    * ``workdir``: the unpacked pinned head tree (None when the run pinned none).
    * ``changed_lines``: new-side path → the numbers of its added lines in the diff.
    * ``secrets``: the places of the likely secrets the change adds; ``masker`` masks
      their values (read back from ``workdir``) in what reviewers return.
    """

    record: RunRecord
    workdir: Path | None
    changed_lines: Mapping[str, frozenset[int]]
    secrets: tuple[SecretSpan, ...] = ()
    masker: Masker = field(default_factory=Masker)


def run_share(
    rt: Runtime, record: RunRecord, change: str, secrets: Sequence[SecretSpan] | None = None
) -> RunShare:
    """Unpack the run's tree (at most once per run on this worker), parse ``change``
    (the run's diff text) for its added lines, and read back the change's secret values
    from the tree at the places the run stored (``secrets``, read from Redis when None:
    :func:`council.change.secret_masks.values_from`).

    Raises what unpacking raises (``OSError``, a bad archive) and what reading Redis
    raises; the caller turns it into a failed review.
    """
    run_id = record.run_id
    workdir = rt.trees.tree(run_id, lambda: rt.runs.tree(run_id)) if record.witness else None
    found = tuple(rt.runs.secrets(run_id) if secrets is None else secrets)
    masker = Masker(values_from(found, lambda p: tree_lines(workdir, p))) if found else Masker()
    return RunShare(record, workdir, _added(run_id, change), found, masker)


@functools.lru_cache(maxsize=4)
def _added(run_id: str, change: str) -> dict[str, frozenset[int]]:
    """The added lines of a run's diff, parsed once per run on this worker (keyed by the
    text too, so a run's diff is never mistaken): a change reviewed in slices runs many
    tasks on one worker, and parsing a 5 MB diff costs a second of CPU each time."""
    return added_lines(parse_diff(change))


def tree_lines(tree: Path | None, path: str) -> list[str] | None:
    """The lines of the tree's file at ``path`` (None: no tree, not a file, outside it);
    a symbolic link's one line is its target (the diff shows it so, and it can hold a
    secret)."""
    if tree is None:
        return None
    target = tree / path
    try:
        if target.is_symlink() and target.parent.resolve().is_relative_to(tree.resolve()):
            return [os.readlink(target)]
        if not target.resolve().is_relative_to(tree.resolve()) or not target.is_file():
            return None
        return target.read_bytes().decode("utf-8", "surrogateescape").split("\n")
    except OSError:
        return None


def _masked_files(tree: Path, secrets: Sequence[SecretSpan]) -> dict[str, bytes]:
    """The overlay (fields as :meth:`~workers.execution.unpacked_trees.TreeCache.overlaid` takes
    them) that turns ``tree`` into the copy models' tools read, holding no secret of ``secrets``.

    A file holding secrets is written masked, a withheld file (an excluded file too big to
    scan) holds only :func:`~council.change.secret_masks.withheld_text`, and every file or link
    whose path holds a secret is removed (with the topmost directory on its way that holds
    one) and laid again at its :func:`~council.change.secret_masks.masked_path`; two paths
    masked alike are one file (the last in path order). An unreadable file is left out, a
    withheld one replaced whatever it is. Raises ``OSError`` when the tree cannot be walked.
    """
    out: dict[str, bytes] = {}
    kept_out = withheld(secrets)
    names = name_values(secrets)

    def content(path: str) -> tuple[str, bytes] | None:
        """``(kind, bytes)`` of the tree's entry at ``path``, masked; None: unreadable."""
        target = tree / path
        if path in kept_out:
            return "644", withheld_text(masked_path(path, secrets), kept_out[path]).encode()
        if target.is_symlink():
            link = masked_file(os.readlink(target), [s for s in secrets if s.path == path])
            return "link", os.fsencode(masked_path(link, secrets))
        lines = tree_lines(tree, path)
        if lines is None:
            return None
        text = masked_file("\n".join(lines), [s for s in secrets if s.path == path])
        for value in names:  # a file may hold its own name
            text = text.replace(value, MASK)
        mode = "755" if os.access(target, os.X_OK) else "644"
        return mode, text.encode("utf-8", "surrogateescape")

    touched = [s.path for s in secrets if s.place != "path"]
    for path in dict.fromkeys(touched):
        got = content(path)
        if got is not None:
            out[f"{got[0]}:{masked_path(path, secrets)}"] = got[1]
    if names:
        for path in _named_with(tree, names):
            parts = path.split("/")
            top = next(
                i for i in range(len(parts)) if any(v in "/".join(parts[: i + 1]) for v in names)
            )
            out[f"-:{'/'.join(parts[: top + 1])}"] = b""
            got = content(path)
            if got is not None:
                out[f"{got[0]}:{masked_path(path, secrets)}"] = got[1]
    return out


def _named_with(tree: Path, values: Sequence[str]) -> list[str]:
    """The paths (from ``tree``, ``/``-separated) of its files and links whose path holds
    one of ``values``, in path order; directories are walked, links never followed."""
    found: list[str] = []
    for root, dirs, files in os.walk(tree):
        dirs.sort()
        here = Path(root).relative_to(tree).as_posix()
        for name in sorted(files + [d for d in dirs if (Path(root) / d).is_symlink()]):
            path = name if here == "." else f"{here}/{name}"
            if any(v in path for v in values):
                found.append(path)
    return found


def build_request(
    rt: Runtime,
    share: RunShare,
    participant: Participant,
    prompt: str,
    attempt: int,
    cancel: threading.Event,
    program: bytes | None,
    arg_files: Mapping[str, bytes] | None = None,
    journal: RedisJournal | None = None,
    shared: int = 0,
) -> ReviewRequest:
    """One participant's request for attempt number ``attempt`` of its review.

    ``program``: the base-tree program the coordinator stored (None: the roster's, as given);
    ``arg_files``: the base-tree files its ``args`` name (:mod:`workers.coordinator.program_args`);
    both are written under the run's private directory. A program reviewer reading the base's
    analyzer configuration (:func:`~workers.coordinator.config_overlay.reads_base_config`)
    works in the tree with it laid over, and gets the changed paths as its tree spells them,
    so its findings land; a model's tree has the likely secrets masked (:func:`_masked_files`).
    ``journal``: the attempt's sink (made here when None; a caller passes its own to flush it
    before folding). A paused model reviewer whose question was answered gets its pause
    (``resume``). ``shared``: where the prompt's shared part ends
    (:attr:`~reviewers.base.ReviewRequest.shared`). The participant is run as THIS
    worker's provider registry allows (:func:`~council.roster.provider_rules.for_worker`;
    embedded mode honours its roster). Raises ``OSError`` when a file cannot be written,
    and :class:`~council.roster.provider_rules.ProviderRefused` before anything else is
    done.
    """
    embedded = rt.mode == "embedded" and rt.settings.redis_url is None
    participant = for_worker(participant, rt.providers, embedded=embedded)
    record = share.record
    run_id = record.run_id
    path = rt.trees.program(run_id, participant.id, program) if program is not None else None
    args = rt.trees.arg_files(run_id, participant.id, arg_files) if arg_files else {}
    workdir = share.workdir
    if workdir is not None and reads_base_config(participant):
        workdir = rt.trees.overlaid(
            run_id, BASE_CONFIG_TREE, workdir, lambda: rt.runs.config(run_id)
        )
    elif workdir is not None and share.secrets and participant.backend not in PROGRAM_BACKENDS:
        tree, secrets = workdir, share.secrets
        workdir = rt.trees.overlaid(run_id, MASKED_TREE, tree, lambda: _masked_files(tree, secrets))
    real: dict[str, str] = {}  # a program reads the real tree: it names files their way
    if participant.backend in PROGRAM_BACKENDS:
        real = {
            masked_path(s.path, share.secrets): s.path for s in share.secrets if s.place == "path"
        }
    sink = journal or journal_for(rt, run_id, participant, attempt)
    sink.mask_with(share.masker)
    return ReviewRequest(
        participant=participant,
        prompt=prompt,
        shared=shared,
        journal=sink,
        heard=sink.heard,
        workdir=workdir,
        program=path,
        arg_files=args,
        sandbox=sandbox_policy(rt.settings, record.mode),
        env={
            "COUNCIL_RUN": run_id,
            "COUNCIL_PARTICIPANT": participant.id,
            "COUNCIL_ATTEMPT": str(attempt),
        },
        cancel=cancel,
        changed_paths=_real(record.changed_paths, real),
        changed_lines={_real((p,), real)[0]: n for p, n in share.changed_lines.items()},
        secrets=_secrets(participant),
        rate_limiter=(
            RedisRateLimiter(
                rt.client,
                rt.keys,
                record.limits,
                window_ms=rt.settings.ratelimit_window_ms,
            )
            if record.limits
            else None
        ),
        witness=record.witness,
        events=_log_event,
        tool_read_max_bytes=rt.settings.tool_read_max_bytes,
        scripts=RedisScripts(rt, run_id, participant.id, attempt, share.masker),
        artifacts=rt.artifacts.scope(run_id),
        resume=(
            rt.runs.resumption(run_id, participant.id)
            if participant.backend in ASKING_BACKENDS
            else None
        ),
        budget=(
            RedisBudget(rt.client, rt.keys, run_id, record.max_cost_usd).for_participant(
                participant, record.prices
            )
            if record.max_cost_usd is not None
            else None
        ),
    )


def _real(paths: Sequence[str], real: Mapping[str, str]) -> tuple[str, ...]:
    """``paths`` (the run's, masked) as the tree spells them, where ``real`` knows
    (masked path → path, for the paths named with a secret)."""
    return tuple(real.get(p, p) for p in paths)


def sandbox_policy(settings: Settings, mode: str) -> SandboxPolicy:
    """How this worker confines reviewer programs: bubblewrap (``COUNCIL_BWRAP``), and
    whether a program may run unsandboxed where bubblewrap cannot run: never in CI
    (``CI`` set) nor on a distributed worker (``mode`` is the run's, ``distributed`` or
    ``embedded``); in embedded mode elsewhere it may, with a note (a laptop reviewing its
    own repository), unless the roster says ``sandbox = "required"``."""
    required = None
    if settings.in_ci:
        required = "in CI (CI is set)"
    elif mode == "distributed" or settings.redis_url is not None:
        required = "on a distributed worker"
    return SandboxPolicy(
        bwrap=settings.bwrap, required=required, storage_bytes=settings.program_storage_bytes
    )


def sandbox_outlook(
    settings: Settings, mode: str, participants: Sequence[Participant], *, ran: bool = True
) -> tuple[str | None, str | None]:
    """What the CLI tells about sandboxing before an embedded run: ``(note, warning)``.

    Only in embedded mode (a distributed run's programs run on workers, which decide
    there), only when ``participants`` run programs and bubblewrap cannot run here. The
    note when the programs will run unsandboxed: for the run's notes (the report says it
    in its first lines), beginning with :data:`~council.model.report.UNSANDBOXED`, or
    with ``ran`` False in the future tense (``council check``). The warning when they
    will fail instead (CI, or the roster's ``sandbox = "required"``). ``(None, None)``
    otherwise.
    """
    programs = [p.id for p in participants if p.backend in ("command", "sarif")]
    if mode != "embedded" or not programs:
        return None, None
    trouble = Bubblewrap(settings.bwrap).trouble()
    if trouble is None:
        return None, None
    who = ", ".join(programs)
    policy = sandbox_policy(settings, mode)
    required = any(p.options.get(SANDBOX_OPTION) == "required" for p in participants)
    if policy.required is not None or required:
        why = policy.required or 'as the roster says sandbox = "required"'
        return None, (
            f"reviewer programs ({who}) will fail: they run only in a sandbox {why}, and {trouble}"
        )
    said = UNSANDBOXED if ran else "reviewer programs will run WITHOUT a sandbox"
    return (
        f"{said} ({who}): {trouble}. The change under review could read this "
        f"machine's files through them, and this process's environment in /proc (their "
        f'own is an allowlist). Set sandbox = "required" in the roster\'s [council] '
        f"table to refuse instead."
    ), None


def journal_for(rt: Runtime, run_id: str, participant: Participant, attempt: int) -> RedisJournal:
    """The journal sink of one attempt of ``participant``: its entries are stored while
    the run is still in the state that needs them (``judging`` for the judge, else
    ``open``)."""
    live = "judging" if participant.role == "judge" else "open"
    return RedisJournal(rt, run_id, participant.id, attempt, live)


def _log_event(event: str, **fields: object) -> None:
    """A backend's event (a tool call, a retry) as a log line with the task's context:
    :data:`~reviewers.base.TROUBLE_EVENTS` at ``warning``, the rest at ``info``."""
    (log.warning if event in TROUBLE_EVENTS else log.info)(event, **fields)


def _secrets(participant: Participant) -> dict[str, str]:
    """The API key a model participant names, read from THIS worker's environment.

    The one read of the environment below the edge, on purpose: keys live on the workers
    (never in the roster, a message or Redis); ``participant`` is the one
    :func:`~council.roster.provider_rules.for_worker` returned, so on a distributed worker
    the variable is its registry's.
    """
    name = key_env(participant)
    value = os.environ.get(name) if name else None
    return {name: value} if name and value else {}
