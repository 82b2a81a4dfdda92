"""Tidying the spelling of an anchor path, by text rules alone.

Models spell one path several ways (``./app.py``, ``src//app.py``, ``src/./app.py``); read
as ``git diff`` spells it, the finding lands on the diff, says_the_same matches it with
the same claim spelled plainly, and every report carries the plain path. Only rules that
can never change which file is named apply: empty and ``.`` segments are dropped. ``..``,
backslashes, a leading ``/`` and the diff's ``a/``/``b/`` need the change's paths
(:func:`council.change.commentable.resolve_path`). No warning: the finding is exactly as
precise. Source: docs/harvest.md §2 (anchors: a path), §4 (the location rows).
"""

from __future__ import annotations


def tidy_path(path: str) -> str:
    """``path`` without empty or ``.`` segments; a leading ``/`` is kept.

    ``"./app.py"`` → ``"app.py"``; ``"src//a/./b.py"`` → ``"src/a/b.py"``; ``"src/"`` →
    ``"src"``; ``"/tmp//repo/./app.py"`` → ``"/tmp/repo/app.py"``. A path made only of
    such segments (``"."``, ``"./"``, ``"/"``) is returned as given: it names no file, and
    an empty path could not be stored. ``..``, backslashes and everything else are left
    untouched. Pure text, idempotent, never raises. Source: docs/harvest.md §2, §4.
    """
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts:
        return path
    return ("/" if path.startswith("/") else "") + "/".join(parts)
