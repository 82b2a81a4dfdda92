"""A path as the diff shows it, found in an unpacked tree that spells it in its own bytes.

A file name that is not UTF-8 reaches the diff, the secret scan and every span with U+FFFD
for each bad byte; the tree on disk keeps the raw bytes (as :func:`os.fsdecode` reads
them). Masking a secret in the tools' copy of the tree must find that file, or the copy
keeps the secret. Source: docs/security.md "Secrets in the change".
"""

from __future__ import annotations

import os
from pathlib import Path

from workers.git.diff_reading import shown_text

REPLACEMENT = "\ufffd"
"""What the diff shows for a byte of a name that is not UTF-8."""


def tree_names(tree: Path, path: str) -> list[str]:
    """The ``/``-separated names in ``tree`` that ``path`` may stand for, sorted.

    Without U+FFFD: ``[path]`` when it exists (a link counts, followed or not), else
    none. With it: EVERY entry whose name shows as ``path``, a name spelled with U+FFFD
    itself included (several bytes show alike, so several files can, and a file named
    with U+FFFD must not stand for the one with the bad byte). Only the directories on
    the path are listed. Never raises (an unreadable directory finds nothing).
    """
    if REPLACEMENT not in path:
        return [path] if os.path.lexists(tree / path) else []
    found = [""]
    for part in path.split("/"):
        step: list[str] = []
        for prefix in found:
            if REPLACEMENT not in part:
                name = f"{prefix}{part}"
                if os.path.lexists(tree / name):
                    step.append(name)
                continue
            try:
                names = os.listdir(tree / prefix) if prefix else os.listdir(tree)
            except OSError:
                continue
            step.extend(f"{prefix}{n}" for n in sorted(names) if shown_text(n) == part)
        found = [f"{name}/" for name in step]
    return sorted(name[:-1] for name in found)
