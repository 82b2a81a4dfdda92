"""The roster document: the whole ``council.toml`` read into a checked :class:`Roster`.

Its tables: ``[council]`` (the round's clocks in milliseconds, caps in bytes,
``persona_dirs``, ``sandbox``, ``script_limits``, ``quorum``, ``min_agreement``, ``max_cost_usd``),
``[paths]``, ``[[reviewers]]`` (at least one), ``[judge]``, ``[prices."backend:model"]``
(:mod:`council.round.cost`), ``[limits.backend]`` (:mod:`council.roster.rate_limits`) and
``[policy]``; an annotated example is in docs/guide.md "The roster". Every refusal is a
:class:`~council.errors.RosterError` whose ``path`` names the field
(``reviewers[2].backend``; indexes from 0, in file order) and whose ``fix`` says what to
write. No file is read: the caller passes the text and a ``source`` name for messages.
Source: docs/identity-and-clocks.md "Participant".
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from council.change.skipping import SKIP_KINDS, SkipKind, SkipPolicy
from council.errors import RosterError
from council.evidence.policy import POLICIES
from council.model.clocks import CLOCK_FIELDS, resolve_clocks
from council.model.participant import Clocks, Participant, Role
from council.roster.backend_options import SANDBOX_FIX, SANDBOX_MODES, key_env
from council.roster.participant_tables import PROGRAM_BACKENDS, read_participant
from council.roster.rate_limits import RateLimit, parse_limits
from council.roster.toml_values import refuse_unknown, table_at, text, text_list, whole
from council.round.budget import parse_max_cost
from council.round.cost import PriceTable, parse_prices

DEFAULT_MAX_CHANGE_BYTES = 50_000_000
"""The hard cap of a change's diff (after ``[paths]`` and skipping), in bytes (50 MB),
unless ``[council] max_change_bytes``: past it the files of most value that fit are
reviewed, the rest named, and the round is partial (exit 3)."""

DEFAULT_MAX_TREE_BYTES = 50 * 1024 * 1024
"""The largest packed head tree, in bytes (50 MiB), unless ``[council] max_tree_bytes``."""

TABLES: tuple[str, ...] = (
    "council",
    "paths",
    "reviewers",
    "judge",
    "prices",
    "limits",
    "policy",
)

"""The top-level tables a roster may hold."""

POLICY_KEYS: tuple[str, ...] = ("confirm", "unverified_scripts")
"""What ``[policy]`` may set: ``confirm`` (a person confirms each finding at or above a
severity before it may fail the gate) and ``unverified_scripts`` (``demote``: a critical
finding showing a script that did not run this turn is held at medium; ``keep``)."""

COUNCIL_KEYS: tuple[str, ...] = (
    *CLOCK_FIELDS,
    "max_change_bytes",
    "max_tree_bytes",
    "quorum",
    "min_agreement",
    "persona_dirs",
    "sandbox",
    "script_limits",
    "max_cost_usd",
    "likely_at",
)
"""Keys of the ``[council]`` table."""

PATHS_KEYS: tuple[str, ...] = ("include", "exclude", "review_kinds", "review_anyway")
"""Keys of the ``[paths]`` table."""


class Roster(BaseModel):
    """A checked roster: reviewers in file order, an optional judge, paths and limits.

    ``reviewers`` keep the file's order, the ROSTER order findings are filed in
    (docs/harvest.md §8). Byte caps are in bytes. ``prices`` and ``limits`` are checked by
    :func:`council.round.cost.parse_prices` and :func:`council.roster.rate_limits.parse_limits`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    reviewers: tuple[Participant, ...]
    judge: Participant | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    review_kinds: tuple[SkipKind, ...] = ()
    """``[paths] review_kinds``: kinds skipped by default sent anyway (``lock``,
    ``minified``, ``vendored``, ``generated``; :mod:`council.change.skipping`)."""
    review_anyway: tuple[str, ...] = ()
    """``[paths] review_anyway``: path patterns sent whatever their kind."""
    notes: tuple[str, ...] = ()
    """What a round says about the roster itself: the retired keys it holds and ignores
    (:data:`RETIRED_COUNCIL_KEYS`)."""
    clocks: Clocks = Clocks()
    """The round's resolved clocks (each participant's own are resolved in its ``clocks``)."""
    max_change_bytes: int = DEFAULT_MAX_CHANGE_BYTES
    max_tree_bytes: int = DEFAULT_MAX_TREE_BYTES
    confirm: str | None = None
    """``[policy] confirm``: the lowest severity a person must confirm before a finding may
    fail the gate (``critical``, ``medium``, ``minor``); None: nobody is asked."""
    unverified_scripts: str = "demote"
    """``[policy] unverified_scripts``: ``demote`` (the default: a critical finding whose
    discussion shows a script that did not run this turn is held at medium) or ``keep``
    (:mod:`council.evidence.policy`)."""
    quorum: int | None = None
    """How many reviewers must be heard in full (:func:`council.round.gate.incomplete_reasons`);
    None (the default): every reviewer not marked ``optional`` (the gate fails closed); 0
    switches the count off; never more than the number of reviewers."""
    min_agreement: int = 1
    """``[council] min_agreement``: a finding gates only when at least this many
    reviewers raised it (1, the default: every finding may gate)."""
    persona_dirs: tuple[str, ...] = ()
    """Searched for persona charters before the built-in ones, as written (the caller
    resolves relative ones)."""
    sandbox: str = "auto"
    """``auto``: where bubblewrap cannot run, a reviewer program fails in CI and on
    distributed workers, and runs unsandboxed with a note in embedded mode elsewhere;
    ``required``: it always fails."""
    prices: PriceTable = PriceTable()
    max_cost_usd: float | None = None
    """``[council] max_cost_usd``: the round's hard cost budget in USD
    (:mod:`council.round.budget`); None: no budget."""
    limits: dict[str, RateLimit] = Field(default_factory=dict)
    likely_at: float = 0.5
    """``[council] likely_at``: a finding at or above this likelihood leads the report and
    is posted as a line comment by default (docs/ranking.md); the gate never reads it."""

    @property
    def skip_policy(self) -> SkipPolicy:
        """What ``[paths]`` sends although skipped by default."""
        return SkipPolicy(review_kinds=self.review_kinds, review_anyway=self.review_anyway)

    @property
    def participants(self) -> tuple[Participant, ...]:
        """Every participant: the reviewers in roster order, then the judge if any."""
        return self.reviewers + ((self.judge,) if self.judge is not None else ())

    def claims(self) -> list[tuple[Role, Participant]]:
        """The ``(role, participant)`` pairs of one round, for ``Ledger.claim_round``."""
        return [(p.role, p) for p in self.participants]

    @property
    def longest_backstop_ms(self) -> int:
        """The longest backstop of any participant, in ms (sizes watchdogs and timeouts)."""
        return max(p.clocks.backstop_ms for p in self.participants)


def _load(text: str, source: str) -> dict[str, Any]:
    """The TOML document, or a RosterError naming the line and column of the slip."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        message = str(err)
        where = re.search(r"\(at line (\d+), column (\d+)\)", message)
        path = f"{source}:{where[1]}:{where[2]}" if where else f"{source}:end"
        problem = re.sub(r"\s*\(at [^)]*\)$", "", message)
        raise RosterError(
            path,
            f"not valid TOML ({problem})",
            "Fix the syntax there: text values need quotes, a table is [name] and each "
            "reviewer is a [[reviewers]] table",
        ) from err


RETIRED_COUNCIL_KEYS: dict[str, str] = {
    "max_diff_bytes": (
        "[council] max_diff_bytes is retired and was ignored: a large change is no longer "
        "refused whole; max_change_bytes is the hard cap past which only the files of most "
        f"value that fit are reviewed and the round is partial (default "
        f"{DEFAULT_MAX_CHANGE_BYTES} bytes). Remove the key from the roster"
    ),
}
"""Keys older rosters may hold that this council reads and ignores, each with the note a
round says about it (:attr:`Roster.notes`): an older roster keeps parsing."""


def retired_notes(doc: Mapping[str, object]) -> tuple[str, ...]:
    """The notes of the retired keys the ``[council]`` table holds."""
    table = doc.get("council", {})
    if not isinstance(table, Mapping):
        return ()
    return tuple(note for key, note in RETIRED_COUNCIL_KEYS.items() if key in table)


def _council(doc: Mapping[str, object]) -> tuple[dict[str, Any], Clocks, int, int]:
    """The ``[council]`` table, its resolved round clocks and the two byte caps."""
    table = table_at(doc.get("council", {}), "council", "Write the round's settings as [council]")
    table = {k: v for k, v in table.items() if k not in RETIRED_COUNCIL_KEYS}
    refuse_unknown(table, COUNCIL_KEYS, "council")
    sandbox = table.get("sandbox", "auto")
    if sandbox not in SANDBOX_MODES:
        raise RosterError("council.sandbox", f"{sandbox!r} is not a sandbox mode", SANDBOX_FIX)
    clocks = resolve_clocks(table, {}, "council", "council")
    caps: list[int] = []
    for key, default in (
        ("max_change_bytes", DEFAULT_MAX_CHANGE_BYTES),
        ("max_tree_bytes", DEFAULT_MAX_TREE_BYTES),
    ):
        fix = f"Write {key} as a whole number of bytes, e.g. {key} = {default}"
        cap = whole(table, key, "council", fix, low=1, high=None)
        caps.append(default if cap is None else cap)
    return table, clocks, caps[0], caps[1]


def _paths(doc: Mapping[str, object]) -> tuple[tuple[str, ...], ...]:
    """The ``[paths]`` lists (empty when absent): include, exclude, review_kinds (each
    checked to be a kind) and review_anyway."""
    table = table_at(
        doc.get("paths", {}), "paths", "Write [paths] with include = [...] and exclude = [...]"
    )
    refuse_unknown(table, PATHS_KEYS, "paths")
    found = [
        text_list(
            table,
            key,
            "paths",
            f'Write {key} as a list of glob patterns, e.g. {key} = ["src/**"]',
            non_empty=False,
            blank_ok=False,
        )
        for key in PATHS_KEYS
    ]
    for index, kind in enumerate(found[2] or ()):
        if kind not in SKIP_KINDS:
            raise RosterError(
                f"paths.review_kinds[{index}]",
                f"unknown kind {kind!r}",
                f"Name kinds skipped by default: {', '.join(SKIP_KINDS)}",
            )
    return tuple(f or () for f in found)


def _persona_dirs(round_table: Mapping[str, object]) -> tuple[str, ...]:
    """The directories of ``[council] persona_dirs``, in order (empty when absent)."""
    fix = 'Write persona_dirs as a list of directories, e.g. persona_dirs = ["personas"]'
    dirs = text_list(round_table, "persona_dirs", "council", fix, non_empty=False, blank_ok=False)
    return dirs or ()


def _no_keys_to_programs(reviewers: list[Participant], judge: Participant | None) -> None:
    """Refuse a program reviewer's ``env`` naming a variable a model participant of the
    same roster reads its API key from (``api_key_env``): RosterError at
    ``reviewers[i].env`` (or ``judge.env``). (The well-known key names are refused per entry.)"""
    placed = [(f"reviewers[{i}]", p) for i, p in enumerate(reviewers)]
    placed += [("judge", judge)] if judge else []
    keys = {name: p.id for _, p in placed if (name := key_env(p)) is not None}
    for where, p in placed:
        if p.backend not in PROGRAM_BACKENDS:
            continue
        for name in p.options.get("env", []):
            if name in keys:
                raise RosterError(
                    f"{where}.env",
                    f"{name} is never passed to a reviewer program: it holds the API key "
                    f"of {keys[name]!r} (its api_key_env), and a reviewer program runs on "
                    f"the change under review, which comes from anyone",
                    "Remove it from env; a program that needs a model's key is not a "
                    "reviewer council can sandbox",
                )


def parse_roster(text: str, source: str, *, base_dir: str | None = None) -> Roster:
    """Read a roster's TOML text into a checked :class:`Roster`.

    Why: a roster mistake must stop the council before anything is sent, with the field
    named and the fix said, instead of surfacing minutes later as a failed reviewer.
    ``source`` names the text in messages (usually the file name); ``base_dir`` (the
    roster's directory, when it came from a file) is stored in the options of backends
    that read files relative to the roster. Clocks are in
    milliseconds and resolved per participant (:func:`council.model.clocks.resolve_clocks`).
    Raises :class:`~council.errors.RosterError` (``path``, ``problem``, ``fix``) for bad
    TOML, unknown tables or keys, a missing, malformed or repeated id, an unknown backend
    or thinking level, bad tools, bad backend options, bad clocks, bad caps or quorum,
    bad persona dirs, prices or limits, and a roster without reviewers.
    Source: docs/identity-and-clocks.md "Participant".
    """
    doc = _load(text, source)
    refuse_unknown(doc, TABLES, "")
    round_table, clocks, max_change, max_tree = _council(doc)
    include, exclude, review_kinds, review_anyway = _paths(doc)
    entries = doc.get("reviewers")
    add_fix = "Add at least one reviewer as a [[reviewers]] table with an id and a backend"
    if entries is None:
        raise RosterError("reviewers", "the roster names no reviewer", add_fix)
    if not isinstance(entries, list):
        raise RosterError(
            "reviewers", "must be an array of tables", "Write each reviewer as [[reviewers]]"
        )
    if not entries:
        raise RosterError("reviewers", "is empty", add_fix)
    reviewers: list[Participant] = []
    seen: dict[str, str] = {}
    for index, entry in enumerate(entries):
        where = f"reviewers[{index}]"
        reviewer = read_participant(entry, where, "reviewer", round_table, base_dir)
        if reviewer.id in seen:
            raise RosterError(
                f"{where}.id",
                f"id {reviewer.id!r} is already used by {seen[reviewer.id]}",
                "Give every participant its own id",
            )
        seen[reviewer.id] = where
        reviewers.append(reviewer)
    judge = None
    if "judge" in doc:
        if isinstance(doc["judge"], list):
            raise RosterError("judge", "there can be only one judge", "Write it as [judge]")
        judge = read_participant(doc["judge"], "judge", "judge", round_table, base_dir)
        if judge.id in seen:
            raise RosterError(
                "judge.id",
                f"id {judge.id!r} is already a reviewer's ({seen[judge.id]})",
                "Give the judge an id of its own: its findings must not pass as a reviewer's",
            )
    _no_keys_to_programs(reviewers, judge)
    quorum_fix = "Write quorum as a whole number of reviewers, 0 to switch the count off"
    quorum = whole(round_table, "quorum", "council", quorum_fix, low=0, high=None)
    if quorum is not None and quorum > len(reviewers):
        raise RosterError(
            "council.quorum",
            f"quorum {quorum} is more than the {len(reviewers)} reviewers of the roster",
            f"Lower quorum to at most {len(reviewers)}, or add reviewers",
        )
    agreement_fix = "Write min_agreement as a whole number of reviewers, 1 or more"
    min_agreement = whole(round_table, "min_agreement", "council", agreement_fix, low=1, high=None)
    if min_agreement is not None and min_agreement > len(reviewers):
        raise RosterError(
            "council.min_agreement",
            f"min_agreement {min_agreement} is more than the {len(reviewers)} reviewers of "
            "the roster: no finding could ever gate",
            f"Lower min_agreement to at most {len(reviewers)}, or add reviewers",
        )
    return Roster(
        source=source,
        notes=retired_notes(doc),
        min_agreement=min_agreement or 1,
        reviewers=tuple(reviewers),
        judge=judge,
        include=include,
        exclude=exclude,
        review_kinds=tuple(k for k in SKIP_KINDS if k in review_kinds),
        review_anyway=review_anyway,
        clocks=clocks,
        max_change_bytes=max_change,
        max_tree_bytes=max_tree,
        quorum=quorum,
        persona_dirs=_persona_dirs(round_table),
        sandbox=str(round_table.get("sandbox", "auto")),
        prices=parse_prices(doc.get("prices", {}), "prices"),
        max_cost_usd=(
            parse_max_cost(round_table["max_cost_usd"]) if "max_cost_usd" in round_table else None
        ),
        limits=parse_limits(doc.get("limits", {}), "limits"),
        likely_at=_likely_at(round_table),
        confirm=_confirm(doc.get("policy", {})),
        unverified_scripts=_unverified_scripts(doc.get("policy", {})),
    )


def _unverified_scripts(value: object) -> str:
    """``[policy] unverified_scripts``, checked: ``demote`` (also when absent) or ``keep``."""
    table = table_at(value, "policy", 'Write [policy] with unverified_scripts = "demote"')
    fix = 'Write unverified_scripts = "demote" (the default) or "keep"'
    found = text(table, "unverified_scripts", "policy", fix)
    if found is None:
        return POLICIES[0]
    if found not in POLICIES:
        raise RosterError("policy.unverified_scripts", f"unknown policy {found!r}", fix)
    return found


def _confirm(value: object) -> str | None:
    """``[policy] confirm``, checked: one of the severities, or None when absent."""
    table = table_at(value, "policy", 'Write [policy] with confirm = "critical"')
    refuse_unknown(table, POLICY_KEYS, "policy")
    fix = 'Write confirm = "critical" (or "medium", "minor"), or leave it out'
    confirm = text(table, "confirm", "policy", fix)
    if confirm is not None and confirm not in ("critical", "medium", "minor"):
        raise RosterError("policy.confirm", f"unknown severity {confirm!r}", fix)
    return confirm


def _likely_at(table: Mapping[str, object]) -> float:
    """``[council] likely_at``: a likelihood in [0, 1] (default 0.5). Raises RosterError."""
    value = table.get("likely_at", 0.5)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise RosterError(
            "council.likely_at",
            f"{value!r} is not a likelihood",
            "Write likely_at as a number from 0 to 1, e.g. likely_at = 0.5 (findings at or "
            "above it lead the report)",
        )
    return float(value)
