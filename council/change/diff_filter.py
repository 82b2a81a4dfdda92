"""Which findings gate and post inline: the ``--filter`` modes, as reviewdog has them.

A reviewer sees the whole tree, so it also reports problems the change did not make; they
are worth reading, but a pull request should not fail on them, nor be commented where it
did not write. A line finding passes ``added`` (the default) when it touches an added line,
``diff_context`` when it lands on any line the diff shows, ``file`` when its file is
changed; a file finding passes when its file is changed, a change-level one always;
``nofilter`` passes all. A finding outside stays listed (with why), never posted inline nor
gating; in every mode, one on a path in neither side nor the head tree (a model's invented
path) does not gate either. Source: docs/architecture.md "Reports, the CLI and the gate".
"""

from __future__ import annotations

from collections.abc import Collection

from council.change.diff import Change, added_lines, landing
from council.model.findings import Anchor, ChangeAnchor, FileAnchor, Finding, LineAnchor
from council.model.gate_choices import FILTER_MODES, FilterMode
from council.model.report import CouncilReport

NO_SUCH_PATH = "no-such-path"
"""The reason of a finding whose path is in neither side of the change nor the head tree."""


def parse_filter(text: str) -> FilterMode:
    """A ``--filter`` value, typed; ValueError naming the accepted values otherwise."""
    for mode in FILTER_MODES:
        if text == mode:
            return mode
    raise ValueError(f"unknown filter {text!r}; use one of: {', '.join(FILTER_MODES)}")


def filter_reason(
    finding: Finding, change: Change, mode: FilterMode, tree_paths: Collection[str] | None
) -> str | None:
    """Why ``finding`` is outside the filter (``no-such-path``, ``not-added``,
    ``not-in-diff``, ``file-unchanged``), or None when it passes.

    ``tree_paths`` are the head tree's paths (None when unknown: then no path is called
    invented). A consolidated finding passes when its anchor OR any of its members'
    anchors passes: each member is one reviewer's telling, and the finding gates if any
    telling would (a model listed before bandit in the roster, telling bandit's critical
    on an unchanged line, must not take it out of the gate).
    """
    reason = anchor_reason(finding.anchor, change, mode, tree_paths)
    if reason is None or not finding.members:
        return reason
    for member in finding.members:
        if anchor_reason(member.anchor, change, mode, tree_paths) is None:
            return None
    return reason


def anchor_reason(
    anchor: Anchor, change: Change, mode: FilterMode, tree_paths: Collection[str] | None
) -> str | None:
    """Why a finding at ``anchor`` is outside the filter, or None (see
    :func:`filter_reason`)."""
    if isinstance(anchor, ChangeAnchor):
        return None
    changed = {p for f in change.files for p in (f.path, f.old_path) if p is not None}
    if anchor.path not in changed:
        if tree_paths is not None and anchor.path not in tree_paths:
            return NO_SUCH_PATH
        return None if mode == "nofilter" else "file-unchanged"
    if mode in ("nofilter", "file") or isinstance(anchor, FileAnchor):
        return None
    assert isinstance(anchor, LineAnchor)
    if mode == "diff_context":
        return None if landing(change, anchor) is None else "not-in-diff"
    return None if _touches_added(anchor, change) else "not-added"


def _touches_added(anchor: LineAnchor, change: Change) -> bool:
    """Whether a new-side line range holds an added line (an old-side anchor points at
    removed code: it touches the change when the removed lines are in range)."""
    first = anchor.start_line if anchor.start_line is not None else anchor.line
    low, high = min(first, anchor.line), max(first, anchor.line)
    if anchor.side == "new":
        added = added_lines(change).get(anchor.path, frozenset())
        return any(low <= line <= high for line in added)  # never the range's numbers
    return any(
        low <= n <= high
        for f in change.files
        if f.side_path("old") == anchor.path
        for hunk in f.hunks
        for n in hunk.removed
    )


FILTER_REASONS: dict[str, str] = {
    NO_SUCH_PATH: "its file exists in neither side of the change nor the head tree",
    "not-added": "it touches no line the change added",
    "not-in-diff": "it is on no line the diff shows",
    "file-unchanged": "its file is not changed by the change",
}
"""Each reason, for people."""


def apply_filter(
    report: CouncilReport,
    change: Change,
    mode: FilterMode,
    tree_paths: Collection[str] | None = None,
) -> CouncilReport:
    """The report with ``filtered`` set (finding id → reason) for this round's findings
    outside the filter. Nothing is dropped; any earlier ``filtered`` is replaced."""
    filtered = {
        f.id: reason
        for f in report.findings
        if f.id is not None and (reason := filter_reason(f, change, mode, tree_paths))
    }
    return report.model_copy(update={"filtered": filtered}).gated(filter=mode)
