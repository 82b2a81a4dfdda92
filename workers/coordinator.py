"""The coordinator: prepare a round from a repository, open the run, dispatch, wait.

The order is the design's (architecture.md "The shape"): read the change and the TRUSTED
roster (from the base ref, never the head under review); claim every participant and
write the run record ``open`` in one atomic step; store the inputs; send ONE chord
(reviewer tasks → ``consolidate``, errback ``finalize``); wait, with a watchdog for a
chord that never fires. Nothing is sent before every check passed.

The chord's header (:func:`chord_header`): model participants (``openai``,
``anthropic``) go in ``council.review_batch`` tasks of at most ``COUNCIL_BATCH_SIZE``
per provider queue, so one worker process holds many streams for one task's cost; every
other participant is one ``council.review_participant`` task.
"""

from __future__ import annotations

import shlex
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import redis
import structlog
from celery import Celery, Signature, chord
from celery.result import AsyncResult, ResultBase

from council.diff import Change, read_change
from council.errors import ChangeTooLarge, ConfigurationError, RosterError, StoreUnavailable
from council.participant import Participant
from council.personas import load_persona, parse_charter
from council.prompt import build_prompt, change_notes
from council.report.model import CouncilReport, RunStatus
from council.review_result import Stop
from council.reviewers import check_options
from council.reviewers.process import program_trouble
from council.roster import Roster, parse_roster
from workers.celery_config import queue_for
from workers.clock import now_ms
from workers.judging import PERSONA_SUFFIX
from workers.logging import redact_text, redact_url
from workers.repository import Repository
from workers.runtime import Runtime
from workers.settings import Settings
from workers.settling import JudgeDispatch, settle_run
from workers.stores.runs import PROTOCOL, Progress, RunRecord

log = structlog.get_logger("council.coordinator")

ROSTER_FILE = "council.toml"
"""The roster's name at the root of the BASE tree."""

POLL_S = 0.01
"""Seconds between polls of the run's status while waiting (one HGET each)."""

PROGRESS_S = 0.25
"""Seconds between progress reads while waiting."""

CANCEL_GRACE_MS = 5_000
"""Milliseconds a cancelled run waits for reviewers to stop before it is settled."""

REDIS_OUTAGE_S = 30.0
"""Seconds the waiting CLI keeps retrying an unreachable Redis before it gives up (exit 3).

A restart or failover of a few seconds is ridden out; the run goes on on the workers
meanwhile."""

OUTAGE_PAUSE_S = (0.25, 4.0)
"""The first and the longest pause between reads of an unreachable Redis (doubling)."""

NO_WORKER_HINT_S = 30.0
"""Seconds with every participant still ``pending`` (no worker started any of the run's
tasks) before the waiting CLI says so, once, in distributed mode."""

BATCHED_BACKENDS = frozenset({"openai", "anthropic"})
"""Backends whose participants are sent in ``council.review_batch`` tasks (model
streams: mostly waiting, so one process holds many)."""


@dataclass(frozen=True)
class ReviewOptions:
    """What ``council review`` was asked (refs as given by the user)."""

    repo: Path
    base: str
    head: str = "HEAD"
    roster: Path | None = None
    session: str | None = None
    since: str | None = None
    """Review the diff from this commit to ``head`` instead of from ``base``
    (``--since-last``); trusted configuration is still read from ``base``."""
    notes: tuple[str, ...] = ()
    """Notes the caller adds to the round's (and the prompts') notes."""


@dataclass(frozen=True)
class Round:
    """A prepared round: everything checked, nothing sent yet."""

    record: RunRecord
    roster: Roster
    participants: tuple[Participant, ...]
    prompts: dict[str, str]
    programs: dict[str, bytes]
    tree: bytes | None
    change: Change
    notes: tuple[str, ...] = field(default=())
    judge: Participant | None = None

    def rerun(self, run_id: str, created_ms: int, deadline_ms: int) -> Round:
        """The same prepared round as a new run (benchmarks run one change many times)."""
        record = self.record.model_copy(
            update={"run_id": run_id, "created_ms": created_ms, "deadline_ms": deadline_ms}
        )
        return replace(self, record=record)


class NothingToReview(Exception):
    """The change is empty, or every file of it is excluded. Exit 0."""


def prepare(settings: Settings, options: ReviewOptions, *, mode: str) -> Round:
    """Read the repository and the roster, check everything, build the prompts.

    Raises :class:`ConfigurationError` subclasses (exit 2) for a bad repository, ref,
    roster or cap; :class:`NothingToReview` for an empty change.
    """
    repo = Repository(options.repo)
    base = repo.resolve(options.base)
    head = repo.resolve(options.head)
    start = repo.resolve(options.since) if options.since else base
    notes: list[str] = list(options.notes)
    if base != head and repo.is_ancestor(head, base):
        notes.append(
            f"the head {options.head} is an ancestor of the base {options.base}: this "
            f"reviews the change backwards (were --base and --head swapped?)"
        )
    changed = repo.changed_paths(base, head)
    roster = _read_roster(repo, options, base, changed, notes)
    if (
        mode == "distributed"
        and 2 * roster.longest_backstop_ms > settings.visibility_timeout_s * 1000
    ):
        raise ConfigurationError(
            f"the longest backstop ({roster.longest_backstop_ms} ms) needs a visibility "
            f"timeout above twice its length, and COUNCIL_VISIBILITY_TIMEOUT_S is "
            f"{settings.visibility_timeout_s} s: Redis would start a healthy review again. "
            f"Raise COUNCIL_VISIBILITY_TIMEOUT_S (on workers and CLI alike) or lower backstop_ms."
        )
    change, excluded, non_utf8 = read_change(repo.diff(start, head), roster.include, roster.exclude)
    if excluded:
        notes.append(
            f"{len(excluded)} file(s) excluded by [paths] in the roster: "
            + ", ".join(excluded[:20])
            + (" …" if len(excluded) > 20 else "")
        )
    if not change.files:
        raise NothingToReview(
            "nothing to review: the change is empty"
            if not excluded
            else "nothing to review: every file of the change is excluded by [paths]"
        )
    cap = settings.max_diff_bytes or roster.max_diff_bytes
    if change.total_bytes > cap:
        raise ChangeTooLarge(
            "diff",
            change.total_bytes,
            cap,
            "[council] max_diff_bytes in the roster, or COUNCIL_MAX_DIFF_BYTES (which wins)",
        )
    participants = tuple(_with_base_dir(p, options, repo.path) for p in roster.reviewers)
    judge = _with_base_dir(roster.judge, options, repo.path) if roster.judge else None
    everyone = (*participants, *((judge,) if judge else ()))
    placed = [
        *((f"reviewers[{i}]", p) for i, p in enumerate(participants)),
        *((("judge", judge),) if judge else ()),
    ]
    for where, p in placed:
        check_options(p, where)
    programs = _programs(repo, base, options, placed)
    personas = {
        p.id: _persona_text(repo, base, options, roster, p.persona)
        for p in everyone
        if p.persona is not None
    }
    tree = repo.archive(head, settings.max_tree_bytes or roster.max_tree_bytes)
    notes.extend(n for n in change_notes(change, non_utf8=non_utf8) if n not in notes)
    prompts = {
        p.id: build_prompt(p, change, change.text, persona_text=personas.get(p.id), notes=notes)
        for p in participants
    }
    if judge is not None:
        prompts[judge.id + PERSONA_SUFFIX] = personas.get(judge.id, "")
    run_id = uuid.uuid4().hex[:16]
    created = now_ms()
    record = RunRecord(
        run_id=run_id,
        session=options.session or repo.default_session_key(options.head),
        repository=str(repo.path),
        base=start,
        head=head,
        witness=head,
        mode="distributed" if mode == "distributed" else "embedded",
        participants=tuple(p.id for p in participants),
        judge=judge.id if judge else None,
        limits=dict(roster.limits),
        prices=roster.prices,
        changed_paths=change.paths,
        notes=tuple(notes),
        created_ms=created,
        deadline_ms=created
        + max(p.clocks.backstop_ms for p in participants)
        + (judge.clocks.backstop_ms if judge else 0)
        + settings.watchdog_slack_ms,
    )
    return Round(record, roster, participants, prompts, programs, tree, change, tuple(notes), judge)


def _persona_text(
    repo: Repository, base: str, options: ReviewOptions, roster: Roster, persona: str
) -> str:
    """A persona's charter body: the roster's persona_dirs first, then council's own.

    The dirs are trusted configuration like the roster: beside an explicit ``--roster``
    file, else read from the BASE tree, never from the head under review. Raises
    :class:`~council.errors.PersonaNotFound` (exit 2) when no charter carries it.
    """
    if options.roster is not None:
        here = options.roster.resolve().parent
        return load_persona(persona, [here / d for d in roster.persona_dirs]).body
    for d in roster.persona_dirs:
        blob = repo.read_file(base, f"{d.strip('/')}/{persona}.md")
        if blob is not None:
            source = f"{d}/{persona}.md@{base[:12]}"
            text = blob.decode("utf-8", errors="replace")
            return parse_charter(text, source, persona_id=persona).body
    return load_persona(persona).body


def _read_roster(
    repo: Repository, options: ReviewOptions, base: str, changed: list[str], notes: list[str]
) -> Roster:
    """The trusted roster: ``--roster PATH``, else ``council.toml`` of the BASE tree."""
    if options.roster is not None:
        try:
            text = options.roster.read_text(encoding="utf-8")
        except OSError as exc:
            raise RosterError(
                str(options.roster),
                f"cannot be read ({exc.strerror})",
                "Pass the path of a readable roster TOML file.",
            ) from None
        except UnicodeDecodeError:
            raise RosterError(
                str(options.roster), "is not UTF-8 text", "Save the roster as UTF-8."
            ) from None
        return parse_roster(text, str(options.roster))
    blob = repo.read_file(base, ROSTER_FILE)
    if blob is None:
        raise RosterError(
            ROSTER_FILE,
            f"there is no {ROSTER_FILE} at the root of the base ref {base[:12]}",
            "Commit a roster (see examples/council.toml) on the base branch, "
            "or pass --roster PATH.",
        )
    if ROSTER_FILE in changed:
        notes.append(
            f"the change edits {ROSTER_FILE}; the base version was used (a change cannot "
            f"choose its own reviewers)"
        )
    return parse_roster(blob.decode("utf-8", errors="replace"), f"{ROSTER_FILE}@{base[:12]}")


def _with_base_dir(p: Participant, options: ReviewOptions, repo_path: Path) -> Participant:
    """Replay files resolve beside an explicit roster, else at the repository root."""
    if p.backend != "replay" or "base_dir" in p.options:
        return p
    base_dir = options.roster.resolve().parent if options.roster else repo_path
    return p.model_copy(update={"options": {**p.options, "base_dir": str(base_dir)}})


def _programs(
    repo: Repository, base: str, options: ReviewOptions, placed: Sequence[tuple[str, Participant]]
) -> dict[str, bytes]:
    """Programs named by a relative path: beside an explicit ``--roster`` file, else read
    from the BASE tree. Never from the head under review.

    ``placed`` pairs each participant with its place in the roster (``reviewers[2]``,
    ``judge``). Each such program must be an executable file where it is read: beside the
    roster, a file with an execute permission; in the base tree, a blob committed with
    git mode 100755 (a worker writes the bytes out executable, so this is the one place
    the mode is still known). Raises :class:`RosterError` (exit 2) naming the reviewer,
    the path and the fix otherwise. A bare name (looked up on each worker's PATH) and an
    absolute path (read on the worker's host) are left to the worker.
    """
    out: dict[str, bytes] = {}
    for where, p in placed:
        program = p.options.get("program")
        if p.backend not in ("command", "sarif") or not isinstance(program, str):
            continue
        if "/" not in program or program.startswith("/"):
            continue
        if options.roster is not None:
            out[p.id] = _program_beside(options.roster, where, p.id, program)
        else:
            out[p.id] = _program_in_tree(repo, base, where, p.id, program)
    return out


_RELATIVE_FIX = (
    "A relative program path is read beside an explicit --roster, or from the BASE ref "
    "when the roster is the base tree's council.toml: put it there, or name a program on "
    "PATH or an absolute path."
)


def _program_beside(roster: Path, where: str, pid: str, program: str) -> bytes:
    """The bytes of a relative program beside an explicit roster file, checked to be an
    executable file; :class:`RosterError` naming the path and the fix otherwise."""
    beside = roster.resolve().parent / program
    field = f"{where}.program"
    named = f"{program!r} (reviewer {pid!r})"
    trouble = program_trouble(beside)
    if trouble == "directory":
        raise RosterError(
            field,
            f"{named} is a directory beside the roster ({beside}), not a program",
            "Name the executable file itself.",
        )
    if trouble == "missing":
        raise RosterError(field, f"{named} is not beside the roster ({beside})", _RELATIVE_FIX)
    if trouble == "not-executable":
        raise RosterError(
            field,
            f"{named} beside the roster ({beside}) is not executable",
            f"Make it executable: chmod +x {shlex.quote(str(beside))}",
        )
    try:
        return beside.read_bytes()
    except OSError as exc:
        raise RosterError(
            field,
            f"{named} beside the roster ({beside}) cannot be read ({exc.strerror})",
            f"Make it readable: chmod +r {shlex.quote(str(beside))}",
        ) from None


def _program_in_tree(repo: Repository, base: str, where: str, pid: str, program: str) -> bytes:
    """The bytes of a relative program in the BASE tree, checked to be committed as an
    executable file (git mode 100755); :class:`RosterError` naming the path, the mode
    and the fix otherwise."""
    path = program.removeprefix("./").rstrip("/")
    at = f"in the base tree at {base[:12]}"
    field = f"{where}.program"
    named = f"{program!r} (reviewer {pid!r})"
    mode = repo.tree_mode(base, path)
    if mode is None:
        raise RosterError(field, f"{named} is not {at}", _RELATIVE_FIX)
    if mode == "040000":
        raise RosterError(
            field, f"{named} is a directory {at}, not a program", "Name the executable file itself."
        )
    if mode == "120000":
        raise RosterError(
            field,
            f"{named} is a symbolic link {at}; council sends a program's bytes to the "
            f"workers, not a link",
            "Commit the program itself at that path, or name it by its absolute path.",
        )
    if mode == "100644":
        quoted = shlex.quote(path)
        raise RosterError(
            field,
            f"{named} is not executable {at} (committed with git mode 100644)",
            f"Commit it executable on the base branch: git update-index --chmod=+x {quoted} "
            f"(or chmod +x {quoted} && git add {quoted}), then commit.",
        )
    blob = repo.read_file(base, path) if mode == "100755" else None
    if blob is None:
        raise RosterError(
            field,
            f"{named} is not a file {at} (git mode {mode})",
            "Commit the program itself (an executable file, git mode 100755) at that path.",
        )
    return blob


def open_and_dispatch(app: Celery, rt: Runtime, round_: Round) -> None:
    """Claim identities and open the run atomically, store inputs, send the chord.

    Raises :class:`~council.errors.IdentityRefused` before anything is sent. When the
    chord cannot be sent (the broker is unreachable, its transport cannot load), the run
    just opened is settled ``cancelled`` and the error is raised again.
    """
    record = round_.record
    rt.sessions.open_run(record, round_.roster.claims(), record.created_ms)
    rt.runs.put_inputs(
        record.run_id,
        (*round_.participants, *((round_.judge,) if round_.judge else ())),
        round_.prompts,
        round_.tree,
        round_.programs,
        change=round_.change.text,
    )
    try:
        header = chord_header(app, record.run_id, round_.participants, rt.settings.batch_size)
        body = app.signature("council.consolidate", kwargs={"run_id": record.run_id})
        errback = app.signature(
            "council.finalize", kwargs={"run_id": record.run_id}, immutable=True
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            canvas = chord(header, body)
            canvas.link_error(errback)
            sent = canvas.apply_async()
    except Exception:
        # Nothing reached a worker: settle the opened run now, so it is not left "open".
        log.exception("dispatch_failed", run_id=record.run_id)
        rt.runs.cancel(record.run_id)
        settle_run(rt, record.run_id, forced="cancelled", lost=Stop(limit="cancelled"))
        raise
    # Drop the result handles now, while the backend is reachable: their finalizer
    # unsubscribes from the result backend (celery.md §1.12, noise at exit).
    release_results(app, sent)
    del sent
    log.info(
        "run_dispatched",
        run_id=record.run_id,
        session=record.session,
        participants=len(round_.participants),
        tasks=len(header),
    )


def release_results(app: Celery, sent: ResultBase) -> None:
    """Stop ``app``'s result backend tracking a sent chord's results; leave none behind.

    Why: the CLI never reads the chord's results (it polls the run in Redis), but the
    Redis result backend keeps every header task's result object among its pending
    results, subscribed to its channel, for the life of the process, and not only the
    ones reachable from ``sent``: the chord's own group result registers other objects
    for the same task ids. Each one's ``AsyncResult.__del__`` then unsubscribes at
    interpreter shutdown, and when Redis went away meanwhile it tries to reconnect while
    Python is tearing down ("Exception ignored in: AsyncResult.__del__", ImportError:
    sys.meta_path is None). Called right after dispatch, while Redis answers: every
    object tracked for the chord's task ids is removed (unsubscribing once); any that
    cannot be (Redis dropped in between) loses its backend, so its finalizer does nothing.
    """
    handles: list[AsyncResult] = []
    node: ResultBase | None = sent
    while node is not None:
        if isinstance(node, AsyncResult):
            handles.append(node)
        children = getattr(node, "results", None) or ()
        handles.extend(r for r in children if isinstance(r, AsyncResult))
        node = node.parent
    backend = app.backend
    # The backend's registry of pending results is private to Celery (asynchronous.py's
    # AsyncBackendMixin): read it when it is there, the handles above are enough otherwise.
    registries = getattr(backend, "_pending_results", None) or ()
    ids = {h.id for h in handles}
    for registry in registries:
        for task_id in ids:
            waiters = registry.get(task_id) if hasattr(registry, "get") else None
            if waiters:
                handles.extend(w for w in list(waiters.values()) if isinstance(w, AsyncResult))
    for handle in handles:
        try:
            backend.remove_pending_result(handle)
        except Exception:  # Redis went away just now: disarm its finalizer instead
            log.debug("result_release_failed", task_id=handle.id, exc_info=True)
            handle.backend = None


def chord_header(
    app: Celery, run_id: str, participants: Sequence[Participant], batch_size: int
) -> list[Signature]:
    """The reviewer tasks of a run's chord, built without sending anything.

    Participants of a :data:`BATCHED_BACKENDS` backend are grouped by their queue
    (``queue_for(backend)``), in roster order, into ``council.review_batch`` tasks of at
    most ``batch_size`` (>= 1) ids each; every other participant is one
    ``council.review_participant`` task on its queue. Single tasks come first, in roster
    order, then the batches. Every signature is immutable (the header takes no parent
    result) and carries the message protocol.
    """
    header: list[Signature] = []
    batched: dict[str, list[str]] = {}
    for p in participants:
        if p.backend in BATCHED_BACKENDS:
            batched.setdefault(queue_for(p.backend), []).append(p.id)
            continue
        header.append(
            app.signature(
                "council.review_participant",
                kwargs={"run_id": run_id, "participant": p.id, "protocol": PROTOCOL},
                immutable=True,
                queue=queue_for(p.backend),
            )
        )
    for queue, ids in batched.items():
        for start in range(0, len(ids), batch_size):
            header.append(
                app.signature(
                    "council.review_batch",
                    kwargs={
                        "run_id": run_id,
                        "participants": ids[start : start + batch_size],
                        "protocol": PROTOCOL,
                    },
                    immutable=True,
                    queue=queue,
                )
            )
    return header


def judge_sender(app: Celery, backend: str) -> JudgeDispatch:
    """A function that sends a run's judge task through ``app``, to its backend's queue."""

    def send(run_id: str) -> None:
        app.send_task(
            "council.judge",
            kwargs={"run_id": run_id, "protocol": PROTOCOL},
            queue=queue_for(backend),
        )

    return send


def say(text: str) -> None:
    """Write one ``council: …`` line to stderr (the waiting CLI's notices)."""
    sys.stderr.write(f"council: {text}\n")
    sys.stderr.flush()


@dataclass
class _Outage:
    """Rides out a short Redis outage while waiting: bounded backoff, said once per outage."""

    url: str
    """The Redis URL, its password masked."""
    run_id: str
    notify: Callable[[str], None]
    budget_s: float = REDIS_OUTAGE_S
    since: float | None = None
    pause: float = OUTAGE_PAUSE_S[0]

    def failed(self, exc: redis.RedisError) -> None:
        """Redis did not answer: pause (doubling, bounded), or give up once the outage has
        lasted ``budget_s``, raising :class:`StoreUnavailable` (exit 3)."""
        now = time.monotonic()
        reason = redact_text(str(exc)) or type(exc).__name__
        if self.since is None:
            self.since, self.pause = now, OUTAGE_PAUSE_S[0]
            log.warning("redis_unreachable", run_id=self.run_id, error=reason)
            self.notify(
                f"Redis at {self.url} is unreachable ({reason}); retrying for up to "
                f"{self.budget_s:g} s (the reviews go on on the workers)"
            )
        lasted = now - self.since
        if lasted >= self.budget_s:
            raise StoreUnavailable(
                self.url,
                f"it did not answer for {lasted:.0f} s while this CLI waited for run "
                f"{self.run_id} (last error: {reason})",
                f"The run may still settle on the workers once Redis is back: see "
                f"`council show {self.run_id}`. Start redis-server there or fix "
                f"COUNCIL_REDIS_URL (or --redis), then run the review again if it did not.",
            ) from exc
        time.sleep(min(self.pause, self.budget_s - lasted))
        self.pause = min(2 * self.pause, OUTAGE_PAUSE_S[1])

    def answered(self) -> None:
        """Redis answered: an outage in progress is over (said once)."""
        if self.since is not None:
            lasted = time.monotonic() - self.since
            self.since = None
            log.info("redis_reachable", run_id=self.run_id, outage_s=round(lasted, 1))
            self.notify(f"Redis at {self.url} answers again (after {lasted:.1f} s); waiting on")


@dataclass
class Waiter:
    """Waits for a run to settle, showing progress; cancels, times out, or finalizes.

    * ``timeout_ms``: the user's ``--timeout`` (None: no limit); on it the run is
      cancelled for the reviewers and settled as ``timeout``.
    * The watchdog: past ``record.deadline_ms`` (the longest backstop plus slack) the run
      is settled from the journals, as the chord never fired; a participant no worker
      ever started then fails naming its queue (:func:`~workers.settling.never_started`).
    * ``stop_requested``: polled; true after Ctrl-C or SIGTERM → settled ``cancelled``.
    * A Redis outage (connection refused, timeouts) is ridden out for up to
      :data:`REDIS_OUTAGE_S`, said once through ``notify``; past it
      :class:`StoreUnavailable` is raised, naming the URL without its password.
    * In distributed mode, when no participant has started after :data:`NO_WORKER_HINT_S`,
      ``notify`` says once which queues the tasks wait on.
    """

    rt: Runtime
    record: RunRecord
    on_progress: Callable[[dict[str, Progress]], None]
    stop_requested: Callable[[], bool]
    timeout_ms: int | None = None
    dispatch_judge: JudgeDispatch | None = None
    notify: Callable[[str], None] = say
    """Where one-line notices go (default: stderr, ``council: …``)."""

    def wait(self) -> CouncilReport:
        """Block until the run is settled; return its report."""
        run_id = self.record.run_id
        started = now_ms()
        deadline = self.record.deadline_ms
        shown_at = 0.0
        hinted = False
        outage = _Outage(self._redis_shown(), run_id, self.notify, REDIS_OUTAGE_S)
        while True:
            try:
                status = self.rt.runs.status(run_id)
                outage.answered()
                if status not in ("open", "judging"):
                    report = self.rt.runs.report(run_id)
                    if report is not None:
                        self.on_progress(self.rt.runs.progress(run_id))
                        return report
                if time.monotonic() - shown_at >= PROGRESS_S:
                    progress = self._progress()
                    self.on_progress(progress)
                    shown_at = time.monotonic()
                    if not hinted and now_ms() - started >= NO_WORKER_HINT_S * 1000:
                        hinted = self._hint_no_worker(progress)
                    continue  # reading the progress takes a while: look at the status first
                now = now_ms()
                if self.stop_requested():
                    return self._halt("cancelled", Stop(limit="cancelled"))
                if self.timeout_ms is not None and now - started >= self.timeout_ms:
                    return self._halt("timeout", Stop(limit="cancelled", budget_ms=self.timeout_ms))
                if now >= deadline:
                    log.warning("watchdog_fired", run_id=run_id)
                    report = settle_run(
                        self.rt,
                        run_id,
                        lost=Stop(limit="worker-lost"),
                        dispatch_judge=self.dispatch_judge,
                        deadline_passed=True,
                    )
                    if report.status != "judging":
                        return report
                    deadline = now + (self.record.deadline_ms - self.record.created_ms)
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                outage.failed(exc)
                continue
            time.sleep(POLL_S)

    def _redis_shown(self) -> str:
        """The Redis URL for people: its password masked."""
        url = self.rt.settings.redis_url_value()
        return redact_url(url) if url else "the council's Redis"

    def _hint_no_worker(self, progress: dict[str, Progress]) -> bool:
        """Say once (distributed mode) that no worker has started any task of the run yet,
        naming the queues they wait on; True when said, or when there is nothing to say
        ever (embedded mode), so it is not asked again."""
        if self.rt.mode != "distributed":
            return True
        if not progress:
            return False
        if any(s.state != "pending" for s in progress.values()):
            return True  # a worker took a task: nothing to say, ever
        queues = sorted(
            {queue_for(p.backend) for p in self.rt.runs.participants(self.record.run_id)}
        )
        left_s = max(0, (self.record.deadline_ms - now_ms()) // 1000)
        self.notify(
            f"no worker has started any task of run {self.record.run_id} after "
            f"{NO_WORKER_HINT_S:g} s; they wait on the Celery queue(s) {', '.join(queues)}. "
            f"Is a `council worker` running on this Redis and consuming them (see README, "
            f"Distributed mode)? Otherwise the run settles at its deadline, in {left_s} s, "
            f"with those reviewers failed."
        )
        return True

    def _progress(self) -> dict[str, Progress]:
        states = self.rt.runs.progress(self.record.run_id)
        counts = self.rt.journals.recorded_counts(self.record.run_id)
        return {
            p: (s.model_copy(update={"findings": counts.get(p, 0)}) if s.state == "running" else s)
            for p, s in states.items()
        }

    def _halt(self, status: str, stop: Stop) -> CouncilReport:
        """Cancel the reviewers, give them a moment to stop, settle with what is kept."""
        run_id = self.record.run_id
        forced: RunStatus = "cancelled" if status == "cancelled" else "timeout"
        self.rt.runs.cancel(run_id, forced, stop.budget_ms)
        grace_end = now_ms() + CANCEL_GRACE_MS
        while now_ms() < grace_end:
            if self.rt.runs.status(run_id) not in ("open", "judging"):
                break
            progress = self.rt.runs.progress(run_id)
            if all(s.state not in ("pending", "running") for s in progress.values()):
                break
            time.sleep(POLL_S)
        return settle_run(self.rt, run_id, forced=forced, lost=stop)
