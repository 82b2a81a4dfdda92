"""What council posts on a forge, recognized again: the hidden marker on a body's first
line, and the one summary per pull (merge) request, edited in place.

A marker (``<!-- council:summary run=RUN head=SHA -->``) names the run and head a body
was posted for. It proves nothing alone (anyone can type it): callers keep only the
bodies their own token's user posted, and pass those here. Runtime layer (the posting
itself is the caller's). Source: docs/architecture.md "Reports, the CLI and the gate".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

SUMMARY_PREFIX = "<!-- council:summary"
"""How the summary comment starts (earlier versions: ``<!-- council:summary -->``)."""

_MARKER = re.compile(r"<!-- council:(review|summary)(?: run=(\S+) head=(\S+))? -->")

Say = Callable[[str], None]


def marker(kind: str, run_id: str, head: str) -> str:
    """The hidden first line of a body council posts for a run at a head."""
    return f"<!-- council:{kind} run={run_id} head={head} -->"


def marked_run(body: str) -> tuple[str, str] | None:
    """The (run id, head) the first line of ``body`` names; None when it names none."""
    first = body.split("\n", 1)[0].strip()
    found = _MARKER.fullmatch(first)
    if found is None or found.group(2) is None:
        return None
    return found.group(2), found.group(3)


def is_summary(body: str) -> bool:
    """Whether ``body`` starts as council's summary does."""
    return body.startswith(SUMMARY_PREFIX)


def upsert_summary(
    ours: Sequence[tuple[int, str]],
    body: str,
    *,
    run: tuple[str, str],
    current: bool,
    create: Callable[[str], object],
    update: Callable[[int, str], object],
    noun: str,
    say: Say,
) -> None:
    """Make the one summary say ``body``: add it when ``ours`` (our summaries as (id,
    body), oldest first) is empty, else edit the first in place, unless it already says
    the same, or it shows another (run id, head) than ``run`` while the pull request has
    moved on (``current`` false): an older run retried late must not overwrite a newer
    round's summary. ``noun`` names it in what is said (``summary comment``)."""
    if not ours:
        say(f"added {noun} {create(body)}")
        return
    ident, found = ours[0]
    if found == body:
        say(f"{noun} {ident} is up to date")
        return
    shown = marked_run(found)
    if not current and shown is not None and shown != run:
        say(f"{noun} {ident} shows run {shown[0]}, of a later head: left as it is")
        return
    update(ident, body)
    say(f"updated {noun} {ident}")
