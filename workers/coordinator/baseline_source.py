"""Where a review's baseline comes from: the BASE ref's tree, or ``--baseline PATH``.

The committed baseline (:mod:`council.session.baseline`) decides which findings stop gating, so
it is trusted configuration, read like the roster: from the BASE ref, never from the
head under review (a change must not accept its own findings). A change that edits the
file is told so, and the base version is used. Runtime layer (reads git and files).
Source: docs/architecture.md "The shape" (trusted roster); issue "CI outputs that forges
accept".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from council.session.baseline import BASELINE_FILE, Baseline, UnreadableBaseline, read_baseline
from workers.git.change_listing import DEFAULT_MAX_CHANGED_FILES
from workers.git.repository import Repository


@dataclass(frozen=True)
class BaselineSource:
    """The baseline's text (None: there is none), where it was read, and notes."""

    text: str | None = None
    where: str = ""
    notes: tuple[str, ...] = field(default=())

    def parsed(self) -> Baseline:
        """The baseline it holds (empty when none); :class:`UnreadableBaseline` (exit 2)
        naming where it was read when the file is not one council reads."""
        if self.text is None:
            return Baseline()
        try:
            return read_baseline(self.text)
        except UnreadableBaseline as exc:
            raise UnreadableBaseline(f"{exc.reason} (read from {self.where})") from None


def read_trusted_baseline(
    repo_path: Path,
    base: str,
    head: str,
    explicit: Path | None,
    *,
    max_changed_files: int = DEFAULT_MAX_CHANGED_FILES,
    target: str | None = None,
) -> BaselineSource:
    """The baseline for a review of ``base..head``: ``explicit`` when given, else
    :data:`~council.session.baseline.BASELINE_FILE` in the tree of ``target`` (the base branch
    as given, whose tip may be past ``base``, the merge base the change is reviewed
    from: a baseline committed to the base branch after the pull request left it
    holds), or of ``base`` when no target is given (absent: no baseline). Both are
    trusted; the head never is.

    Raises :class:`UnreadableBaseline` (exit 2) for an explicit file that cannot be read
    and :class:`~council.errors.RepositoryError` for an unknown ref; the change's
    files are listed within ``max_changed_files`` (else
    :class:`~council.errors.ChangeTooLarge`).
    """
    if explicit is not None:
        try:
            text = explicit.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else "it is not UTF-8 text"
            raise UnreadableBaseline(f"--baseline {explicit} cannot be read ({why})") from None
        return BaselineSource(text=text, where=str(explicit))
    repo = Repository(repo_path, max_changed_files=max_changed_files)
    base_sha = repo.resolve(base)
    read_sha = repo.resolve(target) if target is not None else base_sha
    blob = repo.read_file(read_sha, BASELINE_FILE)
    notes: tuple[str, ...] = ()
    if BASELINE_FILE in repo.changed_paths(base_sha, repo.resolve(head)):
        notes = (
            f"the change edits {BASELINE_FILE}; the base version was used (a change cannot "
            "accept its own findings)",
        )
    if blob is None:
        return BaselineSource(notes=notes)
    return BaselineSource(
        text=blob.decode("utf-8", errors="replace"),
        where=f"{BASELINE_FILE}@{read_sha[:12]}",
        notes=notes,
    )
