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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from council.asks.paused import Resumption
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
from council.model.participant import Participant
from council.model.report import UNSANDBOXED
from council.roster.backend_options import SANDBOX_OPTION
from council.roster.provider_rules import for_worker
from reviewers import key_env
from reviewers.base import TROUBLE_EVENTS, ReviewRequest
from reviewers.models.tree_spelling import REPLACEMENT
from reviewers.models.tree_spelling import spelled_in as tree_names
from reviewers.sandbox.bubblewrap import Bubblewrap, SandboxPolicy
from workers.app.services import Runtime
from workers.app.settings import Settings
from workers.coordinator.config_overlay import PROGRAM_BACKENDS, reads_base_config
from workers.execution.journal_sink import RedisJournal, RedisScripts, journal_for
from workers.git.diff_reading import shown_text
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
    masker = Masker(tree_values(workdir, found)) if found else Masker()
    return RunShare(record, workdir, _added(run_id, change), found, masker)


def _pull_lines(rt: Runtime, participant: Participant, run_id: str) -> dict[str, frozenset[int]]:
    """The pull request's added lines for a SARIF analyzer in a ``--since-last`` round
    (one GET; {} for any other reviewer or round): a result it reports on lines the pull
    request wrote keeps them, so it is recognized as the finding filed there before."""
    if participant.backend != "sarif":
        return {}
    pull = rt.runs.pull(run_id)
    return _added(f"{run_id}:pull", pull) if pull is not None else {}


@functools.lru_cache(maxsize=4)
def _added(run_id: str, change: str) -> dict[str, frozenset[int]]:
    """The added lines of a run's diff, parsed once per run on this worker (keyed by the
    text too, so a run's diff is never mistaken): a change reviewed in slices runs many
    tasks on one worker, and parsing a 5 MB diff costs a second of CPU each time."""
    return added_lines(parse_diff(change))


def tree_lines(tree: Path | None, path: str) -> list[str] | None:
    """The lines of the tree's file at ``path`` (None: no tree, not a file, outside it);
    a symbolic link's one line is its target (the diff shows it so, and it can hold a
    secret). ``path`` may be the diff's spelling of a name that is not UTF-8
    (:func:`~reviewers.models.tree_spelling.spelled_in`): it is read when it names one
    entry, and is None when it names several."""
    if tree is None:
        return None
    names = tree_names(tree, path)
    return _entry_lines(tree, names[0]) if len(names) == 1 else None


def tree_values(tree: Path | None, spans: Sequence[SecretSpan]) -> tuple[str, ...]:
    """The secret values of ``spans`` read back from ``tree``
    (:func:`~council.change.secret_masks.values_from`); a path that names several
    entries (names that are not UTF-8 showing alike) is read in each, and every value
    whose digest matches is kept: a masker knowing one too many costs nothing."""
    values = list(values_from(spans, lambda p: tree_lines(tree, p)))
    if tree is None:
        return tuple(values)
    for path in dict.fromkeys(s.path for s in spans if REPLACEMENT in s.path):
        names = tree_names(tree, path)
        if len(names) < 2:  # one entry: tree_lines read it above
            continue
        mine = [s for s in spans if s.path == path]
        for name in names:
            for value in values_from(mine, functools.partial(_lines_of, tree, name)):
                if value not in values:
                    values.append(value)
    return tuple(values)


def _lines_of(tree: Path, name: str, _path: str) -> list[str] | None:
    """:func:`_entry_lines` of ``name`` whatever path is asked (one candidate's reading)."""
    return _entry_lines(tree, name)


def _entry_lines(tree: Path, name: str) -> list[str] | None:
    """The lines of the tree's entry spelled exactly ``name`` (as :func:`tree_lines`)."""
    target = tree / name
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

    A file holding secrets is written masked, a withheld file (one the diff does not show,
    too big to scan) holds only :func:`~council.change.secret_masks.withheld_text`, and
    every file or link whose path holds a secret is removed (with the topmost directory on
    its way that holds one) and laid again at its
    :func:`~council.change.secret_masks.masked_path`; two paths masked alike are one file
    (the last in path order). A file that cannot be read is withheld too, as is each of
    several whose names show alike (names that are not UTF-8 show each bad byte as U+FFFD,
    as the spans spell them: which one a span means is unknown). Raises ``OSError`` when
    the tree cannot be walked.
    """
    out: dict[str, bytes] = {}
    kept_out = withheld(secrets)
    names = name_values(secrets)

    def content(name: str) -> tuple[str, bytes]:
        """``(kind, bytes)`` of the tree's entry spelled ``name``, masked by the spans of
        its path as the diff shows it."""
        shown = shown_text(name)
        alike = len(tree_names(tree, shown)) if REPLACEMENT in shown else 1
        why = kept_out.get(name) or kept_out.get(shown)
        if why is None and alike > 1:
            why = f"{alike} files show under this name"
        lines = _entry_lines(tree, name) if why is None else None  # a withheld one unread
        if lines is None:
            why = why or "it cannot be read"
            return "644", withheld_text(masked_path(shown, secrets), why).encode()
        target = tree / name
        mine = [s for s in secrets if s.path in (name, shown)]
        if target.is_symlink():
            link = masked_file(lines[0], mine)
            return "link", os.fsencode(masked_path(link, secrets))
        text = masked_file("\n".join(lines), mine)
        for value in names:  # a file may hold its own name
            text = text.replace(value, MASK)
        mode = "755" if os.access(target, os.X_OK) else "644"
        return mode, text.encode("utf-8", "surrogateescape")

    touched = [s.path for s in secrets if s.place != "path"]
    for path in dict.fromkeys(touched):
        for name in tree_names(tree, path):
            kind, held = content(name)
            out[f"{kind}:{masked_path(name, secrets)}"] = held
    if names:
        for path in _named_with(tree, names):
            parts = path.split("/")
            top = next(
                i for i in range(len(parts)) if any(v in "/".join(parts[: i + 1]) for v in names)
            )
            out[f"-:{'/'.join(parts[: top + 1])}"] = b""
            kind, held = content(path)
            out[f"{kind}:{masked_path(path, secrets)}"] = held
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
    resumptions: Mapping[str, Resumption] | None = None,
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
    (``resume``; ``resumptions``: the batch's one read of them, by participant id; None:
    read here). ``shared``: where the prompt's shared part ends
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
    pulled = _pull_lines(rt, participant, run_id)
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
        pull_lines={_real((p,), real)[0]: n for p, n in pulled.items()},
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
        resume=_resume(rt, run_id, participant, resumptions),
        budget=(
            RedisBudget(rt.client, rt.keys, run_id, record.max_cost_usd).for_participant(
                participant, record.prices
            )
            if record.max_cost_usd is not None
            else None
        ),
    )


def _resume(
    rt: Runtime,
    run_id: str,
    participant: Participant,
    resumptions: Mapping[str, Resumption] | None,
) -> Resumption | None:
    """The answered pause ``participant`` goes on from (None: none, or not an asking
    backend), from ``resumptions`` when the caller read them, else from Redis."""
    if participant.backend not in ASKING_BACKENDS:
        return None
    if resumptions is not None:
        return resumptions.get(participant.id)
    return rt.runs.resumption(run_id, participant.id)


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
