"""Landing a report on its diff: which findings a code host can show on a changed line.

A host takes a line comment only on a line its diff shows, and a range only within one
hunk (:func:`council.change.diff.landing`). A finding that does not land is kept and
listed "not on a changed line", never dropped; the verdict is recorded once, in
:attr:`CouncilReport.off_diff`, so every renderer reads the same one. Anchor paths are
first read as the repository paths the diff uses (:func:`resolve_path`): only here are the
change's paths known. Source: docs/harvest.md §2 (anchors).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from council.change.diff import Change, landing
from council.harvest.paths import tidy_path
from council.model.findings import Anchor, ChangeAnchor, Finding
from council.model.report import CouncilReport

_DIFF_PREFIXES = ("a/", "b/")
"""The prefixes ``git diff`` puts before old and new paths, which models copy."""


def resolve_path(path: str, changed: Collection[str], roots: Sequence[str] = ()) -> str:
    """The repository path ``path`` names: a changed path when it surely is one.

    ``changed``: the change's paths (both sides); ``roots``: absolute directories the tree
    lives in. On the tidied spelling (:func:`~council.harvest.paths.tidy_path`), first match
    wins: a changed path is itself (a real directory ``a`` or ``b`` keeps working); ``a/X`` or
    ``b/X`` → ``X`` when ``X`` is changed; an absolute path under a root → the rest of it; any
    other absolute path → the ONE changed path it ends with on a segment boundary; backslashes
    are read as slashes only when that resolves the path. Otherwise the tidied path: never a
    guess between two files. Pure, idempotent, never raises. Source: docs/harvest.md §2 (anchors).
    """
    given = tidy_path(path)
    if given in changed:
        return given
    bases = tuple(_root_prefix(root) for root in roots if root.startswith("/"))
    forms = [given]
    if "\\" in given:
        forms.append(tidy_path(given.replace("\\", "/")))
    for form in forms:
        found = _named(form, changed, bases)
        if found is not None:
            return found
    return given


def _root_prefix(root: str) -> str:
    """An absolute root as a prefix ending in one ``/`` (``/`` stays ``/``)."""
    return tidy_path(root).rstrip("/") + "/"


def _named(form: str, changed: Collection[str], bases: Sequence[str]) -> str | None:
    """The repository path a tidied spelling names for sure (rules 1–4), or None."""
    if form in changed:
        return form
    if form.startswith(_DIFF_PREFIXES):
        stripped = form[len("a/") :]
        return stripped if stripped in changed else None
    if not form.startswith("/"):
        return None
    for base in bases:
        if form.startswith(base) and len(form) > len(base):
            return form[len(base) :]
    ends = {path for path in changed if form.endswith("/" + path)}
    return ends.pop() if len(ends) == 1 else None


def resolve_anchor(anchor: Anchor, change: Change, roots: Sequence[str] = ()) -> Anchor:
    """``anchor`` with its path read by :func:`resolve_path` against ``change``'s paths.

    A change anchor, and an anchor whose path is already what it names, come back as the
    same object; otherwise a copy with the new path (side, lines and witness kept).
    Never raises. Source: docs/harvest.md §2.
    """
    return _resolved(anchor, _changed_paths(change), roots)


def resolve_findings(
    findings: Sequence[Finding], change: Change, roots: Sequence[str] = ()
) -> list[Finding]:
    """``findings`` with each anchor path read by :func:`resolve_path` against
    ``change``'s paths (a finding whose path is already what it names is kept as it is).

    Why before consolidation: ``/repo/app.py`` from one reviewer and ``app.py`` from
    another must merge, and the session files the clean path. Never raises.
    """
    changed = _changed_paths(change)
    out: list[Finding] = []
    for finding in findings:
        anchor = _resolved(finding.anchor, changed, roots)
        out.append(
            finding if anchor is finding.anchor else finding.model_copy(update={"anchor": anchor})
        )
    return out


def _changed_paths(change: Change) -> frozenset[str]:
    """Every path of the change, new and old sides (a rename's both names)."""
    return frozenset(p for f in change.files for p in (f.path, f.old_path) if p is not None)


def _resolved(anchor: Anchor, changed: Collection[str], roots: Sequence[str]) -> Anchor:
    """:func:`resolve_anchor` with the change's paths already gathered."""
    if isinstance(anchor, ChangeAnchor):
        return anchor
    path = resolve_path(anchor.path, changed, roots)
    return anchor if path == anchor.path else anchor.model_copy(update={"path": path})


def land(report: CouncilReport, change: Change, roots: Sequence[str] = ()) -> CouncilReport:
    """The report with anchor paths resolved and ``off_diff`` filled (id → why it misses).

    Each finding's anchor path is first read as the repository path it names
    (:func:`resolve_anchor`; the report's ``repository`` is a known root, ``roots`` may
    add others, such as the worker's tree directory), so ``./app.py`` or
    ``/path/to/repo/app.py`` lands, posts and renders as ``app.py``. Then every finding
    is checked with :func:`council.change.diff.landing` (codes ``file-absent``,
    ``line-absent``, ``range-crosses-hunks``, ``range-inverted``). Nothing is dropped:
    findings keep their order, ids and every other field. A finding without an id
    cannot be keyed and is left out of ``off_diff``; renderers treat it as not landed.
    Any earlier ``off_diff`` is replaced, so landing twice on the same change gives the
    same report. Never raises. Source: docs/harvest.md §2.
    """
    changed = _changed_paths(change)
    known = (report.repository, *roots)
    findings: list[Finding] = []
    off_diff: dict[int, str] = {}
    for finding in report.findings:
        anchor = _resolved(finding.anchor, changed, known)
        if anchor is not finding.anchor:
            finding = finding.model_copy(update={"anchor": anchor})
        findings.append(finding)
        if finding.id is None:
            continue
        miss = landing(change, finding.anchor)
        if miss is not None:
            off_diff[finding.id] = miss
    return report.model_copy(update={"findings": tuple(findings), "off_diff": off_diff})
