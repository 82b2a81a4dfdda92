"""Preparing a round: read the change and the trusted configuration, check, build.

The reads come first, in the design's order (docs/architecture.md "The shape"): the refs; the
TRUSTED roster, from the base ref, never the head under review; the filtered change (its
likely secrets found and masked, :mod:`council.change.secret_masks`); the
programs and persona charters the roster names (trusted like it, so read where it is:
:mod:`workers.coordinator.trusted_inputs`) and the base files its ``args`` name
(:mod:`workers.coordinator.program_args`); the base's side of the analyzer configuration the change
edits (:mod:`workers.coordinator.config_overlay`); the head tree. Then
:mod:`council.roster.round_roster` builds the round from what was read, purely.
Nothing is sent: :func:`prepare` returns a :class:`Round`, which :mod:`workers.coordinator.dispatch`
opens and sends and :mod:`workers.coordinator.waiting` waits for.
"""

from __future__ import annotations

import posixpath
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from council.change.diff import Change
from council.change.path_patterns import first_match
from council.change.quoted_paths import shown
from council.change.secret_masks import (
    Masker,
    SecretSpan,
    mask_change,
    mask_coverage,
    masked_path,
    name_values,
    secrets_note,
)
from council.change.skipping import REASONS
from council.errors import ConfigurationError, RosterError
from council.model.coverage import NOT_READABLE, NOT_SHOWN, Coverage, SkippedFile
from council.model.participant import Participant
from council.model.report import NOT_REVIEWED
from council.roster import Roster
from council.roster.prompt import Prompt, change_notes
from council.roster.round_roster import Lineup, deadline_ms, line_up, without_keys
from council.slicing.plan import SlicePlan, plan_prompts
from reviewers import check_options
from workers.app.clock import now_ms
from workers.app.settings import Settings
from workers.coordinator.config_overlay import ConfigOverlay, overlay_note, read_config_overlay
from workers.coordinator.program_args import base_arg_files
from workers.coordinator.replay_recordings import recorded_lineup
from workers.coordinator.secret_scan import excluded_files, find_secrets
from workers.coordinator.trusted_inputs import (
    persona_texts,
    read_programs,
    read_roster,
    roster_differs,
    roster_in_repo,
)
from workers.git.change_listing import submodule_notes
from workers.git.change_sorting import ReadChange
from workers.git.diff_reading import attributes_notes
from workers.git.repository import Repository
from workers.stores.run_record import RunRecord

EXCLUDED_SHOWN = 20
"""At most this many excluded paths are named in the round's note about them."""


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
    without_keys: bool = False
    """Leave out the participants that read an API key (``--without-keys``: a pull
    request from a fork), saying so (:func:`~council.roster.round_roster.without_keys`)."""
    roster_on_disk: bool = False
    """Read ``roster`` where it is even inside the repository (``council check``, which
    sends nothing, validates the file being edited); a review reads such a file from the
    BASE ref (:func:`~workers.coordinator.trusted_inputs.roster_in_repo`)."""


@dataclass(frozen=True)
class Round:
    """A prepared round: everything checked, nothing sent yet.

    ``participants`` are the reviewers in roster order; ``prompts`` maps each reviewer's
    id to its prompt (the part every reviewer shares, then its own); ``programs`` maps a
    participant id to the bytes of the relative program read for it, ``arg_files`` to the
    base-tree files its ``args`` name (:mod:`workers.coordinator.program_args`); ``tree``
    is the packed head tree (tar.gz, None when the round has none). ``judge_persona`` is
    the judge's charter body (None: no judge, or a judge without a persona): the judge's
    prompt is built only once the reviewers are filed, and this travels with the run's
    inputs until then.
    """

    record: RunRecord
    roster: Roster
    participants: tuple[Participant, ...]
    prompts: dict[str, Prompt]
    programs: dict[str, bytes]
    tree: bytes | None
    change: Change
    notes: tuple[str, ...] = field(default=())
    judge: Participant | None = None
    judge_persona: str | None = None
    arg_files: dict[str, dict[str, bytes]] = field(default_factory=dict)
    config: ConfigOverlay = field(default_factory=ConfigOverlay)
    """The analyzer configuration files the change edits, and the base's side of them,
    laid over the tree of program reviewers with ``config_from = "base"``."""
    secrets: tuple[SecretSpan, ...] = ()
    """The places of the likely secrets the change adds (in its kept files' added lines,
    the files the diff does not show and its paths) and those files withheld unscanned;
    ``change``, ``notes``, ``record`` and ``prompts`` show them masked
    (:mod:`council.change.secret_masks`)."""
    slices: dict[str, int] = field(default_factory=dict)
    """A reviewer sent in slices (its change over its context budget) → how many; their
    prompts are under the units' ids (:mod:`council.slicing.plan`)."""

    @property
    def units(self) -> tuple[Participant, ...]:
        """The slice units of the sliced reviewers, built from their current entries."""
        return SlicePlan(prompts={}, slices=self.slices).units(self.participants)

    @property
    def working(self) -> tuple[Participant, ...]:
        """What runs as a task: each reviewer not sliced, and each slice unit."""
        return (*(p for p in self.participants if p.id not in self.slices), *self.units)

    def rerun(self, run_id: str, created_ms: int, deadline_ms: int) -> Round:
        """The same prepared round as a new run (benchmarks run one change many times);
        times in ms since the epoch."""
        record = self.record.model_copy(
            update={"run_id": run_id, "created_ms": created_ms, "deadline_ms": deadline_ms}
        )
        return replace(self, record=record)


class NothingToReview(Exception):
    """The change is empty, or every file of it is excluded. Exit 0."""


@dataclass(frozen=True)
class _Refs:
    """The commits a round is about (full ids), and what the refs as given say."""

    base: str
    """Trusted configuration (roster, programs, personas) is read here."""
    head: str
    start: str
    """Where the reviewed diff starts: the ``--since-last`` commit, else ``base``."""
    notes: tuple[str, ...] = ()
    """What the refs as given say about the change (it runs backwards)."""


def prepare(settings: Settings, options: ReviewOptions, *, mode: str) -> Round:
    """Read the repository and the roster, check everything, build the prompts.

    ``mode`` is ``distributed`` or ``embedded``. The steps run in this order, each
    refusing before the next reads anything: refs, roster, the visibility timeout, the
    change, participants' options, programs, personas, the head tree. Raises
    :class:`ConfigurationError` subclasses (exit 2) for a bad repository, ref, roster or
    cap; :class:`NothingToReview` (exit 0) for an empty change.
    """
    repo = Repository(options.repo, max_changed_files=settings.max_changed_files)
    refs = _resolve_refs(repo, options)
    in_repo = (
        roster_in_repo(repo, options.roster, refs.base, refs.head)
        if options.roster is not None and not options.roster_on_disk
        else None
    )
    explicit = options.roster if in_repo is None else None  # else read as the base tree's
    beside = posixpath.dirname(in_repo) if in_repo is not None else ""
    roster, roster_notes = read_roster(repo, options.roster, refs.base, refs.head, in_repo)
    listed = repo.changed_entries(refs.base, refs.head)
    roster_notes = (
        *roster_notes,
        *(_review_reads_base(repo, options.roster, refs) if options.roster_on_disk else ()),
        *attributes_notes(repo.changed_paths(refs.base, refs.head)),
        *submodule_notes(listed),
        *(
            (
                "COUNCIL_MAX_DIFF_BYTES is retired and was ignored: a large change is no "
                "longer refused whole; COUNCIL_MAX_CHANGE_BYTES is the hard cap",
            )
            if settings.max_diff_bytes is not None
            else ()
        ),
    )
    _check_visibility_timeout(settings, roster, mode)
    read = _read_change(settings, repo, refs, roster)
    change, non_utf8, excluded = read.change, read.non_utf8, read.excluded
    secrets = _find_secrets(repo, refs, change, _not_in_diff(read, repo, refs))
    change = mask_change(change, secrets)
    prompted = mask_change(read.prompted(), secrets)  # without the files minified by a line
    non_utf8 = tuple(masked_path(p, secrets) for p in non_utf8)
    coverage = mask_coverage(read.coverage(), secrets)
    added = {e.path for e in listed if e.status == "A"}
    excluded_notes = (
        *_excluded_notes([masked_path(p, secrets) for p in excluded]),
        *_sent_anyway_notes([masked_path(p, secrets) for p in read.sent_anyway]),
        *_not_reviewed_notes(
            [(masked_path(p, secrets), _left_out_by(p, roster)) for p in excluded if p in added]
            + [
                (masked_path(f.path, secrets), f.why)
                for f in read.skipped
                if f.path in added and f.reason in NAMED_SKIPS
            ]
        ),
    )
    lineup = line_up(roster, _replay_base_dir(explicit, repo))
    if options.without_keys:
        lineup, keyless = without_keys(lineup)
        roster_notes = (*roster_notes, *keyless)
        if not lineup.reviewers:
            raise ConfigurationError(
                "every reviewer of the roster needs an API key, so --without-keys leaves "
                "none to review this change: add one that needs none (an analyzer, a "
                "command reviewer) to the roster, or review with the keys"
            )
    if explicit is None:  # replay files of a base-tree roster: the base tree's
        lineup = recorded_lineup(lineup, repo, refs.base, beside)
    _check_options(lineup)
    programs = read_programs(repo, refs.base, explicit, lineup.placed, beside)
    arg_files = base_arg_files(repo, refs.base, refs.head, lineup.placed)
    personas = persona_texts(repo, refs.base, explicit, roster, lineup.everyone, beside)
    config = read_config_overlay(repo, refs.base, refs.head, since=refs.start)
    config_said = overlay_note(config, lineup.reviewers)
    tree = repo.archive(
        refs.head,
        settings.max_tree_bytes or roster.max_tree_bytes,
        max_unpacked_bytes=settings.max_unpacked_tree_bytes,
    )
    names = Masker(name_values(secrets))  # a note naming a file named with a key
    notes = _with_new(
        [
            *options.notes,
            *refs.notes,
            *(names.text(n) for n in (*roster_notes, *excluded_notes)),
            *_coverage_notes(coverage),
            *filter(None, [config_said and names.text(config_said), secrets_note(secrets)]),
        ],
        [names.text(n) for n in change_notes(prompted, non_utf8=non_utf8)],
    )
    judge = lineup.judge
    plan = plan_prompts(lineup.reviewers, prompted, personas, notes)
    record = _record(settings, options, repo, refs, roster, change, lineup, notes, mode)
    units = plan.units(lineup.reviewers)
    record = record.model_copy(
        update={"notes": (*record.notes, *plan.notes), "units": tuple(u.id for u in units)}
    )
    shown = {u.id: plan.shown.get(u.id, ()) for u in units}
    cut = {
        who: tuple(
            SkippedFile(path=path, reason="budget", why=f"{REASONS['budget']}: {why}")
            for path, why in files
        )
        for who, files in plan.cut.items()
    }
    coverage = coverage.model_copy(update={"units": shown, "cut": cut})
    return Round(
        record=record.model_copy(update={"coverage": coverage}),
        roster=roster,
        participants=lineup.reviewers,
        prompts=plan.prompts,
        slices=plan.slices,
        programs=programs,
        tree=tree,
        change=change,
        notes=tuple(notes),
        judge=judge,
        judge_persona=personas.get(judge.id) if judge is not None else None,
        arg_files=arg_files,
        config=config,
        secrets=secrets,
    )


def _resolve_refs(repo: Repository, options: ReviewOptions) -> _Refs:
    """The refs as commit ids, so every later read sees the same commits.

    Why the note: a head that is an ancestor of the base reviews the change backwards
    (``--base`` and ``--head`` swapped, usually); the round still runs, and says so.
    Raises :class:`~council.errors.RepositoryError` (exit 2) for a ref that names no
    commit, with how to fetch it.
    """
    base = repo.resolve(options.base)
    head = repo.resolve(options.head)
    start = repo.resolve(options.since) if options.since else base
    notes: tuple[str, ...] = ()
    if base != head and repo.is_ancestor(head, base):
        notes = (
            f"the head {options.head} is an ancestor of the base {options.base}: this "
            f"reviews the change backwards (were --base and --head swapped?)",
        )
    return _Refs(base=base, head=head, start=start, notes=notes)


def _check_visibility_timeout(settings: Settings, roster: Roster, mode: str) -> None:
    """Refuse (distributed mode) a backstop Redis would cut short.

    Why: Redis delivers an unacknowledged task again after the visibility timeout (in
    seconds), so a review must end well within it, or a healthy review is started a
    second time. Raises :class:`ConfigurationError` (exit 2) when twice the longest
    backstop (ms) exceeds ``COUNCIL_VISIBILITY_TIMEOUT_S``.
    """
    if mode != "distributed":
        return
    if 2 * roster.longest_backstop_ms > settings.visibility_timeout_s * 1000:
        raise ConfigurationError(
            f"the longest backstop ({roster.longest_backstop_ms} ms) needs a visibility "
            f"timeout above twice its length, and COUNCIL_VISIBILITY_TIMEOUT_S is "
            f"{settings.visibility_timeout_s} s: Redis would start a healthy review again. "
            f"Raise COUNCIL_VISIBILITY_TIMEOUT_S (on workers and CLI alike) or lower backstop_ms."
        )


def _find_secrets(
    repo: Repository, refs: _Refs, change: Change, not_in_diff: Mapping[str, str]
) -> tuple[SecretSpan, ...]:
    """The likely secrets of the change: on the kept files' added lines, in the files the
    diff does not show (``not_in_diff``, path → why: read whole from the head tree, or
    withheld when too big: :func:`~workers.coordinator.secret_scan.excluded_files`) and in
    every path the change touches since the base, either side. Why those files:
    ``[paths]``, skipping, the caps and ``--since-last`` only trim the prompt; the tree
    models' tools read still holds them, and the notes name them. Each secret once.
    Raises :class:`~council.errors.RepositoryError` when git fails."""
    files, kept_out = excluded_files(repo, refs.head, not_in_diff, reasons=not_in_diff)
    paths = [*repo.changed_paths(refs.start, refs.head), *repo.changed_paths(refs.base, refs.head)]
    spans = _once(find_secrets(change, files, paths))
    first = spans[-1].secret + 1 if spans else 0
    withheld = [s.model_copy(update={"secret": first + i}) for i, s in enumerate(kept_out)]
    return (*spans, *withheld)


def _not_in_diff(read: ReadChange, repo: Repository, refs: _Refs) -> dict[str, str]:
    """The change's files whose added lines the diff reviewers read does not show, so the
    scan of added lines misses them, → why: excluded by ``[paths]``, skipped on purpose
    (lock, minified, vendored, generated, binary: git's binary test may be an attribute
    over text), left out by a cap; in a ``--since-last`` round, every file changed since
    the base too (the lines added before the round's start are in no diff of it)."""
    out = {path: "excluded by [paths]" for path in read.excluded}
    coverage = read.coverage()
    for f in (*coverage.skipped, *coverage.unreviewed):
        out.setdefault(f.path, REASONS.get(f.reason, f.reason))
    if refs.start != refs.base:
        for path in repo.changed_paths(refs.base, refs.head):
            out.setdefault(path, "changed before the --since-last commit")
    return out


def _once(spans: Sequence[SecretSpan]) -> list[SecretSpan]:
    """``spans`` with each secret once: one found again on the same characters (a file
    read whole that the diff shows too) is left out, and the rest renumbered in order."""
    groups: dict[int, list[SecretSpan]] = {}
    for span in spans:
        groups.setdefault(span.secret, []).append(span)
    seen: set[tuple[str, str, int, int, int]] = set()
    out: list[SecretSpan] = []
    kept = 0
    for group in groups.values():
        places = {(s.place, s.path, s.line, s.start, s.end) for s in group}
        if places <= seen:
            continue
        seen |= places
        out += [s.model_copy(update={"secret": kept}) for s in group]
        kept += 1
    return out


def _excluded_notes(excluded: Sequence[str]) -> tuple[str, ...]:
    """The note naming the files ``[paths]`` excluded (no silent loss); none when none."""
    if not excluded:
        return ()
    return (f"{len(excluded)} file(s) excluded by [paths] in the roster: {_listed(excluded)}",)


def _sent_anyway_notes(paths: Sequence[str]) -> tuple[str, ...]:
    """The note naming the files minified by a line sent anyway (nothing else was left:
    a change's content must not leave its reviewers nothing to read); none when none."""
    if not paths:
        return ()
    return (
        f"{len(paths)} file(s) minified by a line sent anyway, as every other file of "
        f"the change is skipped: {_listed(paths)}",
    )


def _listed(paths: Sequence[str]) -> str:
    """The first :data:`EXCLUDED_SHOWN` of ``paths`` quoted, `` …`` when there are more."""
    more = " …" if len(paths) > EXCLUDED_SHOWN else ""
    return ", ".join(shown(p) for p in paths[:EXCLUDED_SHOWN]) + more


def _review_reads_base(repo: Repository, path: Path | None, refs: _Refs) -> tuple[str, ...]:
    """For ``council check``, which validates the roster file on disk: a note when
    ``council review`` would read another one (the base ref's copy of a roster in the
    repository, or none at all), so a check that passes does not hide the roster the
    review will run."""
    if path is None:
        return ()
    try:
        name = roster_in_repo(repo, path, refs.base, refs.head)
    except RosterError as exc:
        return (f"council review will refuse this --roster: {exc}",)
    if name is None:
        return ()
    blob = repo.read_file(refs.base, name)
    if blob is None or not roster_differs(path, blob):
        return ()
    return (
        f"this check validated {name} on disk, but council review reads it from the base "
        f"ref {refs.base[:12]}, whose copy differs: the review will run that one (commit "
        "the roster to the base branch first)",
    )


def _left_out_by(path: str, roster: Roster) -> str:
    """Why ``[paths]`` left ``path`` out: the exclude pattern that selects it, or no
    include pattern selecting it."""
    pattern = first_match(path, roster.exclude)
    if pattern is not None:
        return f"excluded by `{pattern}`"
    return "selected by no [paths] include pattern"


NAMED_SKIPS = frozenset({"lock", "minified", "vendored", "generated"})
"""The skip kinds a file's name (or the base's attributes) decides: a pull request
ADDING such a file chose its name, so the file is named under the report's title."""


def _not_reviewed_notes(added: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """The note naming the files the pull request ADDS that ``[paths]`` left out, or that
    were skipped by their name's kind (:data:`NAMED_SKIPS`), each with why
    (:data:`~council.model.report.NOT_REVIEWED`; the Markdown report shows it under its
    title); none when none. Not gating: the roster, read from the base, chose the
    patterns and kinds; the note keeps new code under such a name from going unseen
    (``src/vendor/helper.py`` added with a shell call passed with no line above the
    findings)."""
    if not added:
        return ()
    return (
        f"{NOT_REVIEWED} "
        + ", ".join(f"{shown(p)} ({why})" for p, why in added[:EXCLUDED_SHOWN])
        + (f" and {len(added) - EXCLUDED_SHOWN} more" if len(added) > EXCLUDED_SHOWN else ""),
    )


def _read_change(settings: Settings, repo: Repository, refs: _Refs, roster: Roster) -> ReadChange:
    """The change under review: filtered by the roster's ``[paths]``, its skipped files
    and those over a cap named, within the hard cap
    (:meth:`~workers.git.change_sorting.ChangeSorting.read_within`), read with the BASE
    tree's ``.gitattributes`` only. The hard cap is ``COUNCIL_MAX_CHANGE_BYTES`` (which
    wins), else the roster's ``max_change_bytes``: past it the round reviews what fits
    and is partial, never refused. Files minified by a line are sent anyway when nothing
    else is left. Raises :class:`NothingToReview` when no file is left and none was cut
    by a cap (the message names the skipped ones)."""
    read = repo.read_within(
        refs.start,
        refs.head,
        attributes_from=refs.base,
        include=roster.include,
        exclude=roster.exclude,
        policy=roster.skip_policy,
        cap_bytes=settings.max_change_bytes or roster.max_change_bytes,
    )
    if not read.prompted().files and not read.unreviewed:
        if read.by_lines():  # the change's content, not the team, skipped them
            return read.with_minified_sent()
        if read.skipped:
            raise NothingToReview(
                "nothing to review: every file of the change is skipped ("
                + _named([(f.path, f.why) for f in read.skipped])
                + "); send a kind anyway with [paths] review_kinds, a file with review_anyway"
            )
        raise NothingToReview(
            "nothing to review: the change is empty"
            if not read.excluded
            else "nothing to review: every file of the change is excluded by [paths]"
        )
    return read


def _named(files: Sequence[tuple[str, str]]) -> str:
    """``a.lock (lock file), b.min.js (minified) and 3 more``: the first
    :data:`EXCLUDED_SHOWN` files named with why."""
    text = ", ".join(f"{shown(p)} ({why})" for p, why in files[:EXCLUDED_SHOWN])
    more = len(files) - EXCLUDED_SHOWN
    return text + (f" and {more} more" if more > 0 else "")


def _coverage_notes(coverage: Coverage) -> tuple[str, ...]:
    """The round's notes naming the files not sent (reviewers read them in their prompt,
    the report in its coverage table): skipped on purpose, then cut by a cap, then
    binary of no known kind (unreadable). A binary file skipped is left to its own note
    (:func:`council.roster.prompt.change_notes`): said once."""
    notes: list[str] = []
    skipped = [f for f in coverage.skipped if f.reason != "binary"]
    if skipped:
        named = _named([(f.path, f.why) for f in skipped])
        notes.append(f"{len(skipped)} file(s) skipped, not shown: {named}")
    for begins, files in (
        (NOT_SHOWN, [f for f in coverage.unreviewed if f.reason != "unreadable"]),
        (NOT_READABLE, [f for f in coverage.unreviewed if f.reason == "unreadable"]),
    ):
        if files:
            notes.append(f"{begins} {_named([(f.path, f.why) for f in files])}")
    return tuple(notes)


def _check_options(lineup: Lineup) -> None:
    """Refuse a participant's bad backend options, reviewers first, then the judge.

    Why before any program or persona is read: a replay without ``answer`` or a command
    without ``program`` must stop the round before anything is read for it or sent.
    Raises :class:`~council.errors.RosterError` (exit 2) naming the field path
    (``reviewers[2].answer: …``, ``judge.model: …``).
    """
    for where, p in lineup.placed:
        check_options(p, where)


def _replay_base_dir(roster: Path | None, repo: Repository) -> Path:
    """Where replay files resolve: beside an explicit roster read from disk. Without one
    the relative files are read from the BASE tree instead
    (:func:`~workers.coordinator.replay_recordings.recorded_lineup`),
    never from the repository's working directory, which is the change under review."""
    return roster.resolve().parent if roster is not None else repo.path


def _with_new(notes: list[str], more: Sequence[str]) -> list[str]:
    """``notes`` followed by those of ``more`` not already there (in order, once each):
    a change note the caller already gave is not said twice."""
    out = list(notes)
    for note in more:
        if note not in out:
            out.append(note)
    return out


def _record(
    settings: Settings,
    options: ReviewOptions,
    repo: Repository,
    refs: _Refs,
    roster: Roster,
    change: Change,
    lineup: Lineup,
    notes: Sequence[str],
    mode: str,
) -> RunRecord:
    """The run record, with a new run id, written ``open`` before any task is sent.

    Its ``deadline_ms`` (ms since the epoch) is the watchdog's: the longest reviewer
    backstop, then the judge's, plus ``COUNCIL_WATCHDOG_SLACK_MS``. The session is the
    one asked for, else the repository's default for the head ref. Source:
    docs/architecture.md "State in Redis".
    """
    created = now_ms()
    return RunRecord(
        run_id=uuid.uuid4().hex[:16],
        session=options.session or repo.default_session_key(options.head),
        repository=str(repo.path),
        base=refs.start,
        head=refs.head,
        witness=refs.head,
        mode="distributed" if mode == "distributed" else "embedded",
        participants=tuple(p.id for p in lineup.reviewers),
        judge=lineup.judge.id if lineup.judge is not None else None,
        limits=dict(roster.limits),
        prices=roster.prices,
        max_cost_usd=roster.max_cost_usd,
        changed_paths=change.paths,
        notes=tuple(notes),
        created_ms=created,
        deadline_ms=deadline_ms(created, lineup, settings.watchdog_slack_ms),
    )
