"""What a round trusts, read only where it is trusted: the roster, persona charters, programs.

A change under review cannot choose its own reviewers, their lenses or the programs they
run: all three are read beside an explicit ``--roster`` file outside the repository, else
from the BASE tree of the repository (a commit id), never from the head under review. An
explicit ``--roster`` that is a file of the repository (``--roster council.toml`` in a CI
checkout of the head) is the change's to edit, so it is read from the BASE tree too, and
what it names relative to it from beside it there (:func:`roster_in_repo`). Each reader refuses with
:class:`~council.errors.RosterError` (exit 2) naming the field, the path and the fix,
before anything is sent. Source: docs/architecture.md "The shape" (the TRUSTED roster, from
the base ref), docs/identity-and-clocks.md (personas).
"""

from __future__ import annotations

import os
import posixpath
import shlex
from collections.abc import Sequence
from pathlib import Path

from council.errors import RosterError
from council.model.participant import Participant
from council.roster import Roster, parse_roster
from council.roster.personas import load_persona, parse_charter
from reviewers.programs.process import program_trouble
from workers.git.repository import Repository

ROSTER_FILE = "council.toml"
"""The roster's name at the root of the BASE tree."""


BASE_ROSTER_USED = "the base version was used"
"""Words of every note saying the roster was read from the base ref, not the file a
person may be looking at (the CLI repeats such notes with a refusal)."""


def roster_in_repo(repo: Repository, roster_path: Path, base: str, head: str) -> str | None:
    """The repository path of an explicit ``--roster`` that is a file of the repository
    under review, committed at ``base``: it is read from the BASE tree, as the default
    roster is. None: a roster outside the repository, or a local file neither commit
    holds (read where it is: the change did not write it).

    Raises :class:`RosterError` (exit 2) when only the head holds it (the change adds
    the roster that would choose its reviewers), when the base holds it as something
    other than a file, and when its path goes through a link or a submodule of either
    commit (the change could point it elsewhere).
    """
    name = _repo_name(repo.path.resolve(), roster_path)
    if name is None:
        return None
    parts = name.split("/")
    fix = "Pass the roster's own path, or a roster from outside the repository."
    for k in range(1, len(parts)):
        prefix = "/".join(parts[:k])
        for commit, which in ((base, f"the base ref {base[:12]}"), (head, "the head")):
            mode = repo.tree_mode(commit, prefix)
            if mode == "120000":
                raise RosterError(
                    str(roster_path), f"goes through {prefix}, a link in {which}", fix
                )
            if mode == "160000":
                raise RosterError(
                    str(roster_path),
                    f"is inside {prefix}, a submodule in {which}: the change chooses the "
                    "commit a submodule's files come from",
                    "Commit the roster in the repository itself, or pass a roster from "
                    "outside the repository.",
                )
    mode = repo.tree_mode(base, name)
    if mode in ("100644", "100755"):
        return name
    if mode is not None:
        raise RosterError(
            str(roster_path),
            f"is {name} of the repository under review, which the base ref {base[:12]} "
            f"holds as git mode {mode}, not a file",
            "Commit the roster itself on the base branch, or pass a roster from outside "
            "the repository.",
        )
    if repo.tree_mode(head, name) is not None:
        raise RosterError(
            str(roster_path),
            f"is {name}, which the change under review adds (a change cannot choose its "
            f"own reviewers; a roster in the repository is read from the base ref "
            f"{base[:12]})",
            "Commit the roster on the base branch first, or pass a roster from outside "
            "the repository.",
        )
    return None


def _repo_name(top: Path, roster_path: Path) -> str | None:
    """``roster_path`` relative to the repository whose top level is ``top`` (resolved),
    links inside the repository NOT followed: the path from the first of its directories
    that is the top level (a checkout reached through a linked prefix counts); else the
    file the path leads to when that is inside the repository; else None."""
    given = Path(os.path.normpath(roster_path.absolute()))
    for k in range(1, len(given.parts)):
        if Path(*given.parts[:k]).resolve() == top:
            return "/".join(given.parts[k:])
    led = roster_path.resolve()
    return led.relative_to(top).as_posix() if led.is_relative_to(top) else None


def read_roster(
    repo: Repository,
    roster_path: Path | None,
    base: str,
    head: str,
    in_repo: str | None = None,
) -> tuple[Roster, tuple[str, ...]]:
    """The trusted roster and the note it brings: ``roster_path`` (``--roster``), else
    ``council.toml`` of the BASE tree at commit ``base``, never the head's. ``in_repo``
    (:func:`roster_in_repo`): ``--roster`` names that file of the repository, read from
    the BASE tree too. When the change (``base`` → ``head``) edits the file read from the
    base, or the file on disk differs from it, a note says the base version was used.

    Raises :class:`RosterError` (exit 2) for a roster that cannot be read, is not UTF-8,
    is missing from the base tree, or does not parse (naming the field path).
    """
    changed = repo.changed_paths(base, head)
    if roster_path is not None and in_repo is None:
        beside = _roster_beside(roster_path)
        return beside, beside.notes
    name = in_repo or ROSTER_FILE
    blob = repo.read_file(base, name)
    if blob is None:
        raise RosterError(
            name,
            f"there is no {name} {'in' if in_repo else 'at the root of'} the base ref "
            f"{base[:12]}",
            "Commit a roster (see examples/council.toml) on the base branch, "
            "or pass --roster PATH.",
        )
    notes: tuple[str, ...] = ()
    if name in changed:
        notes = (
            f"the change edits {name}; {BASE_ROSTER_USED} (a change cannot "
            f"choose its own reviewers)",
        )
    elif roster_path is not None and roster_differs(roster_path, blob):
        notes = (
            f"--roster {name} on disk differs from the base ref's; {BASE_ROSTER_USED} "
            f"(a roster in the repository under review is read from the base ref)",
        )
    text = blob.decode("utf-8", errors="replace")
    roster = parse_roster(text, f"{name}@{base[:12]}")
    return roster, (*notes, *roster.notes)


def roster_differs(path: Path, blob: bytes) -> bool:
    """Whether the file at ``path`` holds other bytes than ``blob`` (unreadable, not a
    regular file, or another size: it does). Reads at most ``len(blob)`` + 1 bytes: the
    file on disk is the checkout's."""
    try:
        if not path.is_file() or path.stat().st_size != len(blob):
            return True
        with path.open("rb") as held:
            return held.read(len(blob) + 1) != blob
    except OSError:
        return True


def in_tree(beside: str, path: str) -> str | None:
    """``path`` (relative, as a roster names it) in the base tree, read beside the
    roster's directory ``beside`` (``""``: the root); None when it leaves the tree."""
    joined = posixpath.normpath(posixpath.join(beside, path.strip().removeprefix("./")))
    if joined == ".." or joined.startswith("../") or joined.startswith("/"):
        return None
    return joined


def _roster_beside(path: Path) -> Roster:
    """The roster of an explicit ``--roster PATH``; :class:`RosterError` (exit 2) when it
    cannot be read, is not UTF-8 text, or does not parse."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RosterError(
            str(path),
            f"cannot be read ({exc.strerror})",
            "Pass the path of a readable roster TOML file.",
        ) from None
    except UnicodeDecodeError:
        raise RosterError(str(path), "is not UTF-8 text", "Save the roster as UTF-8.") from None
    return parse_roster(text, str(path))


def persona_texts(
    repo: Repository,
    base: str,
    roster_path: Path | None,
    roster: Roster,
    participants: Sequence[Participant],
    beside: str = "",
) -> dict[str, str]:
    """Participant id → its persona charter's body, for each of ``participants`` with a
    persona (the judge too), in their order; ``beside``: the base-tree directory of a
    roster read from the base tree. Raises
    :class:`~council.errors.PersonaNotFound` (exit 2) naming the first persona no charter
    carries, so nothing is asked under its name."""
    return {
        p.id: _persona_text(repo, base, roster_path, roster, p.persona, beside)
        for p in participants
        if p.persona is not None
    }


def _persona_text(
    repo: Repository,
    base: str,
    roster_path: Path | None,
    roster: Roster,
    persona: str,
    beside: str = "",
) -> str:
    """A persona's charter body: the roster's persona_dirs first, then council's own.

    The dirs are trusted configuration like the roster: beside an explicit ``--roster``
    file, else read from the BASE tree, never from the head under review. Raises
    :class:`~council.errors.PersonaNotFound` (exit 2) when no charter carries it.
    """
    if roster_path is not None:
        here = roster_path.resolve().parent
        return load_persona(persona, [here / d for d in roster.persona_dirs]).body
    for d in roster.persona_dirs:
        where = in_tree(beside, f"{d.strip('/')}/{persona}.md")
        blob = repo.read_file(base, where) if where is not None else None
        if blob is not None:
            source = f"{d}/{persona}.md@{base[:12]}"
            text = blob.decode("utf-8", errors="replace")
            return parse_charter(text, source, persona_id=persona).body
    return load_persona(persona).body


def read_programs(
    repo: Repository,
    base: str,
    roster_path: Path | None,
    placed: Sequence[tuple[str, Participant]],
    beside: str = "",
) -> dict[str, bytes]:
    """Programs named by a relative path: beside an explicit ``--roster`` file, else read
    from the BASE tree (beside ``beside``, the roster's directory there). Never from the
    head under review.

    ``placed`` pairs each participant with its place in the roster (``reviewers[2]``,
    ``judge``). Each such program must be an executable file where it is read: beside the
    roster, a file with an execute permission; in the base tree, a blob committed with
    git mode 100755 (a worker writes the bytes out executable, so this is the one place
    the mode is still known). Raises :class:`RosterError` (exit 2) naming the reviewer,
    the path and the fix otherwise. A bare name (looked up on each worker's PATH) and an
    absolute path (read on the worker's host) are left to the worker. Returns
    participant id → the program's bytes.
    """
    out: dict[str, bytes] = {}
    for where, p in placed:
        program = p.options.get("program")
        if p.backend not in ("command", "sarif") or not isinstance(program, str):
            continue
        if "/" not in program or program.startswith("/"):
            continue
        if roster_path is not None:
            out[p.id] = _program_beside(roster_path, where, p.id, program)
        else:
            out[p.id] = _program_in_tree(repo, base, where, p.id, program, beside)
    return out


_RELATIVE_FIX = (
    "A relative program path is read beside an explicit --roster, or from the BASE ref "
    "when the roster is the base tree's council.toml: put it there, or name a program on "
    "PATH or an absolute path."
)


def _program_beside(roster: Path, where: str, pid: str, program: str) -> bytes:
    """The bytes of a relative program beside an explicit roster file, checked to be an
    executable file; :class:`RosterError` naming the path and the fix otherwise."""
    beside = roster.resolve().parent / program
    field = f"{where}.program"
    named = f"{program!r} (reviewer {pid!r})"
    trouble = program_trouble(beside)
    if trouble == "directory":
        raise RosterError(
            field,
            f"{named} is a directory beside the roster ({beside}), not a program",
            "Name the executable file itself.",
        )
    if trouble == "missing":
        raise RosterError(field, f"{named} is not beside the roster ({beside})", _RELATIVE_FIX)
    if trouble == "not-executable":
        raise RosterError(
            field,
            f"{named} beside the roster ({beside}) is not executable",
            f"Make it executable: chmod +x {shlex.quote(str(beside))}",
        )
    try:
        return beside.read_bytes()
    except OSError as exc:
        raise RosterError(
            field,
            f"{named} beside the roster ({beside}) cannot be read ({exc.strerror})",
            f"Make it readable: chmod +r {shlex.quote(str(beside))}",
        ) from None


def _program_in_tree(
    repo: Repository, base: str, where: str, pid: str, program: str, beside: str = ""
) -> bytes:
    """The bytes of a relative program in the BASE tree (beside ``beside``), checked to
    be committed as an executable file (git mode 100755); :class:`RosterError` naming the
    path, the mode and the fix otherwise."""
    path = in_tree(beside, program.rstrip("/"))
    at = f"in the base tree at {base[:12]}"
    field = f"{where}.program"
    named = f"{program!r} (reviewer {pid!r})"
    if path is None:
        raise RosterError(field, f"{named} leaves the base tree", _RELATIVE_FIX)
    mode = repo.tree_mode(base, path)
    if mode is None:
        raise RosterError(field, f"{named} is not {at}", _RELATIVE_FIX)
    if mode == "040000":
        raise RosterError(
            field, f"{named} is a directory {at}, not a program", "Name the executable file itself."
        )
    if mode == "120000":
        raise RosterError(
            field,
            f"{named} is a symbolic link {at}; council sends a program's bytes to the "
            f"workers, not a link",
            "Commit the program itself at that path, or name it by its absolute path.",
        )
    if mode == "100644":
        quoted = shlex.quote(path)
        raise RosterError(
            field,
            f"{named} is not executable {at} (committed with git mode 100644)",
            f"Commit it executable on the base branch: git update-index --chmod=+x {quoted} "
            f"(or chmod +x {quoted} && git add {quoted}), then commit.",
        )
    blob = repo.read_file(base, path) if mode == "100755" else None
    if blob is None:
        raise RosterError(
            field,
            f"{named} is not a file {at} (git mode {mode})",
            "Commit the program itself (an executable file, git mode 100755) at that path.",
        )
    return blob
