"""The settled council of one run: what every renderer and the gate read.

A :class:`CouncilReport` is plain data: the run, each participant's summary, the findings
filed this round (with ids and origins), every warning, and notes for people. Renderers in
:mod:`council.rendering` are pure functions of it. ``schema_version`` is bumped on any
incompatible change of the JSON.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from council.asks.pending import PendingAsk
from council.model.backend_result import Stop, Usage
from council.model.coverage import Coverage
from council.model.findings import Finding, Warning
from council.model.gate_policy import GatePolicy
from council.ranking.likelihood import Rank

SCHEMA_VERSION = 1
"""Version of the JSON report's shape; readers refuse a version they do not know."""

NO_RUN = "none"
"""The ``run_id`` of a report no run made: nothing to review, or only findings carried
from earlier rounds (no reviewer was asked)."""

RunStatus = Literal["open", "judging", "waiting", "settled", "partial", "cancelled", "timeout"]
ParticipantState = Literal["pending", "running", "answered", "stopped", "failed", "asking"]


class ParticipantSummary(BaseModel):
    """One participant's line in the report: who, how it ended, what it yielded."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    role: Literal["reviewer", "judge"] = "reviewer"
    backend: str
    model: str | None = None
    state: ParticipantState
    stop: Stop | None = None
    failure: str | None = None
    findings: int = 0
    warnings: int = 0
    attempts: int = 0
    duration_ms: int = 0
    unread: str | None = None
    """For an ``answered`` participant whose answer could not be read at all: the
    answer-level warning code (``no-json``, ``no-findings-array``, ``said-nothing``).
    Such a participant answered, but nothing was heard from it."""
    read_in_part: str | None = None
    """For an ``answered`` participant whose answer was read only up to a break: the
    answer-level warning code (``cut-off``, ``malformed-json``, or ``over-cap`` when the
    answer held more entries than the reading cap). The findings before the break are
    filed; whatever came after it was not heard."""
    usage: Usage | None = None
    """Tokens a model reviewer used (None for programs, analyzers and replays)."""
    optional: bool = False
    """The roster marked it ``optional = true``: the gate may complete without it."""
    cost_usd: float | None = None
    """What ``usage`` cost in US dollars (:func:`council.round.cost.cost_usd`); None when the
    participant used no tokens or its model has no price in the roster."""
    saved_usd: float | None = None
    """What the provider's prompt cache saved on ``usage``, in US dollars: its cost at the
    full input price minus ``cost_usd`` (:func:`council.round.cost.saved_usd`; negative when
    cache writes did not pay for themselves); None when unpriced or nothing was cached."""
    slices: int = 1
    """How many slices of the change it was sent, each by its own task (a change over its
    context budget: docs/architecture.md "Slices")."""

    @property
    def heard_in_full(self) -> bool:
        """Whether it answered and its answer was read whole (not unread, not read only
        up to a break): what the quorum counts and a ``settled`` run requires."""
        return self.state == "answered" and self.unread is None and self.read_in_part is None


class Reworded(BaseModel):
    """The dismissal or baseline entry a finding was matched to by AGREEMENT, not by its
    fingerprint: the finding says the same problem in other words
    (:func:`council.session.baseline.suppress`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fingerprint: str
    """The fingerprint the dismissal or the baseline entry is keyed by (not the
    finding's own)."""
    id: int | None = None
    """The id of the dismissed finding matched, when the dismissal knows it."""
    subject: str = ""
    """What the dismissed finding or the baseline entry said."""


class Suppression(BaseModel):
    """Why a finding is listed but never gates nor posts: a dismissal or the baseline."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: Literal["dismissed", "baseline", "judge"]
    reason: str = ""
    by_agreement: Reworded | None = None
    """Set when the dismissal or baseline entry was matched by agreement (the finding was
    reworded) rather than by fingerprint; None for a fingerprint match."""


class ChangeSize(BaseModel):
    """How much a run reviewed: the files of the change its reviewers were shown (after
    ``[paths]``; a file minified by a line counts, its analyzers read it), and the lines
    those files add and remove (a binary file counts as a file, with no lines). What a
    report's header states, "2 files, +34/−1"."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    files: int = 0
    """Files changed (added, modified, deleted, renamed)."""
    added: int = 0
    """Lines added, over every file."""
    removed: int = 0
    """Lines removed, over every file."""


class BudgetSpend(BaseModel):
    """A round's cost budget against what it spent, in US dollars (``[council]
    max_cost_usd``). ``spent_usd`` counts every request of every attempt, the judge's too,
    as the budget's ledger settled it; a request whose provider said nothing of its usage
    counted at its estimate. ``held_usd``: estimates still reserved when the report was
    written (a request lost with its worker; counted as spent by nobody, held by the
    budget). Source: docs/guide.md "A cost budget"."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_cost_usd: float
    spent_usd: float = 0.0
    held_usd: float = 0.0
    stopped: tuple[str, ...] = ()
    """The participants the budget stopped (their stop is ``budget``), roster order."""

    def describe(self) -> str:
        """``spent $2.40 of the $2.50 budget (max_cost_usd); stopped by it: c, d``."""
        text = f"spent {_dollars(self.spent_usd)} of the {_dollars(self.max_cost_usd)} budget"
        text += " (max_cost_usd)"
        if self.held_usd > 0:
            text += f", {_dollars(self.held_usd)} more still held by requests never settled"
        if self.stopped:
            text += f"; stopped by it: {', '.join(self.stopped)}"
        return text


def _dollars(amount: float) -> str:
    return f"${amount:.4f}" if amount < 1 else f"${amount:.2f}"


UNSANDBOXED = "reviewer programs ran WITHOUT a sandbox"
"""How the run note of an embedded run whose reviewer programs ran unconfined begins
(bubblewrap could not run there; see :mod:`reviewers.sandbox.bubblewrap`)."""


WITHOUT_KEYS = "reviewed without API keys"
"""How the run note of a round that left its keyed reviewers out begins (``council
review --without-keys``, :func:`council.roster.round_roster.without_keys`); the Markdown
report shows it under its title."""


NOT_REVIEWED = "added, not reviewed:"
"""How the run note naming the files the change ADDS under a path ``[paths]`` leaves out
begins; the Markdown report shows it under its title (a file no reviewer saw is never
silent, and new code is where an over-broad pattern hides the most)."""


class CouncilReport(BaseModel):
    """Everything one run settled to (docs/architecture.md; reports read this).

    * ``status``: ``settled`` (everyone answered), ``partial`` (someone stopped or failed,
      or the consolidation ran without them), ``cancelled``, ``timeout``.
    * ``findings``: the findings filed in THIS round, in filing order, ids assigned.
    * ``carried``: earlier rounds' findings still open that this round did not review
      again (``--since-last``); they gate like ``findings``.
    * ``notes``: sentences for people (the roster was edited by the change and the base
      version used; paths excluded; binary files not shown; reviewer programs ran
      without a sandbox: such a note begins with :data:`UNSANDBOXED` and the Markdown
      report shows it under its title).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = SCHEMA_VERSION
    run_id: str
    session: str
    repository: str = ""
    base: str = ""
    head: str = ""
    status: RunStatus
    mode: Literal["embedded", "distributed"] = "embedded"
    participants: tuple[ParticipantSummary, ...] = ()
    findings: tuple[Finding, ...] = ()
    warnings: tuple[Warning, ...] = ()
    notes: tuple[str, ...] = ()
    created_ms: int = 0
    settled_ms: int | None = None
    asks: tuple[PendingAsk, ...] = ()
    """The questions the run waits on (or waited on, with their answers): a run
    ``waiting`` settles once every one is answered (:mod:`council.asks.confirm`)."""
    resumes_as: RunStatus | None = None
    """For a ``waiting`` run: the status it settles as once answered."""
    filtered: dict[int, str] = Field(default_factory=dict)
    """Finding id → why ``--filter`` kept it from gating and from inline posting
    (:mod:`council.change.diff_filter`): listed, never dropped."""
    gate: GatePolicy = Field(default_factory=GatePolicy)
    """The gate's policy the run was opened with (``fail_on``, ``quorum``,
    ``min_agreement``, ``filter``): what :mod:`council.round.gate`, every renderer and the
    console read, so none of them can judge the report by another threshold."""
    unagreed: dict[int, int] = Field(default_factory=dict)
    """Finding id → how many reviewers' own tellings reach its severity, for the open
    findings fewer than ``gate.min_agreement`` reviewers raised at that severity
    (:func:`council.round.gate.apply_min_agreement`): listed and posted; such a finding
    gates only where enough of its tellings reach the threshold
    (:func:`council.round.gate.agreed_at`)."""
    off_diff: dict[int, str] = Field(default_factory=dict)
    """Finding id → why its anchor does not land on the diff (file-absent, line-absent,
    range-crosses-hunks, range-inverted). Such a finding is never dropped: it is shown
    in the body, "not on a changed line"."""
    seen: tuple[int, ...] = ()
    """Ids of findings whose fingerprint an earlier round of the session already
    reported (or that restate, in other words, a finding still open in the session:
    ``seen_by_agreement``): shown, not posted again."""
    seen_by_agreement: dict[int, int] = Field(default_factory=dict)
    """Finding id → the id of the earlier finding of the session that it restates,
    recognised by agreement rather than by fingerprint: the same id when filing kept
    the earlier one's (:func:`council.session.remembered.file_recalled`), another for a finding
    filed new that restates one still open (:func:`council.session.earlier_rounds.recognized`)."""
    fingerprints: dict[int, str] = Field(default_factory=dict)
    """Finding id → its content fingerprint (:func:`council.model.fingerprint.fingerprint`),
    for every finding of the report (this round's, carried and outdated)."""
    suppressed: dict[int, Suppression] = Field(default_factory=dict)
    """Finding id → the dismissal or baseline entry that suppresses it."""
    outdated: tuple[Finding, ...] = ()
    """Findings of earlier rounds whose code this round's change edited or removed."""
    carried: tuple[Finding, ...] = ()
    """Findings of earlier rounds still open at this head, which a ``--since-last`` round
    did not review again (:func:`council.session.earlier_rounds.carry`): listed, written to SARIF
    and
    GitLab, gated, never posted again as line comments. Anchored on this head."""
    cost_usd: float | None = None
    """What the participants' tokens cost in US dollars, summed over those with a price
    (:func:`council.round.cost.sum_costs`); None when no participant had a priced cost."""
    cost_complete: bool = True
    """False when some participant used tokens without a price: ``cost_usd`` is then a
    lower bound, and a report says "at least"."""
    saved_usd: float | None = None
    """What the providers' prompt caches saved, in US dollars: the participants'
    ``saved_usd`` summed (:func:`council.round.cost.sum_savings`); None when none has one."""
    budget: BudgetSpend | None = None
    """The round's cost budget and what it spent (None: the round had no budget)."""
    ranks: dict[int, Rank] = Field(default_factory=dict)
    """Finding id → how likely it is real and why (:mod:`council.ranking.likelihood`);
    empty when the report was not ranked. Orders the Markdown report, never the gate."""
    likely_at: float = Field(default=0.5, ge=0.0, le=1.0)
    """``[council] likely_at``: a finding at or above this likelihood leads the report
    (and is posted as a line comment by default); the rest are folded, never dropped."""
    reviewed: ChangeSize | None = None
    """The size of the change this round's reviewers were shown; None when no change was
    read (``council consolidate``, a ``--since-last`` round with nothing new) or in a
    report written before the field existed, which is read as it was."""
    coverage: Coverage | None = None
    """Which files each prompt reviewer saw, which were skipped and why, which none saw
    (:mod:`council.model.coverage`); None when no change was read or in an older report."""

    @model_validator(mode="before")
    @classmethod
    def _gate_of_older_reports(cls, data: object) -> object:
        """A report written before ``gate`` held ``filter`` and ``min_agreement`` at the
        top level (and they are still written there, for scripts): read them into
        ``gate`` when it is absent; otherwise ``gate`` is the policy."""
        if not isinstance(data, dict) or not ({"filter", "min_agreement"} & data.keys()):
            return data
        data = dict(data)
        flat = {key: data.pop(key) for key in ("filter", "min_agreement") if key in data}
        data.setdefault("gate", {key: value for key, value in flat.items() if value is not None})
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def filter(self) -> str | None:
        """``gate.filter``, also written at the top level of the JSON for scripts."""
        return self.gate.filter

    @computed_field  # type: ignore[prop-decorator]
    @property
    def min_agreement(self) -> int:
        """``gate.min_agreement``, also written at the top level of the JSON for scripts."""
        return self.gate.min_agreement

    def gated(self, **policy: object) -> CouncilReport:
        """This report under another gate policy (``fail_on="minor"``, ``quorum=0``): how
        a caller asks a different question of the same report, never by handing a
        renderer a threshold of its own. Raises pydantic's ValidationError for a bad
        value."""
        gate = GatePolicy.model_validate({**self.gate.model_dump(), **policy})
        return self.model_copy(update={"gate": gate})

    @property
    def open_findings(self) -> tuple[Finding, ...]:
        """This round's findings, then those carried from earlier rounds: every finding
        that stands at the head (what the gate, SARIF and GitLab read)."""
        return (*self.findings, *self.carried)

    @property
    def waits_on_reviewers(self) -> bool:
        """Whether the run waits on questions its reviewers asked a person: nothing of the
        round is filed yet, so it is neither complete nor partial until they went on."""
        return self.status == "waiting" and any(
            a.participant is not None and a.answer is None for a in self.asks
        )

    @property
    def partial(self) -> bool:
        """Whether some participant stopped or failed, or the run did not settle whole (a
        run waiting on a person is judged by the status it will settle as; one waiting
        on its reviewers' questions is not judged yet)."""
        if self.waits_on_reviewers:
            return False
        status = self.resumes_as if self.status == "waiting" and self.resumes_as else self.status
        unseen = self.coverage is not None and bool(self.coverage.unseen())
        return unseen or status != "settled" or not all(p.heard_in_full for p in self.participants)
