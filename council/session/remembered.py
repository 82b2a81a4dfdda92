"""Recall: the findings a session remembers from its rounds, and the ids they keep.

A finding's id names one problem for the session's life ("#5 is still there" over three
pushes; a dismissal of #5 holds for its rewording). :func:`file_recalled` recognizes a
round's consolidated findings among the remembered ones
(:func:`council.merging.agreement.recognize`): a recognized one takes the earlier id, the
others new ids in filing order. :func:`recalled` bounds the memory: the latest telling of
each finding reported, newest first, at most :data:`RECALL_CAP`, without members and
evidence (about 2 KB a finding). Pure: the runtime stores it (``session:{s}:recall``).
Source: docs/identity-and-clocks.md "Identity of a finding across rounds"; docs/harvest.md §8.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from council.merging.agreement import recognize
from council.merging.consolidation import file_findings
from council.model.findings import Finding

RECALL_CAP = 500
"""Most findings a session remembers for recognition (the latest telling of each id,
most recently reported first): a round of a few dozen findings keeps about ten rounds'
worth, and recognizing a round costs at most its findings × this many scored pairs on
one file."""

DISCUSSION_KEPT = 2_000
"""Characters of a remembered finding's discussion kept: as many as the agreement
relation reads (:data:`council.merging.agreement.words.READ_CHARS`)."""


def file_recalled(
    merged: Sequence[Finding],
    first_id: int,
    remembered: Sequence[Finding],
    roster_order: Sequence[str] = (),
    programs: Collection[str] = frozenset(),
) -> tuple[list[Finding], dict[int, int]]:
    """Give a round's merged findings their ids: a remembered one's when recognized, else
    a new one.

    ``merged``: the consolidated findings in filing order, origins set, no ids;
    ``remembered``: findings of earlier rounds of the session with their ids
    (:func:`recalled`); ``roster_order``: participant ids in roster order (ties).
    Recognized findings take the earlier id; the others get ``first_id``,
    ``first_id + 1``, … in filing order (so the caller takes from the counter only
    ``len(merged) − len(recognized)`` ids). Two findings of the round never share an
    id. Returns ``(filed findings in filing order, id → earlier id for those recognized
    by agreement rather than by fingerprint)``. Raises ValueError as
    :func:`council.merging.consolidation.file_findings` does. Source: docs/identity-and-clocks.md
    "Identity of a finding across rounds".
    """
    return kept_ids(file_findings(merged, first_id), first_id, remembered, roster_order, programs)


def kept_ids(
    filed: Sequence[Finding],
    first_id: int,
    remembered: Sequence[Finding],
    roster_order: Sequence[str] = (),
    programs: Collection[str] = frozenset(),
) -> tuple[list[Finding], dict[int, int]]:
    """Findings just numbered from ``first_id`` (new to the session), with the id of the
    remembered finding each is recognized as, and the others numbered again from
    ``first_id`` in order, so the ids taken from the counter stay consecutive.

    ``remembered`` findings without an id are ignored; findings only ``programs``
    (program reviewers' ids) told are recognized by fingerprint only
    (:func:`council.merging.agreement.recognize`). Returns ``(findings in the order given, id →
    earlier id for those recognized by agreement)``. Never raises.
    """
    with_ids = [f for f in remembered if f.id is not None]
    found = recognize(filed, with_ids, roster_order, programs)
    out: list[Finding] = []
    reworded: dict[int, int] = {}
    fresh = first_id
    for at, finding in enumerate(filed):
        seen = found.get(at)
        ident = seen.earlier.id if seen is not None else None
        if seen is None or ident is None:
            out.append(finding.model_copy(update={"id": fresh}))
            fresh += 1
            continue
        out.append(finding.model_copy(update={"id": ident}))
        if seen.by == "agreement":
            reworded[ident] = ident
    return out, reworded


def recalled(reported: Iterable[Finding], before: Sequence[Finding]) -> tuple[Finding, ...]:
    """What the session remembers after a completed round: the findings it ``reported``
    (with ids), then those of ``before`` (the memory so far) with other ids, at most
    :data:`RECALL_CAP`, each slimmed (no members, evidence, severity note; the
    discussion cut to :data:`DISCUSSION_KEPT` characters). Never raises."""
    kept: dict[int, Finding] = {}
    for finding in (*reported, *before):
        if finding.id is None or finding.id in kept:
            continue
        kept[finding.id] = _slim(finding)
        if len(kept) >= RECALL_CAP:
            break
    return tuple(kept.values())


def _slim(finding: Finding) -> Finding:
    update: dict[str, object] = {"members": None, "evidence": None, "severity_note": None}
    if len(finding.discussion) > DISCUSSION_KEPT:
        update["discussion"] = finding.discussion[:DISCUSSION_KEPT]
    return finding.model_copy(update=update)
