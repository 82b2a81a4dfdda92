"""Incremental rounds, the git side: what changed since the session's last reviewed head.

From the head the session's last completed run reviewed
(:meth:`workers.stores.sessions.SessionStore.reviewed`): :func:`plan_since_last` reviews only
the commits after it when it is an ancestor of the new head, else (a force push, no head
yet) the whole change with a note; :func:`interdiff` diffs it to the new head, where the last
round's findings are checked for outdated code (git diffs any two commits, so a force push
still has one while the old head's objects are in the clone); :func:`full_change` is
base..head, where a line comment must land even when the round reviews new commits only.

Source: docs/architecture.md "State in Redis" (sessions, last reviewed head), issue "CI
outputs that forges accept".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from council.change.diff import Change, read_change
from council.errors import ChangeTooLarge, RepositoryError
from council.roster import Roster
from workers.git.repository import Repository
from workers.stores.session_memory import Reviewed


@dataclass(frozen=True)
class SincePlan:
    """Where ``--since-last`` starts: ``since`` (None: the whole change), and why."""

    since: str | None = None
    notes: tuple[str, ...] = field(default=())
    head: str | None = None
    """The head resolved, when ``since`` is set."""


def plan_since_last(repo: Repository, reviewed: Reviewed | None, head: str) -> SincePlan:
    """The start of a ``--since-last`` round, from the session's last reviewed head.

    * no completed run in the session: the whole change (noted);
    * the reviewed head is the new head: ``since`` is that head, so the change is empty
      and the caller says there is nothing new;
    * the reviewed head is an ancestor of the new head: review from it;
    * otherwise (unknown to this clone, or no longer an ancestor after a force push):
      the whole change, noted with the reason.

    Raises :class:`~council.errors.RepositoryError` for an unknown ``head`` only.
    """
    new = repo.resolve(head)
    if reviewed is None:
        return SincePlan(
            notes=(
                "--since-last: no earlier round completed in this session; the whole "
                "change was reviewed",
            )
        )
    short = reviewed.head[:12]
    try:
        last = repo.resolve(reviewed.head)
    except RepositoryError:
        return SincePlan(
            notes=(
                f"--since-last: the last reviewed head {short} is not in this clone "
                "(fetch full history, or it was force-pushed away); the whole change "
                "was reviewed",
            )
        )
    if last == new or repo.is_ancestor(last, new):
        unheard = _unheard_since(repo, reviewed, last, new)
        if unheard is not None:
            return unheard
        return SincePlan(
            since=last,
            head=new,
            notes=(
                f"--since-last: only the commits after {short}, the head the last "
                f"round of this session reviewed (run {reviewed.run})",
            ),
        )
    return SincePlan(
        notes=(
            f"--since-last: the last reviewed head {short} is no longer an ancestor of "
            "the head (a force push?); the whole change was reviewed",
        )
    )


def _unheard_since(repo: Repository, reviewed: Reviewed, last: str, new: str) -> SincePlan | None:
    """The plan when a reviewer of the last round was not heard in full in it: the round
    starts from the oldest head such a reviewer was last heard in (the whole change when
    one was never heard, or its head is gone), so its share of the commits is reviewed;
    None when every reviewer of the last round was heard in full.

    Why: a round can meet its quorum with a reviewer failed; marking its head reviewed for
    everyone would leave that reviewer's share of the commits unreviewed, silently. The
    others review those commits again (their repeats are marked seen, not posted again).
    """
    behind = [pid for pid in reviewed.reviewers or () if reviewed.heard.get(pid) != reviewed.head]
    if not behind:
        return None
    names = ", ".join(behind)
    start = last
    for pid in behind:
        heard = reviewed.heard.get(pid)
        try:
            older = repo.resolve(heard) if heard else None
        except RepositoryError:
            older = None
        if older is None or not repo.is_ancestor(older, new):
            return SincePlan(
                notes=(
                    f"--since-last: {pid} was not heard in full in the last round and has no "
                    "earlier head it was heard in that is still an ancestor; the whole "
                    f"change was reviewed (not heard: {names})",
                )
            )
        if repo.is_ancestor(older, start):
            start = older
    return SincePlan(
        since=start,
        head=new,
        notes=(
            f"--since-last: {names} not heard in full in the last round (run "
            f"{reviewed.run}); this round reviews from {start[:12]}, the oldest head "
            "they were last heard in, so their share of the commits is reviewed",
        ),
    )


def interdiff(
    repo: Repository,
    reviewed: Reviewed | None,
    head: str,
    roster: Roster,
    *,
    cap_bytes: int | None = None,
) -> str | None:
    """The diff text from the last reviewed head to ``head``, filtered by the roster's
    ``[paths]`` like the round's change; None when there is no reviewed head, this
    clone lacks its objects, or it is over ``cap_bytes`` (None: the roster's
    ``max_change_bytes``; git is stopped at the cap): then nothing can be said to be
    outdated. Never raises for the old head; raises :class:`RepositoryError` for an
    unknown ``head``."""
    if reviewed is None:
        return None
    new = repo.resolve(head)
    if reviewed.head == new:  # the head reviewed again: nothing changed since (no git run)
        return _filtered(b"", roster).text
    try:
        raw = _diff(repo, reviewed.head, new, roster, None, cap_bytes)
    except (RepositoryError, ChangeTooLarge):
        return None
    return _filtered(raw, roster).text


def full_change(
    repo: Repository, base: str, head: str, roster: Roster, *, cap_bytes: int | None = None
) -> Change:
    """The change base..head as the pull request shows it: filtered by ``[paths]``, its
    skipped files and those over a cap left out, within ``cap_bytes`` (None: the
    roster's ``max_change_bytes``) like a round's
    (:meth:`~workers.git.change_sorting.ChangeSorting.read_within`), read with the base
    tree's attributes."""
    start = repo.resolve(base)
    return repo.read_within(
        start,
        repo.resolve(head),
        attributes_from=start,
        include=roster.include,
        exclude=roster.exclude,
        policy=roster.skip_policy,
        cap_bytes=cap_bytes or roster.max_change_bytes,
    ).change


def _diff(
    repo: Repository,
    old: str,
    new: str,
    roster: Roster,
    attributes_from: str | None,
    cap_bytes: int | None,
) -> bytes:
    return repo.diff(
        old,
        new,
        attributes_from=attributes_from,
        include=roster.include,
        exclude=roster.exclude,
        cap_bytes=cap_bytes or roster.max_change_bytes,
    )


def _filtered(raw: bytes, roster: Roster) -> Change:
    return read_change(raw, roster.include, roster.exclude)[0]
