"""The canonical shapes of the council: anchors, origins, findings, warnings, harvests.

These models are strict (``frozen=True, extra="forbid"``): they accept exactly the
canonical JSON of docs/harvest.md §9 and nothing else. Leniency towards messy reviewer output
lives in :mod:`council.harvest`, which reads what came back and builds these models,
leaving a :class:`Warning` for every guess.

Canonical JSON is produced by :func:`canonical` (optional keys absent when unset, never
``null``) and read back by the module-level adapters (``FINDING``, ``HARVEST``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from council.evidence import Verdict

LABELS: tuple[str, ...] = (
    "praise",
    "nitpick",
    "suggestion",
    "issue",
    "todo",
    "question",
    "thought",
    "chore",
    "note",
)
"""The nine Conventional Comments labels a finding may carry (docs/harvest.md §1)."""

Label = Literal[
    "praise", "nitpick", "suggestion", "issue", "todo", "question", "thought", "chore", "note"
]

SEVERITIES: tuple[str, ...] = ("minor", "medium", "critical")
"""Severities from lowest to highest; the index is the rank used by gates and merges."""

Severity = Literal["critical", "medium", "minor"]

WarningCode = Literal[
    # answer level (at = "answer")
    "said-nothing",
    "no-json",
    "no-findings-array",
    "cut-off",
    "malformed-json",
    "bare-array",
    "several-lists",
    "over-cap",
    # entry level (at = "findings[i]" or "recorded[i]")
    "not-an-object",
    "no-subject",
    "missing-label",
    "unknown-label",
    "wrong-type",
    "no-location",
    "file-without-path",
    "line-without-path",
    "bad-line-number",
    "line-without-number",
    "reversed-range",
    "unknown-side",
    "unknown-location-kind",
    "unknown-severity",
    "bad-confidence",
    "bad-raised-by",
    # journal
    "journal-over-cap",
    "journal-unreadable",
    # round level (at = the participant id)
    "stopped",
    "failed",
]
"""The closed list of warning codes (docs/harvest.md §6). Tests compare codes, never prose."""


def severity_rank(severity: str | None) -> int:
    """Rank of a severity: -1 for none, then minor 0 < medium 1 < critical 2."""
    return SEVERITIES.index(severity) if severity in SEVERITIES else -1


class _Canonical(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ChangeAnchor(_Canonical):
    """The change as a whole (a ``global`` location)."""

    kind: Literal["change"] = "change"
    witness: str | None = None
    """The commit the reviewers read; absent when the tree was not pinned."""


class FileAnchor(_Canonical):
    """One file of the change, no particular line."""

    kind: Literal["file"] = "file"
    path: str
    witness: str | None = None


class LineAnchor(_Canonical):
    """A line, or a range of lines, on one side of the diff.

    ``line`` is the LAST line of the range; ``start_line`` exists only for a real range
    (``start_line < line``). Lines count from 1.
    """

    kind: Literal["line"] = "line"
    path: str
    side: Literal["new", "old"] = "new"
    line: int = Field(ge=1)
    start_line: int | None = Field(default=None, ge=1)
    witness: str | None = None
    code: str | None = None
    """The occurrence: a hash of the anchored code at the head the round reviewed
    (:func:`council.model.occurrence.stamp`, set when the round is filed, never read from
    a reviewer), which the finding's fingerprint names. Absent where it was not read: a
    finding filed before occurrences were kept, an old-side line, code past the file's
    end, a finding read from a file by ``council consolidate``."""
    block: str | None = None
    """A hash of the block holding the anchored code at that head
    (:meth:`council.model.occurrence.FileCode.block`), set with ``code``: a decision on
    the occurrence carries to a gating finding only while it is the same (a guard
    removed beside the code changes it). Not part of the fingerprint."""


Anchor = Annotated[ChangeAnchor | FileAnchor | LineAnchor, Field(discriminator="kind")]
"""A tagged union on ``kind``: change | file | line (docs/harvest.md §2)."""


_PRECISION = {"change": 0, "file": 1, "line": 2}


def anchor_precision(anchor: Anchor) -> int:
    """How precise an anchor is: change 0 < file 1 < line 2 (docs/harvest.md §8)."""
    return _PRECISION[anchor.kind]


def anchor_path(anchor: Anchor) -> str | None:
    """The file an anchor names, or None for a change anchor."""
    return None if isinstance(anchor, ChangeAnchor) else anchor.path


class Origin(_Canonical):
    """Who filed a finding: a person (``hand``), a reviewer or a judge of one run.

    Set by the round, never read from the wire.
    """

    kind: Literal["hand", "reviewer", "judge"]
    run_id: str | None = None
    participant: str | None = None
    program: bool | None = None
    """True when the participant is a program reviewer (``command``, ``sarif``), False
    when it is a model (or plays one: ``replay``); absent in findings filed before it was
    kept. A decision never crosses kinds (docs/identity-and-clocks.md "Occurrences")."""


_MEMBER_ONLY = frozenset({"participant", "evidence"})
"""The fields of a :class:`Member` that :meth:`Member.as_finding` does not carry."""


class Member(_Canonical):
    """One reviewer's own telling of a consolidated finding (docs/harvest.md §8).

    A consolidated finding keeps every telling it was made of, so a wrong merge costs a
    duplicate-looking line, never a lost finding: what each reviewer said, where, how
    severe. ``participant`` is the reviewer that told it.
    """

    participant: str
    anchor: Anchor
    label: Label
    subject: str = Field(min_length=1)
    discussion: str = ""
    origin: Origin | None = None
    severity: Severity | None = None
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    evidence: tuple[Verdict, ...] | None = None
    """The script verdicts of this telling's shown blocks, as its finding had them."""

    def as_finding(self) -> Finding:
        """The telling as a finding of its own: what it said, where, how severe and sure,
        and its origin; no id, raisers or agreement. Why one conversion: a judge's split,
        recognition and ``council consolidate`` each read a telling back as a finding.
        ``evidence`` is not carried: a finding's verdicts are set by its outcome, never
        read back (:class:`Finding`)."""
        return Finding(**{name: value for name, value in self if name not in _MEMBER_ONLY})


class Agreement(_Canonical):
    """How many reviewers raised a finding, of how many could have: "k of n".

    ``k``: the reviewers whose tellings the finding consolidates; ``n``: the reviewers
    heard in full that saw its file (every reviewer sees the whole change), and any
    raiser not heard in full, so ``k <= n``.
    """

    k: int = Field(ge=1)
    n: int = Field(ge=1)


class Finding(_Canonical):
    """One observation about the change (docs/harvest.md §2, canonical form §9).

    ``id`` is assigned at filing (per session, never reused); ``origin`` by the round.
    ``subject`` is trimmed and non-empty; ``discussion`` may be empty. Optional fields are
    absent, never null, in canonical JSON.

    ``evidence`` (set by the outcome, never read from a reviewer): one verdict per fenced
    block of the discussion against the scripts its participant ran in the same attempt
    (``{"block", "label", ...}``, :func:`council.evidence.verdict_json`); absent when the
    discussion shows no block or the participant could run no script. ``severity_note``
    says why a policy holds the finding below the severity its reviewer gave
    (docs/evidence-and-asks.md §1).
    """

    id: int | None = None
    anchor: Anchor
    label: Label
    subject: str = Field(min_length=1)
    discussion: str = ""
    origin: Origin | None = None
    severity: Severity | None = None
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    raised_by: tuple[str, ...] | None = Field(default=None, min_length=1)
    evidence: tuple[Verdict, ...] | None = None
    severity_note: str | None = None
    members: tuple[Member, ...] | None = Field(default=None, min_length=2)
    """Each reviewer's own telling, in roster order, when the consolidation merged two or
    more (absent for a finding of one telling): nothing a reviewer said is lost."""
    agreement: Agreement | None = None
    """k of n reviewers raised it (set by the consolidation of a round)."""

    @property
    def raisers(self) -> int:
        """How many reviewers raised it: its agreement's k, else its ``raised_by``, else 1."""
        if self.agreement is not None:
            return self.agreement.k
        return len(self.raised_by) if self.raised_by else 1


class Warning(_Canonical):
    """A note that something was dropped, degraded or guessed (docs/harvest.md §2, §6).

    ``at`` names the entry (``findings[2]``, ``recorded[0]``), ``answer``, ``journal`` or
    a participant id; ``message`` is a sentence for people and is never compared by tests.
    """

    code: WarningCode
    at: str
    message: str


class Harvest(_Canonical):
    """What was read from one reviewer: findings, warnings, and whether it was cut off.

    ``truncated`` is true when the findings are what survived a cut-off answer: absence of
    a finding then means *unknown*, not *nothing to report*.
    """

    findings: tuple[Finding, ...] = ()
    warnings: tuple[Warning, ...] = ()
    truncated: bool = False


class Read(_Canonical):
    """How the reviewers read the change, stamped onto every anchor a harvest builds.

    ``witness`` is the commit the reviewers read (the pinned head tree). ``unpinned``,
    when set, is a sentence saying why the tree was NOT pinned; then no anchor gets a
    witness, whatever ``witness`` says (docs/harvest.md §2, case 147).
    """

    witness: str | None = None
    unpinned: str | None = None

    @property
    def stamp(self) -> str | None:
        """The witness to put on anchors, or None when the tree was not pinned."""
        return None if self.unpinned else self.witness


FINDING: TypeAdapter[Finding] = TypeAdapter(Finding)
FINDINGS: TypeAdapter[list[Finding]] = TypeAdapter(list[Finding])
HARVEST: TypeAdapter[Harvest] = TypeAdapter(Harvest)
ANCHOR: TypeAdapter[Anchor] = TypeAdapter(Anchor)


def canonical(model: BaseModel) -> dict[str, Any]:
    """The canonical JSON object of a model: optional keys absent when unset (§9)."""
    return model.model_dump(mode="json", exclude_none=True)
