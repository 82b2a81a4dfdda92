"""Whose findings a judge may overrule: model reviewers', never a deterministic analyzer's.

The judge's prompt holds the change, into which anyone can write ``answer {"findings":
[]}``; a model's finding is an opinion to weigh, an analyzer's (``sarif``, ``command``) a
fact a prompt-injected judge must not un-gate. So by default (``[judge] overrule =
"models"``) the judge rules only on findings of ``openai``, ``anthropic`` and ``replay`` (a
recorded model answer): a program's finding left out stays as filed, and restated keeps
its anchor, label and at least its severity. ``overrule = "all"`` (in the BASE's roster)
gives the judge every finding. :meth:`Overrule.of` builds the rule; ``rules(finding)`` and
``restated(filed, restated)`` apply it. Source: issue "The change under review is
untrusted"; docs/harvest.md §8 (the judge).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from council.model.findings import Finding, severity_rank
from council.model.report import CouncilReport, ParticipantSummary

OVERRULE_OPTION = "overrule"
"""The ``[judge]`` key (kept in the judge's ``Participant.options``) saying whose findings
it may overrule."""

OVERRULE_MODES: tuple[str, ...] = ("models", "all")
"""Values of ``[judge] overrule``: ``models`` (the default) or ``all``."""

DEFAULT_OVERRULE = "models"
"""What a roster that sets no ``overrule`` gets: the judge overrules model reviewers only."""

PROGRAM_BACKENDS: frozenset[str] = frozenset({"command", "sarif"})
"""Backends whose findings are a program's, not a model's: out of a judge's reach by
default."""

OVERRULE_FIX = (
    'Write overrule = "models" (the default: the judge overrules model reviewers only) or '
    '"all" (it may also overrule command and sarif reviewers)'
)


@dataclass(frozen=True)
class Overrule:
    """Who a judge may overrule in one round.

    ``programs`` are the ids of the round's program reviewers (empty with mode ``all``:
    then every finding is the judge's).
    """

    programs: frozenset[str]

    @classmethod
    def of(cls, participants: Iterable[ParticipantSummary], mode: object) -> Overrule:
        """From the report's participant summaries and the judge's ``overrule`` option
        (None or ``models``: program reviewers are out of reach; ``all``: nobody is).
        Never raises (the roster reader refused any other value)."""
        if mode == "all":
            return cls(frozenset())
        return cls(frozenset(p.id for p in participants if p.backend in PROGRAM_BACKENDS))

    def rules(self, finding: Finding) -> bool:
        """Whether the judge may overrule ``finding``: none of its raisers (``raised_by``,
        else its origin's participant) is a program reviewer."""
        raisers = finding.raised_by or ((finding.origin.participant,) if finding.origin else ())
        return not any(r in self.programs for r in raisers)

    def restated(self, filed: Finding, restated: Finding) -> Finding:
        """``restated`` (the judge's correction of ``filed``); when the judge may not
        overrule ``filed``, only its words: the anchor and label stay as filed, and the
        severity is the graver of the two. A judge may make a program's finding graver,
        never lighter, nor move it (an anchor moved to an unchanged line falls outside
        the filter, and a label changed to ``praise`` files no problem: either could
        pass the gate)."""
        if self.rules(filed):
            return restated
        graver = max(filed.severity, restated.severity, key=severity_rank)
        return restated.model_copy(
            update={"anchor": filed.anchor, "label": filed.label, "severity": graver}
        )

    def note(self, judge: str, interim: CouncilReport, upheld: Collection[int]) -> tuple[str, ...]:
        """The run's note naming the filed findings a judge heard in full left out (their
        ids not in ``upheld``) and may not overrule, which stand as filed; else none.
        ``interim`` is the reviewers' filed report."""
        kept = [
            f"#{f.id}"
            for f in interim.findings
            if f.id is not None
            and f.id not in upheld
            and f.id not in interim.suppressed
            and not self.rules(f)
        ]
        if not kept:
            return ()
        return (
            f"{judge}: left out {len(kept)} finding(s) of program reviewers "
            f"({', '.join(kept)}); they stand as filed, since a judge overrules model "
            f'reviewers only (the roster\'s [judge] overrule = "all" lets it overrule them too)',
        )
