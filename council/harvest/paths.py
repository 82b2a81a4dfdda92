"""Tidying the spelling of an anchor path, by text rules alone.

Models write the same repository path in several spellings: ``./app.py``,
``src//app.py``, ``src/./app.py``, ``src/``. They name the same file as ``app.py`` and
``src/app.py``, the spelling ``git diff`` uses, so the harvest reads them that way: the
finding then lands on the diff, says_the_same matches it with the same claim spelled
plainly, and every report carries the plain path.

The rules are the ones that can never change which file is named: empty segments
(duplicate or trailing slashes) and ``.`` segments are dropped. Nothing else is guessed
here: ``..`` segments, backslashes, a leading ``/`` and the ``a/`` ``b/`` prefixes of a
diff are kept as given, because reading them needs the change's paths (see
:func:`council.change.commentable.resolve_path`). Rewriting a spelling is neither a drop nor a
degradation (the finding is exactly as precise), so it leaves no warning (docs/harvest.md §1
principle 2, §6's closed list).

Source: docs/harvest.md §2 (anchors: a path), §4 (the location rows, ``file``/``path``).
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
