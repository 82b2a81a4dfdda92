"""Coverage: which files of the change each reviewer saw, which were skipped and why,
which none saw.

The plan is made when the round is prepared (:class:`Coverage` with ``meant``,
``skipped`` and ``unreviewed``; no reviewers yet) and travels with the run record; once
the reviewers are heard, :func:`heard_coverage` adds a line per reviewer that reads the
change in its prompt (model and command reviewers; analyzers read the tree and are not
counted). A file meant to be seen that no such reviewer saw, or one left unreviewed (by
a cap, or binary of no known kind), makes the round incomplete
(:func:`council.round.gate.incomplete_reasons`). A reviewer may see a change in several
slices: ``slices`` and ``slices_failed`` count them (1 and 0 for a change sent whole).
Pure. Source: docs/guide.md "What is skipped, and coverage".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

NOT_SHOWN = "not reviewed, left out by a cap:"
"""How the run note naming the files a cap left out begins (the per-file cap, the hard
cap of the change); the Markdown report shows it under its title."""

NOT_READABLE = "not reviewed, no reviewer can read it:"
"""How the run note naming the files git shows as binary that no rule skips begins
(:func:`council.change.skipping.binary_unknown`); shown under its title like
:data:`NOT_SHOWN`."""

PROGRAM_READERS = frozenset({"sarif"})
"""Backends that read the tree, not a prompt holding the change: not in coverage."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SkippedFile(_Frozen):
    """A file of the change not sent, with its reason code (``lock``, ``minified``,
    ``vendored``, ``generated``, ``binary``, ``unreadable``, ``file-cap``,
    ``change-cap``, ``budget``;
    :data:`council.change.skipping.REASONS`) and ``why`` for people."""

    path: str
    reason: str
    why: str


class ReviewerCoverage(_Frozen):
    """One prompt reviewer's share: the files it saw (heard in full), those sent to it
    but not heard (it failed, stopped or answered in part), those skipped for it alone
    (beyond the round's), and its slices (1 for a change sent whole)."""

    id: str
    seen: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    skipped: tuple[SkippedFile, ...] = ()
    slices: int = 1
    slices_failed: int = 0
    optional: bool = False
    """The roster marked it ``optional``: what it alone was sent may go unseen."""


class Coverage(_Frozen):
    """The round's coverage. ``meant``: the files sent to the prompt reviewers, diff
    order; ``skipped``: left out on purpose (never gating); ``unreviewed``: left out by a
    cap (over the per-file cap, or past the change's hard cap) or unreadable (binary of
    no known kind): gating, like a reviewer not heard; ``reviewers``: one line per
    prompt reviewer, roster order."""

    meant: tuple[str, ...] = ()
    skipped: tuple[SkippedFile, ...] = ()
    unreviewed: tuple[SkippedFile, ...] = ()
    reviewers: tuple[ReviewerCoverage, ...] = ()
    heard: bool = False
    """Whether ``reviewers`` was filled from the heard round (False: a plan)."""
    units: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """A reviewer sent in slices: each slice's id (``hawk@2``) → the paths it shows."""
    cut: dict[str, tuple[SkippedFile, ...]] = Field(default_factory=dict)
    """A reviewer → the files of which none of its prompts shows every line (a line alone
    over its context budget), reason ``budget``: not seen by it, whatever else it saw."""

    def unseen(self) -> tuple[str, ...]:
        """The files no prompt reviewer saw though one should have: those left out by a
        cap, then (once heard, when a prompt reviewer was not ``optional``) those meant
        and seen by none; diff order within each."""
        out = [f.path for f in self.unreviewed]
        if self.heard and any(not r.optional for r in self.reviewers):
            seen = {p for r in self.reviewers for p in r.seen}
            out += [p for p in self.meant if p not in seen]
        return tuple(out)


def heard_coverage(
    plan: Coverage,
    reviewers: Iterable[tuple[str, str, bool, bool]],
    slices: Mapping[str, Sequence[tuple[str, bool]]] | None = None,
) -> Coverage:
    """``plan`` with a line for each reviewer ``(id, backend, heard_in_full, optional)``
    that read the change in its prompt: all of ``meant`` seen when heard in full, else
    failed. A reviewer sent in slices (``slices``: its id → ``(slice id, heard_in_full)``
    each) saw the paths of the slices heard in full; the others' paths are failed."""
    lines = tuple(
        _without_cut(
            _sliced(who, optional, (slices or {})[who], plan)
            if (slices or {}).get(who)
            else ReviewerCoverage(id=who, seen=plan.meant, optional=optional)
            if whole
            else ReviewerCoverage(id=who, failed=plan.meant, slices_failed=1, optional=optional),
            plan.cut.get(who, ()),
        )
        for who, backend, whole, optional in reviewers
        if backend not in PROGRAM_READERS
    )
    return plan.model_copy(update={"reviewers": lines, "heard": True})


def _without_cut(line: ReviewerCoverage, cut: Sequence[SkippedFile]) -> ReviewerCoverage:
    """``line`` with the files its prompts showed only in part moved from seen (or failed)
    to skipped: a cut we made is never a file seen."""
    if not cut:
        return line
    gone = {f.path for f in cut}
    return line.model_copy(
        update={
            "seen": tuple(p for p in line.seen if p not in gone),
            "failed": tuple(p for p in line.failed if p not in gone),
            "skipped": (*line.skipped, *cut),
        }
    )


def _sliced(
    who: str, optional: bool, units: Sequence[tuple[str, bool]], plan: Coverage
) -> ReviewerCoverage:
    seen = {p for unit, whole in units if whole for p in plan.units.get(unit, ())}
    failed = {p for unit, whole in units if not whole for p in plan.units.get(unit, ())}
    return ReviewerCoverage(
        id=who,
        seen=tuple(p for p in plan.meant if p in seen),
        failed=tuple(p for p in plan.meant if p in failed and p not in seen),
        slices=len(units),
        slices_failed=sum(1 for _, whole in units if not whole),
        optional=optional,
    )


def unseen_phrase(coverage: Coverage, shown: int = 5) -> str | None:
    """The gate's phrase for the files no prompt reviewer saw (``2 file(s) no prompt
    reviewer saw: big.sql (over the per-file cap), b.py``), or None when none; an
    analyzer reads the tree, not the change, so it does not count."""
    unseen = coverage.unseen()
    if not unseen:
        return None
    why = {f.path: f.why for f in coverage.unreviewed}
    for r in coverage.reviewers:
        for f in r.skipped:
            if f.reason == "budget":
                why.setdefault(f.path, "a line over a reviewer's context budget")
    named = [f"{p} ({why[p]})" if p in why else p for p in unseen[:shown]]
    more = f" and {len(unseen) - shown} more" if len(unseen) > shown else ""
    return f"{len(unseen)} file(s) no prompt reviewer saw: {', '.join(named)}{more}"
